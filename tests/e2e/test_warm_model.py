"""Issue 13.2, a warm model: exported graphs live in one cache shared by every data directory (the installation's,
issue 38.4), `contextgraph doctor --warm` fills it ahead of time, and a store or inject that has to wait for the
model says so in progress notifications."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from contextgraph import config, doctor
from contextgraph.config import Settings

SCRIPT = Path(sys.executable).parent / "contextgraph"


def test_the_model_cache_is_the_installations_whatever_home_says(tmp_path):
    """Issue 38.4: a client that runs the server with HOME set elsewhere (the MCP Inspector, a sandboxed host)
    finds the graph setup.sh exported into the installation instead of exporting it again."""
    installed = Path(sys.prefix) / "share" / "contextgraph" / "models"
    empty_home = tmp_path / "empty-home"
    empty_home.mkdir()
    moved = Settings.from_env({"CONTEXTGRAPH_HOME": str(tmp_path / "data"), "HOME": str(empty_home)})
    assert moved.models_dir == installed
    one = Settings.from_env({"CONTEXTGRAPH_HOME": "/data/one", "XDG_CACHE_HOME": "/xdg/cache"})
    two = Settings.from_env({"CONTEXTGRAPH_HOME": "/data/two", "HOME": "/home/ana"})
    assert one.models_dir == two.models_dir == installed  # one cache for every data directory and every HOME
    chosen = Settings.from_env({"HOME": str(empty_home), "CONTEXTGRAPH_MODEL_CACHE": "/models"})
    assert chosen.models_dir == Path("/models")  # the override wins


def test_the_user_cache_only_when_the_installation_is_not_writable(tmp_path):
    read_only = tmp_path / "a-file"  # nothing can be created under a regular file
    read_only.write_text("")
    assert not config.writable(config.install_model_cache(read_only))
    assert config.writable(config.install_model_cache(tmp_path))  # created on the first export
    env = {"XDG_CACHE_HOME": "/xdg/cache"}
    assert config.default_model_cache(env, prefix=read_only) == Path("/xdg/cache/contextgraph/models")
    assert config.default_model_cache(env, prefix=tmp_path) == tmp_path / "share" / "contextgraph" / "models"
    assert config.default_model_cache({"HOME": "/home/ana"}, prefix=read_only) == Path(
        "/home/ana/.cache/contextgraph/models")
    relative = {"XDG_CACHE_HOME": "cache", "HOME": "/home/ana"}  # XDG: a relative one is ignored
    assert config.default_model_cache(relative, prefix=read_only) == Path("/home/ana/.cache/contextgraph/models")


def test_doctor_reports_and_warms_the_model_cache(tmp_path, make_settings):
    empty = Settings.from_env({"CONTEXTGRAPH_HOME": str(tmp_path / "home"),
                               "CONTEXTGRAPH_MODEL_CACHE": str(tmp_path / "nothing-yet")})
    missing = doctor.check_model_cache(empty)
    assert not missing.ok and not missing.required and "doctor --warm" in missing.fix
    settings = make_settings(tmp_path / "home")  # the session's cache: exported once for the whole run
    warmed = doctor.warm_model(settings)
    assert warmed.ok, warmed.detail
    assert "all-MiniLM-L6-v2" in warmed.detail and "embedded in" in warmed.detail
    assert doctor.check_model_cache(settings).ok
    assert not (tmp_path / "home").exists()  # warming touches the model cache, never a data directory


def test_doctor_warm_from_the_command_line(tmp_path, model_cache):
    env = {**os.environ, "CONTEXTGRAPH_HOME": str(tmp_path / "home"), "CONTEXTGRAPH_MODEL_CACHE": str(model_cache),
           "HF_HUB_OFFLINE": "1"}
    done = subprocess.run([str(SCRIPT), "doctor", "--warm"], capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "[      ok] model warm-up: all-MiniLM-L6-v2" in done.stdout
    assert f"[      ok] model cache: {model_cache}" in done.stdout


@pytest.mark.anyio
@pytest.mark.parametrize("tool", ["store_memory", "inject_context"])
async def test_a_call_that_waits_for_the_model_reports_progress(app, tool):
    seen: list[tuple[float, float | None, str | None]] = []

    async def progress(value: float, total: float | None = None, message: str | None = None) -> None:
        seen.append((value, total, message))

    memory = {"content": "Invoices are numbered per year, starting at 1 each January.",
              "rationale": "numbering rule the accountant relies on"}
    assert app.services.perception.model_status() == "loading"  # nothing has started the load yet
    await app.dispatcher.call(tool, memory, app.tool_context("s", report_progress=progress))
    assert seen[0][2] == "loading the embedding model"
    assert [(v, t) for v, t, _ in seen] == [(0, 2), (1, 2), (2, 2)]
    seen.clear()
    await app.dispatcher.call(tool, {**memory, "content": "Credit notes reuse the invoice's number with a C."},
                              app.tool_context("s", report_progress=progress))
    assert [(v, t) for v, t, _ in seen] == [(1, 2), (2, 2)]  # the model is ready: no waiting step
