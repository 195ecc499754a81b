"""The docs site (mkdocs.yml): every page of docs/ in its nav, an API page for every public module, and the hooks'
link rewriting and package layout. CI builds the site itself with ``mkdocs build --strict`` (.ci/run)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from tests.tool_loader import load_tool

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"

PUBLIC_MODULES = (
    "kairos_gym.env", "kairos_gym.sim", "kairos_gym.scenario", "kairos_gym.agents.base", "kairos_gym.agents.registry",
    "kairos_gym.agents.oracle", "kairos_gym.agents.kairos", "kairos_gym.evaluation.evaluate",
    "kairos_gym.benchmark.suite",
)
"""The modules the API reference documents (docs/api/*.md)."""


def _pyproject() -> dict:
    import tomllib  # Python 3.11+ (the tests' Python)

    return tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))


def _config() -> dict:
    # mkdocs.yml holds no YAML tags: the plain safe loader reads it
    return yaml.safe_load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"))


def _nav_pages(nav: list) -> list[str]:
    pages: list[str] = []
    for item in nav:
        value = next(iter(item.values())) if isinstance(item, dict) else item
        pages.extend(_nav_pages(value) if isinstance(value, list) else [value])
    return pages


def test_every_docs_page_is_in_the_nav_and_every_nav_page_exists():
    nav = _nav_pages(_config()["nav"])
    in_docs = sorted(str(p.relative_to(DOCS)) for p in DOCS.rglob("*.md"))
    assert sorted(p for p in nav if (DOCS / p).exists()) == in_docs
    outside = set(load_tool("mkdocs_hooks")._site_files().values())  # README, results/, ... (tools/mkdocs_hooks.py)
    for page in nav:
        assert (DOCS / page).exists() or page in outside, page


def test_the_api_reference_documents_the_public_modules():
    text = "\n".join(p.read_text(encoding="utf-8") for p in (DOCS / "api").glob("*.md"))
    documented = set(re.findall(r"^::: ([\w.]+)", text, flags=re.MULTILINE))
    for module in PUBLIC_MODULES:
        assert any(d == module or d.startswith(module + ".") for d in documented), module


def test_the_build_is_strict_and_the_site_folder_ignored():
    assert _config()["strict"] is True
    assert "site/" in (ROOT / ".gitignore").read_text(encoding="utf-8").splitlines()


def test_the_docs_extra_and_ci_build_the_site():
    extras = _pyproject()["project"]["optional-dependencies"]
    assert any(r.startswith("mkdocs") for r in extras["docs"])
    assert any(r.startswith("mkdocstrings[python]") for r in extras["docs"])
    assert "mkdocs build --strict" in (ROOT / ".ci" / "run").read_text(encoding="utf-8")


def test_the_hooks_package_layout_is_pyprojects():
    hooks = load_tool("mkdocs_hooks")
    cfg = _pyproject()["tool"]["setuptools"]["package-dir"]
    assert {f"kairos_gym.{k}": v for k, v in hooks.PACKAGE_DIRS.items()} == cfg


@pytest.mark.parametrize(("target", "repo", "site", "expected"), [
    ("../results/leaderboard.md", "docs/benchmark.md", "benchmark.md", "results/leaderboard.md"),
    ("docs/env.md", "README.md", "index.md", "env.md"),
    ("docs/policies.md#make-demo", "README.md", "index.md", "policies.md#make-demo"),
    ("results/", "README.md", "index.md", "results/leaderboard.md"),
    ("CHANGELOG.md", "README.md", "index.md", "CHANGELOG.md"),
    ("../metrics.md", "docs/api/sim.md", "api/sim.md", "../metrics.md"),  # within docs/: as written
    ("env.md#ids", "docs/training.md", "training.md", "env.md#ids"),
    ("../docs/env.md#performance", "examples/README.md", "examples/index.md", "../env.md#performance"),
    ("my_policy.py", "examples/README.md", "examples/index.md", "my_policy.py"),
    ("https://example.org/a.md", "README.md", "index.md", "https://example.org/a.md"),
    ("../src/core/rollout.cpp", "docs/engine.md", "engine.md", "../src/core/rollout.cpp"),  # not on the site
])
def test_links_that_leave_docs_name_the_sites_page(target: str, repo: str, site: str, expected: str):
    assert load_tool("mkdocs_hooks").site_link(target, repo, site) == expected


def test_the_docstrings_sphinx_roles_become_code_spans():
    pytest.importorskip("griffe")
    roles = load_tool("griffe_rst_roles")
    assert roles.markdown_of(":class:`~kairos_gym.sim.hook.Decision` and :func:`kairos_gym.agents.run_policy`") == (
        "`Decision` and `kairos_gym.agents.run_policy`")
    assert roles.markdown_of("Typical use::\n\n    sim.run(p)\n") == "Typical use:\n\n    sim.run(p)\n"
    assert roles.markdown_of("a ``literal`` stays") == "a ``literal`` stays"
