"""Execution backends of the evaluation commands (``evaluate``, ``sweep``, ``leaderboard``): docs/scale-out.md.

``--backend local`` (default): in this process, or with ``--workers N`` (N > 1) a pool of N processes;
``--backend ray``: Ray tasks on a local Ray instance (``--workers`` CPUs) or on the cluster at ``--address``.
Every backend returns the results in the tasks' order, so outputs are identical byte for byte to the
serial run's (wall-time figures aside). Ray is imported only when the Ray backend is built.
"""

from __future__ import annotations

import argparse
from typing import IO

from kairos_gym.errors import ConfigError
from kairos_gym.evaluation.backends.base import (
    DEFAULT_RETRIES,
    MAX_RETRIES,
    MAX_WORKERS,
    Backend,
    BackendError,
    Task,
    check_retries,
)
from kairos_gym.evaluation.backends.local import ProcessBackend, SerialBackend

BACKENDS = ("local", "ray")
"""Values of ``--backend``."""


def make_backend(where: str, backend: str = "local", workers: int | None = None, address: str | None = None,
                 retries: int = DEFAULT_RETRIES, log: IO[str] | None = None) -> Backend:
    """The backend the flags name; every combination checked here, before any work (ConfigError)."""
    check_retries(where, retries)
    if backend not in BACKENDS:
        raise ConfigError(where, "--backend", backend, " or ".join(BACKENDS))
    if backend == "local":
        if address is not None:
            raise ConfigError(where, "--address", address, "only with --backend ray")
        if workers is None or workers == 1:
            return SerialBackend(retries, log)
        return ProcessBackend(workers, retries, log)
    from kairos_gym.evaluation.backends.ray_backend import RayBackend

    return RayBackend(address, workers, retries, log, where)


def add_backend_flags(p: argparse.ArgumentParser) -> None:
    """``--backend``, ``--workers``, ``--address``, ``--retries`` of a command."""
    p.add_argument("--backend", default="local", metavar="local|ray",
                   help="where the runs go (docs/scale-out.md): local (this machine; default) or ray")
    p.add_argument("--workers", default=None, metavar="N",
                   help=f"local: N worker processes (default 1: serial, in this process); ray without --address: "
                   f"CPUs of the local Ray instance (default: all); 1..{MAX_WORKERS}")
    p.add_argument("--address", default=None, metavar="ADDR",
                   help="ray: join the Ray cluster at ADDR (e.g. ray://head:10001 or auto) instead of starting one")
    p.add_argument("--retries", default=str(DEFAULT_RETRIES), metavar="N",
                   help=f"extra attempts of a run that fails or whose worker dies, 0..{MAX_RETRIES} "
                   f"(default {DEFAULT_RETRIES})")


def backend_from_args(where: str, args: argparse.Namespace) -> Backend:
    """The backend of a command's parsed flags (:func:`add_backend_flags`)."""
    from kairos_gym.flags import parse_int

    workers = None if args.workers is None else parse_int(where, "--workers", args.workers, 1, MAX_WORKERS)
    retries = parse_int(where, "--retries", args.retries, 0, MAX_RETRIES)
    return make_backend(where, args.backend, workers, args.address, retries)


__all__ = ["BACKENDS", "DEFAULT_RETRIES", "MAX_RETRIES", "MAX_WORKERS", "Backend", "BackendError", "ProcessBackend",
           "SerialBackend", "Task", "add_backend_flags", "backend_from_args", "make_backend"]
