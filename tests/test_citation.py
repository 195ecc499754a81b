"""CITATION.cff is valid Citation File Format 1.2.0 (its required keys and their types) and names the version in
pyproject.toml."""

from __future__ import annotations

from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]


def _citation() -> dict:
    return yaml.safe_load((ROOT / "CITATION.cff").read_text(encoding="utf-8"))


def test_citation_has_cff_1_2_0s_required_keys():
    cff = _citation()
    assert cff["cff-version"] == "1.2.0"
    assert isinstance(cff["message"], str) and cff["message"]
    assert isinstance(cff["title"], str) and cff["title"]
    assert cff["type"] in ("software", "dataset")
    authors = cff["authors"]
    assert isinstance(authors, list) and authors
    for author in authors:  # a person (family-names/given-names) or an entity (name)
        assert isinstance(author, dict) and (author.get("name") or author.get("family-names"))
    assert cff["license"] == "MIT"
    assert "date-released" not in cff or str(cff["date-released"]).count("-") == 2


def test_citation_version_is_pyprojects():
    import tomllib  # Python 3.11+ (the tests' Python)

    version = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["version"]
    assert str(_citation()["version"]) == version
