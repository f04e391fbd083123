"""reload_manifest's runtime settings on a real store (SPEC D20): a changed retrieval weight in a copy of the
constitution takes effect in search at once and is reported; a broken file (YAML error, a weight out of bounds)
is refused naming its line and nothing changes, neither the settings in force nor the stored manifest."""

import copy

import pytest

from contextgraph.constitution import Constitution
from contextgraph.errors import InvalidParams
from contextgraph.services.diagnostics.user_manifest import DOC, ManifestService

pytestmark = pytest.mark.anyio


@pytest.fixture
def settings_copy(app, tmp_path):
    original = app.services.constitution
    path = tmp_path / "constitution.yaml"
    path.write_text(original.path.read_text(encoding="utf-8"), encoding="utf-8")
    return path, Constitution(copy.deepcopy(original.data), path)


def edit(path, old, new):
    text = path.read_text(encoding="utf-8")
    assert old in text
    path.write_text(text.replace(old, new, 1), encoding="utf-8")


async def test_a_retrieval_weight_applies_at_once(app, settings_copy):
    path, constitution = settings_copy
    service = ManifestService(app.services.storage, app.services.memory, constitution)
    before = app.services.memory.retrieval_settings.rrf_k
    edit(path, f"  rrf_k: {int(before)} ", "  rrf_k: 7 ")
    out = await service.reload(None)
    assert out["settings"]["applied_now"] == ["retrieval.rrf_k"] and out["settings"]["need_restart"] == []
    assert app.services.memory.retrieval_settings.rrf_k == 7.0
    assert not out["manifest_found"] and app.services.storage.store.get_document(DOC)["exists"] is False


@pytest.mark.parametrize(("old", "new", "words"), [
    ("  rrf_k: ", "  rrf_k: [oops\n  x: ", "not valid YAML"),
    ("  rerank_weight: ", "  rerank_weight: 7 #", "retrieval.rerank_weight must be a number in [0.0, 1.0]"),
])
async def test_broken_settings_change_nothing_and_say_where(app, settings_copy, tmp_path, old, new, words):
    path, constitution = settings_copy
    service = ManifestService(app.services.storage, app.services.memory, constitution)
    manifest = tmp_path / "manifest.md"
    manifest.write_text("## Instructions\n- Keep answers short.\n", encoding="utf-8")
    await service.reload(str(manifest))
    kept_doc = app.services.storage.store.get_document(DOC)
    kept = app.services.memory.retrieval_settings
    edit(path, old, new)
    broken_line = next(i for i, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1)
                       if new.split("\n")[0].strip() in line)
    manifest.write_text("## Instructions\n- Now answer at length.\n", encoding="utf-8")
    with pytest.raises(InvalidParams) as err:
        await service.reload(str(manifest))
    assert words in err.value.message and "Nothing was changed" in err.value.message
    assert err.value.data["line"] in (broken_line, broken_line + 1)  # YAML reports where it noticed
    assert app.services.memory.retrieval_settings is kept
    assert app.services.storage.store.get_document(DOC) == kept_doc  # the new manifest was not taken either
