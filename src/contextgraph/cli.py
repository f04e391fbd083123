"""Command line: argv → Settings → serve / call / hooks / tools / reindex / import / export / doctor. No logic of
its own; heavy imports happen inside the command that needs them, so `--help`, `tools` and `call` stay fast."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import NoReturn

from contextgraph.cli_parser import build_parser


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
    if args.workers != 1 and args.worker_inbox is None:
        return _serve_pool(args)
    from contextgraph.start_up_heap import start_up_heap

    with start_up_heap():
        import anyio

        settings = _settings(args)
        if settings.auto_dream is None:  # a long-running server dreams on its own unless told not to
            from dataclasses import replace

            from contextgraph.constitution import constitution

            settings = replace(settings, auto_dream=bool(constitution().get("dream.auto.serve")))
        if settings.transport == "stdio":
            from contextgraph.transports import stdio

            serve, extra = stdio.serve_stdio, ()
        else:
            from contextgraph.transports import network, security

            security.check_bind(settings)  # before anything is opened
            serve, extra = network.serve_network, (network.transports_of(settings.transport),)
            if args.worker_inbox is not None:  # a worker of a pool: connections come from the front process
                serve, settings = _as_worker(args, settings)
        app = _app(settings)
    if settings.transport == "stdio":
        try:
            anyio.run(_until_signalled, serve, app)
        except KeyboardInterrupt:  # before the signal handlers are installed; nothing was opened yet
            return 0
        _exit_now(0)
    failures: list[OSError] = []
    try:
        anyio.run(_until_signalled, serve, app, *extra)
    except* OSError as group:  # e.g. the port is taken
        failures.extend(_leaves(group))
    for exc in failures:
        print(f"contextgraph: cannot listen on {settings.host}: {exc}", file=sys.stderr)
    if failures:
        return 1
    _exit_now(0)


def _app(settings):
    """stdio answers the handshake first and builds the App after it (deferred_app.py); the network transports,
    which serve many clients and whose start is not waited on by a host, build it before they listen."""
    if settings.transport == "stdio":
        from contextgraph.deferred_app import DeferredApp

        return DeferredApp.of_settings(settings)
    from contextgraph.app import build_app

    return build_app(settings)


def _serve_pool(args: argparse.Namespace) -> int:
    settings = _settings(args)
    if not 1 <= args.workers <= 64:
        print("contextgraph serve: --workers must be between 1 and 64", file=sys.stderr)
        return 2
    if settings.transport == "stdio":
        print("contextgraph serve: --workers needs a network transport (--transport tcp, http or all): a stdio "
              "server has one client", file=sys.stderr)
        return 2
    from contextgraph.transports import security, worker_pool

    security.check_bind(settings)
    return worker_pool.serve_pool(settings, args.argv, args.workers)


def _as_worker(args: argparse.Namespace, settings):
    """A pool worker: it serves what its inbox brings, names itself in its session ids, and only worker 0 runs
    the engine's background jobs that write engine state (automatic dreams) or rewrite the store (re-embedding a
    changed space): docs/architecture.md#several-workers."""
    import socket
    from dataclasses import replace
    from functools import partial

    from contextgraph.transports import network, session_tag

    session_tag.set_worker(args.worker_index)
    if args.worker_index:
        settings = replace(settings, auto_dream=False, space_rewrites=False)
    return partial(network.serve_network, inbox=socket.socket(fileno=args.worker_inbox)), settings


async def _until_signalled(serve, *args) -> None:
    """Run `serve(*args)` until it returns or SIGINT/SIGTERM arrives, then cancel it: every serve function
    closes the App when cancelled (indexes and engine state saved). Both signals mean "stop cleanly": Claude
    Code sends SIGINT, then SIGTERM if the server is still there; a second signal, once the handlers are
    gone, stops the process the default way."""
    import signal

    import anyio

    async with anyio.create_task_group() as tg:
        async def stop_on_signal(*, task_status=anyio.TASK_STATUS_IGNORED) -> None:
            with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
                task_status.started()
                async for signum in signals:
                    print(f"contextgraph: {signal.Signals(signum).name} received; saving and stopping",
                          file=sys.stderr)
                    tg.cancel_scope.cancel()
                    return

        # the handlers are in place before serving starts: a pool worker says "ready" from inside serve, and one
        # descheduled between saying it and its first await (two loaded cores) took the front's SIGTERM the
        # default way, unsaved (exit -15, seen in about one stop in four)
        await tg.start(stop_on_signal)
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
    from contextgraph.storage.maintenance import STORE_DIR, reindex, reindex_postgres_local

    settings = _settings(args)
    backend, where = store_location(settings.store_url, settings.home)
    home = Path(where if backend == "lmdb" else settings.home)
    if backend == "lmdb" and not (home / STORE_DIR).is_dir():
        print(f"contextgraph: no store in {home}; nothing to reindex", file=sys.stderr)
        return 1
    if backend != "lmdb":
        print("contextgraph: a PostgreSQL store's vector indexes live in the database and are kept by every write "
              "(rebuild one with REINDEX INDEX contextgraph.vec_eNN_hnsw; contextgraph doctor lists them); "
              "rebuilding this host's in-process ones (E2-E4, E6, E13)", file=sys.stderr)
    try:
        sizes = reindex(home) if backend == "lmdb" else reindex_postgres_local(home, str(where))
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

    argv = list(sys.argv[1:] if argv is None else argv)
    args = build_parser().parse_args(argv)
    args.argv = argv  # `serve --workers N` starts its workers with the same arguments
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
