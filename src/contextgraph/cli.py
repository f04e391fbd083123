"""Command line: argv → Settings → serve / tools / doctor. No logic of its own; heavy imports happen inside the
command that needs them, so `--help` and `tools` stay fast."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

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
        p.add_argument("--profile", choices=("all", "core"),
                       help="tools listed at start: all, or core + curation + discovery (default $CONTEXTGRAPH_PROFILE or all)")

    serve = commands.add_parser("serve", help="run the MCP server", description="Run the MCP server.")
    serve.add_argument("--transport", choices=("stdio",), default="stdio",
                       help="stdio: JSON-RPC on stdin/stdout, for Claude Code and scripts (default)")
    serve.add_argument("--log-level", choices=("debug", "info", "warn", "error"),
                       help="stderr log level (default $CONTEXTGRAPH_LOG_LEVEL or info)")
    common(serve)

    tools = commands.add_parser("tools", help="print the tool registry",
                                description="Print every registered tool: name, category, aliases, description.")
    common(tools)

    reindex = commands.add_parser("reindex", help="rebuild every index from the store",
                                  description="Rebuild every per-space index of the data directory from LMDB, "
                                              "the source of truth, with a progress bar; then save them.")
    common(reindex)

    doctor = commands.add_parser("doctor", help="check the installation and data directory",
                                 description="Check data directory, model availability and package versions; "
                                             "print what is missing and how to fix it.")
    common(doctor)
    return parser


def _settings(args: argparse.Namespace):
    from pathlib import Path

    from contextgraph.config import Settings

    return Settings.from_env(
        home=Path(args.home).expanduser() if args.home else None,
        profile=args.profile,
        log_level=getattr(args, "log_level", None),
        transport=getattr(args, "transport", None),
    )


def _serve(args: argparse.Namespace) -> int:
    import anyio

    from contextgraph.app import build_app
    from contextgraph.transports.stdio import serve_stdio

    app = build_app(_settings(args))
    try:
        anyio.run(serve_stdio, app)
    except KeyboardInterrupt:
        pass
    return 0


def _tools(args: argparse.Namespace) -> int:
    from contextgraph.constitution import constitution
    from contextgraph.tools.registry import build_registry

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
    from contextgraph.storage.maintenance import STORE_DIR, reindex

    settings = _settings(args)
    if not (settings.home / STORE_DIR).is_dir():
        print(f"contextgraph: no store in {settings.home}; nothing to reindex", file=sys.stderr)
        return 1
    sizes = reindex(settings.home)
    print(", ".join(f"E{space}: {size}" for space, size in sorted(sizes.items())) or "empty store")
    return 0


def _doctor(args: argparse.Namespace) -> int:
    from contextgraph.doctor import report, run_checks

    text, code = report(run_checks(_settings(args)))
    print(text)
    return code


def main(argv: Sequence[str] | None = None) -> int:
    from contextgraph.config import SettingsError

    args = _parser().parse_args(argv)
    try:
        return {"serve": _serve, "tools": _tools, "reindex": _reindex, "doctor": _doctor}[args.command](args)
    except SettingsError as exc:  # e.g. CONTEXTGRAPH_PROFILE names no profile
        print(f"contextgraph: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    raise SystemExit(main())
