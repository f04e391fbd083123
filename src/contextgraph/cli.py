"""Command line: argv → Settings → serve / call / hooks / tools / reindex / import / export / doctor. No logic of
its own; heavy imports happen inside the command that needs them, so `--help`, `tools` and `call` stay fast."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import NoReturn

from contextgraph import __version__


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="contextgraph",
        description="ContextGraph: a persistent, curated memory server for AI agents, spoken to over MCP.",
    )
    parser.add_argument("--version", action="version", version=f"contextgraph {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    def common(p: argparse.ArgumentParser) -> None:
        p.add_argument("--home", help="data directory (default $CONTEXTGRAPH_HOME or ~/.context-graph)")
        p.add_argument("--store-url", metavar="URL",
                       help="where the memories live (default $CONTEXTGRAPH_STORE_URL, else LMDB in the data "
                            "directory): postgresql://user:password@host:port/db (any libpq URI, unix sockets as "
                            "?host=/dir) for a shared PostgreSQL with pgvector, or lmdb:///path")
        p.add_argument("--profile", choices=("all", "core"),
                       help="tools listed at start: all, or core + curation + discovery (default "
                            "$CONTEXTGRAPH_PROFILE or all)")

    def network(p: argparse.ArgumentParser) -> None:
        p.add_argument("--host", help="address to bind or reach (default $CONTEXTGRAPH_HOST or 127.0.0.1; a "
                                      "non-loopback bind needs a token)")
        p.add_argument("--token", help="bearer token (default $CONTEXTGRAPH_TOKEN; prefer the variable: flags "
                                       "show in the process list)")

    def log_level(p: argparse.ArgumentParser, default: str) -> None:
        p.add_argument("--log-level", choices=("debug", "info", "warn", "error"),
                       help=f"stderr log level (default {default})")

    serve = commands.add_parser(
        "serve", help="run the MCP server", description="Run the MCP server. Every transport serves the same "
        "engine and store; `all` serves TCP and HTTP from one process.")
    serve.add_argument("--transport", choices=("stdio", "tcp", "http", "all"), default="stdio",
                       help="stdio: JSON-RPC on stdin/stdout (default); tcp: newline-delimited JSON-RPC, one "
                            "session per connection; http: /mcp (Streamable HTTP), /sse + /messages/ (legacy "
                            "SSE), /health; all: tcp and http")
    network(serve)
    serve.add_argument("--port", type=int, help="port of the chosen transport (tcp: default $CONTEXTGRAPH_PORT or "
                                                 "7878; http: default $CONTEXTGRAPH_HTTP_PORT or 7879; all: the "
                                                 "TCP port); 0 picks a free one")
    serve.add_argument("--http-port", type=int, help="HTTP port with --transport all (default "
                                                      "$CONTEXTGRAPH_HTTP_PORT or 7879)")
    serve.add_argument("--sse-heartbeat", type=float, metavar="SECONDS",
                       help="legacy SSE heartbeat interval (default $CONTEXTGRAPH_SSE_HEARTBEAT or 30)")
    log_level(serve, "$CONTEXTGRAPH_LOG_LEVEL or info")
    common(serve)

    call = commands.add_parser(
        "call", help="call one tool and print its payload",
        description="Call one tool and print its payload (pulse included) as JSON on stdout; exit 1 with the "
                    "error on stderr when it fails, 2 for usage errors. Uses the server listening on TCP at "
                    "--host/--port when one answers, otherwise runs the call in this process on the same "
                    "data directory.")
    call.add_argument("tool", help="tool name or alias (contextgraph tools lists them)")
    call.add_argument("arguments", nargs="?", default="{}", help="arguments as one JSON object (default {})")
    call.add_argument("--hook", action="store_true",
                      help="run as a Claude Code hook: read the hook's input JSON on stdin, derive the arguments "
                           "(explicit ones win), print Claude Code hook output; failures exit 1, never 2")
    network(call)
    call.add_argument("--port", type=int, help="TCP port of a running server (default $CONTEXTGRAPH_PORT or 7878)")
    log_level(call, "warn: only warnings and errors from an in-process call")
    common(call)

    hooks = commands.add_parser(
        "hooks", help="print (or install) a Claude Code hooks configuration",
        description="Print the Claude Code hooks that keep ContextGraph up to date (SessionStart: memories "
                    "relevant to the project, and the pulse; UserPromptSubmit: memories relevant to the prompt; "
                    "PostToolUse on Edit|Write|MultiEdit: store the change unless it is already stored). Hooks "
                    "use a server running on TCP (contextgraph serve --transport tcp) when one answers: much "
                    "faster than running in-process. With "
                    "--install, merge them into DIR/.claude/settings.json (default: the current directory), "
                    "showing the change and keeping every other setting.")
    hooks.add_argument("--install", nargs="?", const=".", metavar="DIR", help="project directory to install into")
    common(hooks)

    tools = commands.add_parser("tools", help="print the tool registry",
                                description="Print every registered tool: name, category, aliases, description.")
    common(tools)

    reindex = commands.add_parser("reindex", help="rebuild every index from the store",
                                  description="Rebuild every per-space index of the data directory from LMDB, "
                                              "the source of truth, with a progress bar; then save them.")
    common(reindex)

    importer = commands.add_parser(
        "import", help="import memories from a JSON Lines file",
        description="Store every line of FILE (one JSON object: content, and optionally rationale, tags, "
                    "importance, modality, created_at) as a memory, validated and PII-redacted as store_memory "
                    "does, in batches: one forward pass and one transaction per batch. A refused line is "
                    "reported by number on stderr and skipped; a rerun of the same file resumes after the last "
                    "committed line. Prints a JSON summary; exit 1 when some line was refused.")
    importer.add_argument("file", help="JSON Lines file (UTF-8)")
    importer.add_argument("--batch-size", type=int, default=32, metavar="N",
                          help="memories per forward pass and transaction (1-1024, default 32; 1 scores each "
                               "memory's UTL against every earlier one, as store_memory one by one does)")
    importer.add_argument("--workers", type=int, default=1, metavar="W",
                          help="processes that fingerprint each batch (1-64, default 1: in this process). Each "
                               "holds its own copy of the model: worth it with spare cores or a GPU "
                               "(CONTEXTGRAPH_DEVICE=cuda) and a --batch-size of at least 32 x W")
    common(importer)

    exporter = commands.add_parser(
        "export", help="export every memory as JSON Lines",
        description="Write every live memory as one JSON line (content, rationale, tags, importance, modality, "
                    "created_at): the format `contextgraph import` reads.")
    exporter.add_argument("--out", metavar="FILE", help="write to FILE (complete or not at all) instead of stdout")
    common(exporter)

    migrate = commands.add_parser(
        "migrate", help="copy an LMDB store into PostgreSQL",
        description="Copy an LMDB store (every memory, its seq and fingerprint bytes, the operation log, edges, "
                    "tombstones, lineage, the engine's state) into an empty PostgreSQL database, with a progress "
                    "bar on stderr. Resumable: run the same command again after an interruption. The counts are "
                    "verified at the end. Stop the servers writing to the source first.")
    migrate.add_argument("--from", dest="source", required=True, metavar="lmdb:///PATH",
                         help="the data directory holding the LMDB store (lmdb:///path, or a plain path)")
    migrate.add_argument("--to", dest="target", required=True, metavar="postgresql://…",
                         help="the PostgreSQL database (any libpq URI)")

    doctor = commands.add_parser("doctor", help="check the installation and data directory",
                                 description="Check data directory, model availability and package versions; "
                                             "print what is missing and how to fix it.")
    doctor.add_argument("--warm", action="store_true",
                        help="also load the embedding model (exporting its ONNX graph into the shared model cache "
                             "if needed: $CONTEXTGRAPH_MODEL_CACHE, else $XDG_CACHE_HOME/contextgraph/models or "
                             "~/.cache/contextgraph/models), embed one text and report the times")
    common(doctor)
    return parser


def _settings(args: argparse.Namespace, **overrides):
    from pathlib import Path

    from contextgraph.config import Settings

    flags = {
        "home": Path(args.home).expanduser() if args.home else None,
        "profile": args.profile,
        "log_level": getattr(args, "log_level", None),
        "transport": getattr(args, "transport", None),
        "host": getattr(args, "host", None),
        "token": getattr(args, "token", None),
        "port": getattr(args, "port", None),
        "http_port": getattr(args, "http_port", None),
        "sse_heartbeat_seconds": getattr(args, "sse_heartbeat", None),
        "store_url": getattr(args, "store_url", None),
    }
    if flags["transport"] == "http" and flags["port"] is not None:  # --port names the chosen transport's port
        flags["http_port"], flags["port"] = flags["port"], None
    return Settings.from_env(**{**flags, **overrides})


def _serve(args: argparse.Namespace) -> int:
    import anyio

    from contextgraph.app import build_app

    settings = _settings(args)
    if settings.auto_dream is None:  # a long-running server dreams on its own unless told not to
        from dataclasses import replace

        from contextgraph.constitution import constitution

        settings = replace(settings, auto_dream=bool(constitution().get("dream.auto.serve")))
    if settings.transport == "stdio":
        from contextgraph.transports.stdio import serve_stdio

        app = build_app(settings)
        try:
            anyio.run(_until_signalled, serve_stdio, app)
        except KeyboardInterrupt:  # before the signal handlers are installed; nothing was opened yet
            return 0
        _exit_now(0)
    from contextgraph.transports.network import serve_network, transports_of
    from contextgraph.transports.security import check_bind

    check_bind(settings)  # before anything is opened
    app = build_app(settings)

    failures: list[OSError] = []
    try:
        anyio.run(_until_signalled, serve_network, app, transports_of(settings.transport))
    except* OSError as group:  # e.g. the port is taken
        failures.extend(_leaves(group))
    for exc in failures:
        print(f"contextgraph: cannot listen on {settings.host}: {exc}", file=sys.stderr)
    if failures:
        return 1
    _exit_now(0)


async def _until_signalled(serve, *args) -> None:
    """Run `serve(*args)` until it returns or SIGINT/SIGTERM arrives, then cancel it: every serve function
    closes the App when cancelled (indexes and engine state saved). Both signals mean "stop cleanly": Claude
    Code sends SIGINT, then SIGTERM if the server is still there; a second signal, once the handlers are
    gone, stops the process the default way."""
    import signal

    import anyio

    async with anyio.create_task_group() as tg:
        async def stop_on_signal() -> None:
            with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
                async for signum in signals:
                    print(f"contextgraph: {signal.Signals(signum).name} received; saving and stopping",
                          file=sys.stderr)
                    tg.cancel_scope.cancel()
                    return

        tg.start_soon(stop_on_signal)
        await serve(*args)
        tg.cancel_scope.cancel()  # served to the end (stdin closed): stop watching for signals


def _exit_now(code: int) -> NoReturn:
    """End the process without the interpreter's teardown. Called only after serving is over and the App is
    closed (store closed, indexes and engine state saved): unloading torch, onnxruntime and ~3,500 modules
    took 3-4 s on a loaded machine, longer than a host waits after SIGINT before it escalates."""
    import logging
    import os

    logging.shutdown()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a closed or broken stream: nothing more to say on it
            pass
    os._exit(code)


def _leaves(error: BaseException) -> list:
    if isinstance(error, BaseExceptionGroup):
        return [leaf for inner in error.exceptions for leaf in _leaves(inner)]
    return [error]


def _call(args: argparse.Namespace) -> int:
    import json

    from contextgraph.shell import hooks
    from contextgraph.shell.call import connect, describe_failure, run_call

    usage = 1 if args.hook else 2  # a hook must never exit 2: Claude Code would treat it as blocking
    try:
        arguments = json.loads(args.arguments)
    except json.JSONDecodeError as exc:
        print(f"contextgraph call: the arguments are not JSON ({exc}); pass one JSON object, e.g. "
              f"'{{\"query\": \"deploy\"}}'", file=sys.stderr)
        return usage
    if not isinstance(arguments, dict):
        print("contextgraph call: the arguments must be one JSON object, e.g. '{\"query\": \"deploy\"}'",
              file=sys.stderr)
        return usage
    event: dict = {}
    if args.hook:
        try:
            event = json.loads(sys.stdin.read() or "{}")
        except json.JSONDecodeError as exc:
            print(f"contextgraph call --hook: the hook input on stdin is not JSON ({exc})", file=sys.stderr)
            return 1
        if not isinstance(event, dict):
            event = {}
    settings = _settings(args)
    if args.log_level is None and settings.log_level in ("debug", "info"):
        settings = _settings(args, log_level="warn")
    if args.hook:
        with connect(settings) as caller:
            done = hooks.run_hook(caller, args.tool, event, arguments)
        if done.failure is not None:
            print(describe_failure(args.tool, done.failure), file=sys.stderr)
            return 1
        if done.output is not None:
            print(json.dumps(done.output, ensure_ascii=False))
        return 0
    result = run_call(settings, args.tool, arguments)
    if not result.ok:
        print(describe_failure(args.tool, result), file=sys.stderr)
        return 1
    print(json.dumps(result.payload, indent=2, ensure_ascii=False))
    return 0


def _hooks(args: argparse.Namespace) -> int:
    import json
    from pathlib import Path

    from contextgraph.shell import hooks

    script = Path(sys.argv[0]).absolute() if Path(sys.argv[0]).name == "contextgraph" else None
    if script is None or not script.is_file():
        script = Path(sys.executable).parent / "contextgraph"
    config = hooks.hook_config(script, Path(args.home).expanduser().resolve() if args.home else None)
    print(hooks.SESSION_END_NOTE, file=sys.stderr)
    if args.install is None:
        print(json.dumps(config, indent=2))
        return 0
    try:
        path, diff = hooks.install(Path(args.install).expanduser().resolve(), config)
    except (ValueError, OSError) as exc:
        print(f"contextgraph hooks: {exc}", file=sys.stderr)
        return 1
    print(diff or f"{path}: already up to date", end="" if diff else "\n")
    if diff:
        print(f"merged into {path}", file=sys.stderr)
    return 0


def _tools(args: argparse.Namespace) -> int:
    from contextgraph.constitution import constitution
    from contextgraph.tools.catalog import build_registry

    settings = _settings(args)
    registry = build_registry(constitution(), settings.profile)
    rows = [
        (s.name, s.category, ", ".join(registry.aliases_of[s.name]) or "-", s.summary,
         "" if s.name in registry.active else " (not active)")
        for s in registry.specs.values()
    ]
    width = max(len(r[0]) for r in rows)
    for name, category, aliases, summary, inactive in rows:
        print(f"{name:<{width}}  {category:<10}  aliases: {aliases:<10}  {summary}{inactive}")
    print(f"\n{len(rows)} tools, {len(registry.active)} active (profile {settings.profile})")
    return 0


def _reindex(args: argparse.Namespace) -> int:
    from pathlib import Path

    from contextgraph.config import store_location
    from contextgraph.errors import StorageError
    from contextgraph.storage.maintenance import STORE_DIR, reindex

    settings = _settings(args)
    backend, where = store_location(settings.store_url, settings.home)
    if backend != "lmdb":
        print("contextgraph: a PostgreSQL store's indexes live in the database and are kept by every write; "
              "rebuild one with REINDEX INDEX contextgraph.vec_eNN_hnsw (contextgraph doctor lists them)",
              file=sys.stderr)
        return 1
    home = Path(where)
    if not (home / STORE_DIR).is_dir():
        print(f"contextgraph: no store in {home}; nothing to reindex", file=sys.stderr)
        return 1
    try:
        sizes = reindex(home)
    except StorageError as exc:  # a damaged store: what is wrong and what to do, not a traceback
        print(f"contextgraph reindex: {exc.message}", file=sys.stderr)
        return 1
    print(", ".join(f"E{space}: {size}" for space, size in sorted(sizes.items())) or "empty store")
    return 0


def _import(args: argparse.Namespace) -> int:
    from pathlib import Path

    from contextgraph.shell.bulk import run_import

    if not 1 <= args.batch_size <= 1024:
        print(f"contextgraph import: --batch-size must be 1-1024, got {args.batch_size}", file=sys.stderr)
        return 2
    if not 1 <= args.workers <= 64:
        print(f"contextgraph import: --workers must be 1-64, got {args.workers}", file=sys.stderr)
        return 2
    return run_import(_quiet_settings(args), Path(args.file).expanduser(), args.batch_size, args.workers)


def _export(args: argparse.Namespace) -> int:
    from pathlib import Path

    from contextgraph.shell.bulk import run_export

    return run_export(_quiet_settings(args), Path(args.out).expanduser() if args.out else None)


def _quiet_settings(args: argparse.Namespace):
    """Settings for a command whose stderr is its report (progress, refused lines): the log only from warn up,
    unless the environment asks for debug."""
    settings = _settings(args)
    return _settings(args, log_level="warn") if settings.log_level == "info" else settings


def _migrate(args: argparse.Namespace) -> int:
    from pathlib import Path

    from contextgraph.config import SettingsError, store_location
    from contextgraph.errors import StorageError

    source = args.source if "://" in args.source else f"lmdb://{Path(args.source).expanduser().resolve()}"
    backend, home = store_location(source, Path.cwd())
    target_backend, target = store_location(args.target, Path.cwd())
    if backend != "lmdb" or target_backend != "postgresql":
        raise SettingsError("migrate copies an LMDB store (--from lmdb:///path) into PostgreSQL "
                            "(--to postgresql://…)")
    if not (Path(home) / "store" / "data.mdb").is_file():
        print(f"contextgraph: no LMDB store in {home} (expected {Path(home) / 'store'})", file=sys.stderr)
        return 1
    from contextgraph.storage.maintenance import ProgressBar
    from contextgraph.storage.postgres.migrate import migrate_lmdb_to_postgres

    try:
        report = migrate_lmdb_to_postgres(Path(home), str(target), ProgressBar("migrate (oplog seqs)"))
    except StorageError as exc:
        print(f"contextgraph: {exc}", file=sys.stderr)
        return 1
    counts = ", ".join(f"{name} {n}" for name, n in report.counts.items())
    resumed = f", resumed after seq {report.resumed_from}" if report.resumed_from else ""
    print(f"migrated {home} in {report.seconds:.1f} s{resumed}; verified equal: {counts}")
    return 0


def _doctor(args: argparse.Namespace) -> int:
    from contextgraph.doctor import report, run_checks

    text, code = report(run_checks(_settings(args), warm=args.warm))
    print(text)
    return code


def main(argv: Sequence[str] | None = None) -> int:
    from contextgraph.config import SettingsError

    args = _parser().parse_args(argv)
    try:
        commands = {"serve": _serve, "call": _call, "hooks": _hooks, "tools": _tools, "reindex": _reindex,
                    "import": _import, "export": _export, "migrate": _migrate,
                    "doctor": _doctor}
        return commands[args.command](args)
    except SettingsError as exc:  # e.g. CONTEXTGRAPH_PROFILE names no profile
        print(f"contextgraph: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    raise SystemExit(main())
