"""The env step in one call: ``KairosEnv.step`` calls ``_core.EnvStepper.step``, which applies the action's
decision, runs the simulator to the next decision, and writes the float32 observation and the int8 mask into
preallocated buffers (src/core/env_step.cpp, src/core/observation.cpp: every feature computed in double as
:meth:`ObservationLayout.values` does, then rounded to float32, so the observations are bit for bit that
encoder's). Python keeps the action check, the reward formula, the SLO tracker and the info dict.

The observation's scales cross as a typed ``_core.ObsParams`` (named fields, src/core/observation.hpp) filled from
the :class:`~kairos_gym.env.observation.ObservationLayout`'s public attributes.
"""

from __future__ import annotations

from typing import Any

from kairos_gym.compiled import core
from kairos_gym.env import observation as ob
from kairos_gym.env.actions import ActionLayout
from kairos_gym.env.observation import ObservationLayout
from kairos_gym.sim.simulator import Simulator


def obs_params(obs: ObservationLayout) -> Any:
    """The ``_core.ObsParams`` of ``obs``: its scales (seconds, tokens, counts) and feature flags. The scales of
    the ``ttft``/``tbt`` features are the SLOs, so ``ttft_slo``/``tbt_slo`` are ``obs.ttft``/``obs.tbt``."""
    p = core().ObsParams()
    p.ttft = obs.ttft
    p.tbt = obs.tbt
    p.budget = obs.budget
    p.inv_max_chunk = obs.inv_max_chunk
    p.log_den = obs.log_den
    p.ttft_slo = obs.ttft
    p.tbt_slo = obs.tbt
    p.ttft_slo_scale = ob.TTFT_SLO_SCALE
    p.tbt_slo_scale = ob.TBT_SLO_SCALE
    p.queue_tokens_scale = ob.QUEUE_TOKENS_SCALE
    p.queue_requests_scale = ob.QUEUE_REQUESTS_SCALE
    p.batch_scale = ob.BATCH_SCALE
    p.context_scale = ob.CONTEXT_SCALE
    p.pending_scale = ob.PENDING_SCALE
    p.remaining_scale = ob.REMAINING_SCALE
    p.oracle = obs.oracle
    p.pull = obs.pull
    p.faults = obs.faults
    return p


def make_stepper(sim: Simulator, obs: ObservationLayout, actions: ActionLayout) -> Any:
    """A ``_core.EnvStepper`` over ``sim``'s core."""
    stepper = core().EnvStepper(sim._core, obs_params(obs), [int(n) for n in actions.node], list(actions.chunk),
                                actions.W)
    if stepper.buffers()[0].size != obs.size:  # the C++ table and observation.py disagree: never mis-encode
        raise RuntimeError(f"the core's observation has {stepper.buffers()[0].size} features, the layout {obs.size}")
    return stepper
