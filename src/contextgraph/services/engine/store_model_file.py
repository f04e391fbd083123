"""The fitted store model kept beside the store between runs (docs/utl.md#the-store-model).

A process that opens a large store has no model: its first UTL fitted a quick one in the caller (~0.3 s at 100K
memories with the store in the page cache, ~2 s from the disk; search_graph's pulse and inject_context's answer
wait for it) and a full one followed in the background (~2 s of CPU beside the first calls). Every Claude Code
session starts a server, so every session paid both. The full model is now saved after each full fit and adopted
by the next process, which refits it only when the store has changed as much as a running process would wait for.
TransE's translations of the stored triples (E11) are kept the same way beside it once there are
TranslationFits.SYNC_BELOW memories with triples: from there their refits run in the background, but the first
fit of every process scanned every stored triple in its caller.

A cache, never a source of truth: missing, damaged, written by another version, fitted on another store or
with other settings (`fit_key`: the UTL's and the neighbourhood's settings and the embedders' identities), it
is ignored and the model is fitted as before. One .npz: the arrays under flat names, and a JSON header with the
format, the key, the store's id and last sequence number at the fit, and the shape of the nested parts. The
fingerprints it holds (cluster prototypes, the reference sample) are in the store's own encoding. Written to a
temporary file and renamed into place: a reader sees the previous file or the new one, whole.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
import threading
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

from contextgraph.fingerprint import Fingerprint
from contextgraph.log import get_logger
from contextgraph.services.engine.store_model import Clusters, RefitCache, StoreModel
from contextgraph.storage.codec import decode_fingerprint, encode_fingerprint
from contextgraph.utl import calibration as cal
from contextgraph.utl import delta_s as ds
from contextgraph.utl import transe

FILE_NAME = "store_model.npz"
TRANSLATIONS_FILE = "transe.npz"  # beside it: TransE's translations of the stored triples (E11)
FORMAT = 1
_OPLOG_CHUNK = 4096
_SCAN_LIMIT = 4 * _OPLOG_CHUNK  # oplog entries read after the fit at most (~0.1 s) before calling it stale
_log = get_logger("engine")
T = TypeVar("T")


class SavedModel:
    """Where one DeltaScComputer keeps its full fits between runs: `path` (set by the store handle when it opens
    a store; None keeps nothing, as in tests that build a computer alone)."""

    def __init__(self, constitution: Mapping[str, Any]) -> None:
        self.path: Path | None = None
        self._constitution = constitution
        self._lock = threading.Lock()
        self._tried: set[str] = set()  # what was looked for on disk already: once per process each

    def adopt(self, cache: RefitCache, store: Any, by_space: Mapping[int, Any], deletions: int) -> None:
        """Once per process: the saved model of this store into `cache`, at the refit stamp it stands at ((count,
        deletions, quick), as DeltaScComputer.model stamps its fits): a deletion since it was fitted makes it
        stale at once, so it serves while the background refit runs, as a running process's model would."""
        path = self.path
        if path is None or not self._first_look("model"):
            return
        loaded = load(path, fit_key(self._constitution, by_space), getattr(store, "store_id", None),
                      store.last_seq())
        if loaded is None:
            return
        model, fitted_seq = loaded
        cache.seed("model", model, (model.count, -1 if _deleted_since(store, fitted_seq) else deletions, False))
        _log.info("saved store model adopted", fitted_on=model.count, memories=store.count())

    def keep(self, store: Any, by_space: Mapping[int, Any], fit: Callable[[], StoreModel]) -> StoreModel:
        """`fit()` (a full fit), saved for the next process. A failed save is logged: the model still serves."""
        key = fit_key(self._constitution, by_space)

        def write(path: Path, model: StoreModel, store_id: str | None, seq: int) -> None:
            if not model.quick:  # a quick fit is the first caller's stopgap, refitted in full at once
                save(path, model, key, store_id, seq)

        return self._kept(store, fit, write)

    def adopt_translations(self, cache: RefitCache, store: Any, deletions: int, min_examples: int) -> None:
        """Once per process: the kept TransE translations into `cache`, at the stamp TranslationFits gives its fits
        ((stored triples, deletions)): a store with many triples otherwise scanned them all in its first caller."""
        path = self.path
        if path is None or not self._first_look("translations"):
            return
        loaded = load_translations(path.with_name(TRANSLATIONS_FILE), _translations_key(min_examples),
                                   getattr(store, "store_id", None), store.last_seq())
        if loaded is not None:
            fitted, triples, fitted_seq = loaded
            cache.seed("E11", fitted, (triples, -1 if _deleted_since(store, fitted_seq) else deletions))

    def keep_translations(self, store: Any, triples: int,
                          fit: Callable[[], transe.Translations]) -> transe.Translations:
        """`fit()` of the `triples` stored triples, kept for the next process (a failed save is logged)."""
        return self._kept(store, fit, lambda path, fitted, store_id, seq: save_translations(
            path.with_name(TRANSLATIONS_FILE), fitted, triples, _translations_key(fitted.min_examples), store_id, seq))

    def _kept(self, store: Any, fit: Callable[[], T], write: Callable[[Path, T, str | None, int], None]) -> T:
        """`fit()`, then `write(path, fitted, store id, the store's last seq before the fit)` when a path is set:
        what is deleted while the fit runs counts as after it. A failed write is logged; the fit still serves."""
        seq = store.last_seq()
        fitted = fit()
        if self.path is not None:
            try:
                write(self.path, fitted, getattr(store, "store_id", None), seq)
            except Exception as exc:
                _log.warning("fitted model not kept", path=str(self.path), error=str(exc))
        return fitted

    def _first_look(self, what: str) -> bool:
        with self._lock:
            first = what not in self._tried
            self._tried.add(what)
            return first


def _translations_key(min_examples: int) -> str:
    return hashlib.sha256(json.dumps({"format": FORMAT, "transe_min_examples": min_examples}).encode()).hexdigest()


def _deleted_since(store: Any, seq: int) -> bool:
    """Whether the store deleted a memory after `seq`, or changed so much since (puts and the E8 rewrites that follow
    them) that a refit is due anyway: the scan runs in the first UTL's caller, so it stops at _SCAN_LIMIT entries."""
    scanned = 0
    while entries := store.oplog_since(seq, limit=_OPLOG_CHUNK):
        scanned += len(entries)
        if scanned > _SCAN_LIMIT or any(e.op == "delete" for e in entries):
            return True
        seq = entries[-1].seq
    return False


def fit_key(constitution: Mapping[str, Any], embedders: Mapping[int, Any]) -> str:
    """What a model's fit depends on besides the store: the UTL settings, the neighbourhood's df cut and each
    embedder's method (a new code model for E7 makes new E7 vectors)."""
    basis = {"format": FORMAT, "utl": constitution["utl"],
             "sparse_max_df": constitution["retrieval"]["sparse_max_df"],
             "embedders": {str(space): str(getattr(e, "method", type(e).__name__))
                           for space, e in sorted(embedders.items())}}
    return hashlib.sha256(json.dumps(basis, sort_keys=True, default=str).encode()).hexdigest()


def save(path: Path, model: StoreModel, key: str, store_id: str | None, last_seq: int) -> None:
    """Write `model` (a full fit of the store `store_id` as of `last_seq`) to `path`, atomically."""
    arrays: dict[str, Any] = {}  # name → array (Any: np.savez's other keywords are not array names)
    header: dict[str, Any] = {"format": FORMAT, "key": key, "store_id": store_id, "last_seq": int(last_seq),
                              "count": model.count, "loo_samples": model.loo_samples}
    header["gaussian"] = {}
    for sid, fit in model.gaussian.items():
        arrays.update({f"g{sid}_mean": fit.mean, f"g{sid}_components": fit.components,
                       f"g{sid}_variances": fit.variances})
        header["gaussian"][str(sid)] = [float(fit.residual_variance), int(fit.samples), float(fit.shrinkage)]
    header["idf"] = {}
    for sid, (terms, values, unseen) in model.idf.items():
        arrays.update({f"idf{sid}_terms": terms, f"idf{sid}_values": values})
        header["idf"][str(sid)] = float(unseen)
    header["calibration"] = {k: [c.location, c.slope, c.samples] for k, c in model.calibration.items()}
    header["coherence"] = list(model.coherence)
    arrays.update({f"coh{i}": v for i, v in enumerate(model.coherence.values())})
    _put_fingerprints(arrays, "reference", model.reference)
    clusters = model.clusters
    if clusters is not None:
        arrays["centroids"] = clusters.centroids
        arrays.update({f"sep{sid}": v for sid, v in clusters.separation.items()})
        _put_fingerprints(arrays, "prototypes", [fp for fps in clusters.fingerprints for fp in fps])
        header["clusters"] = {"members": clusters.members, "separation": [str(s) for s in clusters.separation],
                              "baseline": {str(s): float(v) for s, v in clusters.baseline.items()}}
    _write(path, arrays, header)


def load(path: Path, key: str, store_id: str | None, last_seq: int) -> tuple[StoreModel, int] | None:
    """The model saved at `path` and the store's last sequence number when it was fitted, if it was fitted with
    `key` on this store (`store_id`, not ahead of its `last_seq`); None otherwise, or when unreadable."""
    read = _read(path, key, store_id, last_seq)
    return None if read is None else (_model(*read), int(read[0]["last_seq"]))


def save_translations(path: Path, fitted: transe.Translations, triples: int, key: str, store_id: str | None,
                      last_seq: int) -> None:
    """Write TransE's translations, fitted on `triples` stored triples, as `save` writes the store model."""
    relations = sorted(fitted.counts)
    header = {"format": FORMAT, "key": key, "store_id": store_id, "last_seq": int(last_seq), "triples": triples,
              "min_examples": fitted.min_examples, "relations": relations,
              "counts": [fitted.counts[r] for r in relations], "squares": [fitted.squares[r] for r in relations]}
    _write(path, {f"sum{i}": fitted.sums[r] for i, r in enumerate(relations)}, header)


def load_translations(path: Path, key: str, store_id: str | None,
                      last_seq: int) -> tuple[transe.Translations, int, int] | None:
    """(translations, the stored triples they were fitted on, the store's last seq then), as `load` reads."""
    read = _read(path, key, store_id, last_seq)
    if read is None:
        return None
    header, data = read
    relations = header["relations"]
    fitted = transe.from_sums({r: data[f"sum{i}"] for i, r in enumerate(relations)},
                              dict(zip(relations, header["squares"])), dict(zip(relations, header["counts"])),
                              int(header["min_examples"]))
    return fitted, int(header["triples"]), int(header["last_seq"])


def header_of(path: Path) -> dict[str, Any]:
    """The JSON header of a kept fit, for `contextgraph doctor`; raises when the file cannot be read."""
    with np.load(path, allow_pickle=False) as data:
        return _header(data)


def _header(data: Any) -> dict[str, Any]:
    return json.loads(bytes(data["header"]).decode())


def _write(path: Path, arrays: dict[str, Any], header: dict[str, Any]) -> None:
    """One .npz of `arrays` and the JSON `header`, written beside `path` and renamed onto it."""
    arrays = {**arrays, "header": np.frombuffer(json.dumps(header).encode(), dtype=np.uint8)}
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.stem}-", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            np.savez(f, **arrays)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _read(path: Path, key: str, store_id: str | None, last_seq: int) -> tuple[dict[str, Any], dict[str, Any]] | None:
    """(header, arrays) of the file at `path` if it was written in this format with `key` for this store, not
    ahead of its `last_seq`; None otherwise, or when unreadable (logged)."""
    if not path.is_file():
        return None
    try:
        with np.load(path, allow_pickle=False) as data:
            header = _header(data)
            if (header.get("format") != FORMAT or header.get("key") != key or header.get("store_id") != store_id
                    or int(header["last_seq"]) > last_seq):
                return None
            return header, {name: data[name] for name in data.files if name != "header"}
    except Exception as exc:  # a cache: a damaged or foreign file means a fit, as if there were none
        _log.warning("saved fit ignored", path=str(path), error=str(exc))
        return None


def _model(header: Mapping[str, Any], data: Any) -> StoreModel:
    gaussian = {int(sid): ds.GaussianFit(data[f"g{sid}_mean"], data[f"g{sid}_components"], data[f"g{sid}_variances"],
                                         residual, samples, shrinkage)
                for sid, (residual, samples, shrinkage) in header["gaussian"].items()}
    idf = {int(sid): (data[f"idf{sid}_terms"], data[f"idf{sid}_values"], unseen)
           for sid, unseen in header["idf"].items()}
    calibration = {k: cal.Calibration(location, slope, samples)
                   for k, (location, slope, samples) in header["calibration"].items()}
    coherence = {k: data[f"coh{i}"] for i, k in enumerate(header["coherence"])}
    clusters = None
    if (shape := header.get("clusters")) is not None:
        flat = _get_fingerprints(data, "prototypes")
        fingerprints, at = [], 0
        for members in shape["members"]:
            fingerprints.append(flat[at:at + len(members)])
            at += len(members)
        clusters = Clusters(data["centroids"], [list(m) for m in shape["members"]], fingerprints,
                            {int(s): data[f"sep{s}"] for s in shape["separation"]},
                            {int(s): v for s, v in shape["baseline"].items()})
    return StoreModel(int(header["count"]), gaussian, idf, clusters, calibration, int(header["loo_samples"]),
                      quick=False, reference=tuple(_get_fingerprints(data, "reference")), coherence=coherence)


def _put_fingerprints(arrays: dict[str, np.ndarray], name: str, fingerprints: Sequence[Fingerprint]) -> None:
    blobs = [encode_fingerprint(fp) for fp in fingerprints]
    arrays[f"{name}_blobs"] = np.frombuffer(b"".join(blobs), dtype=np.uint8)
    arrays[f"{name}_ends"] = np.cumsum([len(b) for b in blobs], dtype=np.int64)


def _get_fingerprints(data: Any, name: str) -> list[Fingerprint]:
    blobs, ends = data[f"{name}_blobs"].tobytes(), data[f"{name}_ends"].tolist()
    return [decode_fingerprint(blobs[a:b], copy=True) for a, b in zip([0, *ends[:-1]], ends)]
