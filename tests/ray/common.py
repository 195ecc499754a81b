"""Shared by the scale-out tests: the Ray skip marker, tasks that fail on purpose, output normalisation."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

try:
    import ray  # noqa: F401 - only whether it imports
    HAS_RAY = True
except ImportError:
    HAS_RAY = False
needs_ray = pytest.mark.skipif(not HAS_RAY, reason="Ray is not installed (pip install 'kairos-gym[ray]')")

WALL_KEYS = ("wall_time_s", "elapsed_s", "date", "decision_us_p50", "decision_us_p99", "decision_cpu_us_p50",
             "decision_cpu_us_p99")
"""Keys whose values are wall-clock readings, not results: dropped before outputs are compared."""


def strip_wall(obj: Any, drop: tuple[str, ...] = ()) -> Any:
    """``obj`` (parsed JSON) without the :data:`WALL_KEYS` (and the keys ``drop``) at any depth."""
    if isinstance(obj, dict):
        return {k: strip_wall(v, drop) for k, v in obj.items() if k not in WALL_KEYS and k not in drop}
    if isinstance(obj, list):
        return [strip_wall(v, drop) for v in obj]
    return obj


def json_without_wall(path: Path, drop: tuple[str, ...] = ()) -> str:
    return json.dumps(strip_wall(json.loads(path.read_text()), drop), indent=2, sort_keys=True)


def md_without_wall(text: str) -> str:
    """Markdown/table text without its wall-time lines (``Run: <date>, wall time ...``, ``wrote X (N s)``)."""
    return "\n".join(ln for ln in text.splitlines() if "wall time" not in ln and not ln.startswith("wrote "))


def flaky(arg: tuple[str, int, Any], tick: Any) -> Any:
    """A task that fails its first ``fails`` attempts (counted in the file ``path``, so across processes), then
    returns ``value``."""
    path, fails, value = arg
    p = Path(path)
    n = int(p.read_text()) if p.exists() else 0
    p.write_text(str(n + 1))
    if n < fails:
        raise RuntimeError(f"injected failure {n + 1}")
    return value


def dies(arg: tuple[str, Any], tick: Any) -> Any:
    """A task whose first attempt kills its worker process (``os._exit``); later attempts return ``value``."""
    path, value = arg
    p = Path(path)
    if not p.exists():
        p.write_text("1")
        os._exit(3)
    return value


def square(arg: int, tick: Any) -> int:
    return arg * arg
