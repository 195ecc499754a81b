"""Fault injection (docs/reliability.md, "Faults"): the ``faults:`` section, the core's semantics
and the invariants under every fault kind: conservation, KV conservation on every node, no
transfer for a deflected request, causality, a monotone clock, determinism, availability seen by policies,
snapshot/restore and pickling; the shipped fault scenarios under every shipped policy (item 6)."""

from __future__ import annotations

import math
import pickle
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
from kairos_gym.agents.registry import POLICIES, make_policy
from kairos_gym.agents.runner import simulate

from kairos_gym.env.registration import scenario_env_id
from kairos_gym.errors import ConfigError
from kairos_gym.scenario import ScenarioConfig, load_scenario
from kairos_gym.sim import Decision, Simulator
from kairos_gym.sim.hook import LARGEST_SAFE
from kairos_gym.sim.metrics import PATH_DEFLECT, PATH_PREFILL

N_REQUESTS = 400  # bursty at 22 req/s: ~18 s of arrivals, loaded enough that every fault touches requests


def scenario(events: list[dict[str, Any]] | None = None, random: dict[str, Any] | None = None, base: str = "bursty",
             n: int = N_REQUESTS, **over: Any) -> ScenarioConfig:
    faults: dict[str, Any] = {"events": events or []}
    if random is not None:
        faults["random"] = random
    return load_scenario(base).with_overrides({"workload": {"num_requests": n}, "faults": faults, **over})


def ev(at: float, kind: str, node: int, factor: float | None = None) -> dict[str, Any]:
    d: dict[str, Any] = {"at_s": at, "kind": kind, "node": node}
    if factor is not None:
        d["factor"] = factor
    return d


def kv_held(sim: Simulator) -> list[int]:
    """Per decode node: the KV tokens its resident requests hold under ``reserve`` (prompt + output each):
    requests not finished whose KV is on it or on its way (a transfer started) or that are deflected to it."""
    held = [0] * sim.scenario.cluster.decode_nodes
    for r in range(sim.n):
        d = int(sim.d_node[r])
        if d < 0 or not math.isnan(sim.finish[r]):
            continue
        if int(sim.path[r]) == PATH_DEFLECT or not math.isnan(sim.xfer_start[r]):
            held[d] += int(sim.prompt[r]) + int(sim.output[r])
    return held


def check_kv(sim: Simulator) -> None:
    """KV conservation on every node now: reserved == held by its residents; a down node holds nothing."""
    want = kv_held(sim)
    for d, node in enumerate(sim.dnodes):
        assert node.kv_reserved == want[d], (sim.now, d, node.kv_reserved, want[d])
        if not sim.node_up("decode", d):
            assert node.kv_reserved == 0 and not node.batch and not node.pending and node.defl is None


def run_checked(sim: Simulator, policy: Any, every_decision: bool = True) -> dict[str, Any]:
    ctx = sim.next_decision()
    while ctx is not None:
        if every_decision:
            check_kv(sim)
        sim.apply(policy.decide(ctx))
        ctx = sim.next_decision()
    return sim.summary()


def check_end(sim: Simulator, s: dict[str, Any]) -> None:
    """Conservation, causality, KV all released, no transfer for a deflected request, nothing held."""
    n = sim.n
    assert sim.done
    assert s["n_completed"] + s["n_rejected"] == n == s["n_requests"]
    assert s["faults"]["held_now"] == 0
    fin, first, arr = np.asarray(sim.finish), np.asarray(sim.first_token), np.asarray(sim.arrival)
    path = np.asarray(sim.path)
    ok = path >= 0
    assert int(ok.sum()) == s["n_completed"] and not np.isnan(fin[ok]).any()
    assert (first[ok] >= arr[ok]).all() and (fin[ok] >= first[ok]).all()
    assert (np.asarray(sim.kv_moved)[path == PATH_DEFLECT] == 0).all()
    assert all(node.kv_reserved == 0 for node in sim.dnodes)
    assert all(sim.node_up("prefill", p) for p in range(sim.scenario.cluster.prefill_nodes))
    assert all(sim.node_up("decode", d) for d in range(sim.scenario.cluster.decode_nodes))


FAULT_KINDS_CASES = {
    "prefill_down": ([ev(6.0, "prefill_down", 0), ev(11.0, "prefill_up", 0)], "requeued"),
    "prefill_down_all": ([ev(6.0, "prefill_down", 0), ev(6.5, "prefill_down", 1), ev(9.0, "prefill_up", 1),
                          ev(11.0, "prefill_up", 0)], "held"),
    "decode_down": ([ev(6.0, "decode_down", 1), ev(9.0, "decode_up", 1)], "decode_reentries"),
    "decode_down_all": ([ev(6.0, "decode_down", 0), ev(6.2, "decode_down", 1), ev(7.0, "decode_up", 0),
                         ev(8.0, "decode_up", 1)], "decode_reentries"),
    "prefill_slow": ([ev(4.0, "prefill_slow", 0, 3.0), ev(12.0, "prefill_normal", 0)], "events"),
    "decode_slow": ([ev(4.0, "decode_slow", 1, 4.0), ev(12.0, "decode_normal", 1)], "events"),
    "link_degraded": ([ev(4.0, "link_degraded", 0, 0.05), ev(12.0, "link_restored", 0)], "events"),
    "link_cut": ([ev(5.0, "link_cut", 0), ev(5.0, "link_cut", 1), ev(8.0, "link_restored", 1),
                  ev(9.0, "link_restored", 0)], "events"),
}


@pytest.mark.parametrize("policy", ["no-deflect", "always-deflect-ls", "kairos"])
@pytest.mark.parametrize("case", sorted(FAULT_KINDS_CASES))
def test_conservation_and_kv_under_every_fault_kind(case, policy):
    """Every request completed or rejected, KV reserved == held by residents at every decision (0 on a down node),
    causality, no transfer for a deflected request, all KV released at the end; each fault ran and did something."""
    events, counter = FAULT_KINDS_CASES[case]
    sc = scenario(events)
    sim = Simulator(sc, seed=3, trace=True)
    s = run_checked(sim, make_policy(policy, sc))
    check_end(sim, s)
    assert s["faults"]["events"] == len(events)
    assert s["faults"][counter] > 0, s["faults"]
    ts = [e[0] for e in sim.trace]
    assert ts == sorted(ts)  # the clock never goes back


def test_swap_policy_decode_failure_conserves_requests():
    """Under the swap memory policy (kv-pressure), a decode node failing with swapped and swapping-in requests:
    every request still completes, and all KV is released at the end."""
    sc = scenario([ev(3.0, "decode_down", 0), ev(5.0, "decode_up", 0), ev(7.0, "decode_down", 1),
                   ev(9.0, "decode_up", 1)], base="kv-pressure", n=500)
    sim = Simulator(sc, seed=0)
    s = sim.run(make_policy("no-deflect", sc))
    assert s["n_preemptions"] > 0
    check_end(sim, s)
    assert s["faults"]["decode_reentries"] > 0


def test_no_faults_section_is_the_fault_free_run():
    """An empty faults section changes nothing: same summary, same events, no availability features."""
    base = load_scenario("small")
    empty = base.with_overrides({"faults": {"events": []}})
    assert empty == base and "faults" not in base.to_dict()
    a, b = Simulator(base, seed=2), Simulator(empty, seed=2)
    sa, sb = a.run(make_policy("kairos", base)), b.run(make_policy("kairos", empty))
    for s in (sa, sb):
        s.pop("wall_time_s")
        assert "faults" not in s
    assert sa == sb and a._seq == b._seq


def test_prefill_failure_requeues_onto_the_up_node_keeping_arrival_time():
    """Prefill node 0 down: its requests re-enter on node 1 (the only up node), keep their arrival time (TTFT
    includes the outage), and no prefill step runs on node 0 while it is down."""
    sc = scenario([ev(6.0, "prefill_down", 0), ev(11.0, "prefill_up", 0)])
    sim = Simulator(sc, seed=3, record_timeline=True)
    clean = Simulator(scenario([]), seed=3)
    s = sim.run(make_policy("no-deflect", sc))
    clean.run(make_policy("no-deflect", sc))
    check_end(sim, s)
    re = np.flatnonzero(np.asarray(sim._core.column("reentries")) > 0)
    assert len(re) == s["faults"]["requeued"] + s["faults"]["transfers_lost"] > 0
    assert (np.asarray(sim.p_node)[re] == 1).all()
    assert (np.asarray(sim.arrival)[re] == np.asarray(clean.arrival)[re]).all()
    assert (np.asarray(sim.first_token)[re] > 6.0).all()
    for kind, node, start, end, _ in sim.timeline:
        if kind == "P" and node == 0:
            assert not (6.0 <= start < 11.0) and not (6.0 < end <= 11.0), (start, end)


def test_no_prefill_node_up_holds_requests_until_one_comes_up():
    sc = scenario([ev(6.0, "prefill_down", 0), ev(6.0, "prefill_down", 1), ev(8.0, "prefill_up", 1),
                   ev(8.0, "prefill_up", 0)])
    sim = Simulator(sc, seed=3, record_timeline=True)
    s = sim.run(make_policy("no-deflect", sc))
    check_end(sim, s)
    assert s["faults"]["held"] > 0
    assert not [t for t in sim.timeline if t[0] == "P" and 6.0 <= t[2] < 8.0]


def test_decode_failure_reprefills_prompt_plus_emitted_tokens_and_the_gap_spans_the_outage():
    """A decode node failing: its residents re-enter prefill with the tokens they emitted (vLLM recompute): the
    re-prefill's KV is prompt + emitted tokens, and their worst gap covers the outage up to the re-prefill."""
    t_fail = 6.0
    sc = scenario([ev(t_fail, "decode_down", 1), ev(9.0, "decode_up", 1)])
    sim = Simulator(sc, seed=3)
    s = sim.run(make_policy("no-deflect", sc))
    check_end(sim, s)
    gen = np.asarray(sim._core.column("gen"))
    re = np.flatnonzero(gen > 0)
    assert len(re) > 0
    bpt = sim.model.kv_bytes_per_token
    for r in re:
        assert sim.kv_moved[r] == (int(sim.prompt[r]) + int(gen[r])) * bpt
        assert sim.max_gap[r] >= sim.prefill_end[r] - t_fail > 0
        assert sim.first_token[r] < t_fail  # emitted tokens stay emitted


def test_down_nodes_are_unavailable_to_policies_refused_and_counted():
    """While down: ``up`` is False in the context, a down decode node cannot be deflected to (can_deflect False),
    a down prefill node's TTFT is inf; a decision naming one is refused, counted (refused_down and n_invalid) and
    takes the shortest up prefill queue."""
    sc = scenario([ev(3.0, "prefill_down", 0), ev(8.0, "prefill_up", 0), ev(3.0, "decode_down", 1),
                   ev(8.0, "decode_up", 1)])
    sim = Simulator(sc, seed=3)
    ctx = sim.next_decision()
    while ctx.now_s < 3.5:
        assert (ctx.prefill[0].up and ctx.decode[1].up) == (ctx.now_s < 3.0)
        sim.apply(Decision.prefill_path())
        ctx = sim.next_decision()
    assert not ctx.prefill[0].up and ctx.prefill[1].up and not ctx.decode[1].up and ctx.decode[0].up
    assert not ctx.decode[1].can_deflect and ctx.ttft_prefill_s[0] == math.inf
    inv = sim.n_invalid
    assert sim.apply(Decision.deflect(1, LARGEST_SAFE)) is False
    rid = ctx.request.rid
    assert int(sim.path[rid]) == PATH_PREFILL and int(sim.p_node[rid]) == 1
    ctx = sim.next_decision()
    sim.apply(Decision.prefill_path(0))
    assert int(sim.p_node[ctx.request.rid]) == 1
    assert sim.fault_counters()["refused_down"] == 2 and sim.n_invalid == inv + 2


def test_env_observation_and_mask_show_availability():
    """The env of a fault scenario: P + D availability features (1 = up) and the re-entry flag (0 at an arrival) at
    the end (the native encoder and the Python table agree), and the mask closes a down decode node's actions;
    gym.make of the shipped fault ids works."""
    env = gym.make(scenario_env_id("bursty-prefill-failure")).unwrapped
    base = gym.make(scenario_env_id("bursty")).unwrapped
    assert env.observation_space.shape[0] == base.observation_space.shape[0] + 5
    obs, _ = env.reset(seed=0)
    assert (obs[-5:-1] == 1.0).all() and obs[-1] == 0.0
    sc = scenario([ev(2.0, "decode_down", 1), ev(8.0, "decode_up", 1)], n=200)
    from kairos_gym.env.core import KairosEnv

    e = KairosEnv(scenario=sc)
    obs, _ = e.reset(seed=0)
    names = e.obs_layout.names
    i_up = names.index("d1_up")
    while e.sim.now < 2.5:
        obs, _, term, _, _ = e.step(0)
        assert not term
        # the native encoder and the Python table agree, availability included
        assert np.array_equal(obs, np.array(e.obs_layout.values(e.sim.next_decision()), dtype=np.float32))
    assert obs[i_up] == 0.0 and obs[names.index("d0_up")] == 1.0
    mask = e.action_masks()
    w = (len(mask) - 1) // 2
    assert not mask[1 + w:].any()


def test_link_cut_stalls_transfers_and_keeps_their_kv_reserved():
    sc = scenario([ev(5.0, "link_cut", 0), ev(5.0, "link_cut", 1), ev(8.0, "link_restored", 0),
                   ev(8.0, "link_restored", 1)])
    sim = Simulator(sc, seed=3)
    ctx = sim.next_decision()
    stalled_seen = False
    while ctx is not None:
        if 5.0 < sim.now < 8.0:
            check_kv(sim)  # the stalled transfers' KV stays reserved
            stalled_seen |= any(n.incoming for n in sim.dnodes)
        sim.apply(Decision.prefill_path())
        ctx = sim.next_decision()
    s = sim.summary()
    check_end(sim, s)
    assert stalled_seen
    xe = np.asarray(sim.xfer_end)
    assert not ((xe > 5.0) & (xe < 8.0)).any()  # nothing completes while cut
    assert ((xe >= 8.0) & (np.asarray(sim.xfer_start) < 8.0)).any()  # transfers that stalled, then resumed


def test_link_degraded_slows_transfers_by_the_factor():
    sc = scenario([ev(4.0, "link_degraded", 0, 0.1), ev(14.0, "link_restored", 0)])
    sim, clean = Simulator(sc, seed=3), Simulator(scenario([]), seed=3)
    sim.run(make_policy("no-deflect", sc))
    clean.run(make_policy("no-deflect", sc))
    setup = sim.transfer.setup_s
    bw = sim.transfer.bandwidth_bytes_per_s

    def fastest(s: Simulator, node: int) -> float:  # least bandwidth-per-byte seconds among link `node`'s transfers
        sel = (np.asarray(s.p_node) == node) & (np.asarray(s.xfer_start) > 5.0) & (np.asarray(s.xfer_end) < 13.0)
        d = (np.asarray(s.xfer_end) - np.asarray(s.xfer_start) - setup)[sel] / np.asarray(s.kv_moved)[sel]
        return float(d.min())

    assert fastest(clean, 0) == pytest.approx(1.0 / bw, rel=1e-6)  # alone on the link: nominal
    assert fastest(sim, 0) >= 10.0 / bw * (1 - 1e-9)  # a tenth of the bandwidth at best
    assert fastest(sim, 1) == pytest.approx(1.0 / bw, rel=1e-6)  # the other link is untouched


def test_straggler_multiplies_the_step_time():
    """The first prefill step on node 0 after it is slowed by 3 takes 3x what the same step takes without the fault
    (the runs are the same up to it)."""
    t = 6.0
    sc = scenario([ev(t, "prefill_slow", 0, 3.0), ev(30.0, "prefill_normal", 0)])
    a = Simulator(sc, seed=3, record_timeline=True)
    b = Simulator(scenario([]), seed=3, record_timeline=True)
    a.run(make_policy("no-deflect", sc))
    b.run(make_policy("no-deflect", sc))

    def first_after(s: Simulator) -> tuple[float, float]:
        return min((st, en) for k, node, st, en, _ in s.timeline if k == "P" and node == 0 and st >= t)

    (sa, ea), (sb, eb) = first_after(a), first_after(b)
    assert sa == sb
    assert ea - sa == pytest.approx(3.0 * (eb - sb), rel=1e-12)


def test_decode_straggler_slows_decoding():
    sc = scenario([ev(0.0, "decode_slow", 0, 3.0), ev(0.0, "decode_slow", 1, 3.0), ev(1e6, "decode_normal", 0),
                   ev(1e6, "decode_normal", 1)])
    sa = Simulator(sc, seed=3).run(make_policy("no-deflect", sc))
    sb = Simulator(scenario([]), seed=3).run(make_policy("no-deflect", sc))
    assert sa["tbt_p50"] > 2.0 * sb["tbt_p50"]
    assert sa["sim_time_s"] < 1e5  # faults never prolong a run: the late events are dropped once all is done


RANDOM = {"horizon_s": 30.0, "prefill": {"mtbf_s": 8.0, "mttr_s": 1.5}, "decode": {"mtbf_s": 10.0, "mttr_s": 1.0}}


def _fingerprint(sim: Simulator) -> bytes:
    return b"".join(np.ascontiguousarray(getattr(sim, c)).tobytes() for c in
                    ("first_token", "finish", "path", "p_node", "d_node", "max_gap", "kv_moved"))


def test_determinism_with_random_failures():
    """Same seed twice: the same failures and byte-identical results; another seed: other failures; the workload's
    draws are those of the run without faults (the failures come from a child stream)."""
    sc = scenario(random=RANDOM)
    runs = []
    for seed in (5, 5, 6):
        sim = Simulator(sc, seed=seed)
        s = sim.run(make_policy("kairos", sc))
        check_end(sim, s)
        runs.append((sim.fault_events, _fingerprint(sim), s["faults"]))
    assert runs[0] == runs[1]
    assert runs[0][0] != runs[2][0]
    assert len(runs[0][0]) >= 4 and runs[0][2]["requeued"] + runs[0][2]["decode_reentries"] > 0
    clean = Simulator(scenario(), seed=5)
    assert (np.asarray(clean.arrival) == np.asarray(Simulator(sc, seed=5).arrival)).all()
    kinds = {k for _, k, _, _ in runs[0][0]}
    assert kinds <= {"prefill_down", "prefill_up", "decode_down", "decode_up"}


def test_network_outages_cut_every_link_at_once_in_the_documented_draw_order():
    """faults.random.network: after the node draws (prefill nodes, then decode nodes) of the same child stream,
    alternately an up time (mtbf_s x Exp(1)) and an outage (mttr_s x Exp(1)) until an outage would start at or after
    horizon_s; each outage is a link_cut of every link at its start and a link_restored of each at its end. The
    workload is the fault-free run's; nothing is lost, and no transfer moves during an outage."""
    net = {"mtbf_s": 4.0, "mttr_s": 1.0}
    sc = scenario(random={**RANDOM, "network": net})
    sim = Simulator(sc, seed=7)
    child = np.random.default_rng(7).spawn(1)[0]
    for rate in (RANDOM["prefill"], RANDOM["prefill"], RANDOM["decode"], RANDOM["decode"]):  # the node draws
        t = 0.0
        while True:
            t += rate["mtbf_s"] * float(child.standard_exponential())
            if t >= RANDOM["horizon_s"]:
                break
            t += rate["mttr_s"] * float(child.standard_exponential())
    want, t = [], 0.0
    while True:
        t += net["mtbf_s"] * float(child.standard_exponential())
        if t >= RANDOM["horizon_s"]:
            break
        rep = net["mttr_s"] * float(child.standard_exponential())
        want.append((t, t + rep))
        t += rep
    got = [e for e in sim.fault_events if e[1].startswith("link_")]
    assert got == sorted([(a, "link_cut", n, 1.0) for a, _ in want for n in (0, 1)]
                         + [(b, "link_restored", n, 1.0) for _, b in want for n in (0, 1)], key=lambda e: e[0])
    assert len(want) >= 3
    node_only = Simulator(scenario(random=RANDOM), seed=7).fault_events
    assert [e for e in sim.fault_events if not e[1].startswith("link_")] == node_only  # node draws unchanged
    assert (np.asarray(sim.arrival) == np.asarray(Simulator(scenario(), seed=7).arrival)).all()
    s = sim.run(make_policy("no-deflect", sc))
    check_end(sim, s)
    assert s["faults"]["events"] == len(sim.fault_events)
    # a prefill-path request whose prefill ended inside an outage gets its first token only after the outage
    net_only = scenario(random={"horizon_s": 30.0, "network": net})
    sim = Simulator(net_only, seed=7)
    s = sim.run(make_policy("no-deflect", net_only))
    check_end(sim, s)
    outages = [(a, b) for (a, k, n, _), (b, *_r) in zip(sim.fault_events[0::4], sim.fault_events[2::4], strict=True)]
    first = np.asarray(sim.first_token)
    assert any(((first > a + 1e-3) & (first < b)).sum() == 0 and b - a > 0.5 for a, b in outages)
    assert net_only.to_dict()["faults"]["random"] == {"horizon_s": 30.0, "network": net}


def test_snapshot_restore_and_pickling_with_faults():
    """Mid-run (between faults, after one fired): restore returns to the same future, and a pickled copy (a
    re-simulation from the decision log, with the same faults) ends at the same bytes; node failures and network
    outages drawn."""
    sc = scenario([ev(4.0, "prefill_down", 0), ev(9.0, "prefill_up", 0), ev(7.0, "decode_down", 1),
                   ev(10.0, "decode_up", 1)], random={**RANDOM, "network": {"mtbf_s": 6.0, "mttr_s": 1.5}})
    pol = make_policy("kairos", sc)
    sim = Simulator(sc, seed=4)
    assert sum(k == "link_cut" for t, k, _n, _f in sim.fault_events if t > 5.0) >= 2  # outages after the snapshot
    ctx = sim.next_decision()
    while ctx.now_s < 5.0:
        sim.apply(pol.decide(ctx))
        ctx = sim.next_decision()
    assert sim.fault_counters()["events"] >= 1
    snap = sim.snapshot()
    copy = pickle.loads(pickle.dumps(sim))

    def finish(s: Simulator) -> tuple[bytes, dict[str, int]]:
        s.run(pol)
        return _fingerprint(s), s.fault_counters()

    a = finish(sim)
    drawn = sim.fault_events
    sim.reset(seed=9)  # other random failures ...
    assert sim.fault_events != drawn
    sim.restore(snap)  # ... until the snapshot's state (and its fault list) is back
    assert sim.fault_events == drawn
    assert finish(sim) == a
    assert finish(copy) == a


@pytest.mark.parametrize("bad, field", [
    ({"events": [{"at_s": 1.0, "kind": "prefill_explodes", "node": 0}]}, "kind"),
    ({"events": [ev(1.0, "prefill_down", 2), ev(2.0, "prefill_up", 2)]}, "node"),
    ({"events": [ev(1.0, "decode_down", 0)]}, "events"),  # never comes back
    ({"events": [ev(1.0, "decode_up", 0)]}, "kind"),  # up while up
    ({"events": [ev(1.0, "prefill_slow", 0)]}, "factor"),  # no factor
    ({"events": [ev(1.0, "prefill_slow", 0, 0.5), ev(2.0, "prefill_normal", 0)]}, "factor"),
    ({"events": [ev(1.0, "link_degraded", 0, 1.5), ev(2.0, "link_restored", 0)]}, "factor"),
    ({"events": [ev(1.0, "link_cut", 0, 0.5), ev(2.0, "link_restored", 0)]}, "factor"),
    ({"events": [ev(-1.0, "prefill_down", 0), ev(2.0, "prefill_up", 0)]}, "at_s"),
    ({"events": [{"at_s": 1.0, "kind": "prefill_down"}]}, "node"),
    ({"events": [], "random": {"horizon_s": 1e7, "prefill": {"mtbf_s": 1.0, "mttr_s": 1.0}}}, "horizon_s"),
    ({"events": [], "random": {"horizon_s": 10.0}}, "random"),
    ({"events": [], "random": {"horizon_s": 10.0, "decode": {"mtbf_s": 0, "mttr_s": 1.0}}}, "mtbf_s"),
    ({"evnts": []}, "evnts"),
    ({"events": [], "random": {"horizon_s": 10.0, "network": {"mtbf_s": 1.0}}}, "mttr_s"),
    ({"events": [], "random": {"horizon_s": 10.0, "network": {"mtbf_s": 1.0, "mttr_s": 1.0, "links": 2}}}, "links"),
    ({"events": [], "random": {"horizon_s": 1e6, "network": {"mtbf_s": 10.0, "mttr_s": 1.0}}}, "horizon_s"),
    # a drawn network outage and a timed impairment of a link would not nest: refused together
    ({"events": [ev(1.0, "link_degraded", 1, 0.5), ev(2.0, "link_restored", 1)],
      "random": {"horizon_s": 10.0, "network": {"mtbf_s": 5.0, "mttr_s": 1.0}}}, "kind"),
])
def test_bad_faults_sections_are_one_clear_error(bad, field):
    with pytest.raises(ConfigError) as e:
        load_scenario("small").with_overrides({"faults": bad})
    assert e.value.field == field, str(e.value)
    assert "faults" in e.value.where


def test_random_draws_past_the_event_bound_are_an_error_not_a_truncation(monkeypatch):
    import kairos_gym.faults as f

    monkeypatch.setattr(f, "MAX_FAULT_EVENTS", 10)
    sc = scenario(random={"horizon_s": 100.0, "prefill": {"mtbf_s": 1.0, "mttr_s": 0.1}})
    with pytest.raises(ConfigError, match="at most 10 events"):
        Simulator(sc, seed=0)


SHIPPED = ("bursty-prefill-failure", "bursty-link-degraded")


# ppo and distilled-oracle included: the shipped checkpoints (trained without faults) read the fault-free observation on
# these scenarios (agents/ppo.py), the mask keeps them off down decode nodes
@pytest.mark.parametrize("policy", sorted(POLICIES))
@pytest.mark.parametrize("name", SHIPPED)
def test_every_shipped_policy_on_the_shipped_fault_scenarios_loses_nothing(name, policy):
    sc = load_scenario(name).with_overrides({"workload": {"num_requests": 700}})
    s, sim = simulate(policy, sc, 1)
    check_end(sim, s)
    assert s["faults"]["events"] == len(sc.faults.events)
    assert (np.asarray(sim.first_token)[np.asarray(sim.path) >= 0] > 0).all()


@pytest.mark.parametrize("policy", ["ppo", "distilled-oracle"])
def test_ppo_checkpoint_reads_the_fault_free_observation_on_a_fault_scenario(policy):
    """The shipped checkpoint's observation has no availability group (57 features; a fault scenario's has P + D + 1
    more): on a fault scenario it is served the same scenario's fault-free observation, and never deflects to a
    down decode node (the mask). A model whose size fits neither layout is still refused, naming the features."""
    sc = load_scenario("bursty-prefill-failure").with_overrides(
        {"workload": {"num_requests": 300},
         "faults": {"events": [ev(3.0, "decode_down", 0), ev(8.0, "decode_up", 0)]}})
    pol = make_policy(policy, sc)
    sim = Simulator(sc, seed=0)
    ctx = sim.next_decision()
    n_down = 0
    while ctx is not None:
        d = pol.decide(ctx)
        if not ctx.decode[0].up:
            n_down += 1
            assert d.decode_node != 0
        sim.apply(d)
        ctx = sim.next_decision()
    assert n_down > 0 and sim.summary()["faults"]["refused_down"] == 0
    plain = load_scenario("bursty")
    with pytest.raises(ConfigError, match="features"):
        make_policy(policy, plain.with_overrides({"cluster": {"decode_nodes": 3}}))


@pytest.mark.parametrize("reentry", ["policy", "prefill"])
@pytest.mark.parametrize("policy, over", [
    ("kairos-pull", {"deflection": {"decision_points": "arrival+pull"}}),
    ("kairos", {"information": {"track": "realistic"}}),
    ("always-deflect", {"cluster": {"ttft_includes_transfer": False}}),
])
def test_faults_with_pulls_the_realistic_track_and_early_first_tokens(policy, over, reentry):
    """Pull decisions, the realistic information track and first tokens at prefill end (ttft_includes_transfer
    false) under prefill and decode failures and random failures, both re-entry modes: nothing lost, KV conserved
    at every decision. Under ``reentry: prefill`` a request with tokens out resumes on the prefill path (it is no
    pull candidate); under ``policy`` every re-entry was a decision."""
    events = [ev(4.0, "decode_down", 0), ev(6.0, "decode_up", 0), ev(5.0, "prefill_down", 1),
              ev(9.0, "prefill_up", 1), ev(7.0, "decode_down", 1), ev(7.5, "decode_up", 1)]
    sc = scenario(events, random=RANDOM, **over).with_overrides({"faults": {"reentry": reentry}})
    sim = Simulator(sc, seed=2)
    s = run_checked(sim, make_policy(policy, sc))
    check_end(sim, s)
    f = s["faults"]
    assert f["decode_reentries"] > 0 and f["requeued"] > 0
    if "deflection" in over:
        assert s["n_pull_decisions"] > 0
    gen = np.asarray(sim._core.column("gen"))
    if reentry == "prefill":
        assert f["reentry_decisions"] == 0
        assert (np.asarray(sim.path)[gen > 0] == PATH_PREFILL).all()  # tokens out: resumed on the prefill path
    else:
        assert f["reentry_decisions"] == f["decode_reentries"] + f["requeued"] + f["transfers_lost"]
