"""The native env step (issue 11, step 5): on a native-engine simulator, ``KairosEnv.step`` makes one call to
``_core.EnvStepper.step``, which applies the action's decision, runs the simulator to the next decision, and
writes the float32 observation and the int8 mask into preallocated buffers (src/core/env_step.cpp,
src/core/observation.cpp: every feature computed in double as :meth:`ObservationLayout.values` does, then
rounded to float32, so observations are bit for bit the Python encoder's). Python keeps the action check, the
reward formula, the SLO tracker and the info dict. (KairosEnv's Python step path served the Python reference
engine, since removed: every simulator is native now.)
"""

from __future__ import annotations

from typing import Any

from kairos_gym.env import observation as ob
from kairos_gym.env.actions import ActionLayout
from kairos_gym.env.observation import ObservationLayout


def make_stepper(sim: Any, obs: ObservationLayout, actions: ActionLayout) -> Any:
    """A ``_core.EnvStepper`` over ``sim``'s core (a :class:`~kairos_gym.sim.simulator.NativeSimulator`)."""
    from kairos_gym.compiled import core

    sc = sim.scenario
    params = {
        "ttft": obs._ttft, "tbt": obs._tbt, "budget": obs._budget, "inv_max_chunk": obs._inv_max_chunk,
        "log_den": obs._log_den, "ttft_slo": sc.slo.ttft_s, "tbt_slo": sc.slo.tbt_s,
        "ttft_slo_scale": ob.TTFT_SLO_SCALE, "tbt_slo_scale": ob.TBT_SLO_SCALE,
        "queue_tokens_scale": ob.QUEUE_TOKENS_SCALE, "queue_requests_scale": ob.QUEUE_REQUESTS_SCALE,
        "batch_scale": ob.BATCH_SCALE, "context_scale": ob.CONTEXT_SCALE, "pending_scale": ob.PENDING_SCALE,
        "remaining_scale": ob.REMAINING_SCALE, "oracle": obs.oracle, "pull": obs.pull,
        "faults": obs.faults,
    }
    stepper = core().EnvStepper(sim._core, params, [int(n) for n in actions.node], list(actions.chunk), actions.W)
    if stepper.buffers()[0].size != obs.size:  # the C++ table and observation.py disagree: never mis-encode
        raise RuntimeError(f"native observation has {stepper.buffers()[0].size} features, the layout {obs.size}")
    return stepper
