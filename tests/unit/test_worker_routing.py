"""How a pool's front process finds the worker of a request (transports/session_tag.py) from the head alone,
and the access counts' batching (services/runtime/access_counts.py)."""

import pytest

from contextgraph.services.runtime.access_counts import AccessCounts
from contextgraph.transports import session_tag
from contextgraph.transports.session_tag import worker_of_head

ID = "0" * 32


@pytest.mark.parametrize(("head", "worker"), [
    (b"POST /mcp HTTP/1.1\r\nHost: h\r\nmcp-session-id: " + ID.encode() + b"-w1\r\n\r\n", 1),
    (b"GET /mcp HTTP/1.1\r\nMCP-Session-Id:  " + ID.encode() + b"-w12 \r\n\r\n", 12),
    (b"POST /messages/?session_id=" + ID.encode() + b"-w3 HTTP/1.1\r\nHost: h\r\n\r\n", 3),
    (b"POST /messages?x=1&session_id=" + ID.encode() + b"-w0 HTTP/1.1\r\n\r\n", 0),
    (b"POST /mcp HTTP/1.1\r\nCookie: a=b; contextgraph_client=" + ID.encode() + b"-w2; c=d\r\n\r\n", 2),
    (b"POST /mcp HTTP/1.1\r\nmcp-session-id: " + ID.encode() + b"\r\n\r\n", None),  # a lone server's id
    (b"GET /health HTTP/1.1\r\nHost: h\r\n\r\n", None),
    (b"POST /mcp HTTP/1.1\r\nX-Note: mcp-session-id: x-w1\r\n\r\n", None),  # not the header itself
    (b"", None),
])
def test_the_worker_named_in_a_head(head, worker):
    assert worker_of_head(head) == worker


def test_a_worker_tags_what_it_mints_and_a_lone_server_does_not():
    assert session_tag.tagged(ID) == ID
    session_tag.set_worker(4)
    try:
        assert session_tag.tagged(ID) == f"{ID}-w4"
        assert session_tag.worker_of(session_tag.tagged(ID)) == 4
    finally:
        session_tag.set_worker(None)


class FakeStore:
    def __init__(self) -> None:
        self.touched: list[list[int]] = []

    def touch(self, seqs, now=None) -> None:
        self.touched.append(list(seqs))


def test_accesses_gather_until_a_flush_is_due_and_go_in_one_write():
    now = [0.0]
    counts = AccessCounts(5.0, clock=lambda: now[0])
    store = FakeStore()
    assert not counts.record([1, 2])
    now[0] = 4.9
    assert not counts.record([2])
    now[0] = 5.0
    assert counts.record([])  # due, with accesses waiting
    counts.flush(store)  # type: ignore[arg-type]
    assert store.touched == [[1, 2, 2]]  # a seq named twice is two accesses
    counts.flush(store)  # type: ignore[arg-type]
    assert store.touched == [[1, 2, 2]]  # nothing gathered: nothing written


@pytest.mark.parametrize(("index", "dreams", "rewrites"), [(0, None, True), (1, False, False), (3, False, False)])
def test_only_worker_0_dreams_on_its_own_and_re_embeds_a_changed_space(index, dreams, rewrites):
    """cli._as_worker: the engine's background jobs that write engine state or rewrite the store run in worker 0
    alone (docs/architecture.md#several-workers); the others serve and read its results."""
    import argparse
    import socket

    from contextgraph.cli import _as_worker
    from contextgraph.config import Settings

    front, inbox = socket.socketpair()
    try:
        args = argparse.Namespace(worker_index=index, worker_inbox=inbox.fileno())
        serve, settings = _as_worker(args, Settings.from_env({"CONTEXTGRAPH_HOME": "/nonexistent"}))
        assert (settings.auto_dream, settings.space_rewrites) == (dreams, rewrites)
        assert serve.keywords["inbox"].fileno() == inbox.fileno()
        serve.keywords["inbox"].detach()  # the socketpair's own object closes it
    finally:
        session_tag.set_worker(None)
        front.close()
        inbox.close()
