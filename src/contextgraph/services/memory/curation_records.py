"""How curation keeps what it changes: a record as a document (a tombstone holds the exact record it restores),
times as ISO strings, and the extractive summary a merge writes."""

from __future__ import annotations

import re
from datetime import UTC, datetime

from contextgraph.storage.base import MemoryRecord
from contextgraph.storage.codec import decode_record, encode_record

SUMMARIZE_METHOD = ("extractive: the sources' distinct sentences in order, duplicates dropped; no language model "
                    "is available to write an abstractive summary")


def iso(ts: float) -> str:
    return datetime.fromtimestamp(ts, tz=UTC).isoformat()


def record_doc(record: MemoryRecord) -> str:
    """The exact record as the store encodes it (so a restore puts back byte-identical metadata)."""
    return encode_record(record)[1:].decode()


def record_from_doc(doc: str) -> MemoryRecord:
    return decode_record(b"\x01" + doc.encode())


def extractive_summary(contents: list[str]) -> str:
    seen: set[str] = set()
    out: list[str] = []
    for content in contents:
        for sentence in re.split(r"(?<=[.!?])\s+|\n+", content):
            sentence = sentence.strip()
            key = " ".join(sentence.lower().split()).rstrip(".!?")
            if sentence and key not in seen:
                seen.add(key)
                out.append(sentence)
    return " ".join(out)
