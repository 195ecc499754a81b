"""The local backends: serial in this process (the default), and a pool of worker processes (``--workers N``).

The pool uses the ``spawn`` start method (a fresh interpreter per worker: no fork of a process that may
hold threads, e.g. torch's); each worker imports kairos_gym once and then runs many tasks. Tasks marked
``local`` run in the driver while the pool works on the others; after each of them the runs the pool finished
meanwhile are counted on the progress bar (not all at the end).
"""

from __future__ import annotations

import multiprocessing
from concurrent.futures import Future, ProcessPoolExecutor, as_completed
from concurrent.futures.process import BrokenProcessPool
from typing import IO, Any

from kairos_gym.errors import ConfigError
from kairos_gym.evaluation.backends.base import MAX_WORKERS, Backend, Task
from kairos_gym.progress import RunProgress


def _call(fn: Any, arg: Any) -> Any:
    """A task in a worker: no per-decision callback there."""
    return fn(arg, None)


class SerialBackend(Backend):
    """Every task in this process, one after the other, in order (per-decision bars for slow policies)."""

    name = "local"

    def _map(self, tasks: list[Task], bar: RunProgress) -> list[Any]:
        return [self._run_here(i, t, bar) for i, t in enumerate(tasks)]


class ProcessBackend(Backend):
    """A pool of ``workers`` processes on this machine."""

    name = "local-pool"

    def __init__(self, workers: int, retries: int = 2, log: IO[str] | None = None) -> None:
        super().__init__(retries, log)
        if isinstance(workers, bool) or not isinstance(workers, int) or not 1 <= workers <= MAX_WORKERS:
            raise ConfigError("backend", "--workers", workers, f"a whole number in [1, {MAX_WORKERS}]")
        self.workers = workers
        self._pool: ProcessPoolExecutor | None = None

    def _executor(self) -> ProcessPoolExecutor:
        if self._pool is None:
            self._pool = ProcessPoolExecutor(max_workers=self.workers, mp_context=multiprocessing.get_context("spawn"))
        return self._pool

    def _map(self, tasks: list[Task], bar: RunProgress) -> list[Any]:
        results: list[Any] = [None] * len(tasks)
        running: dict[Future[Any], tuple[int, ProcessPoolExecutor]] = {}

        def submit(i: int) -> None:
            self.attempts.setdefault(i, 1)
            pool = self._executor()
            running[pool.submit(_call, tasks[i].fn, tasks[i].arg)] = (i, pool)

        def collect(fut: Future[Any]) -> None:
            """Take the result of a finished future (counted on the bar), or retry its task."""
            i, pool = running.pop(fut)
            err = fut.exception()
            if err is None:
                results[i] = fut.result()
                with bar.run(tasks[i].label):
                    pass
                return
            if isinstance(err, BrokenProcessPool) and pool is self._pool:
                # a worker died: every task of that pool fails; a fresh pool runs them again
                pool.shutdown(wait=False, cancel_futures=True)
                self._pool = None
            self._failed(i, tasks[i], err)
            submit(i)

        for i, t in enumerate(tasks):
            if not t.local:
                submit(i)
        for i, t in enumerate(tasks):  # the driver's own share, while the pool works
            if t.local:
                results[i] = self._run_here(i, t, bar)
                for fut in [f for f in running if f.done()]:  # what the pool finished meanwhile, counted now
                    collect(fut)
        while running:
            # one waiter over the pending futures, not one wait() over all of them per completion (O(n^2) for a
            # map of n tasks: 60-100% of a core in the driver at ~10^5 tasks); a task retried below is submitted
            # at once and watched by the next pass of this loop
            for fut in as_completed(list(running)):
                collect(fut)
        return results

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None
