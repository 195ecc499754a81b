"""The swap policy's KV-block count of a decode batch (DecodeNode blocks_at, src/core/decode_node.hpp): the
aggregates join and leave keep give, for any number of further steps, what a pass over the batch counts
(blocks_tokens), at steps 0 and in whole runs, where members join long after the node's first step (a negative
ctx_base) and a failure clears the batch; blocks over kMaxResidueBlock keep none and take the pass."""

from __future__ import annotations

import numpy as np
import pytest
from kairos_gym.agents.registry import make_policy

from kairos_gym.scenario import load_scenario
from kairos_gym.sim import Simulator

EXTRAS = (0, 1, 2, 7, 15, 16, 17, 33, 250, 1000)


def _sim(block: int, n: int = 250, base: str = "kv-pressure") -> Simulator:
    sc = load_scenario(base).with_overrides({"cluster": {"kv_block_tokens": block},
                                              "workload": {"num_requests": n}})
    return Simulator(sc, seed=3)


@pytest.mark.parametrize("block", [1, 16, 100, 256])
def test_random_joins_and_leaves_count_what_a_pass_counts(block: int) -> None:
    sim = _sim(block)
    rng = np.random.default_rng(block)
    members: list[int] = []
    for rid in range(200):
        sim.debug_join(0, rid, int(rng.integers(0, 5000)), 100, 0.0)
        members.append(rid)
        if rng.random() < 0.4:
            sim.debug_leave(0, members.pop(int(rng.integers(len(members)))))
        for x in EXTRAS:
            by_pass, by_aggregates = sim._core.debug_blocks(0, x)
            assert by_aggregates == by_pass, (block, rid, x)


@pytest.mark.parametrize(("base", "block"), [("kv-pressure", 16), ("kv-pressure", 7), ("fault-shift", 16)])
def test_every_decision_of_a_run_counts_what_a_pass_counts(base: str, block: int) -> None:
    sim = _sim(block, 600, base)
    pol = make_policy("kairos", sim.scenario, 3)
    checked = 0
    while (ctx := sim.next_decision()) is not None:
        for d in range(2):
            for x in EXTRAS[:6] if ctx.request.rid % 4 else EXTRAS:
                by_pass, by_aggregates = sim._core.debug_blocks(d, x)
                assert by_aggregates == by_pass, (base, block, ctx.request.rid, d, x)
            checked += len(sim.dnodes[d].batch) > 0
        sim.apply(pol.decide(ctx))
    assert checked > 100  # batches were there to count
    assert sim.summary()["n_preemptions"] > 0 or base == "fault-shift"  # swap bound somewhere


def test_blocks_over_the_limit_keep_no_aggregates() -> None:
    sim = _sim(512)
    sim.debug_join(0, 0, 1000, 10, 0.0)
    assert sim._core.debug_blocks(0, 3) == (1024, -1)
