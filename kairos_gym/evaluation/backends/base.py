"""The execution-backend interface: run a list of independent tasks, results in the tasks' order.

A :class:`Task` is one simulator run of the evaluation commands (one policy on one instance of one task):
a module-level function and its picklable argument, so a process pool or a Ray cluster can run it. A
backend's :meth:`Backend.map` returns the results in the order of the tasks whatever order they finish in,
so the tables and JSON built from them are the same byte for byte as the serial backend's (the simulator is
deterministic: same scenario, policy and seed, same summary).

Retries: a task that raises (anything but a :class:`~kairos_gym.errors.ConfigError`, which is bad input and
fails the same way every time) or whose worker dies is run again, at most ``retries`` more times; then the
backend raises :class:`BackendError` naming the task and its last error.
"""

from __future__ import annotations

import sys
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import IO, Any

from kairos_gym.errors import ConfigError
from kairos_gym.progress import RunProgress, or_silent

DEFAULT_RETRIES = 2
"""Extra attempts of a failed task (``--retries``)."""
MAX_RETRIES = 10
"""Largest ``--retries``."""
MAX_WORKERS = 256
"""Largest ``--workers`` (processes of the local pool, or CPUs of a local Ray instance)."""


class BackendError(RuntimeError):
    """A task still failed after its retries (the message names the task, the attempts and the last error)."""


@dataclass(frozen=True)
class Task:
    """One unit of work: ``fn(arg, tick)`` returns the result; ``tick`` is a per-decision progress callback
    (only in the driver process; None in a worker). ``fn`` and ``arg`` must pickle unless ``local`` is set:
    a local task always runs in the driver process (e.g. a run whose simulator is kept for plots, or a policy
    loaded from a user's file). ``label``, ``policy`` and ``decisions`` feed the progress bar."""

    fn: Callable[[Any, Callable[[], Any] | None], Any]
    arg: Any
    label: str
    policy: str = ""
    decisions: int | None = None
    local: bool = False


def check_retries(where: str, retries: int) -> int:
    """``retries`` if it is a whole number in [0, MAX_RETRIES], else a ConfigError."""
    if isinstance(retries, bool) or not isinstance(retries, int) or not 0 <= retries <= MAX_RETRIES:
        raise ConfigError(where, "--retries", retries, f"a whole number in [0, {MAX_RETRIES}]")
    return retries


class Backend(ABC):
    """Runs tasks; ``with backend:`` closes it (a pool's processes, a Ray instance it started)."""

    name = "abstract"

    def __init__(self, retries: int = DEFAULT_RETRIES, log: IO[str] | None = None) -> None:
        self.retries = check_retries("backend", retries)
        self.log = log
        self.attempts: dict[int, int] = {}
        """Attempts made per task index of the last :meth:`map` (a test reads it)."""

    def map(self, tasks: Sequence[Task], progress: RunProgress | None = None) -> list[Any]:
        """Run every task; their results in the order of ``tasks``. ``progress`` counts each finished task."""
        self.attempts = {}
        return self._map(list(tasks), or_silent(progress))

    @abstractmethod
    def _map(self, tasks: list[Task], bar: RunProgress) -> list[Any]: ...

    def close(self) -> None:  # noqa: B027 - a backend without workers has nothing to release
        """Release the workers (idempotent)."""

    def __enter__(self) -> Backend:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- shared by the backends
    def _failed(self, i: int, task: Task, err: BaseException) -> None:
        """Count a failed attempt of task ``i``: re-raise bad input, raise BackendError past the retries, else
        note the retry on the log (stderr)."""
        if isinstance(err, ConfigError):
            raise err
        n = self.attempts.get(i, 1)
        what = f"{type(err).__name__}: {str(err).splitlines()[0] if str(err) else ''}"
        if n > self.retries and self.retries == 0:
            raise err  # no retries asked for: the task's own error, unchanged
        if n > self.retries:
            raise BackendError(f"task {task.label!r} failed {n} time(s) (--retries {self.retries}); last error: "
                               f"{what}") from err
        self.attempts[i] = n + 1
        print(f"kairos-gym: task {task.label!r} failed (attempt {n} of {self.retries + 1}): {what}; retrying",
              file=self.log if self.log is not None else sys.stderr)

    def _run_here(self, i: int, task: Task, bar: RunProgress) -> Any:
        """Run task ``i`` in this process (with its retries), inside the bar's per-run context."""
        self.attempts.setdefault(i, 1)
        while True:
            try:
                with bar.run(task.label, task.policy, task.decisions) as tick:  # counts only a success
                    return task.fn(task.arg, tick)
            except Exception as e:  # any failure of a task is retried, bounded
                self._failed(i, task, e)
