"""The command line's grammar: every command, its arguments and their help. cli.py runs what it parses."""

from __future__ import annotations

import argparse

from contextgraph import __version__


def build_parser() -> argparse.ArgumentParser:
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
    serve.add_argument("--workers", type=int, default=1, metavar="N",
                       help="tcp, http, all: serve with N worker processes behind one front process that owns "
                            "the ports and hands each connection (each HTTP session's connections to the worker "
                            "that holds the session) to a worker (1-64, default 1: this process serves). Every "
                            "worker opens the same store; worth it with spare cores")
    # set by the front process of `--workers N` for its workers only (transports/worker_pool.py)
    serve.add_argument("--worker-inbox", type=int, help=argparse.SUPPRESS)
    serve.add_argument("--worker-index", type=int, help=argparse.SUPPRESS)
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
