"""The Ray backend (``--backend ray``): one Ray task per run, on a local Ray instance or an existing cluster.

Without an address it starts a local Ray instance with ``workers`` CPUs (and stops it on :meth:`close`);
with ``address`` (``ray://host:10001``, ``host:6379`` or ``auto``) it joins that cluster and leaves it
running. Every node must have the same kairos-gym (and Ray) installed: a task is sent as a reference to a
module-level function of kairos_gym plus its pickled argument (a ScenarioConfig, a policy name, a seed).
When Ray is already initialised in this process (e.g. by a test fixture or a user's script), that
instance is used and left running.

Ray is imported only when this backend is built: ``import kairos_gym`` never imports it.
"""

from __future__ import annotations

from typing import IO, Any

from kairos_gym.errors import ConfigError
from kairos_gym.evaluation.backends.base import MAX_WORKERS, Backend, Task
from kairos_gym.progress import RunProgress

INSTALL_HINT = "install the extra: pip install 'kairos-gym[ray]' (docs/scale-out.md)"


def import_ray(where: str, flag: str = "--backend", value: str = "ray") -> Any:
    """The ``ray`` module, or a ConfigError saying how to install it."""
    try:
        import ray
    except ImportError:
        raise ConfigError(where, flag, value, f"local (Ray is not installed here; {INSTALL_HINT})") from None
    return ray


def _call(fn: Any, arg: Any) -> Any:
    return fn(arg, None)


class RayBackend(Backend):
    """Ray tasks of one CPU each."""

    name = "ray"

    def __init__(self, address: str | None = None, workers: int | None = None, retries: int = 2,
                 log: IO[str] | None = None, where: str = "backend") -> None:
        super().__init__(retries, log)
        if workers is not None and (isinstance(workers, bool) or not isinstance(workers, int)
                                    or not 1 <= workers <= MAX_WORKERS):
            raise ConfigError(where, "--workers", workers, f"a whole number in [1, {MAX_WORKERS}]")
        if address is not None and workers is not None:
            raise ConfigError(where, "--workers", workers, "not with --address (the cluster's CPUs run the tasks)")
        self._ray = import_ray(where)  # a missing Ray fails here, with the flags, before any run
        self.address = address
        self.workers = workers
        self._started = False
        self._remote: Any = None

    def _connect(self) -> None:
        """Start or join Ray on the first :meth:`map` (not when the flags are checked)."""
        if self._remote is not None:
            return
        if not self._ray.is_initialized():
            if self.address is not None:
                self._ray.init(address=self.address)
            else:
                self._ray.init(num_cpus=self.workers, include_dashboard=False)
            self._started = True
        self._remote = self._ray.remote(num_cpus=1, max_retries=0)(_call)

    def _map(self, tasks: list[Task], bar: RunProgress) -> list[Any]:
        ray = self._ray
        if any(not t.local for t in tasks):
            self._connect()
        results: list[Any] = [None] * len(tasks)
        running: dict[Any, int] = {}

        def submit(i: int) -> None:
            self.attempts.setdefault(i, 1)
            running[self._remote.remote(tasks[i].fn, tasks[i].arg)] = i

        for i, t in enumerate(tasks):
            if not t.local:
                submit(i)
        for i, t in enumerate(tasks):
            if t.local:
                results[i] = self._run_here(i, t, bar)
        while running:
            done, _ = ray.wait(list(running), num_returns=1)
            for ref in done:
                i = running.pop(ref)
                try:
                    results[i] = ray.get(ref)
                except Exception as e:  # a task's own error (RayTaskError) or a lost worker/node
                    cause = getattr(e, "cause", None)  # a RayTaskError carries the task's own exception
                    self._failed(i, tasks[i], cause if isinstance(cause, Exception) else e)
                    submit(i)
                    continue
                with bar.run(tasks[i].label):
                    pass
        return results

    def close(self) -> None:
        if self._started and self._ray.is_initialized():
            self._ray.shutdown()
        self._started = False
        self._remote = None
