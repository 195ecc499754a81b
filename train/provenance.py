"""Provenance of a generated report (LEADERBOARD.md, PRECISION.md): the code it ran and where."""

from __future__ import annotations

import datetime
import platform
import subprocess
from pathlib import Path
from typing import Any

import numpy as np


def provenance() -> dict[str, Any]:
    """The package version, the git commit of the checkout it runs from (None outside one) and whether tracked
    files other than ``*.md`` differ from it, the date, Python and numpy versions."""
    from kairos_gym import __version__

    root = Path(__file__).resolve().parents[1]
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
    return {"version": __version__, "commit": commit, "dirty": dirty,
            "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
            "python": platform.python_version(), "numpy": np.__version__}


__all__ = ["provenance"]
