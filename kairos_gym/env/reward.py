"""Rewards. One step's reward covers the simulated interval from one decision to the next (to the end
of the run on the last step).

``misses`` (default)
    ``-1`` per request that becomes known, in the interval, to miss the benchmark's score: its first token comes
    after the TTFT SLO (known when the token is made: a first token is set once), it finishes with a token gap
    above the TBT SLO, or it is rejected or times out (it never finishes). Each is final, so an episode that runs
    to the end returns ``-(requests missing) = n_ok - n_requests``: on the same workload (the same seed) the
    returns order policies exactly as SLO attainment does (tools: ``kairos-gym reward-order``, docs/env.md,
    "Rewards"). It arrives earlier than ``slo``'s ``+1`` (a late first token costs at once, not at the
    request's last token). The simulator counts it natively (src/core/env_step.hpp ``known_misses``).
``ttft``
    ``-(dW / ttft_slo_s) - tbt_penalty * dV`` where ``dW`` is the growth of the simulator's
    ``wait_area`` (request-seconds spent waiting for a first token) and ``dV`` the growth of
    ``tbt_violations`` (token gaps longer than the TBT SLO) over the interval. The integral of the
    number of waiting requests over time is the sum of their TTFTs, so an untruncated episode's return
    is ``-(sum of TTFT) / ttft_slo_s - tbt_penalty * (TBT violations)``.
``slo``
    ``+1`` per request that finishes in the interval having met both SLOs (TTFT <= ``slo.ttft_s`` and
    largest token gap <= ``slo.tbt_s``, the simulator summary's definition). The episode return is
    the number of SLO-attaining requests (``slo_attainment * n_requests``).
``goodput``
    Output tokens (in thousands) of the requests that finish in the interval having met both SLOs:
    the episode return divided by the makespan is the token goodput (kilo-tokens per second).
"""

from __future__ import annotations

from typing import Any

REWARD_KINDS = ("misses", "ttft", "slo", "goodput")
"""The reward kinds, the default first."""
DEFAULT_REWARD = REWARD_KINDS[0]
DEFAULT_TBT_PENALTY = 0.1
"""Default lambda: one TBT violation costs as much as a tenth of a TTFT SLO spent waiting by one request."""
GOODPUT_TOKEN_SCALE = 1000.0
"""The ``goodput`` reward counts output tokens in thousands."""


class SloTracker:
    """Counts requests that finished meeting both SLOs, incrementally.

    ``add(rid)`` after each routing decision; ``update(sim)`` after the simulator advanced returns
    ``(met, met_output_tokens, finished_missing)`` for the requests that finished since the last call.
    The scan over in-flight requests runs only when the simulator's finish counter moved.
    """

    __slots__ = ("_inflight", "_last_finished", "_tbt", "_ttft")

    def __init__(self, ttft_s: float, tbt_s: float) -> None:
        self._ttft = ttft_s
        self._tbt = tbt_s
        self._inflight: list[int] = []
        self._last_finished = 0

    def add(self, rid: int) -> None:
        self._inflight.append(rid)

    def update(self, sim: Any) -> tuple[int, int, int]:
        if sim.n_finished == self._last_finished:
            return 0, 0, 0
        self._last_finished = sim.n_finished
        fin = sim.finish
        keep = []
        met = 0
        met_tokens = 0
        missed = 0
        first, arrival, gap, output = sim.first_token, sim.arrival, sim.max_gap, sim.output
        timed_out = getattr(sim, "timed_out", None)  # overload.timeout_s (NaN: not timed out)
        for r in self._inflight:
            f = fin[r]
            if f != f:  # NaN: still running, or timed out (a miss that will never finish)
                if timed_out is not None and timed_out[r] == timed_out[r]:
                    missed += 1
                else:
                    keep.append(r)
                continue
            if first[r] - arrival[r] <= self._ttft and gap[r] <= self._tbt:
                met += 1
                met_tokens += output[r]
            else:
                missed += 1
        self._inflight = keep
        return met, met_tokens, missed

    def state(self) -> tuple[list[int], int]:
        return list(self._inflight), self._last_finished

    def set_state(self, state: tuple[list[int], int]) -> None:
        self._inflight = list(state[0])
        self._last_finished = int(state[1])


def step_reward(kind: str, *, d_wait: float, d_viol: int, met: int, met_tokens: int, ttft_s: float,
                tbt_penalty: float, d_missed: int = 0) -> float:
    """The reward of one interval (see the module docstring)."""
    if kind == "misses":
        return float(-d_missed)
    if kind == "ttft":
        return -(d_wait / ttft_s) - tbt_penalty * d_viol
    if kind == "slo":
        return float(met)
    if kind == "goodput":
        return met_tokens / GOODPUT_TOKEN_SCALE
    raise ValueError(kind)  # unreachable: validated in KairosEnv

