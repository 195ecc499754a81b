"""What sizing the normalised scores would take: from a ``kairos-gym oracle-precision --json`` file, per task the
widest 95% interval of a normalised score, (P - no-deflect) / (Oracle - no-deflect), and how many more instances
would bring every one of the task's normalised scores to a target half-width.

    kairos-gym check normalised-sizing out/oracle_precision.json                 # target +-0.05
    kairos-gym check normalised-sizing out/oracle_precision_realistic.json --half-width 0.1

oracle-precision sizes the Oracle's mean (two-phase sampling: n1 phase-1 instances, n2 Oracle instances), not the
normalised scores (their delta-method intervals are reported, not targeted). Every term of a normalised score's
delta-method variance is a variance over n1 or over n2 instances, so scaling both n1 and n2 by a factor f divides
its half-width by about sqrt(f) (the t quantile's change ignored). The factor that brings the widest interval h to
the target d is f = max(1, (h / d)^2); the table gives f and the scaled n1 and n2 (rounded up). An estimate from
the run's own variances, not a run: a task whose Oracle is barely above no-deflect has a near-zero denominator,
which is what makes its normalised intervals wide. Tasks that are not normalised (the Oracle less than 0.01 above
no-deflect) are left out, as are the anchors themselves (no-deflect, the Oracle).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from kairos_gym.errors import ConfigError
from kairos_gym.json_file import read_json_file

MAX_BYTES = 256 << 20
"""Largest input file read (bytes), as oracle-precision's --resume."""
ANCHORS = ("no-deflect", "oracle")


def sizing(data: Any, half_width: float) -> list[dict[str, Any]]:
    """Per normalised task of an oracle-precision result: ``task``, ``room`` (Oracle - no-deflect, the mean),
    ``n1``, ``n2``, ``widest`` (policy), ``half`` (its half-width), ``factor`` and the scaled ``n1_needed``,
    ``n2_needed``."""
    tasks = data.get("tasks") if isinstance(data, dict) else None
    if not isinstance(tasks, dict):
        raise ConfigError("normalised_sizing", "file", type(data).__name__, "an oracle-precision --json result (a "
                          "\"tasks\" object)")
    out = []
    for name, t in tasks.items():
        norm = t.get("normalized") or {}
        halves = [(float(v["half"]), p) for p, v in norm.items()
                  if p not in ANCHORS and isinstance(v, dict) and v.get("half") is not None]
        if not halves:
            continue
        h, p = max(halves)
        f = max(1.0, (h / half_width) ** 2)
        out.append({"task": name, "room": float(t["room"]["mean"]), "n1": int(t["n1"]), "n2": int(t["n2"]),
                    "widest": p, "half": h, "factor": f, "n1_needed": math.ceil(t["n1"] * f),
                    "n2_needed": math.ceil(t["n2"] * f)})
    return out


def report(path: str | Path, half_width: float) -> None:
    """Print the sizing table of the oracle-precision ``--json`` file ``path`` for the target ``half_width``
    (in (0, 1]); a file that is not one raises :class:`~kairos_gym.errors.ConfigError`."""
    rows = sizing(read_json_file("normalised_sizing", "json", Path(path), MAX_BYTES,
                                 "file written by kairos-gym oracle-precision --json"), half_width)
    print(f"Target: every normalised score's 95% half-width <= {half_width:g}. n1, n2: the run's phase-1 and "
          "Oracle instances; f: the factor on both.\n")
    print("| task | Oracle - no-deflect | n1 | n2 | widest interval | f | n1 needed | n2 (Oracle) needed |")
    print("|---|---:|---:|---:|---|---:|---:|---:|")
    for r in rows:
        print(f"| {r['task']} | {r['room']:.3f} | {r['n1']:,} | {r['n2']:,} | {r['widest']} ± {r['half']:.3f} | "
              f"{r['factor']:.1f} | {r['n1_needed']:,} | {r['n2_needed']:,} |")
    met = sum(r["factor"] == 1.0 for r in rows)
    extra = sum(r["n2_needed"] - r["n2"] for r in rows)
    print(f"\n{met} of {len(rows)} tasks meet the target as run; the others need {extra:,} more Oracle instances.")

