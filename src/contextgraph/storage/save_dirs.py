"""The sibling directories an index save works in, and the removal of those a dead save left behind.

IndexSet.save (through `publish`) writes into `.indexes.tmp-PID-RAND`, renames the current set to
`.indexes.old-PID-RAND`, renames the new one into place and deletes the old one. A process killed on the way
leaves the tmp (or old) directory behind, a full set of index files each time, and nothing else would ever
delete it.

Several processes may share a data directory, so a leftover is removed only when it is clearly stale:
  * a tmp directory is locked (flock) by its saver for as long as the save runs: a lock we can take means
    no save is using it. The kernel drops the lock when the saver dies, however it dies;
  * and its owner process is gone (the PID in its name), or it has not changed for `STALE_AFTER_S` (a PID can
    be reused; a PID from another PID namespace looks dead, so the lock is what protects a running save).
An old directory lives only between two renames and an rmtree of one save; it carries no lock of its own (the
saver's lock moved with the tmp directory it renamed), so it goes when its owner is gone or it is that old.
"""

from __future__ import annotations

import errno
import fcntl
import os
import re
import shutil
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

STALE_AFTER_S = 600.0  # no save takes this long: one of 100K memories writes its files in seconds


def staging_name(directory: Path, role: str, tag: str) -> Path:
    """`.NAME.tmp-TAG` / `.NAME.old-TAG` beside `directory`; TAG is `PID-RANDOM`."""
    return directory.with_name(f".{directory.name}.{role}-{tag}")


def hold(path: Path) -> int:
    """Lock `path` (a directory) for the caller's save; returns the descriptor that release() closes."""
    fd = os.open(path, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # a fresh directory: nobody else can hold it
    except BaseException:
        os.close(fd)
        raise
    return fd


def release(fd: int) -> None:
    os.close(fd)  # closing the descriptor drops the flock


@dataclass(frozen=True, slots=True)
class Leftover:
    path: Path
    role: str  # "tmp" or "old"
    pid: int

    def describe(self) -> str:
        return f"{self.path.name} (pid {self.pid}, {'alive' if _alive(self.pid) else 'gone'})"


def leftovers(directory: Path) -> list[Leftover]:
    """Every tmp and old directory of `directory`'s saves, live or stale, oldest name first."""
    pattern = re.compile(rf"^\.{re.escape(directory.name)}\.(tmp|old)-(\d+)-[0-9a-f]+$")
    try:
        names = sorted(os.listdir(directory.parent))
    except (FileNotFoundError, NotADirectoryError):  # no data directory yet, or a file where it should be
        return []
    found = []
    for name in names:
        match = pattern.match(name)
        if match and (directory.parent / name).is_dir():
            found.append(Leftover(directory.parent / name, match.group(1), int(match.group(2))))
    return found


def is_stale(leftover: Leftover) -> bool:
    """Whether no save owns it any more (see the module docstring); reads only."""
    if leftover.role == "tmp" and _locked(leftover.path):
        return False
    return not _alive(leftover.pid) or _age(leftover.path) > STALE_AFTER_S


def remove_stale(directory: Path) -> list[Path]:
    """Delete the stale leftovers of `directory`'s saves; returns what was deleted. A tmp directory is deleted
    while holding its lock, so a save cannot start using it meanwhile."""
    removed = []
    for leftover in leftovers(directory):
        if leftover.role == "tmp":
            try:
                fd = hold(leftover.path)
            except (BlockingIOError, FileNotFoundError):
                continue  # a save holds it, or another process removed it first
            try:
                if _alive(leftover.pid) and _age(leftover.path) <= STALE_AFTER_S:
                    continue
                shutil.rmtree(leftover.path, ignore_errors=True)
            finally:
                release(fd)
        elif is_stale(leftover):
            shutil.rmtree(leftover.path, ignore_errors=True)
        else:
            continue
        if not leftover.path.exists():
            removed.append(leftover.path)
    return removed


def _locked(path: Path) -> bool:
    try:
        fd = hold(path)
    except BlockingIOError:
        return True
    except FileNotFoundError:
        return False
    release(fd)
    return False


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process
        return True
    except OSError as exc:
        return exc.errno != errno.ESRCH
    return True


def _age(path: Path) -> float:
    try:
        return time.time() - path.stat().st_mtime
    except FileNotFoundError:
        return 0.0


def publish(directory: Path, fill: Callable[[Path], None]) -> None:
    """`fill` writes a set of files into a fresh sibling of `directory`; flushed, it is renamed into place in one
    step, so a reader (or a crash) sees the old set or the new one, never a mix. Another process publishing at
    the same time may win instead: either result is valid."""
    directory.parent.mkdir(parents=True, exist_ok=True)
    tag = f"{os.getpid()}-{uuid.uuid4().hex[:8]}"
    tmp = staging_name(directory, "tmp", tag)
    tmp.mkdir()
    owner = hold(tmp)  # held until done: a process that starts meanwhile leaves tmp alone
    try:
        fill(tmp)
        _fsync_tree(tmp)
        old = staging_name(directory, "old", tag)
        try:
            os.rename(directory, old)
        except FileNotFoundError:
            old = None
        try:
            os.rename(tmp, directory)
        except OSError as exc:
            if exc.errno not in (errno.ENOTEMPTY, errno.EEXIST):
                raise
            # another process put its directory there first: it wins
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
        release(owner)


def _fsync_tree(directory: Path) -> None:
    """Flush the files and the directory entry, so a crash after the rename cannot leave a torn index behind."""
    for path in directory.iterdir():
        with open(path, "rb") as f:
            os.fsync(f.fileno())
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
