"""Claude Code hooks: the configuration `contextgraph hooks` prints (and `--install` merges into a project's
`.claude/settings.json`), and what `contextgraph call TOOL --hook` does with a hook's input and output.

The hooks (Claude Code settings format: event → [{matcher, hooks: [{type: command, command, timeout}]}]):

* **SessionStart** → `contextgraph call search_graph --hook`: searches the memory for the project (its README's
  title and first paragraph, the git branch and the latest commit subjects; the directory's name when there is
  none of that) and hands Claude the matches above a relevance floor (`hooks.session_min_similarity`) with the
  cognitive pulse; and `contextgraph call get_memetic_status --hook` (the session-start call): the
  memory's size and phase, the UTL state with its suggested action, and the curation tasks waiting.
* **UserPromptSubmit** → `contextgraph call search_graph --hook`: searches for the prompt and hands Claude the
  few memories relevant to it (`hooks.prompt_min_similarity`); nothing for short prompts and slash commands.
* **PostToolUse** on `Edit|Write|MultiEdit` → `contextgraph call inject_context --hook`: stores what changed
  (file and new text, truncated) with a rationale, and hands Claude the related memories, if any; an edit a
  stored memory already says (E1 similarity ≥ `hooks.duplicate_similarity`: the same edit again, or nearly) is
  not stored twice.
* **SessionEnd** is not emitted: `trigger_consolidation` merges only when asked (`execute: true`; a dry run
  otherwise), and merging memories unasked at the end of every session is not a hook's call to make.
  `contextgraph hooks` says so on stderr.

Every hook tries the server listening on the configured TCP address first (`contextgraph serve --transport
tcp`, or `all`), when it serves the hook's store (shell/call.py checks): the hook then costs a Python start, the
constitution, one connection and the tool itself (~0.3 s on two shared cores, of which the server's part is
~65 ms). With no server it runs in-process and opens the store and loads the model each time (2-4 s on the same
machine; benchmarks/bench_hooks.py measures both).

Hook mode never exits 2 (which Claude Code treats as a blocking error for some events): a failure is exit 1,
shown to the user, and the session goes on.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from pathlib import Path, PurePath
from typing import TYPE_CHECKING, Any

from contextgraph.constitution import constitution
from contextgraph.shell.project_summary import describe

if TYPE_CHECKING:
    from contextgraph.shell.call import Caller, CallResult

EDIT_MATCHER = "Edit|Write|MultiEdit"
SESSION_END_NOTE = ("SessionEnd: not configured. trigger_consolidation merges only when asked (a dry run "
                    "otherwise): run it with execute=true when its dry run shows merges you want.")
# A command this module wrote: `… contextgraph call TOOL --hook …` (how --install finds its own entries).
_OURS = re.compile(r"contextgraph['\"]? call \S+ --hook\b")
_CODE_SUFFIXES = frozenset({
    ".py", ".pyi", ".js", ".jsx", ".ts", ".tsx", ".mjs", ".cjs", ".rs", ".go", ".java", ".kt", ".c", ".h", ".cc",
    ".cpp", ".hpp", ".cs", ".rb", ".php", ".swift", ".scala", ".sh", ".bash", ".zsh", ".sql", ".lua", ".r", ".m",
    ".ipynb", ".vue", ".svelte", ".css", ".scss", ".html", ".toml", ".yaml", ".yml", ".json", ".mk", ".cmake",
})


def _limits() -> dict[str, Any]:
    return constitution()["transport"]


def _tuning() -> dict[str, Any]:
    return constitution()["hooks"]


def hook_config(script: Path, home: Path | None = None) -> dict[str, Any]:
    """The `hooks` block for Claude Code's settings.json, calling `script` (the absolute console script)."""
    import shlex  # here and below: imports a hook's own run does not need stay out of its start-up

    home_flag = f" --home {shlex.quote(str(home))}" if home else ""
    timeout = int(_limits()["hook_timeout_seconds"])

    def command(tool: str) -> dict[str, Any]:
        return {"type": "command", "command": f"{shlex.quote(str(script))} call {tool} --hook{home_flag}",
                "timeout": timeout}

    return {"hooks": {
        "SessionStart": [{"hooks": [command("search_graph"), command("get_memetic_status")]}],
        "UserPromptSubmit": [{"hooks": [command("search_graph")]}],
        "PostToolUse": [{"matcher": EDIT_MATCHER, "hooks": [command("inject_context")]}],
    }}


def _is_ours(group: Any) -> bool:
    return isinstance(group, dict) and any(
        isinstance(h, dict) and _OURS.search(str(h.get("command", ""))) for h in group.get("hooks") or [])


def merge(settings: dict[str, Any], config: dict[str, Any]) -> dict[str, Any]:
    """`settings` with our hook groups in place: groups we wrote before are replaced, everything else (other
    hooks, other events, other settings) is kept as it was. Idempotent."""
    merged = dict(settings)
    hooks = dict(merged.get("hooks") or {})
    for event, groups in config["hooks"].items():
        kept = [g for g in hooks.get(event) or [] if not _is_ours(g)]
        hooks[event] = kept + groups
    merged["hooks"] = hooks
    return merged


def install(project: Path, config: dict[str, Any]) -> tuple[Path, str]:
    """Merge into `<project>/.claude/settings.json`; returns the path and the unified diff (empty: unchanged).
    A settings file that is not a JSON object is refused (ValueError), never overwritten."""
    import difflib

    path = project / ".claude" / "settings.json"
    before_text = path.read_text(encoding="utf-8") if path.exists() else ""
    try:
        before = json.loads(before_text) if before_text.strip() else {}
    except json.JSONDecodeError as exc:
        raise ValueError(f"{path} is not valid JSON ({exc}); fix it or move it away, then install again") from None
    if not isinstance(before, dict):
        raise ValueError(f"{path} does not hold a JSON object; fix it or move it away, then install again")
    after_text = json.dumps(merge(before, config), indent=2, ensure_ascii=False) + "\n"
    if before and json.loads(after_text) == before:
        return path, ""
    diff = "".join(difflib.unified_diff(before_text.splitlines(keepends=True), after_text.splitlines(keepends=True),
                                        fromfile=str(path) if before_text else "/dev/null", tofile=str(path)))
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(path.name + ".contextgraph-tmp")
    temporary.write_text(after_text, encoding="utf-8")
    os.replace(temporary, path)
    return path, diff


# -- hook mode: `contextgraph call TOOL --hook` ---------------------------------------------------------------------
@dataclass
class HookRun:
    """What one hook did: its output for Claude Code (None: print nothing), or the call that failed."""

    output: dict[str, Any] | None = None
    failure: CallResult | None = None
    skipped: str = ""  # why nothing was called or stored (for tests and --log-level debug)


def event_name(event: dict[str, Any]) -> str:
    return str(event.get("hook_event_name") or "")


def hook_arguments(tool: str, event: dict[str, Any], explicit: dict[str, Any]) -> dict[str, Any] | None:
    """Tool arguments derived from a hook's input (stdin JSON); explicit arguments win. None: nothing to call
    (a prompt too short to search for)."""
    derived: dict[str, Any] = {}
    results = int(_limits()["hook_context_results"])
    tuning = _tuning()
    if tool == "search_graph" and event_name(event) == "UserPromptSubmit" and "query" not in explicit:
        query = prompt_query(event)
        if query is None:
            return None
        derived = {"query": query, "top_k": int(tuning["prompt_results"]),
                   "min_similarity": float(tuning["prompt_min_similarity"])}
    elif tool == "search_graph":
        derived = {"query": project_query(event), "top_k": results,
                   "min_similarity": float(tuning["session_min_similarity"])}
    elif tool == "inject_context" and event.get("tool_input") is not None:
        derived = edit_memory(event, results)
    return {**derived, **explicit}


def run_hook(call: Caller, tool: str, event: dict[str, Any], explicit: dict[str, Any]) -> HookRun:
    """One hook: derive the arguments, call the tool (an edit is first looked up, and not stored again when a
    stored memory already says it), and shape what Claude Code gets."""
    arguments = hook_arguments(tool, event, explicit)
    if arguments is None:
        return HookRun(skipped="the prompt is too short or a slash command")
    if tool == "inject_context" and event.get("tool_input") is not None:
        nearest = duplicate_of(call, str(arguments.get("content", "")))
        if nearest is not None:
            return HookRun(skipped=f"already stored as {nearest}")
    result = call(tool, arguments)
    if not result.ok:
        return HookRun(failure=result)
    output = hook_output(tool, event, result.payload or {}, arguments)
    if tool == "get_memetic_status" and output is not None:
        # the user's manifest (docs/tools.md: standing instructions, domains, preferences) joins the session's context;
        # in this process, so it costs no extra hook. A failed read leaves the status context as it was.
        instructions = call("get_system_instructions", {})
        lines = _manifest_lines((instructions.payload or {}) if instructions.ok else {})
        if lines:
            context = output["hookSpecificOutput"]
            context["additionalContext"] = "\n".join([context["additionalContext"], *lines])
    return HookRun(output=output)


def _manifest_lines(payload: dict[str, Any]) -> list[str]:
    manifest = payload.get("manifest") or {}
    lines = [f"- {line}" for line in manifest.get("instructions") or []]
    if manifest.get("domains"):
        lines.append(f"- Domains: {', '.join(manifest['domains'])}")
    lines += [f"- Preference {k}: {v}" for k, v in (manifest.get("preferences") or {}).items()]
    return ["The user's standing instructions (manifest):", *lines] if lines else []


def duplicate_of(call: Caller, content: str) -> str | None:
    """The id of a stored memory at least `hooks.duplicate_similarity` similar (E1) to `content`, if any. A
    failed lookup stores the edit anyway: a duplicate costs less than a lost change."""
    if not content.strip():
        return None
    query = content[: int(constitution()["validation"]["query"]["max_length"])]
    found = call("search_graph", {"query": query, "top_k": 1,
                                  "min_similarity": float(_tuning()["duplicate_similarity"])})
    results = (found.payload or {}).get("results") or [] if found.ok else []
    return str(results[0].get("id")) if results else None


def prompt_query(event: dict[str, Any]) -> str | None:
    """The prompt as a query, or None when it is too short to mean anything or a slash command."""
    prompt = " ".join(str(event.get("prompt") or "").split())
    if len(prompt) < int(_tuning()["prompt_min_chars"]) or prompt.startswith("/"):
        return None
    return prompt[: int(_tuning()["prompt_query_chars"])]


def project_name(event: dict[str, Any]) -> str:
    return PurePath(str(event.get("cwd") or Path.cwd())).name or "project"


def project_query(event: dict[str, Any]) -> str:
    """What the project is about (shell.project_summary), or the directory's name when nothing says."""
    tuning = _tuning()
    cwd = Path(str(event.get("cwd") or Path.cwd()))
    return describe(cwd, int(tuning["recent_commits"]), int(tuning["project_query_chars"])) or project_name(event)


def edit_memory(event: dict[str, Any], related_k: int) -> dict[str, Any]:
    """inject_context arguments for an Edit, Write or MultiEdit: what changed, where, and why it is kept."""
    max_chars = int(_limits()["hook_content_chars"])
    tool = str(event.get("tool_name") or "Edit")
    given = event.get("tool_input") or {}
    raw_path = str(given.get("file_path") or given.get("notebook_path") or "an unnamed file")
    path = raw_path
    cwd = event.get("cwd")
    if cwd:
        try:
            path = str(PurePath(raw_path).relative_to(cwd))
        except ValueError:
            pass
    if tool == "Write":
        text = str(given.get("content") or "")
    elif tool == "MultiEdit":
        text = "\n…\n".join(str(e.get("new_string") or "") for e in given.get("edits") or [] if isinstance(e, dict))
    else:
        text = str(given.get("new_string") or "")
    verb = {"Write": "Wrote", "MultiEdit": "Edited (several places)"}.get(tool, "Edited")
    content = f"{verb} {path}:\n{text}" if text.strip() else f"{verb} {path} (text removed)"
    if len(content) > max_chars:
        content = content[: max_chars - 1] + "…"
    suffix = PurePath(raw_path).suffix.lower()
    arguments: dict[str, Any] = {
        "content": content,
        "rationale": f"Claude Code changed {path[:200]} ({tool}); kept so that later sessions know what changed "
                     f"where.",
        "modality": "code" if suffix in _CODE_SUFFIXES else "text",
        "tags": ["claude-code", tool.lower()] + ([suffix.lstrip(".")] if suffix else []),
        "related_k": related_k,
    }
    if event.get("session_id"):
        arguments["session_id"] = str(event["session_id"])[:128]
    return arguments


def hook_output(tool: str, event: dict[str, Any], payload: dict[str, Any],
                arguments: dict[str, Any] | None = None) -> dict[str, Any] | None:
    """What the hook prints for Claude Code: additional context for the model, or nothing."""
    name = event_name(event)
    if tool == "search_graph":
        query = str(payload.get("query") or (arguments or {}).get("query") or project_name(event))
        text = (_prompt_context(query, payload) if name == "UserPromptSubmit" else
                _search_context(query, payload))
    elif tool == "inject_context":
        text = _related_context(payload)
    elif tool == "get_memetic_status":
        text = _status_context(payload)
    else:
        text = f"ContextGraph {tool}: " + json.dumps(payload, ensure_ascii=False)
    if not text or name not in ("SessionStart", "PostToolUse", "UserPromptSubmit"):
        return None  # events that take no additional context
    return {"hookSpecificOutput": {"hookEventName": name, "additionalContext": text}}


def _shown(query: str, width: int = 120) -> str:
    query = " ".join(query.split())
    return query if len(query) <= width else query[: width - 1] + "…"


def _pulse_line(payload: dict[str, Any]) -> str:
    pulse = payload.get("_cognitive_pulse") or {}
    if not pulse:
        return ""
    return (f"Cognitive pulse: quadrant {pulse.get('quadrant')}, entropy {pulse.get('entropy')}, coherence "
            f"{pulse.get('coherence')}; suggested action: {pulse.get('suggested_action')}.")


def _line(item: dict[str, Any], width: int = 240) -> str:
    content = " ".join(str(item.get("content", "")).split())
    if len(content) > width:
        content = content[: width - 1] + "…"
    tags = f" [{', '.join(item['tags'])}]" if item.get("tags") else ""
    return f"- {str(item.get('id', ''))[:8]}{tags}: {content}"


def _trusted(items: Any) -> list[dict[str, Any]]:
    """Memories fit for the model's context: not those the store-time adversarial screen quarantined (a stored
    prompt injection must not reach the model through a hook; check_adversarial, homeostatic_status)."""
    return [item for item in items or [] if not item.get("quarantined")]


def _search_context(query: str, payload: dict[str, Any]) -> str:
    results = _trusted(payload.get("results"))
    head = (f"ContextGraph memory ({len(results)} memories relevant to this project; searched for "
            f"'{_shown(query)}'):" if results else
            f"ContextGraph memory: no stored memory is relevant to this project yet (searched for "
            f"'{_shown(query)}'). store_memory keeps decisions and facts worth remembering; search_graph finds "
            f"them later.")
    return "\n".join([head, *(_line(r) for r in results), _pulse_line(payload)]).strip()


def _prompt_context(query: str, payload: dict[str, Any]) -> str:
    results = _trusted(payload.get("results"))
    if not results:
        return ""  # nothing relevant: add nothing to this turn
    return "\n".join([f"ContextGraph memories relevant to this prompt ({len(results)}):",
                      *(_line(r) for r in results)])


def _status_context(payload: dict[str, Any]) -> str:
    utl = payload.get("utl") or {}
    tasks = payload.get("curation_tasks") or {}
    lines = [f"ContextGraph status: {payload.get('fingerprintCount', 0)} memories ({payload.get('phase')} phase); "
             f"entropy {utl.get('entropy')}, coherence {utl.get('coherence')}, Johari {utl.get('johariQuadrant')}; "
             f"suggested action: {utl.get('suggestedAction')}."]
    lines += [f"Curation waiting: {task}." for task in tasks.get("suggested") or []]
    return "\n".join(lines)


def _related_context(payload: dict[str, Any]) -> str:
    floor = float(_tuning()["session_min_similarity"])  # the same relevance floor as the session's context
    related = [r for r in _trusted(payload.get("related")) if float(r.get("similarity") or 0.0) >= floor]
    if not related:
        return ""
    return "\n".join(["ContextGraph stored this change; related memories:", *(_line(r) for r in related)])
