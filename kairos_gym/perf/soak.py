"""The soak benchmark (a command, not a test): run a long scenario and report peak memory at
simulated-time checkpoints, plus the request accounting.

    kairos-gym soak --scenario soak-24h --checkpoints 1h,24h

At each checkpoint (simulated seconds, ``s``/``m``/``h`` suffixes) it prints the peak resident set so far
(``VmHWM`` of /proc/self/status, else ``resource.getrusage``), the current one (``VmRSS``) and the counts so far;
at the end the conservation check ``completed + rejected + timed out = arrived`` (exit status 1 if it fails).
The policy is the cheapest there is, no deflection (a Python ``decide`` returning the prefill path; the core
has no native-policy path), so the figures are the simulator's. In streaming mode (``metrics.mode: streaming``)
with synthetic arrivals the workload is generated in chunks as the run reaches them (kairos_gym/workload/
chunked.py; the request count is known at the end) and everything is bounded; otherwise the workload is
generated whole before the run (3 numbers per request, in Python and in the core: ~48 bytes a request). Times in
seconds, memory in MB.
"""

from __future__ import annotations

import resource
import sys
import time
from pathlib import Path
from typing import Any

from kairos_gym.errors import ConfigError

MAX_CHECKPOINTS = 100
_UNITS = {"s": 1.0, "m": 60.0, "h": 3600.0}


def parse_checkpoints(text: str) -> list[float]:
    """``"30m,1h,24h"`` -> [1800.0, 3600.0, 86400.0] (simulated seconds, increasing, at most 100)."""
    allowed = f"a comma-separated list of at most {MAX_CHECKPOINTS} increasing times > 0 with unit s, m or h (1h,24h)"
    parts = [p.strip() for p in str(text).split(",")]
    if not parts or len(parts) > MAX_CHECKPOINTS:
        raise ConfigError("soak", "--checkpoints", text, allowed)
    out: list[float] = []
    for p in parts:
        if len(p) < 2 or p[-1] not in _UNITS:
            raise ConfigError("soak", "--checkpoints", text, allowed)
        try:
            v = float(p[:-1]) * _UNITS[p[-1]]
        except ValueError:
            raise ConfigError("soak", "--checkpoints", text, allowed) from None
        if not (v > 0 and v < 1e9) or (out and v <= out[-1]):
            raise ConfigError("soak", "--checkpoints", text, allowed)
        out.append(v)
    return out


def memory_mb() -> tuple[float, float]:
    """(peak, current) resident set of this process in MB (VmHWM / VmRSS; getrusage's peak where /proc is not)."""
    status = Path("/proc/self/status")
    if status.is_file():
        vals = {}
        for line in status.read_text().splitlines():
            key, _, rest = line.partition(":")
            if key in ("VmHWM", "VmRSS"):
                vals[key] = float(rest.split()[0]) / 1024.0  # kB
        if len(vals) == 2:
            return vals["VmHWM"], vals["VmRSS"]
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0  # kB on Linux
    return peak, peak


def soak(scenario: Any, checkpoints: list[float], seed: int = 0, out: Any = None) -> dict[str, Any]:
    """Run ``scenario`` with no deflection, printing a line at every checkpoint; returns the summary plus
    ``checkpoints`` (one dict per checkpoint reached) and ``conserved``."""
    from kairos_gym.scenario import load_scenario
    from kairos_gym.sim import Decision, Simulator

    out = sys.stdout if out is None else out
    sc = load_scenario(scenario)
    t0 = time.perf_counter()
    sim = Simulator(sc, seed=seed)
    if sim.chunked:
        print(f"soak {sc.name}: {sim.workload_source}, generated in chunks of {sim._chunk_size():,} requests as the "
              f"run reaches them (the count is known at the end), metrics {sc.metrics.mode}", file=out)
    else:
        print(f"soak {sc.name}: {sim.n:,} requests over {float(sim.workload.arrival_s[-1]):,.0f} s simulated, "
              f"metrics {sc.metrics.mode}; workload generated in {time.perf_counter() - t0:.1f} s", file=out)
    prefill = Decision.prefill_path()
    marks = list(checkpoints)
    rows: list[dict[str, Any]] = []
    core = sim._core
    t_run = time.perf_counter()

    def report(label_t: float) -> None:
        peak, cur = memory_mb()
        row = {"sim_time_s": label_t, "now_s": core.now, "arrived": sim.n_arrived, "completed": sim.n_finished,
               "rejected": sim.n_rejected, "timed_out": sim.n_timed_out, "peak_rss_mb": round(peak, 1),
               "rss_mb": round(cur, 1), "wall_s": round(time.perf_counter() - t_run, 1)}
        rows.append(row)
        print(f"  t = {label_t / 3600:6.2f} h: arrived {row['arrived']:>9,}  completed {row['completed']:>9,}  "
              f"rejected {row['rejected']:>7,}  timed out {row['timed_out']:>7,}  peak RSS {peak:8.1f} MB  "
              f"RSS {cur:8.1f} MB  wall {row['wall_s']:7.1f} s", file=out)

    k = 0
    step = sim.advance_to_decision  # loads the next workload chunk when the run reaches it
    while step():
        sim.apply(prefill)
        k += 1
        if marks and (k & 63) == 0 and core.now >= marks[0]:
            report(marks.pop(0))
    for m in marks:  # the run ended before these (the last arrival is before 24 h): report at the end
        report(m)
    s = sim.summary()
    conserved = s["n_completed"] + s["n_rejected"] + s.get("n_timed_out", 0) == s.get("n_arrived", sim.n) == sim.n
    print(f"  end: {sim.n:,} requests, completed {s['n_completed']:,} + rejected {s['n_rejected']:,} + timed out "
          f"{s.get('n_timed_out', 0):,} = {s['n_completed'] + s['n_rejected'] + s.get('n_timed_out', 0):,} "
          f"({'conserved' if conserved else 'NOT CONSERVED'}); ttft p99 {s['ttft_p99']} s, "
          f"wall {time.perf_counter() - t0:.1f} s", file=out)
    if len(rows) >= 2:
        first, last = rows[0]["peak_rss_mb"], rows[-1]["peak_rss_mb"]
        print(f"  peak RSS {first:.1f} MB at the first checkpoint, {last:.1f} MB at the last: "
              f"{100.0 * (last - first) / first:+.1f}%", file=out)
    s["checkpoints"] = rows
    s["conserved"] = conserved
    return s
