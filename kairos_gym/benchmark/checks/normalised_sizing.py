"""What sizing the normalised scores would take: from a ``kairos-gym oracle-precision --json`` file, per task the
widest 95% interval of a normalised score, (P - no-deflect) / (Oracle - no-deflect), and how many more instances
would bring every one of the task's normalised scores to a target half-width.

    python kairos_gym/benchmark/checks/normalised_sizing.py out/oracle_precision.json                 # target +-0.05
    python kairos_gym/benchmark/checks/normalised_sizing.py out/oracle_precision_realistic.json --half-width 0.1

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

import argparse
import math
import sys
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


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("json", help="an oracle-precision --json file")
    ap.add_argument("--half-width", type=float, default=0.05, help="target half-width of every normalised score's "
                    "95%% interval, in (0, 1] (default 0.05)")
    args = ap.parse_args(argv)
    if not 0.0 < args.half_width <= 1.0:
        ap.error(f"--half-width: {args.half_width} is not valid; allowed: a number in (0, 1]")
    try:
        rows = sizing(read_json_file("normalised_sizing", "json", Path(args.json), MAX_BYTES,
                                     "file written by kairos-gym oracle-precision --json"), args.half_width)
    except ConfigError as e:
        print(f"normalised_sizing: error: {e}", file=sys.stderr)
        return 2
    print(f"Target: every normalised score's 95% half-width <= {args.half_width:g}. n1, n2: the run's phase-1 and "
          "Oracle instances; f: the factor on both.\n")
    print("| task | Oracle - no-deflect | n1 | n2 | widest interval | f | n1 needed | n2 (Oracle) needed |")
    print("|---|---:|---:|---:|---|---:|---:|---:|")
    for r in rows:
        print(f"| {r['task']} | {r['room']:.3f} | {r['n1']:,} | {r['n2']:,} | {r['widest']} ± {r['half']:.3f} | "
              f"{r['factor']:.1f} | {r['n1_needed']:,} | {r['n2_needed']:,} |")
    met = sum(r["factor"] == 1.0 for r in rows)
    extra = sum(r["n2_needed"] - r["n2"] for r in rows)
    print(f"\n{met} of {len(rows)} tasks meet the target as run; the others need {extra:,} more Oracle instances.")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
