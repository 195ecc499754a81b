"""Pull decisions (``deflection.decision_points: arrival+pull``): the simulator also asks when a
decode node's deflection slot frees, about one queued, not-started request.

Guards: the arrival-only default and a policy that stays at every pull are bit for bit the arrival-only run;
a pull keeps requests conserved, never transfers the pulled request's KV, never pulls a request twice or
mid-prefill, counts its TTFT from its arrival; "stay" leaves the queue as it was; the pull menu and the env's
observation and mask; determinism, snapshot/restore and pickling with pulls; Kairos-pull's rule."""

from __future__ import annotations

import copy
import math
import pickle

import numpy as np
import pytest
from kairos_gym.agents.baselines import SQLS, AlwaysDeflectLS, NoDeflect
from kairos_gym.agents.kairos import Kairos
from kairos_gym.agents.kairos_pull import KairosPull
from kairos_gym.agents.registry import make_policy

from kairos_gym.env import KairosEnv
from kairos_gym.errors import ConfigError
from kairos_gym.scenario import ScenarioConfig
from kairos_gym.sim import Decision, Simulator
from kairos_gym.sim.hook import ARRIVAL, PULL
from kairos_gym.sim.metrics import PATH_DEFLECT, PATH_PREFILL
from kairos_gym.sim.simulator import request_columns
from tests.fixtures import LENGTHS, tiny_scenario

BASE = tiny_scenario(300, name="pull-t", lengths=LENGTHS)


def scenario(points: str = "arrival+pull") -> ScenarioConfig:
    return ScenarioConfig.from_dict({**BASE, "deflection": {"decision_points": points}})


def native(points: str = "arrival+pull", seed: int = 0, **kw) -> Simulator:
    return Simulator(scenario(points), seed=seed, **kw)


class StayAtPulls:
    """Wraps a policy: its answer at arrivals, the prefill path (stay) at every pull."""

    def __init__(self, inner) -> None:
        self.inner = inner
        self.n_pulls = 0

    def decide(self, ctx):
        if ctx.kind == PULL:
            self.n_pulls += 1
            return Decision.prefill_path()
        return self.inner.decide(ctx)


class Node0Only:
    """Deflects (LargestSafe) to decode node 0 only, whenever it can, at arrivals and pulls: decode node 1 stays
    free, so a pull on node 0 finds another node that could take a deflection (and must not be offered)."""

    def decide(self, ctx):
        if ctx.decode[0].can_deflect:
            return Decision.deflect(0)
        return Decision.prefill_path()


def result(sim) -> tuple:
    """Every per-request column, the chunks and the summary without the decision counts (bit for bit)."""
    s = dict(sim.summary())
    for k in ("wall_time_s", "n_pull_decisions", "n_pulled"):
        s.pop(k, None)
    cols = tuple(np.asarray(getattr(sim, k)).tobytes() for k in request_columns())
    return cols, repr(sorted(s.items())), repr(sim.chunks)


# ---------------------------------------------------------------------------------------------- config
def test_option_validated_and_default_arrival():
    assert ScenarioConfig.from_dict(BASE).deflection.decision_points == "arrival"
    with pytest.raises(ConfigError, match="decision_points"):
        ScenarioConfig.from_dict({**BASE, "deflection": {"decision_points": "pull"}})



# ---------------------------------------------------------------------------------------------- bit-identity
@pytest.mark.parametrize("make", [lambda sc: NoDeflect(sc), lambda sc: Kairos(sc),
                                  lambda sc: StayAtPulls(SQLS(sc)), lambda sc: StayAtPulls(AlwaysDeflectLS(sc))])
def test_staying_at_every_pull_is_the_arrival_only_run(make):
    a = native("arrival")
    a.run(make(a.scenario))
    b = native("arrival+pull")
    pol = make(b.scenario)
    b.run(pol)
    assert result(a) == result(b)
    assert b.n_pulled == 0 and b.n_decisions == a.n_decisions + b.n_pull_decisions
    if isinstance(pol, StayAtPulls):  # the policy was asked at pulls: the identity is not vacuous
        assert pol.n_pulls == b.n_pull_decisions > 0


def test_arrival_only_raises_no_pull():
    sim = native("arrival")
    kinds = set()
    pol = AlwaysDeflectLS(sim.scenario)
    while (ctx := sim.next_decision()) is not None:
        kinds.add(ctx.kind)
        sim.apply(pol.decide(ctx))
    assert kinds == {ARRIVAL} and sim.n_pull_decisions == 0 and "n_pull_decisions" not in sim.summary()


# ---------------------------------------------------------------------------------------------- invariants
def run_recording(sim, policy):
    """Run to the end; per pull decision (rid, freed node, its prefill node, its queue state, now) and the set of
    requests pulled."""
    pulls, pulled = [], []
    while (ctx := sim.next_decision()) is not None:
        d = policy.decide(ctx)
        if ctx.kind == PULL:
            rid = ctx.request.rid
            pn = int(sim.p_node[rid])
            queue = sim.pnodes[pn].queue
            pulls.append((rid, ctx.pull_node, pn, queue, ctx.now_s, math.isnan(sim.prefill_start[rid])))
            ok = sim.apply(d)
            if d.path == "deflect" and ok:
                pulled.append((rid, ctx.now_s))
        else:
            sim.apply(d)
    return pulls, pulled


def test_pull_invariants():
    sim = native()
    pulls, pulled = run_recording(sim, AlwaysDeflectLS(sim.scenario))
    assert len(pulled) >= 10 and sim.n_pulled == len(pulled) and sim.n_pull_decisions == len(pulls)
    # conservation: every request finished exactly once, on one path
    assert sim.done and sim.n_finished == sim.n and not np.isnan(sim.finish).any()
    path = np.asarray(sim.path)
    assert set(path.tolist()) <= {PATH_PREFILL, PATH_DEFLECT}
    s = sim.summary()
    assert s["n_completed"] == sim.n and s["n_pulled"] == len(pulled)
    # never pulled twice; the pulled ones are deflected, with no KV transfer
    rids = [r for r, _ in pulled]
    assert len(set(rids)) == len(rids)
    pf = np.asarray(sim.pulled_from)
    assert sorted(np.flatnonzero(pf >= 0).tolist()) == sorted(rids)
    for rid, t_pull in pulled:
        assert path[rid] == PATH_DEFLECT and sim.kv_moved[rid] == 0 and np.isnan(sim.xfer_start[rid])
        assert sim.p_node[rid] == -1 and sim.chunks[rid]
        assert sim.prefill_start[rid] >= t_pull  # built on the decode node after the pull, not before
        assert sim.first_token[rid] > t_pull >= sim.arrival[rid]
    # never mid-prefill: each candidate was queued on its node, not started, with nothing built
    for rid, d, _pn, queue, _, not_started in pulls:
        assert not_started and 0 <= d < sim.scenario.cluster.decode_nodes
        item = [q for q in queue if q[0] == rid]
        assert len(item) == 1 and item[0][2] == 0 and item[0][1] == sim.prompt[rid]
    # TTFT counts from the arrival (not from the pull) in the summary
    ttft = np.asarray(sim.first_token) - np.asarray(sim.arrival)
    assert s["ttft_mean"] == pytest.approx(float(ttft.mean()), rel=1e-12)


def test_stay_keeps_the_queue_and_a_refused_pull_stays():
    sim = native()
    pol = Node0Only()
    seen_stay = seen_refused = 0
    while (ctx := sim.next_decision()) is not None and (seen_stay < 3 or seen_refused < 3):
        if ctx.kind != PULL:
            sim.apply(pol.decide(ctx))
            continue
        rid = ctx.request.rid
        pn = int(sim.p_node[rid])
        before = [p.queue for p in sim.pnodes]
        inv = sim.n_invalid
        other = (ctx.pull_node + 1) % len(ctx.decode)
        if seen_refused < 3:  # a deflection to another node than the freed one is refused (free as it is): it stays
            assert ctx.pull_node == 0 and sim.deflect_allowed(rid, other)
            assert sim.apply(Decision.deflect(other)) is False
            assert sim.n_invalid == inv + 1
            seen_refused += 1
        else:
            assert sim.apply(Decision.prefill_path(pn)) is True  # its own node: stay
            seen_stay += 1
        assert [p.queue for p in sim.pnodes] == before and sim.path[rid] == PATH_PREFILL
    assert seen_stay == 3 and seen_refused == 3


def test_pull_prefill_path_to_another_node_is_an_error():
    sim = native()
    pol = AlwaysDeflectLS(sim.scenario)
    while (ctx := sim.next_decision()) is not None and ctx.kind != PULL:
        sim.apply(pol.decide(ctx))
    assert ctx is not None
    other = 1 - int(sim.p_node[ctx.request.rid])
    with pytest.raises(ConfigError, match="prefill_node"):
        sim.apply(Decision.prefill_path(other))


@pytest.mark.parametrize("make", [lambda sc: AlwaysDeflectLS(sc), lambda sc: Node0Only()])
def test_pull_menu(make):
    sim = native()
    pol = make(sim.scenario)
    n = free_elsewhere = 0
    while (ctx := sim.next_decision()) is not None:
        if ctx.kind == PULL:
            n += 1
            rid = ctx.request.rid
            pn = int(sim.p_node[rid])
            assert ctx.request.arrival_s == sim.arrival[rid] < ctx.now_s
            assert [math.isinf(t) for t in ctx.ttft_prefill_s] == [i != pn for i in range(len(ctx.prefill))]
            assert 0 < ctx.ttft_prefill_s[pn] < math.inf
            assert ctx.decode[ctx.pull_node].can_deflect
            free_elsewhere += any(sim.deflect_allowed(rid, j) for j in range(len(ctx.decode)) if j != ctx.pull_node)
            assert [dv.can_deflect for j, dv in enumerate(ctx.decode) if j != ctx.pull_node] == \
                [False] * (len(ctx.decode) - 1)
        else:
            assert ctx.pull_node is None
        sim.apply(pol.decide(ctx))
    assert n > 0
    if isinstance(pol, Node0Only):  # other nodes could take it, and were not offered
        assert free_elsewhere > 0


def test_partial_summary_at_a_pending_pull():
    sim = native()
    pol = AlwaysDeflectLS(sim.scenario)
    ctx = _advance_to_pull(sim, pol)
    s = sim.summary()  # the pending pull's request is routed already: it is in flight, not pending
    path = np.asarray(sim.path)
    assert s["n_pending"] == int((path == -2).sum()) and path[ctx.request.rid] == PATH_PREFILL
    assert s["n_pending"] + s["n_in_flight"] + s["n_completed"] + s["n_rejected"] == sim.n


# ---------------------------------------------------------------------------------------------- determinism, state
def test_deterministic_with_pulls():
    a, b = native(seed=3), native(seed=3)
    a.run(KairosPull(a.scenario, seed=1))
    b.run(KairosPull(b.scenario, seed=1))
    assert a.n_pulled > 0
    assert result(a) == result(b) and a.decision_log().tobytes() == b.decision_log().tobytes()


def _advance_to_pull(sim, pol):
    while (ctx := sim.next_decision()) is not None:
        if ctx.kind == PULL:
            return ctx
        sim.apply(pol.decide(ctx))
    raise AssertionError("no pull decision")


def test_pickle_and_snapshot_at_a_pull():
    ref = native()
    ref.run(AlwaysDeflectLS(ref.scenario))
    sim = native()
    pol = AlwaysDeflectLS(sim.scenario)
    for _ in range(3):  # a few pulls in, pending at a pull
        sim.apply(pol.decide(_advance_to_pull(sim, pol)))
    ctx = _advance_to_pull(sim, pol)
    log = sim.decision_log()
    assert 3 in set(log[:, 1].tolist())  # pull deflections logged (kind 3), replayed by unpickling
    for twin in (pickle.loads(pickle.dumps(sim)), copy.deepcopy(sim)):
        assert twin.pending_kind == PULL and twin.next_decision().request.rid == ctx.request.rid
        twin.run(AlwaysDeflectLS(twin.scenario))
        assert result(twin) == result(ref)
    snap = sim.snapshot()
    sim.apply(Decision.prefill_path())  # a branch that stays ...
    sim.run(AlwaysDeflectLS(sim.scenario))
    sim.restore(snap)  # ... abandoned: the pull is pending again
    assert sim.pending_kind == PULL and sim.next_decision().request.rid == ctx.request.rid
    sim.run(AlwaysDeflectLS(sim.scenario))
    assert result(sim) == result(ref)


# ---------------------------------------------------------------------------------------------- env
def test_env_observation_and_mask_at_pulls():
    env = KairosEnv(scenario(), max_decisions=None)
    layout = env.obs_layout
    assert "decision_pull" in layout.names and layout.size == KairosEnv(scenario("arrival")).obs_layout.size + 1
    i = layout.names.index("decision_pull")
    obs, info = env.reset(seed=0)
    W = env.action_layout.W
    n_pull = 0
    done = False
    while not done:
        ctx = env.decision_context
        assert obs[i] == (1.0 if ctx.kind == PULL else 0.0)
        # the native encoder and the Python one agree bit for bit (inf prefill TTFTs at a pull included)
        assert np.array(layout.values(ctx), dtype=np.float32).tobytes() == obs.tobytes()
        mask = info["action_mask"]
        assert env.observation_space.contains(obs)
        if ctx.kind == PULL:
            n_pull += 1
            d = ctx.pull_node
            expect = np.zeros_like(mask)
            expect[0] = 1
            expect[1 + d * W:1 + (d + 1) * W] = 1
            assert mask.tolist() == expect.tolist()
            action = 1 + d * W  # pull it
        else:
            action = int(np.flatnonzero(mask)[-1])  # deflect when possible
        obs, _, term, trunc, info = env.step(action)
        assert info["pull"] == (ctx.kind == PULL)
        assert not info["invalid_action"]
        done = term or trunc
    assert n_pull > 0 and env.sim.n_pulled == n_pull


def test_vector_env_with_pulls_matches_single_envs():
    from kairos_gym.env.vector import KairosVectorEnv

    sc = scenario()
    vec = KairosVectorEnv(2, scenario=sc, max_decisions=250)
    singles = [KairosEnv(sc, max_decisions=250) for _ in range(2)]
    obs, infos = vec.reset(seed=5)
    sobs = [e.reset(seed=5 + i)[0] for i, e in enumerate(singles)]
    masks = infos["action_mask"]
    i = singles[0].obs_layout.names.index("decision_pull")
    pulls = 0
    for _ in range(250):
        assert obs.tobytes() == np.stack(sobs).tobytes()
        pulls += int(obs[:, i].sum())
        actions = np.array([int(np.flatnonzero(m)[-1]) for m in masks])  # deflect (pull) when allowed
        obs, _, term, trunc, infos = vec.step(actions)
        masks = infos["action_mask"]
        sobs = [e.step(int(a))[0] for e, a in zip(singles, actions, strict=True)]
        if term.any() or trunc.any():
            break
    assert pulls > 0


def test_env_arrival_only_layout_unchanged():
    env = KairosEnv(scenario("arrival"))
    assert "decision_pull" not in env.obs_layout.names
    _, info = env.reset(seed=0)
    _, _, _, _, info = env.step(0)
    assert "pull" not in info


# ---------------------------------------------------------------------------------------------- Kairos-pull
def test_kairos_pull_is_kairos_at_arrivals():
    a, b = native("arrival"), native("arrival")
    a.run(Kairos(a.scenario, seed=2))
    b.run(make_policy("kairos-pull", b.scenario, seed=2))
    assert result(a) == result(b)


@pytest.mark.parametrize("track", ["exact", "realistic"])
def test_kairos_pull_rule(track):
    sc = ScenarioConfig.from_dict({**BASE, "deflection": {"decision_points": "arrival+pull"}, "slo": {"ttft_s": 0.3},
                                   "information": {"track": track}})
    sim = Simulator(sc)  # a tight TTFT SLO: some candidates are hopeless and stay
    pol = KairosPull(sc)
    taken = stayed = 0
    while (ctx := sim.next_decision()) is not None:
        d = pol.decide(ctx)
        if ctx.kind == PULL:
            est = pol.last
            tp, td = est.ttft_p, est.ttft_deflect_s[ctx.pull_node]
            rule = td <= pol.alpha * tp and (ctx.now_s - ctx.request.arrival_s) + td <= ctx.ttft_slo_s
            assert (d.path == "deflect") == rule
            if rule:
                assert d.decode_node == ctx.pull_node
                taken += 1
            else:
                assert d.prefill_node is None
                stayed += 1
            assert tp == ctx.ttft_prefill_s[int(sim.p_node[ctx.request.rid])]  # the served prediction
        assert sim.apply(d)
    assert taken > 0 and stayed > 0


def test_pull_compare_rows():
    from kairos_gym.benchmark.pull_compare import MEASURED, measure

    rows = measure("bursty", instances=2)
    assert [r["policy"] for r in rows] == [m[0] for m in MEASURED]
    by = {r["policy"]: r for r in rows}
    for r in rows:
        assert r["task"] == "bursty" and r["n"] == 2 and 0.0 <= r["slo_attainment"] <= 1.0
        if r["decision_points"] == "arrival+pull":  # the paired difference of the means, against its arrival twin
            assert r["diff"] == pytest.approx(r["slo_attainment"] - by[r["vs"]]["slo_attainment"], abs=1e-12)
        else:
            assert "diff" not in r


def test_pulls_on_the_realistic_track():
    """Pull x information track: the freed node's slot-free signal carries its state (the served view of that node
    is fresh at a pull, so its deflection slot shows free), the stay option carries the node's served error, the
    dispatcher's copy drops a pulled request, and an arrival after a pull is an arrival again (a stale kind would
    make every later arrival look like a pull)."""
    sc = ScenarioConfig.from_dict({**BASE, "deflection": {"decision_points": "arrival+pull"},
                                   "information": {"track": "realistic", "staleness_s": 0.5}})
    sim = Simulator(sc, seed=0)
    pol = KairosPull(sc)
    pulls = arrivals = pulled = 0
    seen: set[int] = set()
    while (ctx := sim.next_decision()) is not None:
        if ctx.kind == PULL:
            pulls += 1
            view = ctx.decode[ctx.pull_node]
            assert not view.deflection_in_flight and view.deflection_remaining_tokens == 0
            assert [t for t in ctx.ttft_prefill_s if t != math.inf] and ctx.request.rid in seen
        else:
            arrivals += 1
            assert ctx.request.rid not in seen  # an arrival is a new request
            seen.add(ctx.request.rid)
        d = pol.decide(ctx)
        pulled += ctx.kind == PULL and d.path == "deflect"
        sim.apply(d)
    assert arrivals == sim.n and pulls == sim.n_pull_decisions > 0 and pulled == sim.n_pulled > 0
    s = sim.summary()
    assert s["n_completed"] + s["n_rejected"] == sim.n


@pytest.mark.parametrize("reward", ["slo", "goodput"])
def test_env_slo_reward_counts_a_pulled_request_once(reward):
    """A pulled request is tracked for the SLO rewards since its arrival: the pull step must not add it to the
    tracker a second time (it would be counted met or missed twice when it finishes). Over an episode the
    counts sum to the completed requests."""
    env = KairosEnv(scenario(), max_decisions=None, reward=reward)
    _, info = env.reset(seed=0)
    W = env.action_layout.W
    n_pull = counted = 0
    done = False
    while not done:
        ctx = env.decision_context
        if ctx.kind == PULL:
            n_pull += 1
            action = 1 + ctx.pull_node * W
        else:
            action = int(np.flatnonzero(info["action_mask"])[-1])
        _, _, term, trunc, info = env.step(action)
        counted += info["slo_met"] + info["slo_missed"]
        done = term or trunc
    assert n_pull > 0
    assert counted == env.sim.summary()["n_completed"]
