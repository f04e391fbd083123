"""reload_manifest (docs/decisions.md#d20): the user manifest and the runtime settings.

The user manifest is a markdown file in the data directory (`manifest.md`; the tool's `path` overrides): the
user's standing instructions, domains and preferences, in three sections:

    ## Instructions        free lines (bullets or prose), merged into get_system_instructions
    ## Domains             bullets, each one of the ATC domains (Code, Medical, Legal, Creative, Research, General)
    ## Preferences         bullets `- key: value`

Lines before the first section (a `# title`, a note) are allowed. Validation comes first and is all-or-nothing:
a bad file (unknown section, a domain that does not exist, a preference that is not `key: value`, not UTF-8,
too large) is refused naming its line, and what is in force stays. An accepted manifest is kept as a store
document, so every process on the data directory (the server, the hooks' CLI) reads the same one.

Runtime settings: constitution.yaml is re-read and validated the same way (YAML errors name the line); the
retrieval numbers (RRF k, candidate counts, rerank head and weight, space and score weights) take effect at once
in search_graph; any other changed key is reported as needing a restart.
"""

from __future__ import annotations

import hashlib
import re
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import yaml

from contextgraph.constitution import Constitution, ConstitutionError
from contextgraph.errors import InvalidParams
from contextgraph.services.memory.memory import MemoryService
from contextgraph.services.memory.search import RetrievalSettings
from contextgraph.services.runtime.store_handle import StoreHandle

DOC = "user_manifest"
SECTIONS = ("instructions", "domains", "preferences")
MAX_BYTES = 65536
# constitution keys that take effect without a restart, with their check: (min, max) for numbers
RUNTIME_KEYS: dict[str, tuple[float, float]] = {
    "retrieval.rrf_k": (0.0, 1000.0), "retrieval.sparse_candidates": (1, 10000),
    "retrieval.dense_candidates": (1, 10000), "retrieval.rerank_head": (1, 10000),
    "retrieval.rerank_weight": (0.0, 1.0), "retrieval.sparse_max_df": (0.0, 1.0),
}
RUNTIME_MAPS: dict[str, tuple[float, float]] = {"retrieval.space_weights": (0.0, 10.0),
                                                "retrieval.score_weights": (0.0, 10.0)}
_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
_BULLET = re.compile(r"^\s*[-*+]\s+(.*)$")
_PREFERENCE = re.compile(r"^([A-Za-z][\w.\- ]{0,63}?)\s*:\s*(.+)$")


class ManifestError(ValueError):
    def __init__(self, message: str, line: int | None) -> None:
        super().__init__(message)
        self.line = line


@dataclass
class Manifest:
    instructions: list[str] = field(default_factory=list)
    domains: list[str] = field(default_factory=list)
    preferences: dict[str, str] = field(default_factory=dict)

    def doc(self) -> dict[str, Any]:
        return {"instructions": self.instructions, "domains": self.domains, "preferences": self.preferences}


def parse_manifest(text: str, domains: list[str]) -> Manifest:
    """The manifest's sections, or ManifestError naming the first bad line (1-based)."""
    out = Manifest()
    section: str | None = None
    allowed = {d.lower(): d for d in domains}
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        heading = _HEADING.match(line)
        if heading and len(heading.group(1)) == 2:
            name = heading.group(2).strip().lower()
            if name not in SECTIONS:
                raise ManifestError(f"unknown section '## {heading.group(2).strip()}'; the sections are "
                                    + ", ".join(f"'## {s.title()}'" for s in SECTIONS), number)
            section = name
            continue
        if heading or section is None:
            continue  # a title or a note before the first section
        bullet = _BULLET.match(line)
        item = (bullet.group(1) if bullet else line).strip()
        if section == "instructions":
            out.instructions.append(item)
        elif section == "domains":
            if not bullet:
                raise ManifestError("a domain must be a bullet ('- Code')", number)
            if item.lower() not in allowed:
                raise ManifestError(f"unknown domain '{item}'; allowed: {', '.join(domains)}", number)
            out.domains.append(allowed[item.lower()])
        else:
            pref = _PREFERENCE.match(item) if bullet else None
            if pref is None:
                raise ManifestError("a preference must be a bullet '- key: value'", number)
            out.preferences[pref.group(1).strip()] = pref.group(2).strip()
    return out


def _get(data: Any, dotted: str) -> Any:
    for part in dotted.split("."):
        if not isinstance(data, dict) or part not in data:
            return None
        data = data[part]
    return data


def _line_of(text: str, dotted: str) -> int | None:
    """The line of a dotted key's last part in a YAML text (for error messages): its first occurrence under the
    first part's block."""
    parts = dotted.split(".")
    lines = text.splitlines()
    start = next((i for i, line in enumerate(lines) if line.startswith(parts[0] + ":")), None)
    if start is None:
        return None
    for i in range(start + 1, len(lines)):
        if re.match(rf"^\s+{re.escape(parts[-1])}\s*:", lines[i]):
            return i + 1
        if lines[i] and not lines[i][0].isspace() and not lines[i].startswith("#"):
            break
    return start + 1


def validate_settings(path: Path) -> tuple[dict[str, Any], str]:
    """The constitution at `path`, parsed and its runtime keys checked; ManifestError naming the line otherwise."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ManifestError(f"cannot read {path}: {exc}", None) from exc
    try:
        # libyaml's C loader when the wheel has it (as constitution.load): ~4 ms instead of ~80 for this file
        data = yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        raise ManifestError(f"{path} is not valid YAML: {getattr(exc, 'problem', exc)}",
                            None if mark is None else mark.line + 1) from exc
    if not isinstance(data, dict) or "errors" not in data:
        raise ManifestError(f"{path} is not a constitution (no 'errors' registry)", 1)
    try:
        Constitution(data, path)
    except (ConstitutionError, KeyError, TypeError, ValueError) as exc:
        raise ManifestError(f"{path}: {exc}", _line_of(text, "errors")) from exc
    for key, (lo, hi) in RUNTIME_KEYS.items():
        value = _get(data, key)
        if isinstance(value, bool) or not isinstance(value, int | float) or not lo <= value <= hi:
            raise ManifestError(f"{key} must be a number in [{lo}, {hi}], got {value!r}", _line_of(text, key))
    for key, (lo, hi) in RUNTIME_MAPS.items():
        value = _get(data, key)
        if not isinstance(value, dict) or not all(
                isinstance(v, int | float) and not isinstance(v, bool) and lo <= v <= hi for v in value.values()):
            raise ManifestError(f"{key} must map space numbers to weights in [{lo}, {hi}]", _line_of(text, key))
    return data, text


def _diff(old: Any, new: Any, prefix: str = "") -> list[str]:
    if isinstance(old, dict) and isinstance(new, dict):
        out = []
        for key in sorted(set(old) | set(new), key=str):
            out += _diff(old.get(key), new.get(key), f"{prefix}{key}.")
        return out
    return [] if old == new else [prefix.rstrip(".")]


def _refused(what: str, path: Path, exc: ManifestError) -> InvalidParams:
    where = f" at line {exc.line}" if exc.line else ""
    return InvalidParams(f"reload_manifest refused {what} ({path}{where}): {exc}. Nothing was changed: the previous "
                         "configuration stays in force. Fix that line and call reload_manifest again.",
                         field="path", file=str(path), line=exc.line)


class ManifestService:
    def __init__(self, storage: StoreHandle, memory: MemoryService, constitution: Constitution) -> None:
        self.storage = storage
        self.memory = memory
        self.constitution = constitution
        self.domains = [str(d) for d in constitution["atc"]["domains"]]

    def default_path(self) -> Path:
        return self.storage.home / "manifest.md"

    def in_force(self) -> dict[str, Any] | None:
        return self.storage.store.get_document(DOC)

    def _prepare(self, path: str | None) -> tuple[Path, Manifest | None, str, dict[str, Any]]:
        """Read and validate the manifest and the settings (everything before anything changes)."""
        target = Path(path).expanduser() if path else self.default_path()
        if path and not target.exists():
            raise InvalidParams(f"reload_manifest: no file at {target}. Nothing was changed. Leave 'path' out to read "
                                f"{self.default_path()}.", field="path", file=str(target))
        try:
            manifest, raw = self._read_manifest(target)
        except ManifestError as exc:
            raise _refused("the manifest", target, exc) from exc
        try:
            settings, _ = validate_settings(self.constitution.path)
        except ManifestError as exc:
            raise _refused("the runtime settings", self.constitution.path, exc) from exc
        return target, manifest, raw, settings

    async def reload(self, path: str | None) -> dict[str, Any]:
        storage = await self.storage.ready()
        target, manifest, raw, settings = await anyio.to_thread.run_sync(lambda: self._prepare(path))
        previous = storage.store.get_document(DOC) or {}
        old_sections = previous.get("manifest") or {s: [] if s != "preferences" else {} for s in SECTIONS}
        new_sections = manifest.doc() if manifest is not None else {s: [] if s != "preferences" else {}
                                                                    for s in SECTIONS}
        changes: dict[str, Any] = {}
        for section in SECTIONS:
            before, after = old_sections.get(section), new_sections[section]
            if section == "preferences":
                b, a = dict(before or {}), dict(after)
                delta = {"added": {k: v for k, v in a.items() if k not in b},
                         "removed": sorted(k for k in b if k not in a),
                         "changed": {k: {"from": b[k], "to": v} for k, v in a.items() if k in b and b[k] != v}}
            else:
                delta = {"added": [x for x in after if x not in (before or [])],
                         "removed": [x for x in (before or []) if x not in after]}
            if any(delta.values()):
                changes[section] = delta
        setting_changes = _diff(self.constitution.data, settings)
        runtime = [k for k in setting_changes if any(k == r or k.startswith(r + ".") for r in
                                                     (*RUNTIME_KEYS, *RUNTIME_MAPS))]
        restart = [k for k in setting_changes if k not in runtime]
        if runtime:
            self.memory.retrieval_settings = RetrievalSettings.from_constitution(settings)
            for key in {".".join(k.split(".")[:2]) for k in runtime}:
                section, name = key.split(".", 1)
                self.constitution.data[section][name] = settings[section][name]
        doc = {"path": str(target), "exists": manifest is not None, "loaded_at": time.time(),
               "sha256": hashlib.sha256(raw.encode()).hexdigest() if raw else None,
               "manifest": new_sections}
        await storage.writer.submit(storage.store.put_document, DOC, doc)
        return {"reloaded": True, "path": str(target), "manifest_found": manifest is not None,
                "manifest": new_sections, "manifest_changes": changes,
                "settings": {"file": str(self.constitution.path), "applied_now": runtime,
                             "need_restart": restart},
                "message": (("No manifest file at that path: the manifest in force is now empty. " if manifest is None
                             else "") + f"{sum(len(v) for v in new_sections.values())} manifest entries in force; "
                            f"{len(runtime)} setting(s) applied, {len(restart)} need a restart.")}

    def _read_manifest(self, path: Path) -> tuple[Manifest | None, str]:
        if not path.exists():
            return None, ""
        if not path.is_file():
            raise ManifestError(f"{path} is not a file", None)
        blob = path.read_bytes()
        if len(blob) > MAX_BYTES:
            raise ManifestError(f"{path} is {len(blob)} bytes; at most {MAX_BYTES}", None)
        try:
            text = blob.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ManifestError(f"{path} is not UTF-8 text", blob[: exc.start].count(b"\n") + 1) from exc
        return parse_manifest(text, self.domains), text
