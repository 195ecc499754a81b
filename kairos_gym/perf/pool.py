"""The process pool's driver cost on a large map (a measurement for docs/performance.md, not a test).

Maps ``--tasks`` trivial tasks (each returns its argument squared: the workers' share is negligible, so what is
measured is the driver's bookkeeping) on a ``ProcessBackend`` of ``--workers`` processes and prints the driver's
CPU seconds (``time.process_time``: this process only, not the workers) and the wall time. A driver that waits
on every pending future per completion costs O(tasks^2); one waiter over them, O(tasks).

Usage: ``kairos-gym perf-pool [--tasks N] [--workers W]`` (another checkout's ``kairos-gym`` measures that
checkout's backend: the command imports ``kairos_gym`` from its interpreter's install).
"""

from __future__ import annotations

import time
from typing import Any

MAX_TASKS = 1_000_000
MAX_WORKERS = 64


def square(x: int, tick: Any) -> int:
    return x * x


def measure(n_tasks: int, workers: int) -> tuple[float, float]:
    """``(driver CPU s, wall s)`` of one map of ``n_tasks`` trivial tasks (the pool started before timing)."""
    from kairos_gym.evaluation.backends import ProcessBackend
    from kairos_gym.evaluation.backends.base import Task

    with ProcessBackend(workers, retries=0) as b:
        b.map([Task(square, 1, "warm-up")])  # start the workers outside the timed part
        tasks = [Task(square, i, f"t{i}") for i in range(n_tasks)]
        c0, w0 = time.process_time(), time.perf_counter()
        out = b.map(tasks)
        cpu, wall = time.process_time() - c0, time.perf_counter() - w0
    if out != [i * i for i in range(n_tasks)]:
        raise RuntimeError("bench_pool: results out of order")
    return cpu, wall
