"""Which store a URL names (config.store_location) and how Settings take it: unset or lmdb:///path is the embedded
LMDB store, postgresql:// and postgres:// pass to libpq verbatim (unix sockets included), anything else is
refused naming what is accepted; the PostgreSQL URL's password never reaches a message."""

from __future__ import annotations

from pathlib import Path

import pytest

from contextgraph.config import Settings, SettingsError, store_location
from contextgraph.storage.postgres import is_postgres_url
from contextgraph.storage.postgres.connect import redact


def test_unset_and_lmdb_urls_are_lmdb(tmp_path):
    assert store_location(None, tmp_path) == ("lmdb", tmp_path)
    assert store_location("", tmp_path) == ("lmdb", tmp_path)
    assert store_location("lmdb:///srv/cg data", tmp_path) == ("lmdb", Path("/srv/cg data"))


@pytest.mark.parametrize("url", ["postgresql://u:p@db.example:5433/cg?sslmode=require",
                                 "postgresql://postgres:@/cg?host=/run/postgresql", "POSTGRES://h/db"])
def test_postgres_urls_pass_verbatim(url, tmp_path):
    assert store_location(url, tmp_path) == ("postgresql", url)
    assert is_postgres_url(url)


@pytest.mark.parametrize(("url", "says"), [("lmdb://relative/path", "three slashes"), ("lmdb:///", "three slashes"),
                                           ("mysql://h/db", "postgresql://"), ("/just/a/path", "lmdb:///path")])
def test_other_urls_are_refused_with_what_is_accepted(url, says, tmp_path):
    with pytest.raises(SettingsError, match=says):
        store_location(url, tmp_path)
    with pytest.raises(SettingsError):
        Settings.from_env({"CONTEXTGRAPH_HOME": str(tmp_path), "CONTEXTGRAPH_STORE_URL": url})


def test_settings_take_the_url_from_the_environment_or_a_flag(tmp_path):
    env = {"CONTEXTGRAPH_HOME": str(tmp_path), "CONTEXTGRAPH_STORE_URL": "postgresql://h/a"}
    assert Settings.from_env(env).store_url == "postgresql://h/a"
    assert Settings.from_env(env, store_url="postgresql://h/b").store_url == "postgresql://h/b"
    assert Settings.from_env({"CONTEXTGRAPH_HOME": str(tmp_path)}).store_url is None


def test_redact_hides_the_password():
    shown = redact("postgresql://alice:s3cret@db.example:5432/cg")
    assert "s3cret" not in shown and "alice" in shown and "db.example" in shown
