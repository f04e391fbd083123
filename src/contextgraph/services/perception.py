"""Perception: the embedding pipeline of one data directory, loaded in the background, and the fingerprints it
makes for memories about to be stored, for queries and for what-if texts.

The transformer takes seconds to load, so it loads on its own thread after start-up (initialize and tools/list
answer at once); callers that need it wait, up to `memory.model_wait_seconds`. One forward pass at a time
(`cpu`, MEASUREMENTS: two at once only contend on two cores).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence

import anyio
import numpy as np

from contextgraph.config import Settings
from contextgraph.constitution import Constitution
from contextgraph.embedders.pipeline import Draft, FingerprintPipeline, build_pipeline
from contextgraph.errors import EmbeddingError
from contextgraph.fingerprint import Fingerprint
from contextgraph.log import get_logger
from contextgraph.security.pii import redact
from contextgraph.services.store_handle import StoreHandle
from contextgraph.storage.base import NewTriple

_log = get_logger("perception")


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
        self.cpu = anyio.CapacityLimiter(1)

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
        except BaseException as exc:  # reported to every caller that waits for it
            self._error = exc
            _log.exception("embedding pipeline failed to load")
        finally:
            self._ready.set()

    async def pipeline(self) -> FingerprintPipeline:
        """The loaded pipeline; waits for the background load (EmbeddingError, retryable, past the wait)."""
        self.start_model_load()
        if not self._ready.is_set():
            # abandon_on_cancel: a shutdown (SIGINT) during a first-run export must not wait for the export
            ready = await anyio.to_thread.run_sync(self._ready.wait, self._model_wait, abandon_on_cancel=True)
            if not ready:
                raise EmbeddingError(f"The embedding model is still loading after {self._model_wait:.0f} s; retry "
                                     "shortly.", retry=True)
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

    async def embed_texts(self, texts: Sequence[str], modality: str,
                          session: str | None) -> tuple[list[Fingerprint], list[list[NewTriple]]]:
        """Fingerprints and E11 triples for texts about to be stored by another use-case (a merge's combined
        content) or never stored (compute_delta_sc's what-if versions); PII redacted as on store."""
        await self.handle.ready()
        pipeline = await self.pipeline()
        drafts = [self.draft(redact(text)[0], modality, session) for text in texts]
        return await anyio.to_thread.run_sync(lambda: pipeline.embed_with_triples(drafts), limiter=self.cpu)
