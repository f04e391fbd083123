import io
import json

import structlog

from contextgraph import log


def test_ring_filters_by_level_component_and_limit():
    ring = log.LogRing(100)
    stream = io.StringIO()
    log.configure("info", ring, stream)
    logger = structlog.get_logger(component="storage")
    logger.debug("d")
    logger.info("i", n=1)
    logger.warning("w")
    structlog.get_logger(component="gwt").error("e")
    assert [e["event"] for e in ring.query("debug", 10)] == ["d", "i", "w", "e"]
    assert [e["event"] for e in ring.query("warn", 10)] == ["w", "e"]
    assert [e["event"] for e in ring.query("debug", 10, "storage")] == ["d", "i", "w"]
    assert [e["event"] for e in ring.query("debug", 2)] == ["w", "e"]  # the newest two, oldest first
    assert ring.query("warn", 10)[0]["level"] == "warn"
    # stderr gets the configured level and up, as JSON lines
    lines = [json.loads(line) for line in stream.getvalue().splitlines()]
    assert [line["event"] for line in lines] == ["i", "w", "e"]


def test_ring_keeps_the_exception_type_and_stderr_the_traceback():
    ring = log.LogRing(10)
    stream = io.StringIO()
    log.configure("info", ring, stream)
    try:
        raise KeyError("missing-key")
    except KeyError:
        structlog.get_logger(component="server").exception("failed")
    entry = ring.query("error", 1)[0]
    assert entry["error"] == "KeyError: 'missing-key'"
    assert "Traceback" not in json.dumps(entry)
    assert "Traceback" in stream.getvalue()


def test_ring_is_bounded():
    ring = log.LogRing(3)
    for i in range(5):
        ring.append({"level": "info", "event": str(i)})
    assert [e["event"] for e in ring.query("info", 10)] == ["2", "3", "4"]
