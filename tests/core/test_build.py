"""The native core is built, with the floating-point flags the bit-for-bit port needs, from the checkout's sources."""

from __future__ import annotations

import pytest

from kairos_gym import compiled
from kairos_gym._source_hash import source_hash


def test_build_info_reports_strict_floating_point():
    info = compiled.build_info()
    assert info["fast_math"] is False
    assert info["fp_contract_off"] is True
    assert int(str(info["cxx_standard"])) >= 201703
    assert str(info["compiler"]) != "unknown"


def test_built_from_the_checkouts_sources():
    root = compiled.checkout_root()
    assert root is not None  # the tests run from a checkout
    assert compiled.build_info()["source_hash"] == source_hash(root)


def test_stale_build_is_an_error(monkeypatch, tmp_path):
    fake = tmp_path / "repo"
    (fake / "src" / "core").mkdir(parents=True)
    (fake / "src" / "bindings").mkdir()
    (fake / "src" / "core" / "x.cpp").write_text("int x;\n")
    (fake / "CMakeLists.txt").write_text("")
    monkeypatch.setattr(compiled, "REPO_ROOT", fake)
    compiled.core.cache_clear()
    try:
        with pytest.raises(compiled.StaleBuildError, match="make core"):
            compiled.core()
    finally:
        compiled.core.cache_clear()


def test_source_hash_covers_every_source_file(tmp_path):
    (tmp_path / "src" / "core").mkdir(parents=True)
    (tmp_path / "src" / "bindings").mkdir()
    a = tmp_path / "src" / "core" / "a.cpp"
    a.write_text("int a;\n")
    h1 = source_hash(tmp_path)
    a.write_text("int a = 1;\n")
    h2 = source_hash(tmp_path)
    (tmp_path / "src" / "bindings" / "b.hpp").write_text("#pragma once\n")
    h3 = source_hash(tmp_path)
    (tmp_path / "src" / "core" / "notes.txt").write_text("ignored\n")
    assert len({h1, h2, h3}) == 3 and source_hash(tmp_path) == h3
