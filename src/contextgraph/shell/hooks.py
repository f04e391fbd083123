"""Claude Code hooks: the configuration `contextgraph hooks` prints (and `--install` merges into a project's
`.claude/settings.json`), and what `contextgraph call TOOL --hook` does with a hook's input and output.

The hooks (Claude Code settings format: event → [{matcher, hooks: [{type: command, command, timeout}]}]):

* **SessionStart** → `contextgraph call search_graph --hook`: searches the memory for the project (the
  directory's name) and hands Claude the best matches and the cognitive pulse as additional context; and
  `contextgraph call get_memetic_status --hook` (the seeds' session-start call): the memory's size and phase,
  the UTL state with its suggested action, and the curation tasks waiting (duplicates, orphans, conflicts).
* **PostToolUse** on `Edit|Write|MultiEdit` → `contextgraph call inject_context --hook`: stores what changed
  (file and new text, truncated) with a rationale, and hands Claude the related memories, if any.
* **SessionEnd** is not emitted: consolidation (`trigger_consolidation`) does not exist yet, and nothing that
  exists today is worth running when a session ends. `contextgraph hooks` says so on stderr.

Hook mode never exits 2 (which Claude Code treats as a blocking error for some events): a failure is exit 1,
shown to the user, and the session goes on.
"""

from __future__ import annotations

import difflib
import json
import os
import re
import shlex
from pathlib import Path, PurePath
from typing import Any

from contextgraph.constitution import constitution

EDIT_MATCHER = "Edit|Write|MultiEdit"
SESSION_END_NOTE = ("SessionEnd: not configured. It is meant to run consolidation when entropy is high, and "
                    "trigger_consolidation does not exist yet; re-run `contextgraph hooks --install` once it does.")
# A command this module wrote: `… contextgraph call TOOL --hook …` (how --install finds its own entries).
_OURS = re.compile(r"contextgraph['\"]? call \S+ --hook\b")
_CODE_SUFFIXES = frozenset({
    ".py", ".pyi", ".js", ".jsx", ".ts", ".tsx", ".mjs", ".cjs", ".rs", ".go", ".java", ".kt", ".c", ".h", ".cc",
    ".cpp", ".hpp", ".cs", ".rb", ".php", ".swift", ".scala", ".sh", ".bash", ".zsh", ".sql", ".lua", ".r", ".m",
    ".ipynb", ".vue", ".svelte", ".css", ".scss", ".html", ".toml", ".yaml", ".yml", ".json", ".mk", ".cmake",
})


def _limits() -> dict[str, Any]:
    return constitution()["transport"]


def hook_config(script: Path, home: Path | None = None) -> dict[str, Any]:
    """The `hooks` block for Claude Code's settings.json, calling `script` (the absolute console script)."""
    home_flag = f" --home {shlex.quote(str(home))}" if home else ""
    timeout = int(_limits()["hook_timeout_seconds"])

    def command(tool: str) -> dict[str, Any]:
        return {"type": "command", "command": f"{shlex.quote(str(script))} call {tool} --hook{home_flag}",
                "timeout": timeout}

    return {"hooks": {
        "SessionStart": [{"hooks": [command("search_graph"), command("get_memetic_status")]}],
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
def hook_arguments(tool: str, event: dict[str, Any], explicit: dict[str, Any]) -> dict[str, Any]:
    """Tool arguments derived from a hook's input (stdin JSON); explicit arguments win."""
    derived: dict[str, Any] = {}
    results = int(_limits()["hook_context_results"])
    if tool == "search_graph":
        derived = {"query": project_name(event), "top_k": results}
    elif tool == "inject_context" and event.get("tool_input") is not None:
        derived = edit_memory(event, results)
    return {**derived, **explicit}


def project_name(event: dict[str, Any]) -> str:
    return PurePath(str(event.get("cwd") or Path.cwd())).name or "project"


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


def hook_output(tool: str, event: dict[str, Any], payload: dict[str, Any]) -> dict[str, Any] | None:
    """What the hook prints for Claude Code: additional context for the model, or nothing."""
    name = str(event.get("hook_event_name") or "")
    if tool == "search_graph":
        text = _search_context(project_name(event), payload)
    elif tool == "inject_context":
        text = _related_context(payload)
    elif tool == "get_memetic_status":
        text = _status_context(payload)
    else:
        text = f"ContextGraph {tool}: " + json.dumps(payload, ensure_ascii=False)
    if not text or name not in ("SessionStart", "PostToolUse", "UserPromptSubmit"):
        return None  # events that take no additional context
    return {"hookSpecificOutput": {"hookEventName": name, "additionalContext": text}}


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


def _search_context(project: str, payload: dict[str, Any]) -> str:
    results = payload.get("results") or []
    head = (f"ContextGraph memory ({len(results)} memories related to '{project}'):" if results else
            f"ContextGraph memory: nothing stored yet relates to '{project}'. store_memory keeps decisions and "
            f"facts worth remembering; search_graph finds them later.")
    return "\n".join([head, *(_line(r) for r in results), _pulse_line(payload)]).strip()


def _status_context(payload: dict[str, Any]) -> str:
    utl = payload.get("utl") or {}
    tasks = payload.get("curation_tasks") or {}
    lines = [f"ContextGraph status: {payload.get('fingerprintCount', 0)} memories ({payload.get('phase')} phase); "
             f"entropy {utl.get('entropy')}, coherence {utl.get('coherence')}, Johari {utl.get('johariQuadrant')}; "
             f"suggested action: {utl.get('suggestedAction')}."]
    lines += [f"Curation waiting: {task}." for task in tasks.get("suggested") or []]
    return "\n".join(lines)


def _related_context(payload: dict[str, Any]) -> str:
    related = payload.get("related") or []
    if not related:
        return ""
    return "\n".join(["ContextGraph stored this change; related memories:", *(_line(r) for r in related)])
