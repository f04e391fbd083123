"""A space whose embedder changed, re-embedded across the store in the background (docs/spaces.md#e7-code).

The store records, per re-embeddable space, the method that made its vectors (the pipeline manifest's `method`,
in the store document "embedders"). When the loaded pipeline's method differs — a store made before the code
encoder, or with another code model — every memory stored before that moment is re-embedded from its text, a
batch at a time, off the event loop and off the writer (the forward runs in this module's thread; only the
rewrite goes to the writer: one transaction per batch with MemoryStore.rewrite_spaces, which logs a rewrite
entry so every process's indexes re-index it). Memories stored meanwhile get the new vectors from the pipeline.

Until the whole store is done, the space is *stale*: searches leave it out of the fusion (its stored vectors and
the query's would come from different models), so a search never waits for the rewrite and never ranks by a
mixture. Progress (memories done of the total) is saved with each batch: a restart resumes where it stopped.
Another process on the same store sees the finished record on its next check and stops leaving the space out.

Only E7 is re-embeddable today: it is the one space with a model of its own; the shared model's spaces change
together with the model, which is a reindex (`contextgraph reindex`)."""

from __future__ import annotations

import threading
import time
from typing import Any

from contextgraph.background import start_thread
from contextgraph.errors import StorageError
from contextgraph.log import get_logger
from contextgraph.storage.base import MemoryStore
from contextgraph.storage.writer import Writer

DOC = "embedders"
SPACES = (7,)
_log = get_logger("storage")


class SpaceRefresh:
    """`stale`: the spaces searches leave out now; `progress`: per space, {method, done, total, state}."""

    def __init__(self, batch: int = 32, duty: float = 0.5, recheck_s: float = 5.0) -> None:
        self.batch = batch
        self.duty = duty  # the share of wall time the rewrite may take: it shares the cores with the server
        self.recheck_s = recheck_s
        self.stale: frozenset[int] = frozenset()
        self.progress: dict[int, dict[str, Any]] = {}
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._checked_at = 0.0
        self._wanted: dict[int, str] = {}

    def start(self, store: MemoryStore, writer: Writer, pipeline: Any, rewrite: bool = True) -> None:
        """Compare the store's record with `pipeline` and start re-embedding what differs (idempotent). A new,
        empty store just records the methods. Without `rewrite` (a pool worker but the first) the spaces that
        differ are only marked stale: another process re-embeds them, and `check` sees its record."""
        self._wanted = {space: pipeline.method(space) for space in SPACES}
        doc = store.get_document(DOC) or {}
        recorded = {int(k): v for k, v in (doc.get("spaces") or {}).items()}
        changed = [space for space, method in self._wanted.items() if recorded.get(space) != method]
        if not changed:
            return
        if store.count() == 0:
            writer.submit_future(store.put_document, DOC, {"spaces": {str(s): m for s, m in self._wanted.items()}})
            return
        self.stale = frozenset(changed)
        if rewrite and self._thread is None:
            self._thread = start_thread(self._run, store, writer, pipeline, changed, doc,
                                        name="contextgraph-space-refresh")

    def check(self, store: MemoryStore) -> frozenset[int]:
        """The stale spaces, re-read from the store at most every `recheck_s` while any is stale (a worker
        thread's call: another process may have finished the rewrite)."""
        if self.stale and self._thread is None and time.monotonic() - self._checked_at > self.recheck_s:
            self._checked_at = time.monotonic()
            recorded = (store.get_document(DOC) or {}).get("spaces") or {}
            self.stale = frozenset(s for s in self.stale if recorded.get(str(s)) != self._wanted.get(s))
        return self.stale

    def join(self, timeout: float | None = None) -> None:
        """Until the background rewrite has finished (or stopped), at most `timeout` seconds."""
        thread = self._thread
        if thread is not None:
            thread.join(timeout)

    def stop(self, timeout: float = 30.0) -> None:
        """Stop after the batch in flight (its rewrite is committed or not started: a transaction either way)."""
        self._stop.set()
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout)

    def _run(self, store: MemoryStore, writer: Writer, pipeline: Any, spaces: list[int], doc: dict) -> None:
        try:
            for space in spaces:
                self._rewrite(store, writer, pipeline, space, doc)
        except StorageError as exc:  # the writer closed (shutdown) or the store refuses writes: resume next start
            _log.info("space refresh stopped", error=exc.message)
        except Exception:
            _log.exception("space refresh failed; the space stays out of searches until the next start")
        finally:
            self._thread = None

    def _rewrite(self, store: MemoryStore, writer: Writer, pipeline: Any, space: int, doc: dict) -> None:
        method = self._wanted[space]
        saved = (doc.get("rewriting") or {}).get(str(space)) or {}
        through = int(saved.get("through_seq", 0)) if saved.get("method") == method else 0
        last = store.last_seq()  # memories after this one were embedded by this pipeline already
        total = store.count()
        done = int(saved.get("done", 0)) if through else 0
        self.progress[space] = {"method": method, "done": done, "total": total, "state": "running"}
        _log.info("re-embedding a space", space=f"E{space}", memories=total, resumed_at=through)
        pending: list[Any] = []
        for record, _ in store.scan(spaces=[space]):
            if self._stop.is_set():
                return
            if record.seq <= through:
                continue
            if record.seq > last:
                break
            pending.append(record)
            if len(pending) == self.batch:
                done = self._batch(store, writer, pipeline, space, pending, done)
                pending = []
        if pending:
            done = self._batch(store, writer, pipeline, space, pending, done)
        self._finish(store, writer, space, method)

    def _batch(self, store: MemoryStore, writer: Writer, pipeline: Any, space: int, records: list[Any],
               done: int) -> int:
        started = time.perf_counter()
        vectors = pipeline.embed_space(space, [r.content for r in records], [r.modality for r in records])
        updates = {r.id: {space: v} for r, v in zip(records, vectors)}
        done += len(records)
        state = {"method": self._wanted[space], "through_seq": records[-1].seq, "done": done}

        def write() -> None:
            store.rewrite_spaces(updates)
            current = store.get_document(DOC) or {}
            current.setdefault("rewriting", {})[str(space)] = state
            store.put_document(DOC, current)

        writer.submit_future(write).result()
        self.progress[space].update(done=done)
        pause = (time.perf_counter() - started) * (1.0 - self.duty) / self.duty
        self._stop.wait(pause)
        return done

    def _finish(self, store: MemoryStore, writer: Writer, space: int, method: str) -> None:
        def write() -> None:
            current = store.get_document(DOC) or {}
            current.setdefault("spaces", {})[str(space)] = method
            (current.get("rewriting") or {}).pop(str(space), None)
            store.put_document(DOC, current)

        writer.submit_future(write).result()
        self.stale = self.stale - {space}
        self.progress[space].update(state="done")
        _log.info("space re-embedded", space=f"E{space}", memories=self.progress[space]["done"])

    def report(self) -> dict[str, Any]:
        """What get_graph_manifest shows: per space being (or lately) re-embedded, its progress."""
        return {f"E{space}": dict(p) for space, p in self.progress.items()}
