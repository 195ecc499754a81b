"""Provenance of a generated report (results/leaderboard.md, results/precision.md): the code it ran and where, and
whether that machine reproduces the reference results (``kairos-gym verify``)."""

from __future__ import annotations

import datetime
import platform
from collections.abc import Mapping
from typing import Any

import numpy as np

from kairos_gym.version import code_version


def provenance() -> dict[str, Any]:
    """:func:`code_version`, the date, Python and numpy versions, and ``verify``: this machine's verdict against
    the reference results (:func:`kairos_gym.verify.machine_verdict`: computed once per process, a few
    seconds)."""
    from kairos_gym.verify import machine_verdict

    return {**code_version(),
            "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
            "python": platform.python_version(), "numpy": np.__version__, "verify": machine_verdict()}


def verify_note(res: Mapping[str, Any]) -> str:
    """The verify verdict of a report's provenance as text to print beside its commit (``; `kairos-gym verify`:
    ...``); empty for a result recorded before reports carried one."""
    v = res.get("verify")
    return f"; `kairos-gym verify`: {v['text']}" if isinstance(v, Mapping) and v.get("text") else ""


__all__ = ["code_version", "provenance", "verify_note"]
