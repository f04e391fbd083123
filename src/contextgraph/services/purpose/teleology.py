"""The north star and purpose vectors (docs/engine.md#purpose-and-the-north-star): where they live, who reads them.

State (one JSON document, `teleology`, beside the memories; each star's fingerprint and provenance in a document
of its own, `teleology/star/<id>`, so the status tools read a small document and nothing else):
    star            the current north star's metadata (id, when, how, cluster size, confidence), or None
    history         every earlier star's metadata, newest last (stars are never deleted: a revert needs them)
    profiles        named teleological profiles (services.teleology_profiles), the active one, the synergy matrix
    operations      the autonomous services' recent operations (what ran, when, dry run or not)
    goals           the store's themes (the star's cluster and the others: E1 centroid, members' median cosine),
                    which stage 4 re-ranks by (teleology.goals; docs/retrieval.md#stage-4-purpose)

Purpose vectors are stored per memory in its record (`extra.purpose` = {star, pv, alignment}), written with the
memory in the same transaction (MemoryService calls `record_extra`), and recomputed in the background, in
batches through the writer, when the star changes; a record whose PV belongs to another star is recomputed on
the fly wherever it is read. Stage 4 reads the star through `star_view()` and the threshold through
`alignment_threshold()` (one function: app.py points its source at ATC's θ_warn). Another process on the same
store (a second server, the CLI) may set a star: `refresh()`, on the search path, re-reads the state when it was
last compared more than `REFRESH_S` ago.
"""

from __future__ import annotations

import base64
import dataclasses
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from contextgraph.background import start_thread
from contextgraph.constitution import Constitution
from contextgraph.embedders.base import Embedder
from contextgraph.fingerprint import Fingerprint
from contextgraph.log import get_logger
from contextgraph.services.engine.cognition import CognitiveState
from contextgraph.services.runtime.store_handle import StoreHandle
from contextgraph.storage.base import GraphTxn, MemoryRecord, MemoryStore
from contextgraph.storage.codec import decode_fingerprint, encode_fingerprint
from contextgraph.teleology.goals import Goal, GoalSet
from contextgraph.teleology.purpose import alignment, purpose_vectors, weight_vector

_log = get_logger("teleology")
DOCUMENT = "teleology"
CACHE_MAX = 200_000  # alignments kept per star (a float and an int each); past it the cache starts over
STAR_DOCUMENT = "teleology/star/"
REFRESH_S = 2.0  # how stale the loaded state may get before it is compared with the stored one (another process)


@dataclass(frozen=True)
class StarView:
    """What stage 4 and the purpose computations need of the current star."""

    id: str
    fingerprint: Fingerprint
    weights: np.ndarray  # 13 alignment weights, sum 1
    threshold: float
    reference: np.ndarray | None = None  # 13 per-space similarities of a typical member (teleology.purpose)
    # seq → alignment under this star, shared by the views of one star: a memory's weighted spaces never change
    # under its seq (E8, the one space rewritten in place, has no alignment weight), so stage 4 measures each
    # candidate once per star instead of once per search
    cache: dict[int, float] | None = None
    goals: GoalSet | None = None  # the themes stage 4 re-ranks by (None: none known, re-ranking stays neutral)

    def purpose(self, by_space: dict[int, Embedder], docs: Sequence[Fingerprint],
                only_weighted: bool = False) -> np.ndarray:
        spaces = [int(i) + 1 for i in np.flatnonzero(self.weights > 0)] if only_weighted else None
        return purpose_vectors(by_space, self.fingerprint, docs, spaces)

    def alignments(self, by_space: dict[int, Embedder], docs: Sequence[Fingerprint]) -> np.ndarray:
        return alignment(self.purpose(by_space, docs, only_weighted=True), self.weights, self.reference)

    def align(self, pvs: np.ndarray) -> np.ndarray:
        return alignment(pvs, self.weights, self.reference)

    def alignments_of_seqs(self, by_space: dict[int, Embedder], seqs: Sequence[int],
                           docs: Sequence[Fingerprint]) -> np.ndarray:
        """Alignments of stored candidates (their seqs and fingerprints), through the star's cache."""
        if self.cache is None:
            return self.alignments(by_space, docs)
        known = {seq: self.cache.get(seq) for seq in seqs}  # a local copy: another search may clear the cache
        missing = [i for i, seq in enumerate(seqs) if known[seq] is None]
        if missing:
            if len(self.cache) > CACHE_MAX:
                self.cache.clear()
            fresh = self.alignments(by_space, [docs[i] for i in missing])
            for i, a in zip(missing, fresh):
                known[seqs[i]] = self.cache[seqs[i]] = float(a)
        return np.array([known[seq] for seq in seqs], dtype=np.float64)


def empty_state() -> dict[str, Any]:
    return {"version": 1, "star": None, "history": [], "profiles": {}, "active_profile": None, "synergy": None,
            "synergy_updates": 0, "operations": [], "subgoals": None, "goals": None}


def goal_set(goals: dict[str, Any] | None, star: dict[str, Any] | None, fingerprint: Fingerprint | None) -> \
        GoalSet | None:
    """The GoalSet of the stored goals; a store whose star predates them has one goal, the star's own E1 centroid
    and its members' median E1 cosine (the first entry of its reference)."""
    rows = (goals or {}).get("goals") or []
    if rows:
        return GoalSet(tuple(Goal(g["id"], g["label"], np.asarray(g["centroid"], dtype=np.float64),
                                  float(g["reference"]), int(g["size"])) for g in rows))
    if star is None or fingerprint is None or not star.get("reference") or 1 not in fingerprint:
        return None
    return GoalSet((Goal(star["id"], str(star.get("label", "north star")),
                         np.asarray(fingerprint[1], dtype=np.float64), float(star["reference"][0]),
                         int(star.get("size", 0))),))


class TeleologyService:
    def __init__(self, storage: StoreHandle, cognition: CognitiveState, constitution: Constitution,
                 threshold_source: Callable[[], float] | None = None) -> None:
        t = constitution["teleology"]
        self.storage = storage
        self.cognition = cognition
        self.constitution = constitution
        self.settings = t
        self.groups: dict[str, tuple[int, ...]] = {k: tuple(int(s) for s in v) for k, v in t["groups"].items()}
        self.weights = weight_vector({int(k): float(v) for k, v in t["alignment_weights"].items()})
        self.batch = int(t["recompute_batch"])
        self.history_max = int(t["operations_history"])
        # stage 4's alignment floor: ATC's learned θ_warn when given, the constitution's prior otherwise
        prior = float(constitution["retrieval"]["alignment_floor"])
        self.threshold_source: Callable[[], float] = threshold_source or (lambda: prior)
        self._lock = threading.RLock()  # the loaded state, the star and the caches: held briefly, never on I/O
        self._save_lock = threading.Lock()  # one save at a time, held across the writer's round trip
        self._loaded_from: MemoryStore | None = None
        self._state: dict[str, Any] = empty_state()
        self._star: Fingerprint | None = None
        self._embedders: dict[int, Embedder] = {}
        self._cache: dict[int, float] = {}  # stage 4's alignments under the star `_cache_for`
        self._cache_for: str | None = None
        # ((the state's goals entry, the star's id), their GoalSet): built once per change of either
        self._goals: tuple[tuple[object, str | None], GoalSet | None] = ((None, None), None)
        self._checked_at = 0.0  # monotonic time the loaded state was last compared with the stored one
        self.recompute: dict[str, Any] = {"running": False, "star_id": None, "done": 0, "total": 0}
        self._recent = deque(maxlen=int(t["ego_window"]))

    # -- state -----------------------------------------------------------------------------------------------
    def state(self) -> dict[str, Any]:
        """The loaded state of the open store (loaded when the store was opened or reopened; `refresh` picks up
        another process's changes)."""
        store = self.storage.store
        if self._loaded_from is store:  # the common case, lock-free: a save swaps in a whole new dict
            return self._state
        return self._adopt(store)

    def refresh(self) -> None:
        """Compare the loaded state with the stored one, at most every REFRESH_S, and adopt the stored one when it is
        newer: another process on the same store may have set a star or goals. Reads the store: call it from a
        worker thread (the search path does, before it asks for the star)."""
        store = self.storage.store
        if self._loaded_from is store and time.monotonic() - self._checked_at < REFRESH_S:
            return
        self._adopt(store)

    def _adopt(self, store: MemoryStore) -> dict[str, Any]:
        """Read the stored state (outside the lock) and take it when it is newer than the loaded one."""
        stored = {**empty_state(), **(store.get_document(DOCUMENT) or {})}
        with self._lock:
            self._checked_at = time.monotonic()
            # adopt the stored state when it is newer: a read that raced our own save must not undo it
            if self._loaded_from is not store or _stamp(stored) > _stamp(self._state):
                star, before = stored.get("star"), (self._state.get("star") or {}).get("id")
                if self._loaded_from is not store or (star or {}).get("id") != before:
                    self._star = self._read_star(store, star["id"]) if star else None
                self._state = stored
                self._loaded_from = store
            return self._state

    @staticmethod
    def _read_star(store: MemoryStore, star_id: str) -> Fingerprint | None:
        doc = store.get_document(STAR_DOCUMENT + star_id)
        return None if doc is None else decode_fingerprint(base64.b64decode(doc["fingerprint"]), copy=True)

    def star_document(self, star_id: str) -> dict[str, Any] | None:
        return self.storage.store.get_document(STAR_DOCUMENT + star_id)

    def save(self, mutate: Callable[[dict[str, Any]], None],
             on_saved: Callable[[], None] | None = None) -> dict[str, Any]:
        """Apply `mutate` to a copy of the state and write it through the writer (durable on return). Saves run
        one at a time; readers (state(), star_view(), often on the event loop) never wait for the writer: the
        new state, and whatever `on_saved` swaps with it, is put in place under the short lock once written."""
        with self._save_lock:
            state = {**self.state()}
            mutate(state)
            state["revision"], state["saved_at"] = int(state.get("revision", 0)) + 1, time.time()
            self.storage.writer.submit_future(self.storage.store.put_document, DOCUMENT, state).result()
            with self._lock:
                self._state = state
                if on_saved is not None:
                    on_saved()
            return state

    def log_operation(self, state: dict[str, Any], entry: dict[str, Any]) -> None:
        state["operations"] = [*state.get("operations", []), {"at": time.time(), **entry}][-self.history_max:]

    def use_embedders(self, embedders: Sequence[Embedder]) -> dict[int, Embedder]:
        if not self._embedders:
            self._embedders = {e.space: e for e in embedders}
        return self._embedders

    # -- the star --------------------------------------------------------------------------------------------
    def star_view(self) -> StarView | None:
        self.state()  # loaded
        with self._lock:
            state = self._state  # read with _star under the lock: set_star swaps both together
            if state.get("star") is None or self._star is None:
                return None
            ref = state["star"].get("reference")
            if self._cache_for != state["star"]["id"]:
                self._cache, self._cache_for = {}, state["star"]["id"]
            (entry, star_id), goals = self._goals
            if entry is not state.get("goals") or star_id != state["star"]["id"]:  # a star's own goal follows it
                goals = goal_set(state.get("goals"), state["star"], self._star)
                self._goals = ((state.get("goals"), state["star"]["id"]), goals)
            return StarView(state["star"]["id"], self._star, self.weights, self.alignment_threshold(),
                            None if ref is None else np.asarray(ref, dtype=np.float64), self._cache, goals)

    def alignment_threshold(self) -> float:
        return float(self.threshold_source())

    def set_star(self, star: Fingerprint, meta: dict[str, Any], members: list[str], source: str,
                 star_id: str | None = None, goals: list[dict[str, Any]] | None = None) -> dict[str, Any]:
        """Make `star` the north star (the old one joins the history) and start recomputing every memory's PV.
        Runs on a worker thread. `star_id` given: an earlier star put back (its document exists already).
        `goals` given: the store's themes found with it (set_goals), the star's own among them."""
        store = self.storage.store
        if star_id is None:
            star_id = f"star-{int(time.time() * 1000):x}-{len(members)}"
            doc = {"id": star_id, "fingerprint": base64.b64encode(encode_fingerprint(star)).decode(),
                   "members": members, **meta}
            self.storage.writer.submit_future(store.put_document, STAR_DOCUMENT + star_id, doc).result()
        entry = {"id": star_id, "set_at": time.time(), "source": source, **meta}

        def mutate(state: dict[str, Any]) -> None:
            if state.get("star"):
                state["history"] = [*state.get("history", []), state["star"]]
            state["star"] = entry
            if goals is not None:
                state["goals"] = goals_entry(goals, source, star_id)
            self.log_operation(state, {"operation": "north_star_set", "star_id": star_id, "source": source})

        def swap_star() -> None:
            self._star = star

        self.save(mutate, on_saved=swap_star)
        self._start_recompute(star_id)
        return entry

    def set_goals(self, goals: list[dict[str, Any]], source: str) -> None:
        """Replace the store's goals (discover_sub_goals over the whole store); the star keeps its own."""
        star_id = (self.state().get("star") or {}).get("id")
        self.save(lambda state: state.__setitem__("goals", goals_entry(goals, source, star_id)))

    # -- purpose vectors -------------------------------------------------------------------------------------
    def purpose_of(self, fingerprint: Fingerprint) -> tuple[str, np.ndarray, float] | None:
        """(star id, PV, alignment) of one fingerprint, or None without a star."""
        view = self.star_view()
        if view is None or not self._embedders:
            return None
        pv = view.purpose(self._embedders, [fingerprint])[0]
        return view.id, pv, float(view.align(pv))

    def record_extra(self, fingerprint: Fingerprint) -> dict[str, Any]:
        """What a new memory's record carries: its purpose under the current star (nothing without one); the
        ego's recent purposes move with it."""
        return self.extra_for(self.purpose_of(fingerprint))

    def extra_for(self, found: tuple[str, np.ndarray, float] | None) -> dict[str, Any]:
        """record_extra for a purpose already measured (purpose_of, in a worker thread: it compares the
        fingerprint with the star in all 13 spaces, too much work for the event loop)."""
        if found is None:
            return {}
        star_id, pv, a = found
        self.observe(pv)
        return {"purpose": purpose_doc(star_id, pv, a)}

    def observe(self, pv: np.ndarray) -> None:
        """The ego's purpose vector is the mean PV of recent memories (docs/engine.md#consciousness)."""
        with self._lock:
            self._recent.append(np.asarray(pv, dtype=np.float64))
            mean = np.mean(np.stack(list(self._recent)), axis=0)
        self.cognition.set_purpose([float(v) for v in mean])

    def stored_purpose(self, record: MemoryRecord, star_id: str) -> tuple[np.ndarray, float] | None:
        p = record.extra.get("purpose")
        if not p or p.get("star") != star_id:
            return None
        return np.asarray(p["pv"], dtype=np.float64), float(p["alignment"])

    def alignments_of(self, records: Sequence[MemoryRecord], view: StarView) -> tuple[np.ndarray, np.ndarray]:
        """([n, 13] PVs, [n] alignments) of records: stored ones where they belong to `view`'s star, computed
        from the fingerprints for the rest."""
        pvs = np.zeros((len(records), 13))
        missing: list[int] = []
        for i, r in enumerate(records):
            got = self.stored_purpose(r, view.id)
            if got is None:
                missing.append(i)
            else:
                pvs[i] = got[0]
        if missing:
            fps = self.storage.store.fingerprints([records[i].seq for i in missing])
            present = [(i, fp) for i, fp in zip(missing, fps) if fp is not None]
            if present:
                pvs[[i for i, _ in present]] = view.purpose(self._embedders, [fp for _, fp in present])
        return pvs, view.align(pvs)

    def _start_recompute(self, star_id: str) -> None:
        with self._lock:
            self.recompute = {"running": True, "star_id": star_id, "done": 0,
                              "total": self.storage.store.count(), "started_at": time.time()}
        start_thread(self._recompute_all, star_id, name="purpose-recompute")

    def _recompute_all(self, star_id: str) -> None:
        """Every live memory's PV under the new star, `batch` records per write transaction through the writer.
        Stops when another star replaces this one (its own pass takes over)."""
        try:
            store, writer = self.storage.store, self.storage.writer
            view = self.star_view()
            pending: list[tuple[MemoryRecord, Fingerprint]] = []
            recent: list[np.ndarray] = []
            keep = self._recent.maxlen or 1
            for record, fp in store.scan():
                if view is None or view.id != star_id or self.recompute.get("star_id") != star_id:
                    return
                pending.append((record, fp))
                if len(pending) >= self.batch:
                    recent = self._write_batch(store, writer, view, pending)[-keep:]
                    pending = []
            if pending and view is not None:
                recent = self._write_batch(store, writer, view, pending)[-keep:]
            with self._lock:
                self._recent.clear()
                for pv in recent:
                    self._recent.append(pv)
            if recent:
                self.observe(recent[-1])
        except Exception:  # a closed store mid-pass: the rest are recomputed on the fly where they are read
            _log.exception("recomputing purpose vectors stopped", star_id=star_id)
        finally:
            with self._lock:
                if self.recompute.get("star_id") == star_id:
                    self.recompute = {**self.recompute, "running": False, "finished_at": time.time()}

    def _write_batch(self, store: MemoryStore, writer: Any, view: StarView,
                     pending: list[tuple[MemoryRecord, Fingerprint]]) -> list[np.ndarray]:
        pvs = view.purpose(self._embedders, [fp for _, fp in pending])
        docs = {r.id: purpose_doc(view.id, pv, float(view.align(pv))) for (r, _), pv in zip(pending, pvs)}

        def fn(g: GraphTxn) -> int:
            changed = 0
            for memory_id, doc in docs.items():
                current = g.get(memory_id)  # re-read inside the transaction: a concurrent edit is kept
                if current is not None:
                    g.update(dataclasses.replace(current, extra={**current.extra, "purpose": doc}))
                    changed += 1
            return changed

        writer.submit_future(store.graph_write, fn).result()
        with self._lock:
            self.recompute["done"] = self.recompute.get("done", 0) + len(pending)
        return list(pvs)


def _stamp(state: dict[str, Any]) -> tuple[int, float]:
    """Which of two states is newer: saves count up `revision` (another process's too) and carry their time."""
    return int(state.get("revision", 0)), float(state.get("saved_at", 0.0))


def goals_entry(goals: list[dict[str, Any]], source: str, star_id: str | None) -> dict[str, Any]:
    """The state's goals entry: each goal's id, label, size, E1 centroid and reference (rounded for the JSON)."""
    rows = [{"id": g["id"], "label": g["label"], "size": int(g["size"]), "reference": round(float(g["reference"]), 5),
             "centroid": [round(float(v), 6) for v in g["centroid"]]} for g in goals]
    return {"at": time.time(), "source": source, "star": star_id, "goals": rows}


def purpose_doc(star_id: str, pv: np.ndarray, a: float) -> dict[str, Any]:
    return {"star": star_id, "pv": [round(float(v), 5) for v in pv], "alignment": round(a, 5)}
