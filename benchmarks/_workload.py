"""Shared workload for the memory benchmarks: settings with a reusable model cache, realistic texts taken from
the Python standard library on this machine, (query, document) pairs for retrieval quality, and a fast way to
fill a store.

Not a test module; nothing here is collected by pytest (testpaths = ["tests"]).

Texts come from the CPython standard library that the venv's interpreter was built from (`sysconfig`'s stdlib
path; `/root/.pyenv/versions/3.11.7/lib/python3.11` here), walked in sorted order with `ast`, so every run on
this machine sees the same corpus. Directories named test/tests/idle_test and site-packages are skipped.

Fast fill (`fill_store`): the memories' fingerprints are computed by the real pipeline, in batches of up to
`BATCH` texts per `pipeline.embed` call (one forward per 32 texts, the backbone's own batching), each with a
`Draft` whose timestamp and positions are what `store_memory` would have given it had it been stored at that
moment; then `store.put` (one synced LMDB transaction per memory, the same call `MemoryService` makes) and,
instead of `indexes.apply` per memory, one `indexes.catch_up()` per batch: the oplog path a second server process
(or a restart) takes, which adds the batch to every index in one call per index (hnswlib in parallel). The
stored bytes and the index contents are the same as through `store_memory`; only the index insertion is batched.
"""

from __future__ import annotations

import ast
import os
import random
import re
import sysconfig
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Self

import numpy as np

BENCH_DIR = Path(__file__).resolve().parent
DEFAULT_MODEL_CACHE = BENCH_DIR / "results" / "model-cache"  # gitignored; the ONNX export happens once per machine
STDLIB = Path(sysconfig.get_paths()["stdlib"])
_SKIP_DIRS = {"test", "tests", "idle_test", "site-packages", "__pycache__"}
BATCH = 256  # drafts per pipeline.embed call while filling


def bench_settings(home: Path | str, *, int8: bool | None = None, log_level: str = "error", **env: str) -> Any:
    """Settings for a benchmark app: data in `home`, the ONNX graph from CONTEXTGRAPH_MODEL_CACHE when set, else
    from benchmarks/results/model-cache (exported there on first use, ~10 s)."""
    from contextgraph.config import Settings

    cache = os.environ.get("CONTEXTGRAPH_MODEL_CACHE") or str(DEFAULT_MODEL_CACHE)
    values = {"CONTEXTGRAPH_HOME": str(home), "CONTEXTGRAPH_MODEL_CACHE": cache,
              "CONTEXTGRAPH_LOG_LEVEL": log_level, **env}
    if int8 is not None:  # else the environment's, or the server's default (int8)
        values["CONTEXTGRAPH_INT8"] = "1" if int8 else "0"
    # the model settings from the environment: E7's encoder (compare "shared", before it, with the default), and
    # a lent GPU's (benchmarks/device_gpu.sh server: the model directory, the device), the int8 graph
    for key in ("CONTEXTGRAPH_CODE_MODEL", "CONTEXTGRAPH_MODEL_DIR", "CONTEXTGRAPH_DEVICE", "CONTEXTGRAPH_RUNTIME",
                "CONTEXTGRAPH_INT8"):
        if os.environ.get(key):
            values.setdefault(key, os.environ[key])
    return Settings.from_env(values)


def open_services(home: Path | str) -> tuple[Any, Any]:
    """(services, pipeline) on the data directory `home`, opened as the server opens it: BLAS limited to the
    server's threads first (a multi-threaded BLAS call stalls on two busy cores), the store and indexes open."""
    import anyio
    from threadpoolctl import threadpool_limits

    from contextgraph import log
    from contextgraph.app import build_services
    from contextgraph.constitution import constitution

    threadpool_limits(limits=int(constitution().get("server.blas_threads")), user_api="blas")
    services = build_services(bench_settings(home), constitution(), log.LogRing(100))
    services.storage.open()
    return services, anyio.run(services.perception.pipeline)


def fit_store_model(services: Any, pipeline: Any) -> None:
    """The ΔS/ΔC store model fitted to the store as it is now. The fit runs in the background: start it, wait,
    and once more, as a server that has been running a while would have it."""
    handle, by_space = services.storage, {e.space: e for e in pipeline.embedders}
    for _ in range(2):
        handle.delta_sc.model(handle.store, handle.indexes, by_space)
        handle.delta_sc.wait()


def random_stored(store: Any, rng: random.Random) -> tuple[int, Any]:
    """(seq, fingerprint) of a random live memory of `store`."""
    last = store.last_seq()
    while True:
        seq = rng.randint(1, last)
        (fp,) = store.fingerprints([seq])
        if fp is not None:
            return seq, fp


def rss_mb() -> float:
    """Resident set size of this process now (VmRSS), in MiB."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def dir_bytes(path: Path | str) -> dict[str, int]:
    """Apparent size (st_size) and allocated size (st_blocks × 512) of every file under `path`."""
    apparent = allocated = 0
    for dirpath, _dirs, files in os.walk(path):
        for name in files:
            st = os.stat(os.path.join(dirpath, name))
            apparent += st.st_size
            allocated += st.st_blocks * 512
    return {"apparent": apparent, "allocated": allocated}


# --- the standard library as a corpus -------------------------------------------------------------------------

def stdlib_files(root: Path = STDLIB, skip: frozenset[str] | set[str] = _SKIP_DIRS) -> list[Path]:
    """Every .py file under `root` in sorted order, leaving out directories named in `skip`."""
    out: list[Path] = []
    for dirpath, dirs, files in os.walk(root):
        parts = Path(dirpath).relative_to(root).parts
        if any(p in skip for p in parts):
            dirs[:] = []
            continue
        dirs.sort()
        out += [Path(dirpath) / f for f in sorted(files) if f.endswith(".py")]
    return out


def _parse(path: Path) -> tuple[str, ast.Module] | None:
    try:
        source = path.read_text(encoding="utf-8")
        return source, ast.parse(source)
    except (SyntaxError, UnicodeDecodeError, ValueError):
        return None


_ABBREV = re.compile(r"\b(e\.g|i\.e|etc|vs|cf|resp|approx|Mr|Dr|No)\.$", re.IGNORECASE)


def first_sentence(docstring: str) -> str:
    """The docstring's first sentence: its first paragraph with whitespace collapsed, cut after the first '.',
    '!' or '?' that is followed by a space or the end (not after e.g./i.e./etc.)."""
    paragraph = re.split(r"\n\s*\n", docstring.strip(), maxsplit=1)[0]
    text = " ".join(paragraph.split())
    for m in re.finditer(r"[.!?](?=\s|$)", text):
        head = text[: m.end()]
        if not _ABBREV.search(head):
            return head
    return text


@dataclass(frozen=True, slots=True)
class Pair:
    query: str  # first sentence of the docstring
    document: str  # the function's source without its docstring (dedented)
    where: str  # module path relative to the stdlib root, and line


def function_pairs(min_body_lines: int = 3, min_query_words: int = 3, root: Path = STDLIB,
                   skip: frozenset[str] | set[str] = _SKIP_DIRS) -> list[Pair]:
    """Every eligible (first docstring sentence, function source without the docstring) pair under `root` (the
    stdlib by default, or a third-party package's directory), in file/line order. Skipped: functions without a
    docstring, bodies of fewer than `min_body_lines` non-blank lines besides the docstring, queries of fewer than
    `min_query_words` words, a query seen before (the first pair keeps it, so each query has exactly one relevant
    document) and a document seen before (same text)."""
    pairs: list[Pair] = []
    seen_q: set[str] = set()
    seen_d: set[str] = set()
    for path in stdlib_files(root, skip):
        parsed = _parse(path)
        if parsed is None:
            continue
        source, tree = parsed
        lines = source.splitlines()
        nodes = [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
        nodes.sort(key=lambda n: n.lineno)
        for node in nodes:
            doc = ast.get_docstring(node)
            if not doc or len(node.body) < 2:
                continue
            expr = node.body[0]
            body_lines = [ln for ln in lines[node.body[1].lineno - 1 : node.end_lineno] if ln.strip()]
            if len(body_lines) < min_body_lines:
                continue
            start = node.lineno  # the `def` line (decorators are left out, as get_source_segment does)
            kept = [ln for i, ln in enumerate(lines[start - 1 : node.end_lineno], start)
                    if not (expr.lineno <= i <= expr.end_lineno)]
            document = _dedent("\n".join(kept)).strip("\n")
            query = first_sentence(doc)
            if len(query.split()) < min_query_words or len(query) > 4096 or len(document) > 65536:
                continue
            q_key = query.lower()
            d_key = " ".join(document.split())
            if q_key in seen_q or d_key in seen_d:
                continue
            seen_q.add(q_key)
            seen_d.add(d_key)
            pairs.append(Pair(query, document, f"{path.relative_to(root)}:{node.lineno}"))
    return pairs


def _dedent(text: str) -> str:
    import textwrap

    return textwrap.dedent(text)


def sample_pairs(n: int, seed: int) -> tuple[list[Pair], int]:
    """A seeded sample of n pairs (all when fewer), in corpus order; also the number eligible."""
    pairs = function_pairs()
    if n >= len(pairs):
        return pairs, len(pairs)
    chosen = sorted(random.Random(seed).sample(range(len(pairs)), n))
    return [pairs[i] for i in chosen], len(pairs)


def realistic_texts(seed: int = 7) -> Iterator[tuple[str, str]]:
    """An endless stream of distinct (text, modality) memories, roughly like what an agent stores:
    first every docstring paragraph of the stdlib (text), interleaved with function sources cut to at most 40
    lines (code); then, forever, notes of 1-3 random docstring sentences (text). Each text is yielded once."""
    paragraphs: list[str] = []
    sources: list[str] = []
    sentences: list[str] = []
    for path in stdlib_files():
        parsed = _parse(path)
        if parsed is None:
            continue
        source, tree = parsed
        lines = source.splitlines()
        for node in ast.walk(tree):
            if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Module)):
                continue
            doc = ast.get_docstring(node)
            if doc:
                for para in re.split(r"\n\s*\n", doc):
                    para = " ".join(para.split())
                    if len(para.split()) >= 4:
                        paragraphs.append(para)
                        sentences += [s for s in re.split(r"(?<=[.!?])\s+", para) if len(s.split()) >= 4]
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                body = lines[node.lineno - 1 : min(node.end_lineno, node.lineno + 39)]
                if len(body) >= 3:
                    sources.append(_dedent("\n".join(body)))
    rng = random.Random(seed)
    seen: set[str] = set()

    def fresh(text: str) -> bool:
        key = " ".join(text.split())
        if key in seen or not key:
            return False
        seen.add(key)
        return True

    for i in range(max(len(paragraphs), len(sources))):
        if i < len(paragraphs) and fresh(paragraphs[i]):
            yield paragraphs[i], "text"
        if i < len(sources) and fresh(sources[i]):
            yield sources[i], "code"
    while True:
        note = " ".join(rng.choice(sentences) for _ in range(rng.randint(1, 3)))
        if fresh(note):
            yield note, "text"


# --- filling a store fast -------------------------------------------------------------------------------------

@dataclass
class FillReport:
    memories: int
    embed_s: float
    put_s: float
    index_s: float
    wall_s: float


def fill_store(
    storage: Any,
    pipeline: Any,
    items: Sequence[tuple[str, str]],
    *,
    start_time: float,
    spacing_s: float = 60.0,
    session: str = "bench-fill",
    rationale: str = "benchmark fill: realistic text from the standard library",
    fingerprints: Callable[[int, list[Any]], list[dict]] | None = None,
    progress: Callable[[int, int], None] | None = None,
    batched_puts: bool = False,
) -> FillReport:
    """Store `items` (text, modality) in `storage` (a StoreHandle) in batches: pipeline.embed, store.put per
    memory, one indexes.catch_up per batch. Memory i is dated start_time + i·spacing_s. `fingerprints`, when
    given, replaces pipeline.embed: fingerprints(offset of the batch in items, drafts) → fingerprints (used to
    reuse computed fingerprints; see bench_memory_ops). `batched_puts`: one write transaction per batch
    (restore_memory, as the bulk import commits: the same records, fingerprints and oplog puts, without the
    per-put sync, the temporal edge between consecutive memories and the session counter) instead of one synced
    store.put per memory: what makes a 1M fill take hours less; search and the indexes see the same data."""
    import uuid

    from contextgraph.embedders.pipeline import Draft
    from contextgraph.storage.base import MemoryRecord

    storage.open()
    store, indexes = storage.store, storage.indexes
    embed_s = put_s = index_s = 0.0
    wall = time.perf_counter()
    base_seq = store.last_seq()
    session_base = store.session_count(session)
    done = 0
    for lo in range(0, len(items), BATCH):
        chunk = items[lo : lo + BATCH]
        drafts = [
            Draft(text=text, modality=modality, timestamp=start_time + (lo + i) * spacing_s,
                  session_position=session_base + lo + i, global_position=base_seq + lo + i + 1)
            for i, (text, modality) in enumerate(chunk)
        ]
        t0 = time.perf_counter()
        fps = fingerprints(lo, drafts) if fingerprints is not None else pipeline.embed(drafts)
        t1 = time.perf_counter()
        records = [MemoryRecord(
            id=uuid.uuid4().hex, content=draft.text, rationale=rationale, modality=draft.modality,
            session=session, created_at=draft.timestamp, updated_at=draft.timestamp,
            session_position=draft.session_position,
        ) for draft in drafts]
        if batched_puts:
            from contextgraph.storage.codec import encode_fingerprint

            blobs = [encode_fingerprint(fp) for fp in fps]
            store.graph_write(lambda g, records=records, blobs=blobs: [g.restore_memory(r, b)
                                                                       for r, b in zip(records, blobs)])
        else:
            for record, fp in zip(records, fps):
                store.put(record, fp)
        t2 = time.perf_counter()
        indexes.catch_up(store)
        t3 = time.perf_counter()
        embed_s += t1 - t0
        put_s += t2 - t1
        index_s += t3 - t2
        done += len(chunk)
        if progress:
            progress(done, len(items))
    _record_spaces(store, pipeline)
    return FillReport(done, embed_s, put_s, index_s, time.perf_counter() - wall)


def _record_spaces(store: Any, pipeline: Any) -> None:
    """Say which method made the filled memories' E7, as a server's first store does: without the record, the
    first server on the store would re-embed every memory in the background (services/runtime/space_refresh) and a
    benchmark would time that too. (Cached fingerprints carry the current E7: _corpora.current_e7.)"""
    from contextgraph.services.runtime.space_refresh import DOC, SPACES

    if hasattr(pipeline, "method"):
        doc = store.get_document(DOC) or {}
        doc.setdefault("spaces", {}).update({str(space): pipeline.method(space) for space in SPACES})
        store.put_document(DOC, doc)


def percentile(values: Sequence[float], q: float) -> float:
    return float(np.percentile(np.asarray(values, dtype=np.float64), q)) if len(values) else float("nan")


# --- OpenBLAS threads (numpy's BLAS) --------------------------------------------------------------------------

def _openblas_libs() -> list[Any]:
    import ctypes

    import numpy  # noqa: F401  (loads its OpenBLAS)

    libs = []
    with open("/proc/self/maps") as f:
        paths = sorted({line.split()[-1] for line in f if "openblas" in line and line.split()[-1].startswith("/")})
    for path in paths:
        lib = ctypes.CDLL(path)
        for setter, getter in (("scipy_openblas_set_num_threads64_", "scipy_openblas_get_num_threads64_"),
                               ("openblas_set_num_threads64_", "openblas_get_num_threads64_"),
                               ("openblas_set_num_threads", "openblas_get_num_threads")):
            if hasattr(lib, setter) and hasattr(lib, getter):
                libs.append((path, getattr(lib, setter), getattr(lib, getter)))
                break
    return libs


def blas_threads(n: int | None = None) -> int | None:
    """numpy's OpenBLAS thread count; with `n`, set it first (at run time, like threadpoolctl). None when numpy
    is not linked against an OpenBLAS this can find."""
    import ctypes

    libs = _openblas_libs()
    if not libs:
        return None
    for _path, setter, _getter in libs:
        if n is not None:
            setter.argtypes = [ctypes.c_int]
            setter(int(n))
    getter = libs[0][2]
    getter.restype = ctypes.c_int
    return int(getter())


class cpu_hogs:
    """Context manager: `n` busy-looping child processes (pure Python `while True: pass`), to measure under the
    kind of CPU contention a host (an agent, a build, a test run) puts on a 2-core machine. Each child is
    terminated, by its own pid, on exit."""

    def __init__(self, n: int) -> None:
        self.n = n
        self.procs: list[Any] = []

    def __enter__(self) -> Self:
        import subprocess
        import sys

        for _ in range(self.n):
            self.procs.append(subprocess.Popen([sys.executable, "-c", "while True: pass"]))
        time.sleep(0.3 if self.n else 0)
        return self

    def __exit__(self, *exc: object) -> None:
        import subprocess

        for p in self.procs:
            p.terminate()
        for p in self.procs:
            try:
                p.wait(5)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        self.procs = []
