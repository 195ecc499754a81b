"""The per-request record of a finished run as CSV (``kairos-gym simulate --requests-csv``)."""

from __future__ import annotations

import csv
from pathlib import Path
from typing import TYPE_CHECKING

from kairos_gym.output_file import open_output

if TYPE_CHECKING:
    from kairos_gym.sim import Simulator


def write_requests_csv(sim: Simulator, path: str | Path) -> None:
    """The per-request record as CSV (one row per request)."""
    table = sim.requests_table()
    cols = list(table)
    with open_output(path, "w", newline="", where="simulate", flag="--requests-csv") as f:
        w = csv.writer(f)
        w.writerow(cols)
        for i in range(sim.n):
            w.writerow([table[c][i] for c in cols])
