"""The README's checkable statements against the code they describe (issue 38.3): the tool and alias counts, each
profile's size on the wire, the aliases, each tool's category and stated argument bounds, the resources and
prompts, the settings' variables and defaults, the commands and their flags, the hooks, the transport and recovery
limits, the protocol versions, and the commands it shows that run offline (`contextgraph --help`, `tools`,
`hooks`, `call`, the raw JSON-RPC script). A README that drifts from the code fails here, naming the statement."""

import json
import os
import re
import shlex
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from mcp import Client
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS, MODERN_PROTOCOL_VERSIONS

from contextgraph.app import build_app
from contextgraph.constitution import constitution
from contextgraph.server import build_server
from contextgraph.tools.catalog import build_registry

pytestmark = pytest.mark.anyio
ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text(encoding="utf-8")
PROSE = " ".join(README.split())  # the prose wraps anywhere: match statements on single spaces
SCRIPT = Path(sys.executable).parent / "contextgraph"
BYTES_PER_TOKEN = 4  # the estimate the README and tests/contract/test_tool_budget.py use
C = constitution()
REGISTRY = {profile: build_registry(C, profile) for profile in ("all", "core")}


def section(title: str) -> str:
    """The README's text under the heading `title`, up to the next heading of the same or a higher level."""
    heading = re.search(rf"^(#+) {re.escape(title)}\n", README, re.M)
    assert heading, f"the README has no heading {title!r}"
    level = len(heading.group(1))
    end = re.compile(rf"^#{{1,{level}}} ", re.M).search(README, heading.end())
    return README[heading.end(): end.start() if end else None]


def claim(pattern: str) -> re.Match[str]:
    found = re.search(pattern, PROSE)
    assert found, f"the README no longer states /{pattern}/: update the statement and this test together"
    return found


def run(argv: list[str], home: Path, **env: str) -> subprocess.CompletedProcess[str]:
    environ = {**os.environ, "CONTEXTGRAPH_HOME": str(home), "CONTEXTGRAPH_LOG_LEVEL": "error",
               "HF_HUB_OFFLINE": "1", **env}
    return subprocess.run(argv, capture_output=True, text=True, env=environ, timeout=120, cwd=home)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_tool_and_alias_counts_are_the_registrys():
    everything = REGISTRY["all"]
    stated = claim(r"All (\d+) tools of the \[inventory\]\(docs/tools\.md#inventory\) and its (\d+) aliases")
    assert int(stated.group(1)) == len(everything.specs)
    assert int(stated.group(2)) == len(everything.aliases)
    profile_sizes = {len(registry.active) for registry in REGISTRY.values()}
    every_count = {int(n) for n in re.findall(r"\b(\d+) tools\b", PROSE)}
    assert every_count <= profile_sizes, f"tool counts that are no profile's size: {every_count - profile_sizes}"


async def wire_size(make_settings, home: Path, profile: str) -> tuple[int, int]:
    """(tools, bytes) of tools/list as the SDK sends it, compact JSON, aliases included."""
    app = build_app(make_settings(home, CONTEXTGRAPH_PROFILE=profile))
    try:
        async with Client(build_server(app), mode="legacy") as client:
            listed = (await client.list_tools()).tools
    finally:
        app.close()
    tools = []
    for tool in listed:
        wire = tool.model_dump(by_alias=True, exclude_none=True, mode="json")
        if tool.meta and tool.meta.get("aliases"):
            wire["aliases"] = tool.meta["aliases"]
        tools.append(wire)
    return len(tools), len(json.dumps({"tools": tools}, ensure_ascii=False, separators=(",", ":")).encode())


async def test_profile_sizes_are_what_tools_list_sends(make_settings, tmp_path):
    stated = claim(r"`all` \(the server default, \[D11\]\(docs/decisions\.md#d11\): (\d+) tools\) is ~(\d+) KB of "
                   r"definitions \(~([\d.]+)k tokens\), `core` \((\d+) tools: .*?\) is ~(\d+) KB \(~([\d.]+)k\)")
    for profile, (count, kb, k_tokens) in {"all": stated.group(1, 2, 3), "core": stated.group(4, 5, 6)}.items():
        tools, size = await wire_size(make_settings, tmp_path / profile, profile)
        print(f"\n{profile}: {tools} tools, {size:,} bytes")
        assert int(count) == tools, f"{profile}: the README says {count} tools, tools/list has {tools}"
        assert int(kb) == round(size / 1000), f"{profile}: the README says ~{kb} KB, tools/list is {size:,} bytes"
        assert float(k_tokens) == round(size / BYTES_PER_TOKEN / 1000, 1), f"{profile}: ~{k_tokens}k tokens"


def test_the_tools_core_adds_are_the_profiles():
    stated = claim(r"plus every tool the pulse can suggest: ((?:`\w+`(?:, )?)+)\)")
    assert set(re.findall(r"`(\w+)`", stated.group(1))) == set(C.get("server.profiles")["core"]["tools"])


def test_the_aliases_paragraph_is_the_registrys():
    stated = claim(r"Aliases \(\[docs/tools\.md\].*?Until then")
    pairs = dict(re.findall(r"`([\w/]+)` → `(\w+)`", stated.group(0)))
    assert pairs == REGISTRY["all"].aliases


def schema_bounds(node: dict) -> tuple[float, float] | None:
    """(low, high) of a number's, a string's length or an array's size, looking inside anyOf (optional args)."""
    for candidate in (node, *node.get("anyOf", [])):
        for low, high in (("minimum", "maximum"), ("minLength", "maxLength"), ("minItems", "maxItems")):
            if low in candidate and high in candidate:
                return float(candidate[low]), float(candidate[high])
    return None


def test_the_tool_reference_states_each_tools_category_and_bounds():
    everything = REGISTRY["all"]
    rows = re.findall(r"^\| `(\w+)` \| (\w+) \| (.*) \|$", section("Tool reference"), re.M)
    assert {name for name, _, _ in rows} == set(everything.specs)
    wrong = {}
    for name, category, text in rows:
        if category != everything.specs[name].category:
            wrong[name] = f"category {category}, registered {everything.specs[name].category}"
        properties = everything.input_schemas[name].get("properties", {})
        # "`limit` 1–100", "`top_k`/`topK` 1–100", "(`max_hops` 1–10": an argument and the range it accepts
        for arg, low, high in re.findall(r"`(\w+)`(?:/`\w+`)? \(?(-?\d+(?:\.\d+)?)[–-](-?\d+(?:\.\d+)?)", text):
            bounds = schema_bounds(properties[arg]) if arg in properties else None
            if bounds != (float(low), float(high)):
                wrong[f"{name}.{arg}"] = f"README {low}–{high}, schema {bounds}"
    assert wrong == {}


async def test_resources_and_prompts_are_what_the_server_offers(app):
    text = section("Resources and prompts")
    resources = set(re.findall(r"^\| `(contextgraph://[^`]+)`", text, re.M))
    prompts = {name: set(re.findall(r"`(\w+)`", args)) - {"–"}
               for name, args in re.findall(r"^\| `(\w+)` \| ([^|]+) \|", text, re.M)}
    async with Client(build_server(app), mode="legacy") as client:
        served = {str(r.uri) for r in (await client.list_resources()).resources}
        served |= {t.uri_template for t in (await client.list_resource_templates()).resource_templates}
        offered = {p.name: {a.name for a in p.arguments or []} for p in (await client.list_prompts()).prompts}
    assert resources == served
    assert prompts == offered


def settings_table() -> dict[str, str]:
    """variable → its default cell, from the table under "Settings come from the environment"."""
    start = README.index("Settings come from the environment")
    table = README[start: README.index("\n\n", README.index("| variable |", start))]
    rows = {}
    for names, default in re.findall(r"^\| ((?:`CONTEXTGRAPH_\w+`(?:, )?)+) \| ([^|]+) \|", table, re.M):
        for name in re.findall(r"`(CONTEXTGRAPH_\w+)`", names):
            rows[name] = default.strip()
    return rows


def test_every_variable_the_code_reads_is_in_the_settings_table():
    read = {name for path in (ROOT / "src").rglob("*.py")
            for name in re.findall(r"\bCONTEXTGRAPH_[A-Z0-9_]*[A-Z0-9]\b", path.read_text(encoding="utf-8"))}
    documented = set(settings_table())
    assert read - documented == set(), "variables the code reads that the README's table leaves out"
    assert documented - read == set(), "variables in the README's table that no code reads"


@pytest.mark.parametrize(("variable", "key"), [
    ("CONTEXTGRAPH_HOME", "server.default_home"),
    ("CONTEXTGRAPH_PROFILE", "server.default_profile"),
    ("CONTEXTGRAPH_LOG_LEVEL", "logging.default_level"),
    ("CONTEXTGRAPH_HOST", "transport.default_host"),
    ("CONTEXTGRAPH_PORT", "transport.default_tcp_port"),
    ("CONTEXTGRAPH_HTTP_PORT", "transport.default_http_port"),
    ("CONTEXTGRAPH_SSE_HEARTBEAT", "transport.sse_heartbeat_seconds"),
    ("CONTEXTGRAPH_SSE_GRACE", "transport.sse_reconnect_grace_seconds"),
    ("CONTEXTGRAPH_HTTP_SESSION_IDLE", "transport.http_session_idle_seconds"),
    ("CONTEXTGRAPH_HTTP_MAX_SESSIONS", "transport.http_max_sessions"),
])
def test_a_settings_default_is_the_constitutions(variable, key):
    assert settings_table()[variable] == f"`{C.get(key)}`"


MIB = 1 << 20


@pytest.mark.parametrize(("statement", "value"), [
    (r"A session with no request in flight for (\d+) minutes is closed",
     C.get("transport.http_session_idle_seconds") / 60),
    (r"is closed \(its client gets 404 and re-initializes\), and at most (\d+) are open",
     C.get("transport.http_max_sessions")),
    (r"`event: heartbeat` on connect and every (\d+) s", C.get("transport.sse_heartbeat_seconds")),
    (r"the session outlives a dropped stream for (\d+) s", C.get("transport.sse_reconnect_grace_seconds")),
    (r"`retry: (\d+)` in the priming events", C.get("transport.http_retry_ms")),
    (r"An HTTP body or a stdin line may hold (\d+) MiB", C.get("transport.max_message_bytes") / MIB),
    (r"a TCP line (\d+) MiB", C.get("transport.tcp_max_line_bytes") / MIB),
    (r"at most (\d+) TCP connections are served at once", C.get("transport.tcp_max_connections")),
    (r"head must arrive within (\d+) s", C.get("transport.http_head_seconds")),
    (r"its body within (\d+) s \(408\)", C.get("transport.http_body_seconds")),
    (r"curation with (\d+)-day undo", C.get("curation.recovery_window_days")),
    (r"fingerprint and edges for (\d+) days and a `reversal_hash`", C.get("curation.recovery_window_days")),
    (r"within `memory\.retry_window_seconds` \((\d+)\)", C.get("memory.retry_window_seconds")),
])
def test_a_stated_limit_is_the_constitutions(statement, value):
    assert float(claim(statement).group(1)) == value


def test_the_protocol_versions_are_the_sdks():
    stated = claim(r"the handshake versions (\S+) through (\S+) and the (\S+) discover mode")
    assert stated.groups() == (HANDSHAKE_PROTOCOL_VERSIONS[0], HANDSHAKE_PROTOCOL_VERSIONS[-1],
                               *MODERN_PROTOCOL_VERSIONS)


def test_the_run_table_names_every_command_and_only_real_flags(tmp_path):
    table = section("Run").split("\n\n")[0]
    rows = dict(re.findall(r"^\| `contextgraph (\w+)([^`]*)`", table, re.M))
    usage = run([str(SCRIPT), "--help"], tmp_path)
    assert usage.returncode == 0, usage.stderr
    commands = set(re.findall(r"^ {4}(\w+) {2,}", usage.stdout, re.M))
    assert set(rows) == commands
    for command, synopsis in rows.items():
        help_text = run([str(SCRIPT), command, "--help"], tmp_path)
        assert help_text.returncode == 0, help_text.stderr
        unknown = set(re.findall(r"--[\w-]+", synopsis)) - set(re.findall(r"--[\w-]+", help_text.stdout))
        assert unknown == set(), f"`contextgraph {command}` has no {unknown}"


def test_the_hooks_table_is_what_contextgraph_hooks_prints(tmp_path):
    printed = run([str(SCRIPT), "hooks"], tmp_path)
    assert printed.returncode == 0, printed.stderr
    installed = [(event, group.get("matcher"), hook["command"].split("contextgraph ", 1)[1])
                 for event, groups in json.loads(printed.stdout)["hooks"].items()
                 for group in groups for hook in group["hooks"]]
    table = section("Claude Code hooks")
    documented = [(event, matcher.replace("\\|", "|") or None, command) for event, matcher, command in re.findall(
        r"^\| `(\w+)`(?:, matcher `([^`]+)`)? \| `contextgraph ([^`]+)` \|", table, re.M)]
    assert documented == installed
    # "No `SessionEnd` hook, and `contextgraph hooks` says why on stderr: `trigger_consolidation` merges only ..."
    assert "No `SessionEnd` hook, and `contextgraph hooks` says why" in " ".join(table.split())
    assert "SessionEnd" in printed.stderr and "trigger_consolidation" in printed.stderr
    assert "trigger_consolidation" in REGISTRY["all"].specs


@pytest.mark.parametrize("profile", ["all", "core"])
def test_contextgraph_tools_prints_the_profiles_count(tmp_path, profile):
    printed = run([str(SCRIPT), "tools", "--profile", profile], tmp_path)
    assert printed.returncode == 0, printed.stderr
    everything, active = len(REGISTRY["all"].specs), len(REGISTRY[profile].active)
    assert f"{everything} tools, {active} active (profile {profile})" in printed.stdout


def readme_pulse() -> dict:
    block = re.search(r"```json\n(.*?)\n```", section("What every response carries"), re.S)
    assert block, "the pulse example is gone"
    return json.loads(block.group(1))


def assert_fresh_store_pulse(pulse: dict) -> None:
    """The README's pulse of an empty store. Its suggestion turns to epistemic_action once the process has run 5 s
    with an empty workspace (as the README says), which a loaded machine may reach before the first call."""
    expected = readme_pulse()
    assert {k: pulse[k] for k in expected if k != "suggested_action"} == {
        k: v for k, v in expected.items() if k != "suggested_action"}
    assert pulse["suggested_action"] in (expected["suggested_action"], "epistemic_action")


def test_the_raw_json_rpc_script_runs_as_shown(tmp_path):
    block = re.search(r"```bash\n(printf .*?)```", section("From a script"), re.S)
    assert block, "the script is gone"
    script = block.group(1).replace(".venv/bin/contextgraph", shlex.quote(str(SCRIPT)))
    done = run(["bash", "-c", script], tmp_path)
    assert done.returncode == 0, done.stderr
    answers = {answer["id"]: answer for answer in map(json.loads, done.stdout.splitlines())}
    assert answers[1]["result"]["serverInfo"]["name"] == "contextgraph"
    payload = answers[2]["result"]["structuredContent"]
    assert payload["results"][0]["name"] == "get_system_logs"
    assert_fresh_store_pulse(payload["_cognitive_pulse"])


def test_contextgraph_call_runs_in_process_when_no_server_listens(tmp_path):
    shown = claim(r"Simpler still: `(contextgraph call [^`]+)`").group(1)
    argv = [str(SCRIPT), *shlex.split(shown)[1:]]
    done = run(argv, tmp_path, CONTEXTGRAPH_PORT=str(free_port()))
    assert done.returncode == 0, done.stderr
    payload = json.loads(done.stdout)
    assert payload["results"][0]["name"] == "get_system_logs"
    assert_fresh_store_pulse(payload["_cognitive_pulse"])


def test_every_file_and_folder_the_layout_names_exists():
    block = re.search(r"```\n(.*?)```", section("Layout"), re.S)
    assert block, "the layout is gone"
    package = ROOT / "src" / "contextgraph"
    files = set(re.findall(r"\b(\w+\.(?:py|js|css|html|yaml))\b", block.group(1)))
    # "engine/ (the cognitive state", "static/ (index.html": a folder is a name, a slash, then a space or a stop
    folders = set(re.findall(r"\b([a-z_]+)/(?=[\s,)])", block.group(1))) - {"src", "contextgraph"}
    missing = {name for name in files if not any(package.rglob(name)) and not (ROOT / name).exists()}
    missing |= {f"{name}/" for name in folders if not any(p.is_dir() for p in package.rglob(name))}
    assert missing == set()


def test_the_layout_names_every_package_and_top_level_module():
    text = section("Layout")
    package = ROOT / "src" / "contextgraph"
    folders = {path.name for path in package.rglob("*") if path.is_dir() and path.name != "__pycache__"}
    modules = {path.name for path in package.glob("*.py") if not path.name.startswith("__")}
    unnamed = {f"{name}/" for name in folders if f"{name}/" not in text} | {m for m in modules if m not in text}
    assert unnamed == set(), "parts of the package the README's layout does not name"


def test_every_repository_path_the_readme_names_exists():
    """`benchmarks/bench_cold_start.py`, `services/memory/bulk_import.py`, `test_storage.py`: a file the README
    sends a reader to is there (placeholders such as DIR/… and a user's manifest.md are not the repository's)."""
    named = {token for token in re.findall(r"`([\w./*-]+)`", README)
             if re.search(r"\.(py|yaml|md|sh)$", token) and not re.match(r"[A-Z]+/", token)} - {"manifest.md"}
    places = (ROOT, ROOT / "src" / "contextgraph")
    missing = {token for token in named
               if not any(any(place.glob(token)) for place in places) and not any(ROOT.rglob(token))}
    assert missing == set()


def test_the_instructions_tool_states_its_own_size():
    """get_system_instructions' description says how many tokens its text is: that number follows the text."""
    from contextgraph.tools.metacog import system_instructions

    description = REGISTRY["all"].specs["get_system_instructions"].description
    stated = int(re.search(r"~(\d+) tokens", description).group(1))  # pyright: ignore[reportOptionalMemberAccess]
    actual = len(system_instructions().encode()) / BYTES_PER_TOKEN
    assert abs(stated - actual) <= 0.15 * actual, f"the description says ~{stated} tokens, the text is ~{actual:.0f}"
