"""Perception: the embedding pipeline of one data directory, loaded in the background, and the fingerprints it
makes for memories about to be stored, for queries and for what-if texts.

The transformer takes seconds to load, so it loads on its own thread after start-up (initialize and tools/list
answer at once); callers that need it wait, up to `memory.model_wait_seconds`. One forward pass at a time
(`cpu`: two at once only contend on two cores, docs/budgets.md); the embedding requests of concurrent calls share
one forward (`fingerprints`, services.embed_batcher). Reads (retrieval, a store's neighbours and UTL) run beside
it, up to `concurrency.read_threads` at once (`reads`). With `concurrency.parallel: false` both are the one
`cpu` limiter and batches hold one request: the serial server of before, for benchmarks' before/after.
"""

from __future__ import annotations

import gc
import threading
import time
from collections.abc import Callable, Sequence

import anyio
import numpy as np

from contextgraph.config import Settings
from contextgraph.constitution import Constitution
from contextgraph.embedders.pipeline import Draft, FingerprintPipeline, build_pipeline
from contextgraph.errors import EmbeddingError, StorageError
from contextgraph.fingerprint import Fingerprint
from contextgraph.log import get_logger
from contextgraph.security.pii import redact
from contextgraph.services.runtime.embed_batcher import EmbedBatcher
from contextgraph.services.runtime.store_handle import StoreHandle
from contextgraph.storage.base import NewTriple

_log = get_logger("perception")
_heap_settled = threading.Event()


def _settle_heap() -> None:
    """Once per process, after the first store and model are loaded: collect, then move every object alive now
    (the imported libraries, the engine's state, the loaded indexes) into the collector's permanent generation,
    so full collections stop walking them. Measured at 300K memories on this 2-core machine: 50 full collections
    during 200 searches, up to 218 ms each, made search_graph's p95 263 ms against a 60 ms median; a full
    collection of the loaded server's ~150K objects took ~80 ms, and 0 ms once frozen. Objects freed by their
    reference count still are; only cycles made before this point are never collected (a first App of a test
    run, at most: the freeze happens once). What `contextgraph serve` froze at start-up (its imports, before the
    handshake) is collected here with the rest."""
    if _heap_settled.is_set():
        return
    _heap_settled.set()
    gc.unfreeze()
    gc.collect()
    gc.freeze()


class Perception:
    def __init__(self, settings: Settings, constitution: Constitution, handle: StoreHandle) -> None:
        self.settings = settings
        self.handle = handle
        self._model_wait = float(constitution["memory"]["model_wait_seconds"])
        self._lock = threading.Lock()
        self._pipeline: FingerprintPipeline | None = None
        self._ready = threading.Event()
        self._error: BaseException | None = None
        self._loader: threading.Thread | None = None
        self.cpu = anyio.CapacityLimiter(1)  # forward passes (and bulk work that embeds in big batches)
        concurrency = constitution["concurrency"]
        self.parallel = bool(concurrency["parallel"])
        self.reads = anyio.CapacityLimiter(int(concurrency["read_threads"])) if self.parallel else self.cpu
        self.batcher = EmbedBatcher(self.cpu, max_batch=int(concurrency["embed_max_batch"]) if self.parallel else 1,
                                    collect_s=float(concurrency["embed_collect_ms"]) / 1000 if self.parallel else 0.0)

    def start_model_load(self) -> None:
        """Open the store and load the transformer in a background thread (idempotent)."""
        with self._lock:
            if self._loader is not None:
                return
            self._loader = threading.Thread(target=self._load, name="contextgraph-model", daemon=True)
            self._loader.start()

    def _load(self) -> None:
        try:
            self.handle.open()
            started = time.perf_counter()
            self._pipeline = build_pipeline(self.settings)
            _log.info("embedding pipeline ready", seconds=round(time.perf_counter() - started, 2),
                      runtime=self._pipeline.backbone.runtime)
            self._refresh_changed_spaces(self._pipeline)
            _settle_heap()
        except BaseException as exc:  # reported to every caller that waits for it
            self._error = exc
            _log.exception("embedding pipeline failed to load")
        finally:
            self._ready.set()

    def _refresh_changed_spaces(self, pipeline: FingerprintPipeline) -> None:
        """Re-embed, in the background, a space whose embedder changed since the store's memories were made (a
        failure to start is logged: the store serves as it is, with that space left out of searches)."""
        try:
            self.handle.space_refresh.start(self.handle.store, self.handle.writer, pipeline,
                                            rewrite=self.settings.space_rewrites)
        except Exception:
            _log.exception("could not check the store's spaces against the loaded model")

    async def pipeline(self) -> FingerprintPipeline:
        """The loaded pipeline; waits for the background load (EmbeddingError, retryable, past the wait)."""
        self.start_model_load()
        if not self._ready.is_set():
            # abandon_on_cancel: a shutdown (SIGINT) during a first-run export must not wait for the export
            ready = await anyio.to_thread.run_sync(self._ready.wait, self._model_wait, abandon_on_cancel=True)
            if not ready:
                raise EmbeddingError(f"The embedding model is still loading after {self._model_wait:.0f} s; retry "
                                     "shortly.", retry=True)
        if isinstance(self._error, StorageError):  # the store failed to open, not the model: say what it said
            raise StorageError(self._error.message, **self._error.data)
        if self._error is not None or self._pipeline is None:
            raise EmbeddingError(f"The embedding model could not be loaded ({type(self._error).__name__}: "
                                 f"{self._error}). `contextgraph doctor` says what is missing.")
        return self._pipeline

    def loaded_pipeline(self) -> FingerprintPipeline | None:
        """The pipeline if it has loaded, without waiting (the manifest reports what is there)."""
        return self._pipeline if self._ready.is_set() and self._error is None else None

    def model_status(self) -> str:
        if self._error is not None:
            return f"failed: {type(self._error).__name__}: {self._error}"
        return "ready" if self._ready.is_set() else "loading"

    def draft(self, text: str, modality: str, session: str | None,
              neighbours: tuple[tuple[float, np.ndarray], ...] = ()) -> Draft:
        """A memory to fingerprint now: the next position in its session and in the store. A query (session
        None) sits at the head of the store, so the temporal spaces favour what is recent."""
        store = self.handle.store
        return Draft(
            text=text,
            modality=modality,
            timestamp=time.time(),
            session_position=0 if session is None else store.session_count(session),
            global_position=store.last_seq() + 1,
            neighbours=neighbours,
        )

    async def fingerprints(self, make_drafts: Callable[[], Sequence[Draft]], *,
                           with_triples: bool = False) -> tuple[list[Fingerprint], list[list[NewTriple]]]:
        """The fingerprints (and, with_triples, E11 triples) of the drafts `make_drafts()` returns, called in the
        worker thread (drafts read the store), embedded in one batch with concurrent calls' drafts."""
        pipeline = await self.pipeline()
        return await self.batcher.embed(pipeline, make_drafts, with_triples=with_triples)

    async def embed_query(self, text: str, modality: str = "text") -> Fingerprint:
        """The fingerprint of a query (never stored: no PII redaction, the store's head as its position)."""
        (fingerprint,), _ = await self.fingerprints(lambda: [self.draft(text, modality, None)])
        return fingerprint

    async def embed_texts(self, texts: Sequence[str], modality: str,
                          session: str | None) -> tuple[list[Fingerprint], list[list[NewTriple]]]:
        """Fingerprints and E11 triples for texts about to be stored by another use-case (a merge's combined
        content) or never stored (compute_delta_sc's what-if versions); PII redacted as on store."""
        await self.handle.ready()
        redacted = [redact(text)[0] for text in texts]
        return await self.fingerprints(lambda: [self.draft(text, modality, session) for text in redacted],
                                       with_triples=True)
