"""`contextgraph import FILE.jsonl` and `contextgraph export [--out FILE]`: a corpus in and out of a data
directory, in this process (the use-case is services.bulk_import).

A line is one JSON object with `content` and optionally `rationale`, `tags`, `importance`, `modality` and
`created_at` (unix seconds or an ISO 8601 time). It is held to store_memory's own argument model (StoreArgs:
the same bounds, types and modalities, the same messages), its tags redacted as the dispatcher redacts free text
and its content and rationale as the store does; a line without a rationale gets "imported from FILE". A line
that fails is reported on stderr by its number and skipped; blank lines are skipped silently. Exit status: 0
when every line was stored (or already was), 1 when some line was refused or the file cannot be read."""

from __future__ import annotations

import hashlib
import json
import os
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from pydantic import ValidationError

from contextgraph.config import Settings
from contextgraph.errors import ContextGraphError
from contextgraph.security.free_text import redact_arguments
from contextgraph.services.memory.bulk_import import (
    EXPORT_FIELDS,
    BatchEmbedder,
    BulkImporter,
    ImportLine,
    export_lines,
    valid_created_at,
)
from contextgraph.services.memory.memory_payloads import NewMemory
from contextgraph.storage.maintenance import ProgressBar
from contextgraph.tools.core import StoreArgs
from contextgraph.tools.validation import invalid_params

DEFAULT_BATCH = 32  # the backbone's own forward batch: one forward per import batch
_ALLOWED = frozenset(EXPORT_FIELDS)


@dataclass
class ImportReport:
    file: str
    sha256: str
    session: str = ""
    lines: int = 0
    stored: int = 0
    already_imported: int = 0  # lines at or before the resume point
    refused: list[tuple[int, str]] = field(default_factory=list)
    edges: int = 0
    seconds: float = 0.0

    def summary(self) -> dict[str, Any]:
        return {"file": self.file, "sha256": self.sha256, "session": self.session, "lines": self.lines,
                "stored": self.stored, "already_imported": self.already_imported, "refused": len(self.refused),
                "edges": self.edges, "seconds": round(self.seconds, 3),
                "memories_per_second": round(self.stored / self.seconds, 2) if self.seconds else None}


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def parse_line(raw: str, number: int, source: str, now: float) -> ImportLine:
    """One line → ImportLine, or ValueError with a model-readable reason (what was wrong, what is allowed)."""
    try:
        data = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise ValueError(f"not JSON ({exc.msg} at column {exc.colno})") from None
    if not isinstance(data, dict):
        raise ValueError(f"a line must be one JSON object, got {type(data).__name__}")
    unknown = sorted(set(data) - _ALLOWED)
    if unknown:
        raise ValueError(f"unknown field(s) {', '.join(unknown)}; allowed: {', '.join(EXPORT_FIELDS)}")
    created_at = data.pop("created_at", None)
    if created_at is not None:
        created_at = valid_created_at(created_at, now)
    if "rationale" not in data or data["rationale"] is None:
        data["rationale"] = f"imported from {source}"
    try:
        args = StoreArgs.model_validate(data)
    except ValidationError as exc:
        raise ValueError(invalid_params("store_memory", exc, StoreArgs.model_json_schema()).message) from None
    redacted, _found = redact_arguments(args)  # tags: free text, redacted before anything keeps them
    assert isinstance(redacted, StoreArgs)
    tags = tuple(dict.fromkeys(t.strip() for t in redacted.tags if t.strip()))
    memory = NewMemory(content=redacted.content, rationale=redacted.rationale, modality=redacted.modality,
                       importance=redacted.importance, tags=tags)
    return ImportLine(number, memory, created_at)


def count_lines(path: Path) -> int:
    with path.open("rb") as f:
        return sum(1 for _ in f)


async def import_file(app: Any, path: Path, *, batch_size: int = DEFAULT_BATCH,
                      errors: TextIO | None = None, progress: ProgressBar | None = None,
                      embedder: BatchEmbedder | None = None) -> ImportReport:
    """Import `path` into `app`'s data directory, resuming after the lines an earlier run committed; `embedder`
    (a PipelinePool) fingerprints the batches in worker processes instead of the app's own pipeline."""
    errors = errors or sys.stderr
    started = time.perf_counter()
    report = ImportReport(str(path), file_sha256(path))
    importer = BulkImporter(app.services.memory, report.sha256, path.name, embedder)
    report.session = importer.session
    resume = await importer.resume_line()
    total = count_lines(path)
    batch: list[ImportLine] = []
    now = time.time()

    async def flush() -> None:
        if batch:
            result = await importer.import_batch(batch)
            report.stored += len(result.stored)
            report.edges += result.edges
            batch.clear()

    for number, raw in _numbered_lines(path):
        report.lines = number
        if number <= resume:
            report.already_imported += 1
        elif raw.strip():
            try:
                batch.append(parse_line(raw, number, path.name, now))
            except ValueError as exc:
                report.refused.append((number, str(exc)))
                print(f"{path.name}: line {number} skipped: {exc}", file=errors)
            if len(batch) >= batch_size:
                await flush()
        if progress is not None and not batch and number < total:
            progress(number, total)  # after each commit (and while skipping): what the bar shows is stored
    await flush()
    if progress is not None:
        progress(total, total)
    report.seconds = time.perf_counter() - started
    return report


def _numbered_lines(path: Path) -> Iterator[tuple[int, str]]:
    with path.open("r", encoding="utf-8", errors="strict", newline="\n") as f:
        yield from enumerate(f, start=1)


def export_store(app: Any, out: TextIO, progress: ProgressBar | None = None) -> int:
    """Write every live memory as one import line to `out`, in the store's order; returns how many."""
    store = app.services.storage.store
    total = store.count()
    written = 0
    for line in export_lines(record for record, _ in store.scan(spaces=())):
        out.write(json.dumps(line, ensure_ascii=False) + "\n")
        written += 1
        if progress is not None and written < total:
            progress(written, total)
    if progress is not None:
        progress(total, total)
    return written


def run_import(settings: Settings, path: Path, batch_size: int, workers: int = 1) -> int:
    """`contextgraph import`: with workers > 1 the batches are fingerprinted by that many worker processes, each
    with its own copy of the pipeline (on a GPU, its own CUDA context), while this process scores and commits."""
    import contextlib
    from concurrent.futures.process import BrokenProcessPool

    import anyio

    from contextgraph.app import build_app
    from contextgraph.embedders.parallel import PipelinePool, PipelineSpec

    if not path.is_file():
        print(f"contextgraph import: {path} is not a file", file=sys.stderr)
        return 1
    app = build_app(settings)
    try:
        with contextlib.ExitStack() as stack:
            pool = None
            if workers > 1:
                pool = stack.enter_context(PipelinePool(PipelineSpec.from_settings(settings), workers)).start()
            report = anyio.run(lambda: import_file(app, path, batch_size=batch_size, embedder=pool,
                                                   progress=ProgressBar(f"import {path.name}")))
    except UnicodeDecodeError as exc:
        print(f"contextgraph import: {path} is not UTF-8 text ({exc}); lines before it were imported and a rerun "
              "resumes after them", file=sys.stderr)
        return 1
    except ContextGraphError as exc:
        print(f"contextgraph import: {exc.message} (a rerun resumes after the last committed line)", file=sys.stderr)
        return 1
    except BrokenProcessPool as exc:  # a worker could not load the model, or died (out of memory, killed)
        print(f"contextgraph import: an embedding worker failed ({exc}); try fewer --workers. A rerun resumes after "
              "the last committed line", file=sys.stderr)
        return 1
    finally:
        app.close()
    print(json.dumps(report.summary()))
    return 1 if report.refused else 0


def run_export(settings: Settings, out: Path | None) -> int:
    from contextgraph.app import build_app
    from contextgraph.config import store_location
    from contextgraph.storage.maintenance import STORE_DIR

    backend, where = store_location(settings.store_url, settings.home)
    if backend == "lmdb" and not (Path(where) / STORE_DIR).is_dir():  # not create an empty store to export it
        print(f"contextgraph export: no store in {where}; nothing to export", file=sys.stderr)
        return 1
    app = build_app(settings)
    try:
        count = _export_to(app, out)
    except ContextGraphError as exc:  # a damaged store: say what and what to do, never a traceback
        print(f"contextgraph export: {exc.message}", file=sys.stderr)
        return 1
    finally:
        app.close()
    print(f"exported {count} memories" + (f" to {out}" if out else ""), file=sys.stderr)
    return 0


def _export_to(app: Any, out: Path | None) -> int:
    """Export to stdout, or into a temporary file beside `out` renamed when complete: never half a file."""
    if out is None:
        return export_store(app, sys.stdout)
    fd, tmp = tempfile.mkstemp(prefix=f".{out.name}.", dir=out.parent or Path("."))
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            count = export_store(app, f, ProgressBar(f"export {out.name}"))
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, out)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return count
