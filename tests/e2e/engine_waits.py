"""Waits for the engine's background work, so that a test compares states and not a race with it."""

from __future__ import annotations


async def e8_settled(app) -> None:
    """Until the background E8 refresh (services.e8_refresh) has nothing queued: a link changes E8 after the
    store's answer. Each drain queues the next batch behind what the writer already has."""
    handle = app.services.storage
    for _ in range(50):
        await handle.writer.submit(lambda: None)
        if not handle.e8.pending:
            return
    raise AssertionError("the E8 refresh queue did not drain")


async def settled_pulse(app) -> dict:
    """The pulse once the cognitive work of the calls answered so far has run: it follows the answer (D24,
    docs/engine.md#after-the-answer), so an answer's own pulse may not show it yet; the next one does."""
    await app.services.memory.settled()
    return app.services.cognition.pulse()
