"""The task of the evaluation commands: one policy on one instance (a scenario and a seed).

A registry policy's run is a :class:`RunSpec`, which pickles (a ScenarioConfig, a registry name, a seed, the
policy's parameters), so any backend can run it; :func:`run_spec` is the module-level function a worker calls.
A policy from a user's file or checkpoint (an :class:`~kairos_gym.agents.policy_file_loader.ExternalPolicy`,
``--policy``/``--checkpoint``) runs in the driver process, under its guard (:func:`external_task`).
:func:`policy_task` takes either.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from kairos_gym.evaluation.backends.base import Task
from kairos_gym.scenario import ScenarioConfig

if TYPE_CHECKING:
    from kairos_gym.agents.policy_file_loader import ExternalPolicy


@dataclass(frozen=True)
class RunSpec:
    """One simulator run: ``policy`` (a registry name, with ``params``) on ``scenario`` with workload ``seed``;
    ``keep``: also return the simulator (for plots; such a task runs in the driver)."""

    scenario: ScenarioConfig
    policy: str
    seed: int
    params: dict[str, Any] = field(default_factory=dict)
    keep: bool = False


def run_spec(spec: RunSpec, tick: Callable[[], Any] | None = None) -> tuple[dict[str, Any], Any]:
    """``(summary, simulator or None)`` of the run (:func:`kairos_gym.evaluation.evaluate.run_one`)."""
    from kairos_gym.evaluation.evaluate import run_one

    return run_one(spec.scenario, spec.policy, spec.seed, keep=spec.keep, params=spec.params or None, tick=tick)


def summary_only(spec: RunSpec, tick: Callable[[], Any] | None = None) -> dict[str, Any]:
    """The summary of the run alone (what crosses back from a worker)."""
    return run_spec(spec, tick)[0]


def run_task(spec: RunSpec, label: str) -> Task:
    """The backend task of ``spec``: its summary (or ``(summary, simulator)`` when ``spec.keep``, run locally)."""
    fn = run_spec if spec.keep else summary_only
    return Task(fn, spec, label, spec.policy, spec.scenario.workload.effective_num_requests, local=spec.keep)


def policy_label(policy: str | ExternalPolicy) -> str:
    """The row label of a policy: its registry name, or ``file:FILE.py:CLASS`` / ``checkpoint:DIR``."""
    return policy if isinstance(policy, str) else policy.label


def external_task(ext: ExternalPolicy, scenario: ScenarioConfig, seed: int, label: str, *, keep: bool = False) -> Task:
    """The task of one guarded run of ``ext`` (:func:`kairos_gym.agents.policy_file_loader.run_external`), in the
    driver: its summary, its ``policy`` the entry's label (``(summary, simulator)`` when ``keep``: for plots)."""
    from kairos_gym.agents.policy_file_loader import run_external

    def run(_arg: Any, tick: Callable[[], Any] | None) -> Any:
        summary, sim = run_external(ext, scenario, seed, progress=tick, record_timeline=keep)
        summary["policy"] = ext.label
        return (summary, sim) if keep else summary

    return Task(run, None, label, ext.label, scenario.workload.effective_num_requests, local=True)


def policy_task(policy: str | ExternalPolicy, scenario: ScenarioConfig, seed: int, label: str, *,
                params: dict[str, Any] | None = None, keep: bool = False) -> Task:
    """The task of ``policy`` (a registry name with ``params``, or an external policy) on one instance; with
    ``keep`` its result is ``(summary, simulator)``."""
    if isinstance(policy, str):
        return run_task(RunSpec(scenario, policy, seed, dict(params or {}), keep=keep), label)
    if params:
        raise TypeError("policy parameters are only accepted with a registry name")
    return external_task(policy, scenario, seed, label, keep=keep)
