"""docs/fields.md, the field reference of the catalog files, is generated from the schema and
kept current by `infermatrix catalog --check`, which also fails when a field has no text."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from pydantic import Field

from infermatrix.catalog import field_docs, reference
from infermatrix.catalog.schema import Hardware, Strict
from infermatrix.cli import main


def test_every_field_is_documented_and_no_entry_is_stale() -> None:
    assert reference.undocumented() == []
    assert reference.stale() == []


def test_the_reference_in_the_repository_is_current(repo_root: Path) -> None:
    assert (repo_root / reference.OUTPUT).read_text(encoding="utf-8") == reference.markdown()


def test_a_field_without_text_is_named() -> None:
    class Gadget(Strict):
        documented: int = Field(default=1, description="has words")
        bare: int = 2

    class Rack(Strict):
        gadget: Gadget

    original = dict(reference.FILES)
    try:
        reference.FILES["x.yaml"] = ("a rack", Rack)
        assert reference.undocumented() == ["Rack.gadget", "Gadget.bare"]
        assert reference.undocumented({**field_docs.FIELD_DOCS, "Rack.gadget": "a gadget",
                                       "Gadget.bare": "x"}) == []
    finally:
        reference.FILES.clear()
        reference.FILES.update(original)


def test_every_hardware_field_has_a_row() -> None:
    page = reference.markdown()
    for name in Hardware.model_fields:
        assert f"| `{name}` |" in page


@pytest.fixture
def checkout(catalog_copy: Path, repo_root: Path) -> Path:
    shutil.copytree(repo_root / "docs", catalog_copy / "docs")
    return catalog_copy


def test_check_fails_on_a_stale_page(checkout: Path, capsys) -> None:
    assert main(["catalog", "--check", "--root", str(checkout)]) == 0
    page = checkout / reference.OUTPUT
    page.write_text(page.read_text().replace("device memory, GB", "memory"))
    assert main(["catalog", "--check", "--root", str(checkout)]) == 1
    assert f"{page} out of date" in capsys.readouterr().err
    assert main(["catalog", "--root", str(checkout)]) == 0
    assert main(["catalog", "--check", "--root", str(checkout)]) == 0


def test_check_fails_on_an_undocumented_field(checkout: Path, capsys,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    docs = {k: v for k, v in field_docs.FIELD_DOCS.items() if k != "Fleet.nodes"}
    docs["Fleet.colour"] = "a field that does not exist"
    monkeypatch.setattr(reference, "FIELD_DOCS", docs)
    assert main(["catalog", "--check", "--root", str(checkout)]) == 1
    err = capsys.readouterr().err.splitlines()
    assert err == [
        "infermatrix catalog: Fleet.nodes: no documentation (a description= in catalog/schema/, or an "
        "entry in infermatrix/catalog/field_docs.py)",
        "infermatrix catalog: Fleet.colour: documented in field_docs.py, but no such field"]
