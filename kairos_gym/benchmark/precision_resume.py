"""``kairos-gym precision --resume``: the per-instance scores of an earlier run's ``--json`` file, reused instead of
re-running an instance.

A cell's score on instance ``i`` is a deterministic function of the code, the task, the policy, the track and
the instance (every policy of a task runs a prefix of one instance list, :func:`~kairos_gym.benchmark.precision.
precision_instances`), so an earlier run's score is the score a fresh run would get, whatever that run's
``--half-width``, ``--pilot`` or ``--max-instances``, as long as the code is the same. Two guards keep it so:

- instance 0 of every reused cell is always re-run and must equal the file's score (bit for bit), else the whole
  run stops with a ConfigError before stage 2 (the file is of another code version, or was edited);
- ``best-static`` is reused only where the file's tuned rule for that (track, task) is this run's rule.

A ``--checkpoint`` or ``--policy`` entry is matched by its label (``checkpoint:<folder>`` as given, or
``<file name>:<class>``): resume only with the same checkpoint or the same file (instance 0 is the only check that
a retrained agent or an edited file, or another file of the same name, would fail).

Cells the file does not hold (a new task, a new policy) run in full. The result is then the one of a fresh run:
stage 1 sees the same scores, so Stein's sizes are the same. Only data is read (JSON, at most
:data:`MAX_RESUME_BYTES`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from kairos_gym.errors import ConfigError
from kairos_gym.json_file import read_json_file

MAX_RESUME_BYTES = 256 << 20
"""Largest ``--resume`` file read (bytes)."""


def load_precision_resume(path: Path | str, where: str, max_instances: int) -> dict[str, Any]:
    """``{"cells": {(ran_on, task, label): [scores]}, "best_static": {(track, task): chosen}}`` from a file written
    by ``kairos-gym precision --json``; a ConfigError for a file that is missing, too large, not JSON or not of
    that shape (scores: lists of at most ``max_instances`` SLO attainments in [0, 1])."""
    p = Path(path)
    flag = "--resume"
    data = read_json_file(where, flag, p, MAX_RESUME_BYTES, "file written by kairos-gym precision --json")
    shape = ("a JSON object with \"cells\" {track: {task: {policy: {\"scores\": [...], \"ran_on\": track}}}} and "
             "\"best_static\", as kairos-gym precision --json writes them")
    cells = data.get("cells") if isinstance(data, dict) else None
    best = data.get("best_static", {}) if isinstance(data, dict) else None
    if not isinstance(cells, dict) or not isinstance(best, dict):
        raise ConfigError(where, flag, str(p), shape)
    out: dict[tuple[str, str, str], list[float]] = {}
    for track, tasks in cells.items():
        if not isinstance(tasks, dict):
            raise ConfigError(where, flag, f"{p}: track {track}", shape)
        for task, labels in tasks.items():
            if not isinstance(labels, dict):
                raise ConfigError(where, flag, f"{p}: {track} {task}", shape)
            for label, c in labels.items():
                xs = c.get("scores") if isinstance(c, dict) else None
                ran_on = c.get("ran_on", track) if isinstance(c, dict) else None
                ok = (isinstance(xs, list) and len(xs) <= max_instances and isinstance(ran_on, str)
                      and all(isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)
                              and 0.0 <= x <= 1.0 for x in xs))
                if not ok:
                    raise ConfigError(where, flag, f"{p}: {track} {task} {label}", shape + f" (at most "
                                      f"{max_instances} scores in [0, 1] per cell)")
                out[(ran_on, task, label)] = [float(x) for x in xs]
    chosen: dict[tuple[str, str], Any] = {}
    for key, rule in best.items():
        parts = key.split(" ", 1) if isinstance(key, str) else []
        if len(parts) != 2 or not isinstance(rule, dict):
            raise ConfigError(where, flag, f"{p}: best_static {key!r}", shape)
        chosen[(parts[0], parts[1])] = rule
    return {"cells": out, "best_static": chosen, "path": str(p)}


def same_rule(a: Mapping[str, Any] | None, b: Mapping[str, Any] | None) -> bool:
    """Two tuned best-static choices name the same rule (policy and parameters)."""
    return a is not None and b is not None and a.get("policy") == b.get("policy") and \
        dict(a.get("params", {})) == dict(b.get("params", {}))


__all__ = ["MAX_RESUME_BYTES", "load_precision_resume", "same_rule"]
