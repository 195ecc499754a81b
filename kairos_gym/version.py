"""The identity of the code a result comes from: the package version and the git checkout it runs from."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any


def code_version() -> dict[str, Any]:
    """The package version, the git commit of the checkout it runs from (None outside one) and whether tracked
    files other than ``*.md`` differ from it (None outside a checkout)."""
    from kairos_gym import __version__

    root = Path(__file__).resolve().parent.parent
    commit, dirty = None, None
    if (root / ".git").exists():
        try:
            commit = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True,
                                    timeout=10, check=True).stdout.strip() or None
            status = subprocess.run(["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no"],
                                    capture_output=True, text=True, timeout=10, check=True).stdout
            dirty = any(not line.rstrip().endswith(".md") for line in status.splitlines() if line.strip())
        except (OSError, subprocess.SubprocessError):
            commit, dirty = None, None
    return {"version": __version__, "commit": commit, "dirty": dirty}


__all__ = ["code_version"]
