"""What every JSON-RPC wire shares before a message reaches the SDK: reading bounded lines (stdio, TCP),
turning one wire message into a SessionMessage or the exception that answers it, and recognising an HTTP
request that reached a line-oriented port.

Why the envelope is checked here: the SDK's message union falls back to *notification* for a request whose
`id` is an object, array, float or bool (the notification model ignores unknown keys), so such a request
was silently dropped. JSON-RPC 2.0 §5 wants -32600 with id null; `parse_message` raises InvalidEnvelope for
it, and the relay (line wires) or the HTTP endpoint answers.
"""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator
from typing import Any

import anyio
import mcp.types as types
from anyio.abc import ByteReceiveStream
from mcp.shared.message import SessionMessage

CHUNK = 65536
DISCONNECTED = (anyio.EndOfStream, anyio.BrokenResourceError, anyio.ClosedResourceError, ConnectionError)

# A request line (`POST / HTTP/1.1`) or a header line (`Host: 127.0.0.1:7878`): what a browser's fetch or a
# form post sends first. Neither can begin a JSON-RPC line, which starts with `{`. The request line is matched
# as leniently as HTTP servers parse it (any case, spaces or tabs), so that no spelling slips past to have
# its body run as JSON-RPC lines.
_HTTP_REQUEST_LINE = re.compile(rb"^[A-Za-z]{3,12}[ \t]+\S+[ \t]+HTTP/\d(\.\d)?[ \t]*\r?$", re.IGNORECASE)
_HTTP_HEADER_LINE = re.compile(rb"^[A-Za-z0-9!#$%&'*+.^_`|~-]+:[ \t]*\S")


async def read_lines(stream: ByteReceiveStream, limit: int) -> AsyncIterator[bytes | MessageTooLarge]:
    """Lines without their newline; a line longer than `limit` bytes is skipped without being buffered and
    yields MessageTooLarge instead. Ends at EOF (a last line without a newline counts)."""
    buffer = bytearray()
    discarding = False
    while True:
        try:
            chunk = await stream.receive(CHUNK)
        except DISCONNECTED:
            if buffer and not discarding:
                yield bytes(buffer)
            return
        start = 0
        while True:
            end = chunk.find(b"\n", start)
            piece = chunk[start:] if end == -1 else chunk[start:end]
            if not discarding:
                if len(buffer) + len(piece) > limit:
                    discarding = True
                    buffer.clear()
                    yield MessageTooLarge(limit)
                else:
                    buffer += piece
            if end == -1:
                break
            if not discarding:
                yield bytes(buffer)
            buffer.clear()
            discarding = False
            start = end + 1


class MessageTooLarge(Exception):
    """A wire message longer than the limit; it was discarded unread (answered -32600)."""

    def __init__(self, limit: int) -> None:
        super().__init__(f"message longer than {limit} bytes")
        self.limit = limit


class InvalidEnvelope(Exception):
    """A JSON-RPC request the SDK would misread (e.g. its id is an object): answered -32600, id null."""


def looks_like_http(line: bytes) -> bool:
    """True for an HTTP request line or header line (the first line a cross-protocol request sends)."""
    line = line.lstrip()
    return bool(_HTTP_REQUEST_LINE.match(line) or _HTTP_HEADER_LINE.match(line))


def envelope_problem(decoded: Any) -> str | None:
    """Why a decoded message cannot be answered with its own id, or None. Only a request-shaped object (one
    with `method`) is judged: its `id`, when present, must be a string or an integer."""
    if not isinstance(decoded, dict) or "method" not in decoded or "id" not in decoded:
        return None
    request_id = decoded["id"]
    if isinstance(request_id, str) or (isinstance(request_id, int) and not isinstance(request_id, bool)):
        return None
    kind = "null" if request_id is None else {dict: "an object", list: "an array", float: "a number with a "
                                              "fraction", bool: "a boolean"}.get(type(request_id), "invalid")
    return f"the request id is {kind}; a JSON-RPC id must be a string or an integer"


class NotJson(Exception):
    """A wire message that is not valid JSON (answered -32700); the text says why without Python's own words."""


def parse_message(data: bytes) -> SessionMessage | Exception:
    """One wire message → a SessionMessage, or the exception the relay answers (-32700 / -32600)."""
    try:
        decoded = json.loads(data)
    except json.JSONDecodeError as exc:
        return NotJson(f"not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}")
    except UnicodeDecodeError:
        return NotJson("not valid JSON: it is not UTF-8 text")
    except RecursionError:
        return NotJson("not valid JSON here: it is nested too deeply")
    except ValueError:  # a number too long to convert (CPython limits integers to 4300 digits)
        return NotJson("not valid JSON here: a number in it is too long")
    if isinstance(decoded, list):
        return InvalidEnvelope("a batch (a JSON array) was sent; this server takes one JSON-RPC message at a time, "
                               "so send its members one by one")
    problem = envelope_problem(decoded)
    if problem is not None:
        return InvalidEnvelope(problem)
    try:
        return SessionMessage(types.jsonrpc_message_adapter.validate_python(decoded, by_name=False))
    except Exception:  # valid JSON, but no JSON-RPC message: -32600 (the pydantic report names internals)
        return InvalidEnvelope('not a JSON-RPC 2.0 message: a request is {"jsonrpc": "2.0", "id": <string or '
                               'integer>, "method": "...", "params": {...}}, a notification the same without "id"')
