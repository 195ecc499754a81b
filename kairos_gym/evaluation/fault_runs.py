"""The fault runs docs/reliability.md ("Faults") shows: ``kairos-gym fault-runs``.

Two tables, each run one whole workload (3,000 requests of bursty's arrivals, workload seed ``seed``):

- **shipped**: Kairos on ``bursty`` and on the shipped fault scenarios ``bursty-prefill-failure`` and
  ``bursty-link-degraded``, with ``faults.reentry: prefill`` (a failure's victims rejoin the shortest up prefill
  queue by rule);
- **reentry**: re-entry decisions against that rule: Kairos and always-deflect-ls on ``bursty-prefill-failure``
  and on :data:`DECODE_DOWN` (bursty with decode node 0 down from 10 s to 25 s), each under ``faults.reentry:
  policy`` (the default: every victim is a decision of the policy) and ``prefill``.

Every row is a run's summary figures (completed, rejected, TTFT P50/P99 in seconds, SLO attainment) and its fault
counters; nothing is timed, so the figures are the same on every machine.
"""

from __future__ import annotations

from typing import Any

from kairos_gym.agents.runner import run_policy
from kairos_gym.scenario import ScenarioConfig, load_scenario

DECODE_DOWN_NAME = "decode 0 down 10-25 s"
"""The label of :data:`DECODE_DOWN`'s rows."""
DECODE_DOWN: dict[str, Any] = {"faults": {"events": [{"at_s": 10.0, "kind": "decode_down", "node": 0},
                                                     {"at_s": 25.0, "kind": "decode_up", "node": 0}]}}
"""``bursty`` with this override: decode node 0 down from 10 s to 25 s."""
SHIPPED = ("bursty", "bursty-prefill-failure", "bursty-link-degraded")
"""The shipped table's scenarios (Kairos, ``reentry: prefill`` where the scenario has faults)."""
REENTRY_POLICIES = ("kairos", "always-deflect-ls")
"""The re-entry table's policies."""
REENTRY_MODES = ("policy", "prefill")
"""``faults.reentry`` modes, in the re-entry table's order."""
COUNTERS = ("requeued", "transfers_lost", "decode_reentries", "rerouted", "refused_down", "held",
            "reentry_decisions", "reentry_deflected", "dropped_timed_out")
"""The fault counters of a row (the summary's ``faults`` dict; docs/metrics.md)."""


def _scenario(name: str, reentry: str | None) -> ScenarioConfig:
    sc = load_scenario("bursty").with_overrides(DECODE_DOWN) if name == DECODE_DOWN_NAME else load_scenario(name)
    if reentry is not None and sc.faults.enabled:
        sc = sc.with_overrides({"faults": {"reentry": reentry}})
    return sc


def _row(scenario: str, policy: str, reentry: str | None, seed: int) -> dict[str, Any]:
    sc = _scenario(scenario, reentry)
    s = run_policy(policy, sc, seed)
    faults = s.get("faults")
    return {"scenario": scenario, "policy": policy, "reentry": sc.faults.reentry if sc.faults.enabled else None,
            "n_requests": s["n_requests"], "n_completed": s["n_completed"], "n_rejected": s["n_rejected"],
            "ttft_p50": s["ttft_p50"], "ttft_p99": s["ttft_p99"], "slo_attainment": s["slo_attainment"],
            "faults": None if faults is None else {k: int(faults[k]) for k in COUNTERS}}


def fault_runs(seed: int = 0) -> dict[str, Any]:
    """Both tables' rows (module docstring): ``{"seed", "shipped": [...], "reentry": [...]}``, each row a dict of
    ``scenario``, ``policy``, ``reentry`` (None without faults), ``n_requests``, ``n_completed``, ``n_rejected``,
    ``ttft_p50``, ``ttft_p99`` (s), ``slo_attainment`` and ``faults`` (:data:`COUNTERS`; None without faults)."""
    shipped = [_row(name, "kairos", "prefill", seed) for name in SHIPPED]
    reentry = [_row(name, policy, mode, seed)
               for name in ("bursty-prefill-failure", DECODE_DOWN_NAME)
               for policy in REENTRY_POLICIES for mode in REENTRY_MODES]
    return {"seed": seed, "shipped": shipped, "reentry": reentry}


def counters_text(faults: dict[str, int] | None) -> str:
    """The non-zero fault counters of a row as ``"10 requeued, 2 rerouted"`` (``"-"`` when none)."""
    if not faults:
        return "-"
    parts = [f"{v:,} {k.replace('_', ' ')}" for k, v in faults.items()
             if v and k not in ("reentry_decisions", "reentry_deflected")]
    return ", ".join(parts) or "-"
