"""Overload handled explicitly: admission control and per-request timeouts (scenario section
``overload``). Invariants: every arrival completes, is rejected or times out
(conservation), KV memory is returned on every node, the clock never goes back, rejected requests never reach a
decision, runs are deterministic."""

from __future__ import annotations

import itertools
import pickle

import numpy as np
import pytest

from kairos_gym.errors import ConfigError
from kairos_gym.scenario import ScenarioConfig, load_scenario
from kairos_gym.sim import Decision, Simulator

from .conftest import SMALL, DeflectAll, NoDeflect


class RandomDecisions:
    """Uniform over the prefill path and every accepted (node, chunk) deflection, LargestSafe included."""

    def __init__(self, seed: int) -> None:
        self.rng = np.random.default_rng(seed)

    def decide(self, ctx):
        opts = [Decision.prefill_path()]
        opts += [Decision.deflect(i, c) for i, d in enumerate(ctx.decode) if d.can_deflect
                 for c in (0, *ctx.chunk_menu)]
        return opts[int(self.rng.integers(len(opts)))]


POLICIES = {"nodef": NoDeflect, "d256": lambda: DeflectAll(256), "rand": lambda: RandomDecisions(3)}


def overloaded(overload: dict, *, incl: bool = True, setup_s: float = 0.005, transfer: bool = True,
               memory: str = "reserve", rate: float = 60.0) -> tuple[ScenarioConfig, int]:
    """SMALL at ``rate`` req/s (SMALL's 22 already loads the prefill nodes) with ``overload`` on; a tight KV
    capacity (tokens per decode node) so requests also wait for decode memory."""
    sc = ScenarioConfig.from_dict({
        **SMALL, "workload": {**SMALL["workload"], "arrival": {"kind": "gamma", "rate": rate, "cv": 3}},
        "cluster": {"ttft_includes_transfer": incl, "memory_policy": memory, "overlong": "reject"},
        "transfer": {"setup_s": setup_s, "enabled": transfer}, "overload": overload})
    return sc, 12_000 if memory == "swap" else 30_000


def _drive(sim, policy) -> tuple[list[int], list[float]]:
    """Run to the end checking the invariants at every decision; returns the decided rids and the clock."""
    rids, clock = [], []
    ctx = sim.next_decision()
    while ctx is not None:
        rids.append(ctx.request.rid)
        clock.append(sim.now)
        fin, to, path = np.asarray(sim.finish), np.asarray(sim.timed_out), np.asarray(sim.path)
        arrived = sim.n_arrived
        settled = int((~np.isnan(fin)).sum()) + sim.n_rejected + sim.n_timed_out
        in_flight = int(((path >= 0) & np.isnan(fin) & np.isnan(to)).sum())  # routed, neither finished nor out
        assert settled + in_flight + 1 == arrived  # + the request waiting for this decision
        assert int((path == -1).sum()) == sim.n_rejected
        for d in sim.dnodes:
            assert 0 <= d.kv_reserved <= d.kv_capacity
        sim.apply(policy.decide(ctx))
        ctx = sim.next_decision()
    return rids, clock


def _assert_conserved(sim, s) -> None:
    assert s["n_completed"] + s["n_rejected"] + s["n_timed_out"] == s["n_arrived"] == sim.n
    assert s["n_rejected"] == s["n_rejected_overlong"] + s["n_rejected_admission"]
    assert sim.waiting == 0
    for d in sim.dnodes:  # KV conservation: every reservation returned, nothing left anywhere
        assert (d.kv_reserved, d.pending, d.swapped, d.incoming, d.swapping_in, d.batch, d.defl) == (0, (), (), 0, 0,
                                                                                                     (), None)
    assert all(not p.queue and p.queued_tokens == 0 for p in sim.pnodes)
    ft, fin, to = np.asarray(sim.first_token), np.asarray(sim.finish), np.asarray(sim.timed_out)
    assert not np.any(~np.isnan(to) & (~np.isnan(ft) | ~np.isnan(fin)))  # a timed-out request has neither
    assert int((~np.isnan(to)).sum()) == s["n_timed_out"]


VARIANTS = [dict(zip(("incl", "setup_s", "transfer", "memory"), v, strict=True))
            for v in itertools.product((True, False), (0.0, 0.005), (True, False), ("reserve", "swap"))
            if v[2] or v[1] == 0.0]  # a disabled transfer has no set-up time


@pytest.mark.parametrize("variant", VARIANTS, ids=lambda v: "-".join(str(x) for x in v.values()))
@pytest.mark.parametrize("policy", sorted(POLICIES))
def test_conservation_under_timeouts(variant, policy):
    """completed + rejected + timed out = arrived at every decision and at the end, and every node's KV comes
    back, across TTFT accounting, transfer set-ups, memory policies and policies (every place a request can be
    when its time is up: prefill queue or step, memory wait, transfer, decode pending, deflection)."""
    sc, kv = overloaded({"timeout_s": 0.5}, **variant)
    sim = Simulator(sc, seed=1, kv_capacity=kv)
    _, clock = _drive(sim, POLICIES[policy]())
    s = sim.summary()
    _assert_conserved(sim, s)
    assert s["n_timed_out"] > 0 and s["n_completed"] > 0
    assert clock == sorted(clock)  # monotone clock


@pytest.mark.parametrize("policy", sorted(POLICIES))
def test_conservation_under_admission_control(policy):
    sc, kv = overloaded({"admission_max_waiting": 20, "admission_max_ttft_s": 0.8, "timeout_s": 2.0}, rate=80)
    sim = Simulator(sc, seed=2, kv_capacity=kv)
    rids, _ = _drive(sim, POLICIES[policy]())
    s = sim.summary()
    _assert_conserved(sim, s)
    assert s["n_rejected_admission"] > 0
    # rejected requests never reach a decision; every admitted one does, once
    path = np.asarray(sim.path)
    assert sorted(rids) == rids and set(rids) == set(np.flatnonzero(path >= 0).tolist())
    assert sim.n_decisions == s["n_arrived"] - s["n_rejected"]


def test_admission_bounds_the_waiting_requests():
    sc, kv = overloaded({"admission_max_waiting": 15}, rate=100)
    sim = Simulator(sc, seed=0, kv_capacity=kv)
    worst = 0
    ctx = sim.next_decision()
    while ctx is not None:
        worst = max(worst, sim.waiting)
        sim.apply(NoDeflect().decide(ctx))
        ctx = sim.next_decision()
    assert worst == 15  # the bound binds and holds (the request being decided counts)
    assert sim.n_rejected_admission > 0


def test_a_completed_request_is_late_by_at_most_the_step_that_made_its_first_token():
    """A request whose first-token step is running when its time is up is served (a GPU step is not
    interrupted): its TTFT exceeds timeout_s by at most that step, bounded by the longest node activity (a
    prefill step, a chunk step or a decode stretch)."""
    timeout = 0.5
    sc, kv = overloaded({"timeout_s": timeout})
    sim = Simulator(sc, seed=1, kv_capacity=kv, record_timeline=True)
    sim.run(DeflectAll(256))
    ttft = np.asarray(sim.first_token) - np.asarray(sim.arrival)
    # a decode stretch's first step (the first token of a request that waited for it) is within the stretch
    longest = max(end - start for _, _, start, end, _ in sim.timeline)
    assert np.nanmax(ttft) > timeout  # some are late: the rule matters
    assert np.nanmax(ttft) <= timeout + longest + 1e-9


def test_timeouts_alone_let_a_fifo_queue_collapse():
    """Documented behaviour (docs/reliability.md): at 10x load, timeouts without admission control time out
    nearly everything (every request waits its full timeout in the FIFO prefill queue)."""
    sc = load_scenario("overload-10x").with_overrides(
        {"overload": {"admission_max_waiting": None, "admission_max_ttft_s": None},
         "workload": {"num_requests": 4000}})
    s = Simulator(sc, seed=0).run(NoDeflect())
    assert s["n_timed_out"] > 0.9 * s["n_arrived"]
    assert s["n_completed"] + s["n_timed_out"] == s["n_arrived"]


def test_overload_10x_scenario_accounts_for_every_arrival():
    sc = load_scenario("overload-10x").with_overrides({"workload": {"num_requests": 6000}})
    sim = Simulator(sc, seed=0)
    s = sim.run(NoDeflect())
    _assert_conserved(sim, s)
    assert s["n_rejected_admission"] > s["n_completed"] > 0  # 10x load: most arrivals are turned away
    assert s["ttft_p99"] <= sc.overload.timeout_s + 1.0


def test_overload_is_deterministic():
    sc, kv = overloaded({"admission_max_ttft_s": 0.8, "timeout_s": 0.5})
    runs = []
    for _ in range(2):
        sim = Simulator(sc, seed=4, kv_capacity=kv)
        s = sim.run(RandomDecisions(7))
        s.pop("wall_time_s")
        runs.append((s, np.asarray(sim.timed_out).tobytes(), np.asarray(sim.finish).tobytes(), sim.wait_area))
    assert runs[0] == runs[1]


def test_overload_fields_are_validated():
    for field, bad in (("timeout_s", 0), ("timeout_s", -1.0), ("admission_max_waiting", 0),
                       ("admission_max_waiting", 2.5), ("admission_max_ttft_s", "fast"), ("timeout", 1.0)):
        with pytest.raises(ConfigError, match=field):
            ScenarioConfig.from_dict({**SMALL, "overload": {field: bad}})


def test_without_overload_control_the_summary_is_unchanged():
    """No overload section: no new summary keys (the golden fingerprints hash the summary) and no timeout."""
    sim = Simulator(ScenarioConfig.from_dict(SMALL), seed=0)
    s = sim.run(NoDeflect())
    assert not {"n_arrived", "n_timed_out", "n_rejected_overlong", "n_rejected_admission"} & set(s)
    assert sim.n_timed_out == 0 and sim.n_arrived == sim.n


def test_env_slo_reward_counts_timed_out_requests_as_missed(monkeypatch):
    """The env's SLO/goodput reward tracker settles a timed-out request as a miss (it never finishes)."""
    import gymnasium as gym

    import kairos_gym.env  # noqa: F401

    sc, _ = overloaded({"timeout_s": 0.5}, rate=80)
    env = gym.make("kairos_gym/Kairos-v0", scenario=sc, reward="slo")
    _, info = env.reset(seed=0)
    rng = np.random.default_rng(0)
    while True:
        valid = np.flatnonzero(info["action_mask"])
        _, _, term, trunc, info = env.step(int(valid[rng.integers(valid.size)]))
        if term or trunc:
            break
    tracker = env.unwrapped._slo
    tracker.update(env.unwrapped.sim)
    assert info["summary"]["n_timed_out"] > 0
    assert tracker.state()[0] == []  # nothing left "running"


def test_env_refuses_streaming_metrics():
    import gymnasium as gym

    import kairos_gym.env  # noqa: F401

    with pytest.raises(ConfigError, match=r"metrics\.mode"):
        gym.make("kairos_gym/Kairos-v0", scenario="small", metrics={"mode": "streaming"})


def test_snapshot_restore_and_pickling_reproduce_an_overloaded_run():
    """Admission and timeouts live in the core's state: a restored snapshot and an unpickled copy (which
    replays the decision log) end exactly where the original does."""
    sc, kv = overloaded({"admission_max_ttft_s": 0.8, "timeout_s": 0.5})
    sim = Simulator(sc, seed=3, kv_capacity=kv)
    policy = RandomDecisions(9)
    for _ in range(60):
        sim.apply(policy.decide(sim.next_decision()))
    snap = sim.snapshot()
    copy = pickle.loads(pickle.dumps(sim))
    rng_state = policy.rng.bit_generator.state

    def finish(s, p):
        out = s.run(p)
        out.pop("wall_time_s")
        return out, np.asarray(s.timed_out).tobytes()

    first = finish(sim, policy)
    policy.rng.bit_generator.state = rng_state
    sim.restore(snap)
    assert finish(sim, policy) == first
    policy.rng.bit_generator.state = rng_state
    assert finish(copy, policy) == first


def test_partial_summary_counts_timed_out_requests_as_settled():
    sc, kv = overloaded({"timeout_s": 0.5})
    sim = Simulator(sc, seed=1, kv_capacity=kv)
    for _ in range(250):
        sim.apply(NoDeflect().decide(sim.next_decision()))
    s = sim.summary()
    assert s["n_timed_out"] > 0 and s["n_in_flight"] > 0
    assert s["n_pending"] + s["n_in_flight"] + s["n_completed"] + s["n_rejected"] + s["n_timed_out"] == sim.n
    assert s["n_arrived"] == sim.n - s["n_pending"]
