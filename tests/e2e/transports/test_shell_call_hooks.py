"""`contextgraph call` (the installed console script: in-process, and through a running server over TCP) and
`contextgraph hooks` (printing, installing into .claude/settings.json, and hook mode)."""

import io
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import anyio
import pytest
from transport_helpers import PULSE_FIELDS, serving

from contextgraph import cli
from contextgraph import server as server_module
from contextgraph.app import build_app
from contextgraph.shell import call as call_module
from contextgraph.shell import hooks
from contextgraph.shell.call import call_remote, describe_failure

SCRIPT = Path(sys.executable).parent / "contextgraph"
CLOSED_PORT = "1"  # nothing listens there: `call` runs in-process


def call_env(home: Path, model_cache: Path, **extra: str) -> dict[str, str]:
    return {**os.environ, "CONTEXTGRAPH_HOME": str(home), "CONTEXTGRAPH_MODEL_CACHE": str(model_cache),
            "CONTEXTGRAPH_PORT": CLOSED_PORT, "HF_HUB_OFFLINE": "1", **extra}


def run(args: list[str], env: dict[str, str], stdin: str = "") -> subprocess.CompletedProcess:
    return subprocess.run([str(SCRIPT), *args], input=stdin, capture_output=True, text=True, env=env, timeout=120)


def test_call_in_process_payload_errors_and_usage(tmp_path, model_cache):
    env = call_env(tmp_path / "home", model_cache)
    ok = run(["call", "tool_find", '{"query": "scratch notes", "limit": 2}'], env)
    assert ok.returncode == 0, ok.stderr
    payload = json.loads(ok.stdout)
    assert payload["results"][0]["name"] == "temporary_scratchpad"
    assert set(payload["_cognitive_pulse"]) == PULSE_FIELDS
    unknown = run(["call", "tool_fnd", "{}"], env)
    assert unknown.returncode == 1 and unknown.stdout == ""
    assert "-32004 TOOL_NOT_FOUND" in unknown.stderr and "tool_find" in unknown.stderr
    invalid = run(["call", "tool_find", '{"limit": 1000}'], env)
    assert invalid.returncode == 1 and "-32602" in invalid.stderr
    for bad in ["{not json", "[1, 2]"]:
        usage = run(["call", "tool_find", bad], env)
        assert usage.returncode == 2 and "JSON object" in usage.stderr


def test_call_in_process_stores_and_closes_the_store(tmp_path, model_cache, make_settings):
    home = tmp_path / "home"
    stored = run(["call", "store_memory", json.dumps({"content": "Releases are cut from main every Tuesday.",
                                                      "rationale": "release cadence for the team"})],
                 call_env(home, model_cache))
    assert stored.returncode == 0, stored.stderr
    payload = json.loads(stored.stdout)
    assert payload["durable"] is True and payload["session"] == "cli"
    assert (home / "indexes").is_dir()  # close() ran: the indexes were saved
    app = build_app(make_settings(home))  # the store opens again: nothing holds it
    try:
        assert app.services.storage.store.count() == 1
    finally:
        app.close()


@pytest.mark.anyio
async def test_call_uses_a_running_server_and_shares_its_store(net_app, model_cache):
    async with serving(net_app, ("tcp",)) as where:
        env = call_env(net_app.settings.home, model_cache, CONTEXTGRAPH_PORT=str(where.tcp[1]))
        memory = {"content": "The staging database is read-only on weekends.", "rationale": "an ops rule to respect"}
        done = await anyio.run_process([str(SCRIPT), "call", "store_memory", json.dumps(memory)], env=env,
                                       check=False)
        assert done.returncode == 0, done.stderr
        payload = json.loads(done.stdout)
        assert payload["session"].startswith("conn:")  # stored by the server, not in the call's own process
        assert set(payload["_cognitive_pulse"]) == PULSE_FIELDS
        assert net_app.services.storage.store.get(payload["id"]) is not None
        failed = await anyio.run_process([str(SCRIPT), "call", "tool_load", '{"names": ["nope"]}'], env=env,
                                         check=False)
        assert failed.returncode == 1 and b"-32004" in failed.stderr
        with anyio.fail_after(5):
            while where.parts["tcp"].connections:  # each call came, and went
                await anyio.sleep(0.02)


@pytest.mark.anyio
async def test_call_uses_a_server_only_when_it_serves_the_store_asked_for(net_app, model_cache, tmp_path):
    """Issue 38.1: `CONTEXTGRAPH_HOME=A contextgraph call` answered from the store of whichever server listened
    on the port. The server says which store it serves; `call` and the hooks use it only for that store (the
    same store id, in the same directory), and otherwise run in-process on the store asked for, saying why."""
    home = net_app.settings.home
    async with serving(net_app, ("tcp",)) as where:
        port = str(where.tcp[1])

        async def call(data_dir: Path, content: str) -> tuple[dict, str]:
            memory = json.dumps({"content": content, "rationale": "where each memory lands"})
            done = await anyio.run_process([str(SCRIPT), "call", "store_memory", memory], check=False,
                                           env=call_env(data_dir, model_cache, CONTEXTGRAPH_PORT=port))
            assert done.returncode == 0, done.stderr
            return json.loads(done.stdout), done.stderr.decode()

        served, note = await call(home, "The billing service retries card charges five times.")
        assert served["session"].startswith("conn:") and note == ""  # the server's own store: through it
        other = tmp_path / "other-data"
        alone, note = await call(other, "The staging cluster is rebuilt every Monday morning.")
        assert alone["session"] == "cli"  # not the server's store: run here, on the store asked for
        assert "serves another store" in note and str(other) in note and "running in this process" in note
        assert net_app.services.storage.store.get(alone["id"]) is None
        linked = tmp_path / "link-to-home"
        linked.symlink_to(home, target_is_directory=True)  # another spelling of the same directory
        through, note = await call(linked, "Invoices are numbered per year, starting at 1 each January.")
        assert through["session"].startswith("conn:") and note == ""
        copy = tmp_path / "copy-of-home"  # the same store id, in another directory: not the server's store
        shutil.copytree(home / "store", copy / "store")
        copied, note = await call(copy, "The on-call rotation changes every Wednesday at noon.")
        assert copied["session"] == "cli" and "a copy of this store in another directory" in note
        # a hook goes the same way: the edit lands in the store asked for
        edit = {"cwd": "/srv/ledger", "hook_event_name": "PostToolUse", "tool_name": "Write", "tool_input": {
            "file_path": "/srv/ledger/rates.py", "content": "FX_SOURCE = 'ecb'  # daily reference rates"}}
        hooked = await anyio.run_process([str(SCRIPT), "call", "inject_context", "--hook"], check=False,
                                         input=json.dumps(edit).encode(),
                                         env=call_env(other, model_cache, CONTEXTGRAPH_PORT=port))
        assert hooked.returncode == 0 and b"serves another store" in hooked.stderr
        assert net_app.services.storage.store.count() == 2  # the two stored through it
        with anyio.fail_after(5):
            while where.parts["tcp"].connections:
                await anyio.sleep(0.02)
    app = build_app(net_app.settings.__class__.from_env({**call_env(other, model_cache)}))
    try:
        assert app.services.storage.store.count() == 2  # the call's memory and the hook's
    finally:
        app.close()


@pytest.mark.anyio
async def test_a_remote_server_of_another_store_is_refused(net_app, tmp_path, monkeypatch):
    """On another machine, a server that serves another store is refused, not passed over for a store here
    the user did not point at; an older server that cannot say which store it serves is not trusted either."""
    monkeypatch.setattr(call_module, "_loopback", lambda host: False)
    async with serving(net_app, ("tcp",)) as where:
        settings = net_app.settings.__class__.from_env({"CONTEXTGRAPH_HOME": str(tmp_path / "elsewhere"),
                                                        "CONTEXTGRAPH_PORT": str(where.tcp[1])})
        notes: list[str] = []
        result = await anyio.to_thread.run_sync(lambda: call_module.run_call(settings, "tool_find", {"query": "x"},
                                                                             notes.append))
        assert not result.ok and "serves another store" in (result.message or "") and "Nothing was run" in (
            result.message or "")
        assert notes == [] and not (tmp_path / "elsewhere").exists()  # nothing opened or created here
        assert call_module.AskedStore.of(settings).served_by(None) is not None
    assert call_module.IDENTITY_METHOD == server_module.IDENTITY_METHOD  # the same method name on both sides


@pytest.mark.anyio
async def test_a_postgresql_store_is_matched_by_its_id(make_net_app, postgres_url, postgres_server):
    """With a PostgreSQL store the server's identity is the id in the database: `call` with the same URL uses
    the server, with another database (no store in it yet) runs in-process."""
    import psycopg

    app = make_net_app(CONTEXTGRAPH_STORE_URL=postgres_url)
    other = f"cg_other_{os.getpid()}"
    with psycopg.connect(postgres_server.get_uri(), autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{other}"')
    async with serving(app, ("tcp",)) as where:
        port = str(where.tcp[1])
        same = app.settings.__class__.from_env({"CONTEXTGRAPH_STORE_URL": postgres_url, "CONTEXTGRAPH_PORT": port})
        session = await anyio.to_thread.run_sync(lambda: call_module.RemoteSession.open(
            same, connect_seconds=2, timeout_seconds=30, protocol_version="2025-06-18"))
        session.close()
        identity = session.identity
        assert identity is not None and identity["backend"] == "postgresql" and "store_dir" not in identity
        asked = await anyio.to_thread.run_sync(lambda: call_module.AskedStore.of(same))
        assert asked.store_id == app.services.storage.store.store_id and asked.served_by(identity) is None
        elsewhere = app.settings.__class__.from_env({"CONTEXTGRAPH_STORE_URL": postgres_server.get_uri(other)})
        stranger = await anyio.to_thread.run_sync(lambda: call_module.AskedStore.of(elsewhere))
        assert stranger.store_id is None and "serves another store" in (stranger.served_by(identity) or "")


@pytest.mark.anyio
async def test_call_reads_a_refusal_returned_as_a_tool_result(net_app):
    """In sessions from 2025-11-25 on the server returns argument errors as isError tool results (SPEC D17):
    `call` reports them as failures with their code and hint, as it does JSON-RPC errors."""
    async with serving(net_app, ("tcp",)) as where:
        settings = net_app.settings.__class__.from_env({**os.environ, "CONTEXTGRAPH_HOME": str(net_app.settings.home),
                                                         "CONTEXTGRAPH_PORT": str(where.tcp[1])})
        for version in ("2025-06-18", "2025-11-25"):
            result = await anyio.to_thread.run_sync(lambda v=version: call_remote(
                settings, "tool_find", {"limit": 1000}, connect_seconds=2, timeout_seconds=30, protocol_version=v))
            assert not result.ok and result.code == -32602, (version, result)
            assert result.data.get("hint") and "-32602" in describe_failure("tool_find", result)


def test_hooks_prints_a_claude_code_configuration(capsys):
    assert cli.main(["hooks"]) == 0
    out = capsys.readouterr()
    config = json.loads(out.out)["hooks"]
    assert set(config) == {"SessionStart", "UserPromptSubmit", "PostToolUse"} and "SessionEnd" in out.err
    (prompt,) = config["UserPromptSubmit"]
    assert "matcher" not in prompt and prompt["hooks"][0]["command"].endswith(" call search_graph --hook")
    (post,) = config["PostToolUse"]
    assert post["matcher"] == "Edit|Write|MultiEdit"
    command = post["hooks"][0]["command"]
    assert post["hooks"][0]["type"] == "command" and command.endswith(" call inject_context --hook")
    assert Path(command.split(" ")[0]).is_absolute()
    assert config["SessionStart"][0]["hooks"][0]["command"].endswith(" call search_graph --hook")
    assert config["SessionStart"][0]["hooks"][1]["command"].endswith(" call get_memetic_status --hook")


def test_hooks_install_merges_and_is_idempotent(tmp_path, capsys):
    settings = tmp_path / ".claude" / "settings.json"
    settings.parent.mkdir()
    mine = {"model": "opus", "permissions": {"allow": ["Bash(ls)"]},
            "hooks": {"PostToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "echo hi"}]}],
                      "Stop": [{"hooks": [{"type": "command", "command": "say done"}]}]}}
    settings.write_text(json.dumps(mine))
    assert cli.main(["hooks", "--install", str(tmp_path)]) == 0
    diff = capsys.readouterr().out
    assert diff.startswith("---") and "+" in diff and "inject_context --hook" in diff
    merged = json.loads(settings.read_text())
    assert merged["model"] == "opus" and merged["permissions"] == mine["permissions"]
    assert merged["hooks"]["Stop"] == mine["hooks"]["Stop"]
    assert merged["hooks"]["PostToolUse"][0] == mine["hooks"]["PostToolUse"][0]
    assert len(merged["hooks"]["PostToolUse"]) == 2 and len(merged["hooks"]["SessionStart"]) == 1
    assert len(merged["hooks"]["UserPromptSubmit"]) == 1
    assert cli.main(["hooks", "--install", str(tmp_path)]) == 0
    assert "already up to date" in capsys.readouterr().out
    assert json.loads(settings.read_text()) == merged
    # An older install (another path to the script) is replaced, not duplicated.
    moved = hooks.merge(merged, hooks.hook_config(Path("/elsewhere/bin/contextgraph")))
    assert len(moved["hooks"]["PostToolUse"]) == 2 and "/elsewhere/" in json.dumps(moved["hooks"]["PostToolUse"][1])
    settings.write_text("{broken")
    assert cli.main(["hooks", "--install", str(tmp_path)]) == 1
    assert "not valid JSON" in capsys.readouterr().err and settings.read_text() == "{broken"


def test_hook_mode_stores_edits_and_gives_context(tmp_path, model_cache, monkeypatch, capsys):
    for name, value in call_env(tmp_path / "home", model_cache).items():
        monkeypatch.setenv(name, value)
    project = tmp_path / "payments-service"

    def hook(tool: str, event: dict) -> tuple[int, dict | None]:
        monkeypatch.setattr(sys, "stdin", io.StringIO(json.dumps(event)))
        code = cli.main(["call", tool, "--hook"])
        out = capsys.readouterr().out.strip()
        return code, json.loads(out) if out else None

    edit = {"session_id": "abc123", "cwd": str(project), "hook_event_name": "PostToolUse", "tool_name": "Edit",
            "tool_input": {"file_path": str(project / "src" / "retry.py"), "old_string": "retries = 3",
                           "new_string": "retries = 5  # payments-service retries card charges five times"},
            "tool_response": {"success": True}}
    code, output = hook("inject_context", edit)
    assert code == 0 and output is None  # nothing related yet: no context to add
    code, output = hook("inject_context", edit)  # the same edit again (Claude Code retries, re-applies)
    assert code == 0 and output is None
    code, output = hook("inject_context", {**edit, "tool_input": {**edit["tool_input"], "new_string":
                                                                   "retries = 5  # payments-service retries card "
                                                                   "charges five times."}})
    assert code == 0 and output is None  # one character more: a near-duplicate, not stored either
    code, output = hook("inject_context", {**edit, "tool_name": "Write", "tool_input": {
        "file_path": str(project / "README.md"), "content": "payments-service charges cards and retries them"}})
    assert code == 0 and "related memories" in output["hookSpecificOutput"]["additionalContext"]
    code, output = hook("inject_context", {**edit, "tool_name": "Write", "tool_input": {
        "file_path": str(project / "lunch.txt"), "content": "The team lunch is on Fridays at noon in the cafeteria."}})
    assert code == 0 and output is None  # stored; the payments memories are below the relevance floor
    start = {"session_id": "def456", "cwd": str(project), "hook_event_name": "SessionStart", "source": "startup"}
    code, output = hook("search_graph", start)
    context = output["hookSpecificOutput"]
    assert code == 0 and context["hookEventName"] == "SessionStart"
    text = context["additionalContext"]
    assert "searched for 'payments-service'" in text and "retries = 5" in text  # the query it really used
    assert "lunch" not in text  # stored, but unrelated to the project: under the floor, not injected
    assert "Cognitive pulse" in text
    code, output = hook("get_memetic_status", start)
    status = output["hookSpecificOutput"]["additionalContext"]
    assert code == 0 and status.startswith("ContextGraph status: 3 memories (infancy phase)")
    assert "suggested action:" in status
    prompt = {"session_id": "def456", "cwd": str(project), "hook_event_name": "UserPromptSubmit"}
    code, output = hook("search_graph", {**prompt, "prompt": "How often do we retry failed card charges?"})
    context = output["hookSpecificOutput"]
    assert code == 0 and context["hookEventName"] == "UserPromptSubmit"
    assert context["additionalContext"].startswith("ContextGraph memories relevant to this prompt")
    assert "retries = 5" in context["additionalContext"] and "lunch" not in context["additionalContext"]
    for unrelated in ("What is the capital of Mongolia, roughly?", "yes", "/compact"):
        code, output = hook("search_graph", {**prompt, "prompt": unrelated})
        assert code == 0 and output is None  # nothing relevant, too short, a slash command: nothing added
    monkeypatch.setattr(sys, "stdin", io.StringIO("not json"))
    assert cli.main(["call", "search_graph", "--hook"]) == 1  # never 2 in hook mode
    assert cli.main(["call", "search_graph", "{bad", "--hook"]) == 1


def test_edit_memory_shapes_the_arguments():
    args = hooks.edit_memory({"cwd": "/p", "tool_name": "MultiEdit", "session_id": "s" * 300, "tool_input": {
        "file_path": "/p/app/main.go", "edits": [{"new_string": "a := 1"}, {"new_string": "b := 2"}]}}, 3)
    assert args["content"].startswith("Edited (several places) app/main.go:\na := 1")
    assert args["modality"] == "code" and args["tags"] == ["claude-code", "multiedit", "go"]
    assert len(args["session_id"]) == 128 and 10 <= len(args["rationale"]) <= 1000 and args["related_k"] == 3
    removed = hooks.edit_memory({"tool_name": "Edit", "tool_input": {"file_path": "notes.txt", "new_string": ""}}, 3)
    assert removed["content"] == "Edited notes.txt (text removed)" and removed["modality"] == "text"


@pytest.mark.anyio
async def test_hooks_go_through_a_running_server_in_one_connection(net_app, model_cache):
    """A PostToolUse hook looks the edit up and stores it over one TCP connection to the running server (whose
    model is loaded: no store open, no model load in the hook); a repeat of the edit is not stored again."""
    async with serving(net_app, ("tcp",)) as where:
        env = call_env(net_app.settings.home, model_cache, CONTEXTGRAPH_PORT=str(where.tcp[1]))
        edit = {"cwd": "/srv/billing", "hook_event_name": "PostToolUse", "tool_name": "Edit", "tool_input": {
            "file_path": "/srv/billing/invoice.py", "new_string": "VAT_RATE = 0.21  # Dutch VAT on invoices"}}

        async def hook(tool: str, event: dict) -> tuple[int, str]:
            done = await anyio.run_process([str(SCRIPT), "call", tool, "--hook"], input=json.dumps(event).encode(),
                                           env=env, check=False)
            assert done.returncode == 0, done.stderr
            return done.returncode, done.stdout.decode().strip()

        await hook("inject_context", edit)
        await hook("inject_context", edit)
        store = net_app.services.storage.store
        assert store.count() == 1
        (record,) = store.get_by_seq([store.last_seq()])
        assert record is not None and record.session.startswith("conn:")  # stored by the server
        _, out = await hook("search_graph", {"cwd": "/srv/billing", "hook_event_name": "UserPromptSubmit",
                                             "prompt": "Which VAT rate do the invoices use?"})
        assert "VAT_RATE = 0.21" in json.loads(out)["hookSpecificOutput"]["additionalContext"]
        with anyio.fail_after(5):
            while where.parts["tcp"].connections:  # each hook's one connection came, and went
                await anyio.sleep(0.02)


def test_project_query_reads_the_readme_and_git(tmp_path):
    project = tmp_path / "ledger"
    project.mkdir()
    (project / "README.md").write_text(
        "[![CI](https://ci.example/badge.svg)](https://ci.example)\n\n# Ledger `core`\n\n"
        "<p align=center>logo</p>\n\nLedger keeps **double-entry** accounts for small\nshops, see "
        "[the docs](https://docs.example).\n\nSecond paragraph, left out.\n", encoding="utf-8")
    git = ["git", "-C", str(project), "-c", "user.name=t", "-c", "user.email=t@example.com"]
    subprocess.run([*git, "init", "-q", "-b", "fx-rates"], check=True)
    for subject in ("Add currency table", "Convert totals at the daily rate"):
        subprocess.run([*git, "commit", "-q", "--allow-empty", "-m", subject], check=True)
    query = hooks.project_query({"cwd": str(project / "src")})  # a subdirectory: the repository's README
    assert query.startswith("Ledger core Ledger keeps double-entry accounts for small shops, see the docs.")
    assert "Second paragraph" not in query and "badge" not in query and "logo" not in query
    assert "Branch fx-rates." in query
    assert "Recent work: Convert totals at the daily rate; Add currency table." in query
    assert len(query) <= hooks.constitution()["hooks"]["project_query_chars"]
    bare = tmp_path / "scratch-dir"
    bare.mkdir()
    assert hooks.project_query({"cwd": str(bare)}) == "scratch-dir"  # nothing to read: the directory's name


def test_prompt_query_skips_what_is_not_worth_a_search():
    query = hooks.prompt_query({"prompt": "  Why does   the importer\nskip rows? "})
    assert query == "Why does the importer skip rows?"
    for prompt in ("", "ok", "go on", "/review src/app.py please", None):
        assert hooks.prompt_query({"prompt": prompt}) is None
    assert hooks.hook_arguments("search_graph", {"hook_event_name": "UserPromptSubmit", "prompt": "ok"}, {}) is None
    explicit = hooks.hook_arguments("search_graph", {"hook_event_name": "UserPromptSubmit", "prompt": "ok"},
                                    {"query": "deploys"})
    assert explicit is not None and explicit["query"] == "deploys"  # explicit arguments win
