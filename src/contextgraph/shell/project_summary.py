"""What a project is about, in words a memory about it would share: its README's title and first paragraph, the
git branch (unless it is the main line) and the latest commit subjects. The SessionStart hook searches the memory
with it (shell.hooks)."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path


def describe(cwd: Path, recent_commits: int, max_chars: int) -> str:
    """The project's description from `cwd` (its README, else the git root's), at most `max_chars`; "" when there
    is no README and no git history."""
    root = _git_root(cwd)
    parts = [*_readme_summary(cwd if _readme(cwd) or root is None else root)]
    if root is not None:
        branch = _git_branch(root)
        if branch and branch not in ("main", "master", "trunk", "develop"):
            parts.append(f"Branch {branch}.")
        subjects = _recent_commits(root, recent_commits)
        if subjects:
            parts.append("Recent work: " + "; ".join(subjects) + ".")
    return " ".join(" ".join(parts).split())[:max_chars]


def _readme(directory: Path) -> Path | None:
    for name in ("README.md", "README.rst", "README.txt", "README", "readme.md"):
        if (directory / name).is_file():
            return directory / name
    return None


_MARKUP = re.compile(r"!\[[^\]]*\]\([^)]*\)|\[([^\]]*)\]\([^)]*\)|[`*_<>]")


def _readme_summary(directory: Path) -> list[str]:
    """[title, first paragraph] of the README in `directory` (badges, images, HTML and code left out)."""
    path = _readme(directory)
    if path is None:
        return []
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            text = f.read(16384)
    except OSError:
        return []
    title, paragraph, fenced = "", [], False
    for raw in text.splitlines():
        line = raw.strip()
        if line.startswith("```"):
            fenced = not fenced
            continue
        if fenced or re.fullmatch(r"[=\-~#*]{3,}", line) or line.startswith(("<", "[![", "![", "..")):
            continue
        if not title:
            if line:
                title = line.lstrip("#").strip()
            continue
        if not line or line.startswith("#"):
            if paragraph:
                break
            continue
        paragraph.append(line)
    clean = [_MARKUP.sub(lambda m: m.group(1) or "", part).strip() for part in (title, " ".join(paragraph))]
    return [part[:300] for part in clean if part]  # room left for the commits (E1 reads ~500 characters)


def _git_root(start: Path) -> Path | None:
    for directory in (start, *start.parents):
        if (directory / ".git").exists():
            return directory
    return None


def _git_branch(root: Path) -> str:
    try:
        head = (root / ".git" / "HEAD").read_text(encoding="utf-8").strip()
    except OSError:  # a worktree or submodule (.git is a file): no branch in the query
        return ""
    return head.removeprefix("ref: refs/heads/") if head.startswith("ref: refs/heads/") else ""


def _recent_commits(root: Path, count: int) -> list[str]:
    if count <= 0:
        return []
    try:
        done = subprocess.run(["git", "-C", str(root), "log", f"-{count}", "--no-merges", "--format=%s"],
                              capture_output=True, text=True, timeout=2, check=False)
    except (OSError, subprocess.SubprocessError):  # no git, or too slow: the README is enough
        return []
    return [line.strip()[:120] for line in done.stdout.splitlines() if line.strip()] if done.returncode == 0 else []
