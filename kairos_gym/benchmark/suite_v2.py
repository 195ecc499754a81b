"""Benchmark v2's tasks (docs/benchmark.md, "Suite v2"): production-length, warm-started instances, 30 test
instances per task, and a split of the families into **seen** ones (a learnt entry may train on their train
instances) and **unseen** ones, drawn from data no seen family uses, which a learnt entry never sees.

- **Seen** families: the v1 synthetic families (``bursty``, ``regime-shift`` with the v1 sojourns,
  ``decode-bound``, ``kv-pressure``, ``fault-shift``). v1's trace families (``azure-code``, ``long-tail``) are not
  in v2: their traces hold 8,819 and 12,031 requests, too few for 30 disjoint production-length windows.
- **Unseen** families: ``servegen-sharegpt`` (ServeGen's m-mid rate profile, ShareGPT lengths), ``arxiv-summ``
  (ServeGen's m-small rate profile, arXiv-summarisation lengths) and ``mooncake-synthetic`` (Poisson arrivals,
  Mooncake's synthetic lengths). Their arrival processes (a rate profile; Poisson) and length data appear in no
  seen family.

Every task is one family at its scenario's own SLOs (v2 has no SLO tiers: v1's tiers left six of 21 tasks
saturated). An instance is a workload seed; it simulates :data:`BURN_IN` requests, unscored
(``slo.burn_in_requests``), then scores the next :data:`SCORED` (the lengths chosen by the convergence study,
``kairos-gym convergence``). Test seeds are ``0 .. N_TEST - 1``, train seeds ``1000 .. 1000 + N_TRAIN - 1``
(the tuned rules pick their parameters there); training (RL, distillation) draws seeds from
:data:`~kairos_gym.benchmark.suite.TRAIN_SEED_MIN` up, never a test or train seed.
"""

from __future__ import annotations

from typing import Any

from kairos_gym.benchmark.suite import REGIME_SOJOURNS, Task, seeds

NAME = "v2"
BURN_IN = 1000
"""Requests simulated before scoring starts (a warm start; ``slo.burn_in_requests``)."""
SCORED = 2000
"""Requests scored per instance, after the burn-in."""
N_TEST = 30
"""Test instances per task."""
N_TRAIN = 5
"""Train instances per task (the tuned rules' search)."""
TRAIN_SEED = 1000
FAULT_HORIZON_S = 400.0
"""fault-shift's outages are drawn over this many simulated seconds (the scenario's 100 s cover its 1,000 requests at
10 req/s; a v2 instance's 3,000 take ~300 s, so the outages go on through the scored part)."""
SPLITS = ("seen", "unseen")
"""The family splits: a learnt entry trains on seen families only; its headline is its unseen score."""
SEEN: tuple[tuple[str, str, dict[str, Any]], ...] = (
    ("bursty", "bursty", {}),
    ("regime-shift", "regime-shift", {"workload": {"arrival": REGIME_SOJOURNS}}),
    ("decode-bound", "decode-bound", {}),
    ("kv-pressure", "kv-pressure", {}),
    ("fault-shift", "fault-shift", {"faults": {"random": {"horizon_s": FAULT_HORIZON_S}}}),
)
"""Seen families: (family, shipped scenario, overrides besides the instance length)."""
UNSEEN: tuple[tuple[str, str, dict[str, Any]], ...] = (
    ("servegen-sharegpt", "servegen-sharegpt", {}),
    ("arxiv-summ", "arxiv-summ", {}),
    ("mooncake-synthetic", "mooncake-synthetic", {}),
)
"""Unseen families: never trained on by a learnt entry."""


def _length() -> dict[str, Any]:
    return {"workload": {"num_requests": BURN_IN + SCORED}, "slo": {"burn_in_requests": BURN_IN}}


def _merge(a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
    out = dict(a)
    for k, v in b.items():
        out[k] = _merge(out[k], v) if isinstance(v, dict) and isinstance(out.get(k), dict) else v
    return out


def _task(family: str, scenario: str, over: dict[str, Any], split: str) -> Task:
    from kairos_gym.benchmark.suite import FAMILY_ORACLE_BASES

    return Task(family, scenario, seeds(*range(N_TEST)), seeds(*range(TRAIN_SEED, TRAIN_SEED + N_TRAIN)),
                family=family, overrides=_merge(over, _length()), oracle_bases=FAMILY_ORACLE_BASES.get(family, ()),
                split=split)


SUITE: tuple[Task, ...] = (*(_task(f, s, o, "seen") for f, s, o in SEEN),
                           *(_task(f, s, o, "unseen") for f, s, o in UNSEEN))
"""Suite v2: every seen family, then every unseen one."""


def families(split: str) -> tuple[str, ...]:
    """The families of ``split`` (``seen`` or ``unseen``)."""
    return tuple(t.family for t in SUITE if t.split == split)
