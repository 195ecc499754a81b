"""Queueing check: one prefill node as an M/D/1 queue against the Pollaczek-Khinchine formula."""

from __future__ import annotations

import numpy as np

from kairos_gym.sim import Simulator
from tests.sim.conftest import NoDeflect


def test_md1_mean_wait_matches_pollaczek_khinchine():
    prompt = 1024
    sc = {
        "name": "md1",
        "cluster": {"prefill_nodes": 1, "decode_nodes": 1, "prefill_token_budget": prompt},
        "workload": {"arrival": {"kind": "poisson", "rate": 1.0}, "num_requests": 30000,
                     "lengths": {"kind": "fixed", "prompt_tokens": prompt, "output_tokens": 2}},
    }
    probe = Simulator(sc, seed=0)
    service = probe.model.prefill_time(prompt)  # deterministic service time D (s)
    rho = 0.7
    rate = rho / service
    sc["workload"]["arrival"]["rate"] = rate
    waits = []
    for seed in (0, 1):
        sim = Simulator(sc, seed=seed)
        sim.run(NoDeflect())
        t = sim.requests_table()
        waits.append(np.nanmean(t["ttft_queue_s"]))
        assert np.allclose(t["ttft_exec_s"], service)  # every prompt is one step of exactly D
    pk = rho * service / (2 * (1 - rho))  # M/D/1 mean wait in queue
    assert abs(np.mean(waits) / pk - 1) < 0.05, (np.mean(waits), pk)
