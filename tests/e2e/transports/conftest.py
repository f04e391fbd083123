import pytest
from transport_helpers import net_env

from contextgraph.app import build_app


@pytest.fixture
def make_net_app(tmp_path, make_settings):
    """make_net_app(**env) → an App on ephemeral ports (TCP and HTTP) with short SSE timings; closed after."""
    apps = []

    def make(**env: str):
        app = build_app(make_settings(tmp_path / f"home{len(apps)}", **net_env(**env)))
        apps.append(app)
        return app

    yield make
    for app in apps:
        app.close()


@pytest.fixture
def net_app(make_net_app):
    return make_net_app()
