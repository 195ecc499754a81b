"""The information track: ``information: {track: exact | realistic, staleness_s, model_error}``.

The realistic track serves every policy (DecisionContext) and the env (observation, mask) the dispatcher's stale
copy of the nodes and noisy predictions; the physics is the exact track's."""

from __future__ import annotations

import math
import pickle

import numpy as np
import pytest
from kairos_gym.agents.registry import make_policy

from kairos_gym.errors import ConfigError
from kairos_gym.scenario import ScenarioConfig, load_scenario
from kairos_gym.sim import Decision, Simulator
from kairos_gym.sim.hook import LARGEST_SAFE
from kairos_gym.sim.simulator import request_columns

SMALL = load_scenario("small")


def track(sc: ScenarioConfig = SMALL, **info) -> ScenarioConfig:
    return sc.with_overrides({"information": {"track": "realistic", **info}})


def results(sim) -> bytes:
    """Every per-request record, the chunks and the counters of a run, as bytes."""
    parts = [np.asarray(getattr(sim, k)).tobytes() for k in request_columns()]
    parts.append(repr((sim.chunks, sim.wait_area, sim.tbt_violations, sim.tokens_out, sim.now, sim.n_invalid)).encode())
    return b"".join(parts)


def stable(summary: dict) -> dict:
    return {k: v for k, v in summary.items() if "wall" not in k and "per_s" not in k}


class Mixed:
    """Deflects every third request (LargestSafe) to the first node the context says can take it, else sends it
    to prefill node rid % P: a decision that reads the served view."""

    name = "mixed"

    def __init__(self) -> None:
        self.contexts: list = []

    def decide(self, ctx) -> Decision:
        self.contexts.append(ctx.materialize())
        rid = ctx.request.rid
        if rid % 3 == 0:
            for d, view in enumerate(ctx.decode):
                if view.can_deflect:
                    return Decision.deflect(d, LARGEST_SAFE)
        return Decision.prefill_path(rid % len(ctx.prefill))


def lockstep(real_sc: ScenarioConfig, seed: int = 0):
    """Run the realistic scenario and its exact twin with the same decisions (taken by :class:`Mixed` on the
    served view); returns both simulators, the served and exact contexts, refresh times and noise factors."""
    exact_sc = real_sc.with_overrides({"information": {"track": "exact"}})
    real, exact = Simulator(real_sc, seed=seed), Simulator(exact_sc, seed=seed)
    pol = Mixed()
    truth, refreshed, factors = [], [], []
    while True:
        ctx, ctx_x = real.next_decision(), exact.next_decision()
        if ctx is None:
            assert ctx_x is None
            break
        truth.append(ctx_x.materialize())
        refreshed.append(real.view_refreshed_at)
        factors.append(real.noise_factors())
        dec = pol.decide(ctx)
        assert real.apply(dec) == exact.apply(dec)  # admission is fresh on both
    return real, exact, pol.contexts, truth, refreshed, factors


# ---------------------------------------------------------------------------------------------- the config
def test_exact_is_the_default_and_the_section_round_trips():
    info = SMALL.information
    assert (info.track, info.staleness_s, info.model_error, info.realistic) == ("exact", 0.1, 0.10, False)
    sc = track(staleness_s=0.25, model_error=0.2)
    assert ScenarioConfig.from_dict(sc.to_dict()) == sc and sc.information.realistic


@pytest.mark.parametrize(("field", "value"), [("track", "fuzzy"), ("track", 1), ("staleness_s", -0.1),
                                              ("staleness_s", 3601.0), ("staleness_s", "0.1"), ("model_error", -0.01),
                                              ("model_error", 1.5), ("model_error", float("nan")), ("mape", 0.1)])
def test_bad_information_values_are_refused_naming_the_field(field, value):
    with pytest.raises(ConfigError) as e:
        ScenarioConfig.from_dict({"information": {field: value}})
    assert e.value.field == field and "information" in e.value.where



# ---------------------------------------------------------------------------------------------- bit identity
@pytest.mark.parametrize("policy", ["always-deflect-ls", "sq-ls", "random", "kairos"])
def test_realistic_with_zero_staleness_and_error_serves_the_exact_view(policy):
    """staleness_s 0 (a refresh at every decision) and model_error 0 (factors 1.0): every context, and so every
    result, is bit for bit the exact track's."""
    runs = []
    for sc in (SMALL, track(staleness_s=0.0, model_error=0.0)):
        sim = Simulator(sc, seed=1)
        seen: list = []
        pol = make_policy(policy, SMALL, seed=0)  # Kairos built for the exact track: no factor read
        inner = pol.decide
        pol.decide = lambda ctx, f=inner, s=seen: (s.append(ctx.materialize()), f(ctx))[1]  # type: ignore[method-assign]
        sim.run(pol)
        runs.append((results(sim), seen))
    assert runs[0][0] == runs[1][0]
    assert runs[0][1] == runs[1][1]


def test_realistic_track_is_deterministic_and_seeded_by_the_run_seed():
    sc = track(load_scenario("bursty").with_overrides({"workload": {"num_requests": 400}}))
    a, b, c = (Simulator(sc, seed=s) for s in (3, 3, 4))
    for sim in (a, b, c):
        sim.run(make_policy("kairos", sc, seed=0))
    assert results(a) == results(b)
    assert stable(a.summary()) == stable(b.summary())
    assert results(a) != results(c)
    # the same seed after a reset draws the same noise again
    a.reset(3)
    a.next_decision()
    b.reset(3)
    b.next_decision()
    assert a.noise_factors() == b.noise_factors() and len(a.noise_factors()) == 4


# ---------------------------------------------------------------------------------------------- the served view
def test_every_policy_sees_the_stale_view_between_refreshes_and_the_fresh_one_at_them():
    real, exact, served, truth, refreshed, _ = lockstep(track(staleness_s=0.1, model_error=0.0))
    assert results(real) == results(exact)  # the physics is the same
    n_fresh = n_stale = 0
    last_fresh = None  # index of the decision at which the view was last refreshed
    sent: list[list[int]] = []  # prompt tokens the dispatcher sent to each prefill node since that refresh
    for i, (ctx, ctx_x, t_ref) in enumerate(zip(served, truth, refreshed, strict=True)):
        now = ctx.now_s
        if t_ref == now and (last_fresh is None or now - served[last_fresh].now_s >= 0.1):
            # refreshed at this decision: the served context is the exact one
            assert ctx == ctx_x
            last_fresh, sent = i, [[] for _ in ctx.prefill]
            n_fresh += 1
        else:
            base = truth[last_fresh]
            assert now - base.now_s < 0.1 and t_ref == base.now_s
            # the copy at the refresh plus what the dispatcher sent since
            for p, view in enumerate(ctx.prefill):
                assert view.queued_tokens == base.prefill[p].queued_tokens + sum(sent[p])
                assert view.queued_requests == base.prefill[p].queued_requests + len(sent[p])
            for d, view in enumerate(ctx.decode):
                assert (view.batch_size, view.total_context) == (base.decode[d].batch_size,
                                                                 base.decode[d].total_context)
            n_stale += 1 if ctx != ctx_x else 0
        # what this decision sent down the prefill path (as Mixed decided, and the simulator applied)
        rid = ctx.request.rid
        if real.path[rid] == 0 and real.p_node[rid] >= 0:  # PATH_PREFILL
            sent[int(real.p_node[rid])].append(ctx.request.prompt_tokens)
    assert n_fresh > 10 and n_stale > 10


def test_noise_multiplies_every_prediction_of_a_node_with_the_requested_mape():
    sc = track(SMALL.with_overrides({"workload": {"num_requests": 1000}}), staleness_s=0.0, model_error=0.10)
    real, exact, served, truth, _, factors = lockstep(sc)
    assert results(real) == results(exact)  # noise never touches the physics
    n_p = len(served[0].prefill)
    errs = []
    for ctx, ctx_x, f in zip(served, truth, factors, strict=True):
        assert len(f) == n_p + len(ctx.decode) and min(f) >= 0.05
        for p in range(n_p):
            assert ctx.ttft_prefill_s[p] == pytest.approx(ctx_x.ttft_prefill_s[p] * f[p], rel=1e-12)
            assert ctx.prefill[p].predicted_wait_s == pytest.approx(ctx_x.prefill[p].predicted_wait_s * f[p],
                                                                    rel=1e-12)
            assert ctx.prefill[p].queued_tokens == ctx_x.prefill[p].queued_tokens  # state: exact (not stale here)
        for d, view in enumerate(ctx.decode):
            g = f[n_p + d]
            assert view.decode_step_s == pytest.approx(ctx_x.decode[d].decode_step_s * g, rel=1e-12)
            assert ctx.step_s[d] == pytest.approx([x * g for x in ctx_x.step_s[d]], rel=1e-12)
            assert ctx.ttft_deflect_s[d] == pytest.approx([x * g for x in ctx_x.ttft_deflect_s[d]], rel=1e-12)
            if ctx.largest_safe_feasible[d] and ctx_x.largest_safe_feasible[d] and \
                    ctx.largest_safe_first_chunk[d] == ctx_x.largest_safe_first_chunk[d] and g == 1.0:
                assert ctx.largest_safe_ttft_s[d] == ctx_x.largest_safe_ttft_s[d]
        errs.extend(x - 1.0 for x in f)
    errs_a = np.asarray(errs)
    assert errs_a.size >= 3000
    assert np.mean(np.abs(errs_a)) == pytest.approx(0.10, abs=0.01)  # E|e| = model_error
    assert np.mean(errs_a) == pytest.approx(0.0, abs=0.01)
    assert len(set(errs)) == errs_a.size  # one draw per node per decision


def test_kairos_applies_the_served_error_of_each_node():
    """Kairos on the realistic track reads each node's factor from the served predictions: it equals the
    simulator's draw (to rounding)."""
    sc = track(staleness_s=0.1, model_error=0.10)
    sim = Simulator(sc, seed=2)
    k = make_policy("kairos", sc, seed=0)
    n = 0
    while (ctx := sim.next_decision()) is not None:
        sim.apply(k.decide(ctx))
        assert k.last.factors == pytest.approx(sim.noise_factors(), rel=1e-9)
        n += 1
    assert n == sim.n


def test_realistic_track_does_not_change_no_deflect():
    """NoDeflect ignores every prediction: on the realistic track (stale, noisy) its run is bit for bit the exact
    track's (the served view never reaches the physics)."""
    for scen in ("small", "bursty"):
        base = load_scenario(scen).with_overrides({"workload": {"num_requests": 500}})
        runs = []
        for sc in (base, track(base)):
            sim = Simulator(sc, seed=0)
            s = stable(sim.run(make_policy("no-deflect", sc, seed=0)))
            runs.append((results(sim), {k: v for k, v in s.items() if k not in
                                        ("information_track", "n_view_refreshes", "n_stale_refusals")}))
        assert runs[0] == runs[1]


def test_a_deflection_the_stale_view_offers_but_the_node_refuses_is_counted():
    """KV memory binds (kv-pressure's memory, reserve policy) and the view is 0.5 s old: KV reservations made since
    the refresh fill a decode node while the served view still shows room, so deflections the served mask allows
    are refused at apply time: each falls back to the shortest prefill queue and counts in n_invalid_actions and
    n_stale_refusals (summary keys of the realistic track only)."""
    base = load_scenario("kv-pressure").with_overrides({"cluster": {"kv_reserve_frac": 0.6, "memory_policy": "reserve"},
                                                        "workload": {"num_requests": 600}})
    sc = track(base, staleness_s=0.5, model_error=0.0)
    sim = Simulator(sc, seed=0)
    s = sim.run(make_policy("always-deflect-ls", sc, seed=0))
    assert s["n_stale_refusals"] > 0 and s["n_stale_refusals"] == s["n_invalid_actions"] == sim.n_invalid
    assert s["information_track"] == "realistic" and s["n_view_refreshes"] > 1
    exact = Simulator(base, seed=0).run(make_policy("always-deflect-ls", base, seed=0))
    assert "n_stale_refusals" not in exact and exact["n_invalid_actions"] == 0  # a fresh mask is never refused


def test_snapshot_restore_and_pickling_keep_the_view_and_the_noise_stream():
    sc = track(staleness_s=0.1, model_error=0.1)
    sim = Simulator(sc, seed=5)
    k = make_policy("kairos", sc, seed=0)
    for _ in range(60):
        sim.apply(k.decide(sim.next_decision()))
    snap = sim.snapshot()
    clone = pickle.loads(pickle.dumps(sim))
    sim.run(k)
    end = results(sim)
    sim.restore(snap)
    sim.run(k)
    assert results(sim) == end
    clone.run(k)
    assert results(clone) == end


def test_env_observation_and_mask_encode_the_served_view():
    """The env's observation and mask are the served context's (the Python encoder of the served context gives
    the native observation bit for bit), not the truth's."""
    from kairos_gym.env import KairosEnv
    sc = track(staleness_s=0.2, model_error=0.1)
    env = KairosEnv(sc)
    twin = KairosEnv(SMALL)
    assert env._native is not None
    obs, info = env.reset(seed=4)
    twin.reset(seed=4)
    differs = 0
    rng = np.random.default_rng(0)
    for _ in range(150):
        ctx = env.decision_context
        ref = np.array(env.obs_layout.values(ctx), dtype=np.float32)
        assert obs.tobytes() == ref.tobytes()
        assert info["action_mask"].tolist() == env.action_layout.mask(ctx).tolist()
        differs += not np.array_equal(obs, np.array(twin.obs_layout.values(twin.decision_context),
                                                    dtype=np.float32))
        valid = np.flatnonzero(info["action_mask"])
        a = int(rng.choice(valid))
        obs, _, term, trunc, info = env.step(a)
        twin.step(a)
        if term or trunc:
            break
    assert differs > 50
    assert not math.isnan(env.sim.view_refreshed_at)


def test_env_on_the_realistic_track_is_deterministic_per_reset_seed():
    """Same reset seed and actions: the same observations and rewards, byte for byte (the noise stream is seeded
    from the run's generator at reset); another seed gives other noise."""
    from kairos_gym.env import KairosEnv
    sc = track(staleness_s=0.1, model_error=0.1)

    def episode(seed: int) -> bytes:
        env = KairosEnv(sc)
        obs, info = env.reset(seed=seed)
        out = [obs.tobytes()]
        for i in range(120):
            valid = np.flatnonzero(info["action_mask"])
            obs, r, term, trunc, info = env.step(int(valid[i % len(valid)]))
            out += [obs.tobytes(), repr(r).encode()]
            if term or trunc:
                break
        return b"".join(out)

    assert episode(7) == episode(7)
    assert episode(7) != episode(8)
