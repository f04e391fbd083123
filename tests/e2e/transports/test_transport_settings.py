"""Network settings (environment, flags, defaults from the constitution) and the Host/Origin rules."""

import pytest

from contextgraph import cli
from contextgraph.config import Settings, SettingsError
from contextgraph.constitution import constitution
from contextgraph.security.tokens import bearer
from contextgraph.transports.security import HostRules, is_loopback


def test_defaults_come_from_the_constitution(tmp_path):
    t = constitution()["transport"]
    s = Settings.from_env({"CONTEXTGRAPH_HOME": str(tmp_path)})
    assert (s.host, s.port, s.http_port, s.token) == (t["default_host"], t["default_tcp_port"],
                                                      t["default_http_port"], None)
    assert (s.sse_heartbeat_seconds, s.sse_grace_seconds) == (t["sse_heartbeat_seconds"],
                                                               t["sse_reconnect_grace_seconds"])


def test_environment_then_flags(tmp_path, monkeypatch):
    env = {"CONTEXTGRAPH_HOME": str(tmp_path), "CONTEXTGRAPH_HOST": "::1", "CONTEXTGRAPH_PORT": "9001",
           "CONTEXTGRAPH_HTTP_PORT": "9002", "CONTEXTGRAPH_TOKEN": "t0k", "CONTEXTGRAPH_SSE_HEARTBEAT": "0.5",
           "CONTEXTGRAPH_ALLOWED_HOSTS": "mem.example, mem.example:8443"}
    s = Settings.from_env(env)
    assert (s.host, s.port, s.http_port, s.token, s.sse_heartbeat_seconds) == ("::1", 9001, 9002, "t0k", 0.5)
    assert s.allowed_hosts == ("mem.example", "mem.example:8443")
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    http = cli._settings(cli.build_parser().parse_args(["serve", "--transport", "http", "--port", "9100"]))
    assert (http.http_port, http.port) == (9100, 9001)  # --port names the chosen transport's port
    tcp = cli._settings(cli.build_parser().parse_args(["serve", "--transport", "tcp", "--port", "9200", "--host",
                                                  "127.0.0.1", "--token", "flag"]))
    assert (tcp.port, tcp.http_port, tcp.host, tcp.token) == (9200, 9002, "127.0.0.1", "flag")


@pytest.mark.parametrize("env", [{"CONTEXTGRAPH_PORT": "http"}, {"CONTEXTGRAPH_PORT": "70000"},
                                 {"CONTEXTGRAPH_SSE_HEARTBEAT": "0"}, {"CONTEXTGRAPH_SSE_GRACE": "soon"}])
def test_bad_values_are_refused(tmp_path, env):
    with pytest.raises(SettingsError):
        Settings.from_env({"CONTEXTGRAPH_HOME": str(tmp_path), **env})


def test_host_and_origin_rules(tmp_path):
    rules = HostRules(Settings.from_env({"CONTEXTGRAPH_HOME": str(tmp_path), "CONTEXTGRAPH_HOST": "10.0.0.5",
                                         "CONTEXTGRAPH_TOKEN": "t", "CONTEXTGRAPH_ALLOWED_HOSTS": "mem.example:8443",
                                         "CONTEXTGRAPH_ALLOWED_ORIGINS": "https://app.example"}))
    for host in ("127.0.0.1:7879", "localhost", "[::1]:7879", "10.0.0.5:7879", "mem.example:8443"):
        assert rules.host_allowed(host), host
    for host in (None, "", "evil.example", "mem.example:80", "127.0.0.1.evil.example:7879"):
        assert not rules.host_allowed(host), host
    for origin in (None, "http://localhost:3000", "https://127.0.0.1", "https://app.example/"):
        assert rules.origin_allowed(origin), origin
    for origin in ("null", "http://evil.example", "file://", "https://app.example.evil.example"):
        assert not rules.origin_allowed(origin), origin


def test_small_pieces():
    assert bearer("Bearer abc") == "abc" and bearer("bearer  abc ") == "abc" and bearer("Basic abc") is None
    assert is_loopback("127.0.0.1") and is_loopback("::1") and is_loopback("[::1]") and is_loopback("localhost")
    assert not is_loopback("0.0.0.0") and not is_loopback("10.1.2.3")


@pytest.mark.anyio
async def test_event_store_is_bounded_and_per_session():
    import mcp.types as types

    from contextgraph.transports.event_store import InMemoryEventStore

    store = InMemoryEventStore(events_per_stream=3, streams_per_session=2)
    a, b = store.for_session("a"), store.for_session("b")
    assert store.for_session("a") is a and a  # an empty store still counts as one (the SDK tests its truth)

    def note(i):
        return types.JSONRPCNotification(jsonrpc="2.0", method="notifications/progress", params={"i": i})

    first = await a.store_event("1", None)
    ids = [await a.store_event("1", note(i)) for i in range(5)]
    replayed = []

    async def collect(event):
        replayed.append(event.message.params["i"])

    assert await a.replay_events_after(first, collect) is None  # the priming event fell out of the window
    assert await a.replay_events_after(ids[2], collect) == "1" and replayed == [3, 4]
    assert await b.replay_events_after(ids[2], collect) is None  # another session never sees them
    await a.store_event("2", note(9))
    await a.store_event("3", note(9))  # a third stream evicts the least recently written one ("1")
    assert await a.replay_events_after(ids[3], collect) is None
    store.forget("a")
    assert store.for_session("a") is not a
