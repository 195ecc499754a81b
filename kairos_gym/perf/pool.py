"""The process pool's driver cost on a large map (a measurement for docs/performance.md, not a test).

Maps ``--tasks`` trivial tasks (each returns its argument squared: the workers' share is negligible, so what is
measured is the driver's bookkeeping) on a ``ProcessBackend`` of ``--workers`` processes and prints the driver's
CPU seconds (``time.process_time``: this process only, not the workers) and the wall time. A driver that waits
on every pending future per completion costs O(tasks^2); one waiter over them, O(tasks).

Usage: ``.venv/bin/python kairos_gym/perf/pool.py [--tasks N] [--workers W]`` (run it with another checkout's
interpreter to measure that checkout's backend: the tool imports ``kairos_gym`` from the interpreter's install).
"""

from __future__ import annotations

import argparse
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


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--tasks", type=int, default=20_000, help=f"tasks in the map (1-{MAX_TASKS:,}; default 20,000)")
    p.add_argument("--workers", type=int, default=2, help=f"worker processes (1-{MAX_WORKERS}; default 2)")
    args = p.parse_args(argv)
    if not 1 <= args.tasks <= MAX_TASKS:
        p.error(f"--tasks: {args.tasks} is not valid; allowed: a whole number from 1 to {MAX_TASKS:,}")
    if not 1 <= args.workers <= MAX_WORKERS:
        p.error(f"--workers: {args.workers} is not valid; allowed: a whole number from 1 to {MAX_WORKERS}")
    cpu, wall = measure(args.tasks, args.workers)
    print(f"{args.tasks:,} tasks on {args.workers} workers: driver CPU {cpu:.2f} s, wall {wall:.2f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
