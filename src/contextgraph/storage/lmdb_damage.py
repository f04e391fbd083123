"""Damage to an LMDB data file that LMDB itself would meet as a signal or would write through.

A data.mdb shorter than its pages: LMDB maps the file and reads pages through the mapping, so touching a page
past the end of the file kills the process with SIGBUS (no exception, no log line). The file's own meta pages
say how long it must be, so it is checked before anything maps it:

    page 0 and page 1 (at offset page size) each hold a meta page: a 16-byte page header (flags at byte 10,
    P_META = 0x08), then MDB_meta: magic 0xBEEFC0DE (u32), format version (u32), address, map size, two
    MDB_db records of 48 bytes (the first one's leading u32 is the page size), the last page in use (u64,
    byte 136) and the transaction id (u64, byte 144). LMDB reads the meta with the larger transaction id;
    the file must hold every page up to its last page.

A page corrupted in place (MDB_CORRUPTED, MDB_PAGE_NOTFOUND) is found only when a read or write walks into it.
Writing on into such a file can spread the damage, so whoever meets it records it in a note beside the data
file (`DAMAGED`); every LmdbStore on that directory, in any process, refuses writes while the note is there.
Reads go on: what still reads can be exported.
"""

from __future__ import annotations

import json
import os
import struct
import time
from pathlib import Path

import lmdb

from contextgraph.errors import StorageError

DATA_FILE = "data.mdb"
NOTE_FILE = "DAMAGED"
# errors that mean the file's pages are not what LMDB wrote, rather than a failed operation
CORRUPTION = (lmdb.CorruptedError, lmdb.PageNotFoundError)  # not MDB_PANIC: a failed disk write raises it too
WHAT_TO_DO = ("Stop the servers on this data directory; `contextgraph export --out FILE` saves what still reads, "
              "then restore the directory from a backup (or import FILE into a fresh one); `contextgraph doctor` "
              "checks the result")

_MAGIC = 0xBEEFC0DE
_P_META = 0x08
_HEADER = struct.Struct("<QHH")  # page number, pad, flags
_META_HEAD = struct.Struct("<II")  # magic, version (after the page header)
_META_TAIL = struct.Struct("<QQ")  # last page, txnid (at byte 136)
_META_END = 152  # the meta page's bytes read here: header, magic ... txnid


def file_damage(directory: Path) -> str | None:
    """What is wrong with the data file in `directory` as its meta pages describe it (None: nothing found,
    or no file yet). Reads two pages; never maps the file."""
    path = directory / DATA_FILE
    try:
        with open(path, "rb") as f:
            size = os.fstat(f.fileno()).st_size
            if size == 0:
                return None  # LMDB initialises an empty file as a new store
            first = f.read(4096)
            if len(first) < _META_END:
                return f"{path} is truncated: {size} bytes, shorter than its first meta page"
            meta0 = _meta(first, 0)
            page_size = struct.unpack_from("<I", first, 40)[0]
            if isinstance(meta0, str) or page_size < 512 or page_size & (page_size - 1):
                return f"{path}: {meta0 if isinstance(meta0, str) else f'meta page 0 names page size {page_size}'}"
            f.seek(page_size)
            second = f.read(_META_END)
    except FileNotFoundError:
        return None
    if len(second) < _META_END:
        return f"{path} is truncated: {size} bytes, shorter than its two meta pages ({2 * page_size})"
    meta1 = _meta(second, 1)
    if isinstance(meta1, str):
        return f"{path}: {meta1}"
    last_page = max((meta0, meta1), key=lambda m: m[1])[0]
    needed = (last_page + 1) * page_size
    if size < needed:
        return (f"{path} is truncated: {size} bytes, but its last page ({last_page}, of {page_size} bytes) "
                f"ends at byte {needed}")
    return None


def _meta(page: bytes, number: int) -> tuple[int, int] | str:
    """(last page, txnid) of a meta page (at least _META_END bytes of it), or what is wrong with it."""
    _pgno, _pad, flags = _HEADER.unpack_from(page, 0)
    magic, version = _META_HEAD.unpack_from(page, 16)
    if not flags & _P_META or magic != _MAGIC:
        return f"meta page {number} is not an LMDB meta page (overwritten, or not an LMDB file)"
    if version != 1:
        return f"meta page {number} has LMDB format version {version}, not 1"
    last_page, txnid = _META_TAIL.unpack_from(page, 136)
    return last_page, txnid


def read_note(directory: Path) -> str | None:
    """The recorded damage of the store in `directory`, or None."""
    try:
        note = json.loads((directory / NOTE_FILE).read_text())
    except FileNotFoundError:
        return None
    except (OSError, ValueError):
        return f"{directory / NOTE_FILE} exists (unreadable)"
    return str(note.get("damage", "")) if isinstance(note, dict) else f"{directory / NOTE_FILE} exists"


def write_note(directory: Path, damage: str) -> None:
    """Record `damage` for every process on this store. Best effort: a directory we may not write to (doctor run
    by another user) still gets the damage reported, just not remembered."""
    tmp = directory / f".{NOTE_FILE}.{os.getpid()}"
    try:
        tmp.write_text(json.dumps({"damage": damage, "at": time.time(), "pid": os.getpid()}))
        os.replace(tmp, directory / NOTE_FILE)
    except OSError:
        tmp.unlink(missing_ok=True)


def clear_note(directory: Path) -> None:
    (directory / NOTE_FILE).unlink(missing_ok=True)


def damaged(directory: Path, exc: lmdb.Error) -> StorageError:
    """Record page corruption a read or write met (the note stops every process's writes) and say so."""
    damage = f"{directory / DATA_FILE}: {exc}"
    write_note(directory, damage)
    return StorageError(f"the store is damaged: {damage}; writes to it are refused from now on. {WHAT_TO_DO}",
                        damage=damage)


def refuse_writes_if_damaged(directory: Path) -> None:
    """StorageError when damage is on record. Costs one failed open() of a small file: cheap next to the synced
    commit of the write it guards."""
    if (damage := read_note(directory)) is not None:
        raise StorageError(f"the store is damaged ({damage}); writes are refused so the damage cannot spread. "
                           f"{WHAT_TO_DO}, then delete {directory / NOTE_FILE}", damage=damage)
