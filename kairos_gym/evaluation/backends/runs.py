"""The task of the evaluation commands: one policy on one instance (a scenario and a seed).

A :class:`RunSpec` pickles (a ScenarioConfig, a registry name, a seed, the policy's parameters), so any
backend can run it; :func:`run_spec` is the module-level function a worker calls.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from kairos_gym.evaluation.backends.base import Task
from kairos_gym.scenario import ScenarioConfig


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
