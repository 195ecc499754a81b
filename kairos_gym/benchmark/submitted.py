"""Submitted entries (``--policy FILE.py:CLASS``, ``--checkpoint DIR``) as runs any backend can take, so they spread
over the workers like the built-in entries instead of running one after the other in the driver.

The driver loads and probes every entry before any run (:mod:`kairos_gym.agents.policy_file_loader`). What crosses
to a worker is not the loaded policy but where it comes from, a :class:`Source`: the policy file's absolute path
and class name, or the checkpoint's resolved folder, with the sha256 of the bytes the driver loaded, the guard's
limits and ``--isolate``'s memory limit. The worker loads the entry itself, through the same loader, once per
process (:func:`load`): a ``--policy`` file runs in the worker as it ran in the driver (its top level once), and
every run builds a fresh instance and runs it under the same guard (:func:`~kairos_gym.agents.policy_file_loader.
run_checked`: the time limits, the policy's own exits turned into its error, and with ``--isolate`` a forked child
of the worker under the memory and CPU limits). A file or checkpoint that changed since the driver loaded it is
refused (one error naming the flag), so every run of an entry runs the same code and weights.

The results are the serial run's: the same simulator, scenario, seed and a fresh instance per run (tested). A
policy must not carry state from one run to the next in module-level variables: the runs of one entry are spread
over processes. In the driver process itself (the serial backend, and any run a backend keeps there) the entry
the driver loaded is used as is: the file is not run a second time. On a Ray cluster the file or checkpoint must
be at the same absolute path on every node.
"""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kairos_gym.agents.policy_file_loader import (
    ExternalPolicy,
    parse_policy_spec,
    policy_from_checkpoint,
    policy_from_file,
    run_checked,
)
from kairos_gym.agents.policy_guard import Limits
from kairos_gym.errors import ConfigError
from kairos_gym.evaluation.backends import Task as BackendTask
from kairos_gym.scenario import ScenarioConfig

FLAGS = ("--policy", "--checkpoint")
"""The flags whose entries a worker can load by itself."""


@dataclass(frozen=True)
class Source:
    """Where a submitted entry comes from, picklable: ``flag`` and ``spec`` (the flag's value as given: labels and
    messages name it), ``label`` and ``where`` as the driver's entry has them, ``target`` the absolute
    ``/path/file.py:CLASS`` or checkpoint folder a worker loads, ``digest`` the sha256 (hex) of the bytes the
    driver loaded, ``limits`` and ``isolate_memory`` (bytes, or None) the guard's settings."""

    flag: str
    spec: str
    label: str
    where: str
    target: str
    digest: str
    limits: Limits
    isolate_memory: int | None


@dataclass(frozen=True)
class SubmittedRun:
    """One run of a submitted entry: the entry's :class:`Source`, the instance's scenario and seed."""

    source: Source
    scenario: ScenarioConfig
    seed: int


_LOADED: dict[Source, ExternalPolicy] = {}
"""The entries this process holds, by source (the driver's own from :func:`source_of`, a worker's from
:func:`load`)."""


def _file_digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _folder_digest(folder: Path) -> str:
    """sha256 over the names and bytes of the regular files directly in ``folder``, in name order."""
    h = hashlib.sha256()
    for f in sorted(p for p in folder.iterdir() if p.is_file()):
        h.update(f.name.encode("utf-8") + b"\0")
        h.update(hashlib.sha256(f.read_bytes()).digest())
    return h.hexdigest()


def _digest(flag: str, target: str) -> str:
    """The digest of what ``target`` names now (a file of ``--policy``, a folder of ``--checkpoint``)."""
    if flag == "--policy":
        return _file_digest(Path(target.rsplit(":", 1)[0]))
    return _folder_digest(Path(target))


def source_of(ext: ExternalPolicy) -> Source | None:
    """The :class:`Source` of an entry the loader made from ``--policy`` or a safe-format ``--checkpoint`` (this
    process keeps ``ext`` for it, so a run here uses it as is); None for anything else (e.g. an entry built in
    code, or a checkpoint format the safe loader does not read): such an entry runs in the driver."""
    from kairos_gym.agents.checkpoint import resolve_checkpoint

    if ext.flag not in FLAGS:
        return None
    try:
        if ext.flag == "--policy":
            path, cls_name = parse_policy_spec(ext.spec, ext.where, ext.flag)
            target = f"{path.resolve()}:{cls_name}"
        else:
            kind, folder = resolve_checkpoint(ext.spec, ext.where, ext.flag)
            if kind != "safe":
                return None
            target = str(folder.resolve())
        digest = _digest(ext.flag, target)
    except (ConfigError, OSError):
        return None
    src = Source(flag=ext.flag, spec=ext.spec, label=ext.label, where=ext.where, target=target, digest=digest,
                 limits=ext.limits, isolate_memory=ext.isolate_memory)
    _LOADED[src] = ext
    return src


def _as_given(e: ConfigError, src: Source) -> ConfigError:
    """``e`` naming the flag's value as the user gave it (not the absolute target a worker loaded)."""
    if e.value != src.target:
        return e
    return ConfigError(e.where, e.field, src.spec, e.allowed)


def load(src: Source) -> ExternalPolicy:
    """The entry of ``src`` in this process: the driver's own, or loaded here once (a ``--policy`` file runs here,
    as it ran in the driver), with the driver's label, spec and guard settings. A file or checkpoint whose bytes
    differ from the driver's is a ConfigError naming the flag."""
    ext = _LOADED.get(src)
    if ext is not None:
        return ext
    try:
        now = _digest(src.flag, src.target)
    except OSError as e:
        raise ConfigError(src.where, src.flag, src.spec, f"a {'file' if src.flag == '--policy' else 'checkpoint'} "
                          f"this worker can read at {src.target} ({type(e).__name__}: {e})") from None
    if now != src.digest:
        what = "a policy file" if src.flag == "--policy" else "a checkpoint"
        raise ConfigError(src.where, src.flag, src.spec, f"{what} left as it was when the command loaded it (it "
                          "changed during the run: every run of an entry must run the same code and weights)")
    try:
        loaded = (policy_from_file(src.target, src.where, src.flag) if src.flag == "--policy"
                  else policy_from_checkpoint(src.target, src.where, src.flag))
    except ConfigError as e:
        raise _as_given(e, src) from None
    ext = dataclasses.replace(loaded, label=src.label, spec=src.spec, limits=src.limits,
                              isolate_memory=src.isolate_memory)
    _LOADED[src] = ext
    return ext


def run_submitted(run: SubmittedRun, tick: Callable[[], Any] | None = None) -> dict[str, Any]:
    """The summary of one guarded run of the submitted entry (:func:`~kairos_gym.agents.policy_file_loader.
    run_checked`), loaded in this process if it is not yet (:func:`load`); the module-level function a worker
    calls."""
    try:
        return run_checked(load(run.source), run.scenario, run.seed, progress=tick)
    except ConfigError as e:
        raise _as_given(e, run.source) from None


def submitted_task(run: SubmittedRun, label: str) -> BackendTask:
    """The backend task of ``run``: any backend may run it (its argument pickles)."""
    return BackendTask(run_submitted, run, label, run.source.label, run.scenario.workload.effective_num_requests)


__all__ = ["FLAGS", "Source", "SubmittedRun", "load", "run_submitted", "source_of", "submitted_task"]
