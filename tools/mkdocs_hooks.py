"""The docs site's pages and modules from outside ``docs/`` (mkdocs hooks, named in ``mkdocs.yml``).

The docs are written to read on GitHub, where a page links to any file of the repository. The site takes them
as they are and adds what they link to outside ``docs/``:

- **Pages**: ``README.md`` is the site's home page (``index.md``), ``examples/README.md`` the examples' page (with
  the scripts beside it), ``CHANGELOG.md`` and the benchmark reports ``results/*.md`` are pages of their own,
  ``LICENSE`` and ``CITATION.cff`` files beside them. A link that leaves ``docs/``
  (``../results/leaderboard.md`` in docs/benchmark.md, ``docs/env.md`` in the README) is rewritten to the
  page it names on the site; a link to anything else is left alone, so mkdocs reports it (an error under
  ``--strict``).
- **Modules**: ``agents/``, ``train/`` and ``configs/`` install as ``kairos_gym.agents``, ``kairos_gym.train`` and
  ``kairos_gym.configs`` (pyproject.toml's ``package-dir``; docs/architecture.md), which griffe, the reader
  mkdocstrings uses, cannot follow. :func:`on_config` lays out ``build/docs-api/kairos_gym/`` as the installed
  package looks (symbolic links to the package's files and to those folders), the search path of
  ``mkdocs.yml``'s python handler.
"""

from __future__ import annotations

import posixpath
import re
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from mkdocs.config.defaults import MkDocsConfig
    from mkdocs.structure.files import Files
    from mkdocs.structure.pages import Page

try:  # mkdocs comes with the docs extra; without it the link mapping still loads (tests/test_docs_site.py)
    from mkdocs.plugins import event_priority
except ImportError:  # pragma: no cover - mkdocs absent: nothing runs the hooks then

    def event_priority(priority: float) -> Callable[[Any], Any]:
        """No mkdocs, no events: the hook functions as they are."""
        return lambda f: f

ROOT = Path(__file__).resolve().parents[1]

PACKAGE_DIRS = {"agents": "agents", "train": "train", "configs": "configs"}
"""Sub-package of ``kairos_gym`` -> its folder in the repository (pyproject.toml's ``[tool.setuptools.package-dir]``;
tests/test_docs_site.py checks they agree)."""

API_TREE = ROOT / "build" / "docs-api"
"""The package as installed, for griffe: ``mkdocs.yml``'s python handler ``paths``."""

EXTRA_PAGES = {"README.md": "index.md", "examples/README.md": "examples/index.md", "CHANGELOG.md": "CHANGELOG.md",
               "LICENSE": "LICENSE", "CITATION.cff": "CITATION.cff"}
"""Files outside ``docs/`` on the site: repository path -> site path (plus every ``results/*.md`` and
``examples/*.py``, same path)."""

FOLDER_LINKS = {"results": "results/leaderboard.md"}
"""A link to a folder of the repository -> the page that stands for it on the site."""

_LINK = re.compile(r"\]\(([^()\s]+)\)")


def _site_files() -> dict[str, str]:
    """Repository path -> site path of every file the site takes from outside ``docs/``."""
    files = dict(EXTRA_PAGES)
    for folder, pattern in (("results", "*.md"), ("examples", "*.py")):
        files.update({f"{folder}/{p.name}": f"{folder}/{p.name}" for p in sorted((ROOT / folder).glob(pattern))})
    return files


@event_priority(100)  # before mkdocstrings' own on_config, which reads the handler's paths
def on_config(config: MkDocsConfig) -> MkDocsConfig:
    """Lay out :data:`API_TREE`: ``kairos_gym/`` with a link to each entry of the package and of its mapped folders."""
    tree = API_TREE / "kairos_gym"
    shutil.rmtree(API_TREE, ignore_errors=True)
    tree.mkdir(parents=True)
    for entry in sorted((ROOT / "kairos_gym").iterdir()):
        if entry.name != "__pycache__":
            (tree / entry.name).symlink_to(entry)
    for name, folder in PACKAGE_DIRS.items():
        (tree / name).symlink_to(ROOT / folder)
    return config


def on_files(files: Files, config: MkDocsConfig) -> Files:
    """Add the pages and files of :func:`_site_files`."""
    from mkdocs.structure.files import File

    for repo_path, site_path in _site_files().items():
        files.append(File.generated(config, site_path, abs_src_path=str(ROOT / repo_path)))
    return files


def site_link(target: str, page_repo_path: str, page_site_path: str) -> str:
    """``target``, a link of the page at ``page_repo_path`` (a repository path), as a link of the same page at
    ``page_site_path`` on the site; unchanged unless it is relative and names a file outside ``docs/`` that the
    site has, or a page of ``docs/`` from outside it."""
    path, sep, fragment = target.partition("#")
    if not path or "://" in path or path.startswith(("/", "mailto:")):
        return target
    repo = posixpath.normpath(posixpath.join(posixpath.dirname(page_repo_path), path))
    repo = FOLDER_LINKS.get(repo.rstrip("/"), repo)
    site = repo[len("docs/"):] if repo.startswith("docs/") else _site_files().get(repo)
    if site is None or (repo.startswith("docs/") and page_repo_path.startswith("docs/")):
        return target
    return posixpath.relpath(site, posixpath.dirname(page_site_path) or ".") + sep + fragment


def on_page_markdown(markdown: str, page: Page, config: MkDocsConfig, files: Files, **kwargs: Any) -> str:
    """Rewrite the page's links with :func:`site_link`."""
    site_path = page.file.src_uri
    repo_path = {v: k for k, v in _site_files().items()}.get(site_path, f"docs/{site_path}")
    return _LINK.sub(lambda m: "](" + site_link(m.group(1), repo_path, site_path) + ")", markdown)
