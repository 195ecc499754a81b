"""Reading results: the JSON of ``kairos-gym evaluate`` and the per-request CSV of ``kairos-gym simulate`` into numpy.

    python examples/read_results.py                                  # makes both files first (small scenario, ~3 s)
    python examples/read_results.py --json out/e.json --csv out/k.csv  # files you made with the commands below
    python examples/read_results.py --smoke                          # fewer seeds (what CI runs)

The files come from:

    kairos-gym evaluate --scenario small --policies no-deflect,sq,kairos --seeds 0-4 --json out/e.json
    kairos-gym simulate --scenario small --policy kairos --seed 0 --requests-csv out/k.csv

``evaluate --json`` writes ``{"runs": [summary, ...]}``: one summary per (policy, seed) run, each with ``policy``,
``seed`` and the figures of docs/metrics.md (``ttft_p95`` in seconds, ``slo_attainment`` a fraction, ...). The
requests CSV has one row per request (``rid``, ``arrival_s``, ``prompt_tokens``, ``path``, ``ttft_s``, ...;
docs/metrics.md, "Per-request record").
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

FIGURES = ("ttft_p95", "tbt_p99", "slo_attainment", "deflection_rate")
"""The summary figures tabulated (docs/metrics.md)."""


def kairos_gym(*args: str) -> None:
    """Run a ``kairos-gym`` command with this Python (the package's command line: ``python -m kairos_gym.cli``)."""
    subprocess.run([sys.executable, "-m", "kairos_gym.cli", *args, "--no-progress"], check=True,
                   stdout=subprocess.DEVNULL)


def summary_table(path: Path) -> None:
    """One row per policy: each figure's mean and standard deviation over the seeds, from numpy arrays."""
    runs = json.loads(path.read_text(encoding="utf-8"))["runs"]
    policies = list(dict.fromkeys(r["policy"] for r in runs))  # in the file's order
    seeds = sorted({r["seed"] for r in runs})
    # values[p, s, f]: policy p, seed s, figure f (NaN where a figure is undefined, e.g. no request finished)
    values = np.full((len(policies), len(seeds), len(FIGURES)), np.nan)
    for r in runs:
        row = [np.nan if r.get(f) is None else float(r[f]) for f in FIGURES]
        values[policies.index(r["policy"]), seeds.index(r["seed"])] = row
    mean, std = np.nanmean(values, axis=1), np.nanstd(values, axis=1, ddof=1 if len(seeds) > 1 else 0)
    print(f"{path.name}: {len(policies)} policies x {len(seeds)} seeds ({', '.join(map(str, seeds))}), mean (std)")
    print(f"{'policy':<12}" + "".join(f"{f:>22}" for f in FIGURES))
    for p, name in enumerate(policies):
        print(f"{name:<12}" + "".join(f"{f'{mean[p, f]:.3f} ({std[p, f]:.3f})':>22}" for f in range(len(FIGURES))))


def requests_table(path: Path) -> None:
    """TTFT percentiles by path (prefill or deflect), from the per-request record as a numpy structured array."""
    rows = np.genfromtxt(path, delimiter=",", names=True, dtype=None, encoding="utf-8")
    print(f"{path.name}: {rows.size} requests; TTFT (s) by path")
    print(f"{'path':<10}{'requests':>10}{'P50':>10}{'P95':>10}{'max':>10}{'mean prompt':>14}")
    for route in np.unique(rows["path"]):
        sel = rows[rows["path"] == route]
        ttft = sel["ttft_s"][np.isfinite(sel["ttft_s"])]
        p50, p95, top = np.percentile(ttft, [50, 95, 100]) if ttft.size else (np.nan,) * 3
        print(f"{route:<10}{sel.size:>10}{p50:>10.3f}{p95:>10.3f}{top:>10.3f}"
              f"{sel['prompt_tokens'].mean():>14.0f}")


def main() -> None:
    """Read (or first make) the two files and print their tables."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", type=Path, help="a kairos-gym evaluate --json file (default: make one)")
    parser.add_argument("--csv", type=Path, help="a kairos-gym simulate --requests-csv file (default: make one)")
    parser.add_argument("--smoke", action="store_true", help="make the files from 2 seeds instead of 5")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        if args.json is None:
            args.json = Path(tmp) / "evaluate.json"
            kairos_gym("evaluate", "--scenario", "small", "--policies", "no-deflect,sq,kairos",
                       "--seeds", "0-1" if args.smoke else "0-4", "--json", str(args.json))
        if args.csv is None:
            args.csv = Path(tmp) / "requests.csv"
            kairos_gym("simulate", "--scenario", "small", "--policy", "kairos", "--requests-csv", str(args.csv))
        summary_table(args.json)
        print()
        requests_table(args.csv)


if __name__ == "__main__":
    main()
