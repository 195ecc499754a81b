"""Episode semantics: determinism, snapshots, rewards, masks, windows, validation, rendering."""

from __future__ import annotations

import contextlib
import math
import re
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest

from kairos_gym.env import KairosEnv
from kairos_gym.env.observation import ObservationLayout
from kairos_gym.errors import ConfigError
from kairos_gym.sim.hook import LARGEST_SAFE

from .common import TINY, assert_same, random_actions, rollout


def test_same_seed_same_actions_identical_trajectories():
    a = rollout(KairosEnv(TINY, reward="slo"), seed=11, policy_seed=3)
    b = rollout(KairosEnv(TINY, reward="slo"), seed=11, actions=a[3])
    assert_same(a, b)
    assert a[2][-1]["summary"]["n_requests"] == 120
    # a different seed regenerates a different workload
    c = rollout(KairosEnv(TINY), seed=12, actions=a[3])
    assert not np.array_equal(a[0][0], c[0][0]) or len(a[1]) != len(c[1])


def test_unseeded_resets_follow_the_first_seed():
    e1, e2 = KairosEnv(TINY), KairosEnv(TINY)
    e1.reset(seed=7)
    e2.reset(seed=7)
    seeds = []
    for env in (e1, e2):
        _, info = env.reset()
        seeds.append(info["sim_seed"])
    assert seeds[0] == seeds[1]


def test_snapshot_restore_reproduces_the_trajectory():
    env = KairosEnv(TINY, reward="goodput")
    obs, info = env.reset(seed=4)
    act = random_actions(1)
    for _ in range(25):
        obs, *_, info = env.step(act(info["action_mask"]))
    snap = env.snapshot()
    obs0, mask0 = obs, info["action_mask"]
    actions = []
    first = []
    mask = mask0
    while True:
        a = act(mask)
        actions.append(a)
        step = env.step(a)
        first.append(step)
        mask = step[4]["action_mask"]
        if step[2] or step[3]:
            break
    for _ in range(2):  # the snapshot stays reusable
        obs_r, info_r = env.restore(snap)
        assert_same(obs_r, obs0)
        assert_same(info_r["action_mask"], mask0)
        again = [env.step(a) for a in actions]
        assert_same(first, again)


def test_snapshot_restore_after_reset_and_in_window_mode():
    env = KairosEnv(TINY, episode_window=50)
    env.reset(seed=1)
    for _ in range(10):
        env.step(0)
    snap = env.snapshot()
    tail = [env.step(0) for _ in range(10)]
    env.reset(seed=99)  # another workload window
    env.restore(snap)
    assert_same(tail, [env.step(0) for _ in range(10)])


def _ttft_episode(lam: float = 0.05):
    env = KairosEnv(TINY, reward="ttft", tbt_penalty=lam, slo={"tbt_s": 0.03})  # a strict TBT SLO to get violations
    _, rewards, infos, _ = rollout(env, seed=3, policy_seed=2)
    return env, rewards, infos


def test_ttft_return_is_minus_wait_area_minus_lambda_violations():
    lam = 0.05
    env, rewards, infos = _ttft_episode(lam)
    sim = env.sim
    assert infos[-1]["summary"]["n_completed"] + sim.n_rejected == sim.n and sim.waiting == 0
    assert sim.tbt_violations > 0
    expected = -sim.wait_area / env.scenario.slo.ttft_s - lam * sim.tbt_violations
    assert math.isclose(sum(rewards), expected, rel_tol=1e-9, abs_tol=1e-6)
    assert sum(i["tbt_violations"] for i in infos[1:]) == sim.tbt_violations
    assert math.isclose(sum(i["ttft_area_s"] for i in infos[1:]), sim.wait_area, rel_tol=1e-9)


def test_ttft_return_is_minus_total_ttft():
    env, rewards, _ = _ttft_episode(0.0)
    ttft = np.nansum(env.sim.requests_table()["ttft_s"])
    assert math.isclose(sum(rewards), -ttft / env.scenario.slo.ttft_s, rel_tol=1e-9)


def test_slo_and_goodput_returns_match_the_summary():
    for kind in ("slo", "goodput"):
        env = KairosEnv(TINY, reward=kind, slo={"ttft_s": 0.5, "tbt_s": 0.04})
        _, rewards, infos, _ = rollout(env, seed=8, policy_seed=4)
        s = infos[-1]["summary"]
        t = env.sim.requests_table()
        ok = (t["ttft_s"] <= 0.5) & (t["max_tbt_s"] <= 0.04) & ~np.isnan(t["finish_s"])
        assert 0 < ok.sum() < env.sim.n
        if kind == "slo":
            assert sum(rewards) == ok.sum() == round(s["slo_attainment"] * s["n_requests"])
            assert sum(i["slo_met"] + i["slo_missed"] for i in infos[1:]) == s["n_completed"]
        else:
            assert math.isclose(sum(rewards), t["output_tokens"][ok].sum() / 1000.0, rel_tol=1e-12)


def test_truncation_at_max_decisions():
    env = KairosEnv(TINY, max_decisions=7)
    _, rewards, infos, _ = rollout(env, seed=0)
    assert len(rewards) == 7 and "summary" in infos[-1] and infos[-1]["decisions"] == 7
    assert infos[-1]["summary"]["n_completed"] < env.sim.n  # cut short: the run was not drained
    assert env.decision_context is not None


def test_termination_and_step_after_end():
    env = KairosEnv(TINY, workload={"num_requests": 15})
    obs, rewards, infos, _ = rollout(env, seed=0)
    assert len(rewards) == 15 - env.sim.n_rejected
    assert np.all(obs[-1] == 0) and infos[-1]["action_mask"].tolist() == [1] + [0] * (env.action_space.n - 1)
    assert env.sim.n_finished + env.sim.n_rejected == 15 and env.sim.done
    with pytest.raises(RuntimeError, match="reset"):
        env.step(0)


def test_episode_window():
    env = KairosEnv(TINY, episode_window=30)
    _, info = env.reset(seed=5)
    wl = env.sim.workload
    assert info["n_requests"] == 30 and len(wl) == 30 and wl.arrival_s[0] == 0.0 and "requests[" in wl.source
    starts = set()
    for s in range(6):
        env.reset(seed=5 + s)
        starts.add(env.sim.workload.source)
    assert len(starts) > 1
    # deterministic: same seed, same window
    env2 = KairosEnv(TINY, episode_window=30)
    env2.reset(seed=5)
    env.reset(seed=5)
    assert env.sim.workload.source == env2.sim.workload.source
    assert KairosEnv(TINY, episode_window=120).reset(seed=0)[1]["n_requests"] == 120  # the whole workload


def test_action_layout_and_largest_safe_actions():
    env = KairosEnv(TINY, deflection={"chunk_menu": [256, 1024], "largest_safe_action": True})
    lay = env.action_layout
    assert env.action_space.n == 1 + 2 * 3
    assert [(d.path, d.decode_node, d.chunk) for d in lay.decisions] == [
        ("prefill", None, LARGEST_SAFE), ("deflect", 0, 256), ("deflect", 0, 1024), ("deflect", 0, LARGEST_SAFE),
        ("deflect", 1, 256), ("deflect", 1, 1024), ("deflect", 1, LARGEST_SAFE)]
    assert KairosEnv(TINY).action_space.n == 11


def test_mask_is_exactly_the_set_of_valid_actions():
    """At many decisions, try every action from a snapshot: invalid <=> masked out."""
    env = KairosEnv(TINY, deflection={"largest_safe_action": True}, workload={"num_requests": 60})
    _, info = env.reset(seed=2)
    act = random_actions(5)
    checked_masked = 0
    while True:
        mask = info["action_mask"]
        assert np.array_equal(mask, env.action_masks()) and mask.dtype == np.int8 and mask[0] == 1
        snap = env.snapshot()
        for a in range(env.action_space.n):
            env.restore(snap)
            n_inv = env.sim.n_invalid
            _, _, _, _, inf = env.step(a)
            assert inf["invalid_action"] == (mask[a] == 0)
            assert env.sim.n_invalid == n_inv + (mask[a] == 0)
            assert inf["deflected"] == (a != 0 and mask[a] == 1)
            checked_masked += int(mask[a] == 0)
        env.restore(snap)
        _, _, term, trunc, info = env.step(act(mask))
        if term or trunc:
            break
    assert checked_masked > 0


def test_invalid_action_falls_back_and_is_counted():
    env = KairosEnv(TINY)
    env.reset(seed=0)
    _, _, _, _, info = env.step(1)  # deflect to d0: now in flight there
    assert info["deflected"] and info["action_mask"][1] == 0
    _, _, _, _, info = env.step(1)  # d0 busy: invalid
    assert info["invalid_action"] and info["n_invalid_actions"] == 1 and not info["deflected"]
    assert env.sim.path[info["rid"]] == 0  # PATH_PREFILL


@pytest.mark.parametrize("kwargs, field", [
    ({"reward": "latency"}, "reward"),
    ({"tbt_penalty": -1}, "tbt_penalty"),
    ({"tbt_penalty": float("nan")}, "tbt_penalty"),
    ({"obs_mode": "graph"}, "obs_mode"),
    ({"oracle": 1}, "oracle"),
    ({"max_decisions": 0}, "max_decisions"),
    ({"max_decisions": 2.5}, "max_decisions"),
    ({"episode_window": -3}, "episode_window"),
    ({"render_mode": "pygame"}, "render_mode"),
    ({"max_decision": 5}, "max_decision"),
    ({"slo": {"tbt_s": -1}}, "tbt_s"),
    ({"deflection": {"chunk_menu": [100]}}, "chunk_menu"),
    ({"scenario": "no-such-scenario"}, "scenario"),
])
def test_bad_kwargs_raise_config_error(kwargs, field):
    kwargs = {"scenario": TINY, **kwargs}
    with pytest.raises(ConfigError) as e:
        KairosEnv(**kwargs)
    assert e.value.field == field
    # gym.make warns of a render mode the metadata does not declare, then the env refuses it
    warns = (pytest.warns(UserWarning, match="render_mode") if field == "render_mode" else contextlib.nullcontext())
    with pytest.raises(ConfigError), warns:
        gym.make("kairos_gym/Kairos-v0", **kwargs)


def test_bad_actions_and_reset_args():
    env = KairosEnv(TINY)
    env.reset(seed=0)
    for bad in (-1, 11, 2.5, 1.0, "1", None, True, np.array([1, 2]), np.array([0.0])):
        with pytest.raises(ConfigError) as e:
            env.step(bad)
        assert e.value.field == "action"
    env.step(np.int64(3))
    env.step(np.array(0))
    env.step(np.array([2], dtype=np.int32))
    with pytest.raises(ConfigError):
        env.reset(seed=-1)
    with pytest.raises(ConfigError):
        env.reset(options={"x": 1})
    with pytest.raises(ConfigError):
        env.restore({"not": "a snapshot"})


def test_observation_matches_the_feature_table():
    """The fast encoder equals the table's reference transforms applied to the context's raw values."""
    env = KairosEnv(TINY, oracle=True, deflection={"chunk_menu": [128, 512, 2048]})
    lay: ObservationLayout = env.obs_layout
    obs, info = env.reset(seed=1)
    act = random_actions(0)
    for _ in range(60):
        ctx = env.decision_context
        raw = {"ttft_slo": ctx.ttft_slo_s, "tbt_slo": ctx.tbt_slo_s, "prompt_tokens": ctx.request.prompt_tokens,
               "output_tokens": ctx.request.output_tokens}
        for p, (v, t) in enumerate(zip(ctx.prefill, ctx.ttft_prefill_s, strict=True)):
            raw.update({f"p{p}_queued_tokens": v.queued_tokens, f"p{p}_queued_requests": v.queued_requests,
                        f"p{p}_predicted_wait": v.predicted_wait_s, f"p{p}_utilization": v.utilization,
                        f"p{p}_ttft": t})
        for d, v in enumerate(ctx.decode):
            ok = ctx.largest_safe_feasible[d]
            raw.update({f"d{d}_batch_size": v.batch_size, f"d{d}_total_context": v.total_context,
                        f"d{d}_pending_admissions": v.pending_admissions, f"d{d}_free_kv_fraction": v.free_kv_fraction,
                        f"d{d}_deflection_in_flight": v.deflection_in_flight,
                        f"d{d}_deflection_remaining": v.deflection_remaining_tokens,
                        f"d{d}_utilization": v.utilization, f"d{d}_tbt_slack": v.decode_step_s,
                        f"d{d}_can_deflect": v.can_deflect, f"d{d}_ls_feasible": ok,
                        f"d{d}_ls_ttft": ctx.largest_safe_ttft_s[d] if ok else math.inf,
                        f"d{d}_ls_first_chunk": ctx.largest_safe_first_chunk[d] if ok else 0})
            for i, c in enumerate(ctx.chunk_menu):
                raw[f"d{d}_c{c}_step"] = ctx.step_s[d][i]
                raw[f"d{d}_c{c}_ttft"] = ctx.ttft_deflect_s[d][i]
        assert set(raw) == set(lay.names)
        np.testing.assert_allclose(obs, lay.reference(raw), rtol=2e-6, atol=1e-7)
        obs, _, term, trunc, info = env.step(act(info["action_mask"]))
        if term or trunc:
            break


def test_oracle_flag_controls_output_length():
    plain, oracle = KairosEnv(TINY), KairosEnv(TINY, oracle=True)
    assert "output_tokens" not in plain.feature_names() and "output_tokens" in oracle.feature_names()
    assert oracle.observation_space.shape[0] == plain.observation_space.shape[0] + 1
    plain.reset(seed=0)
    oracle.reset(seed=0)
    assert plain.decision_context.request.output_tokens is None
    assert oracle.decision_context.request.output_tokens is not None


def test_dict_observation_is_the_flat_one_regrouped():
    flat, dct = KairosEnv(TINY), KairosEnv(TINY, obs_mode="dict")
    o1, _ = flat.reset(seed=3)
    o2, _ = dct.reset(seed=3)
    assert dct.observation_space.contains(o2)
    assert list(o2) == ["global", "request", "prefill", "decode", "deflect_step", "deflect_ttft"]
    assert np.array_equal(np.concatenate([v.ravel() for v in o2.values()]), o1)
    assert o2["prefill"].shape == (2, 5) and o2["decode"].shape == (2, 12) and o2["deflect_ttft"].shape == (2, 5)


def test_render_modes():
    env = KairosEnv(TINY, render_mode="ansi")
    env.reset(seed=0)
    env.step(1)
    text = env.render()
    assert isinstance(text, str) and "PREFILL" in text and "DECODE" in text and "deflect d0" in text
    env = KairosEnv(TINY, render_mode="rgb_array")
    rollout(env, seed=0, max_steps=60)
    img = env.render()
    assert img.dtype == np.uint8 and img.ndim == 3 and img.shape[2] == 3
    # prefill blue, decode grey and some deflected-chunk colour (red channel 235) are all drawn
    assert (img == [60, 110, 200]).all(axis=2).any() or (img == [95, 145, 225]).all(axis=2).any()
    assert (img[..., 0] == 235).any()
    assert KairosEnv(TINY).render() is None


def test_human_render_mode_prints_the_text_frame_at_every_reset_and_step(capsys):
    """As Gymnasium's text envs: ``human`` renders by itself, to stdout, and ``render()`` returns None."""
    env = gym.make("kairos_gym/Kairos-v0", scenario=TINY, render_mode="human")
    assert "human" in env.metadata["render_modes"] and type(env.unwrapped) is KairosEnv  # no HumanRendering
    ansi = KairosEnv(TINY, render_mode="ansi")
    env.reset(seed=0)
    ansi.reset(seed=0)
    assert capsys.readouterr().out == ansi.render() + "\n"
    env.step(1)
    ansi.step(1)
    out = capsys.readouterr().out
    assert out == ansi.render() + "\n" and "last: deflect d0" in out
    assert env.render() is None and capsys.readouterr().out == out


def test_docs_list_every_feature_and_info_key():
    doc = (Path(__file__).resolve().parents[2] / "docs" / "env.md").read_text(encoding="utf-8")
    env = KairosEnv(TINY, oracle=True, reward="slo")
    for name in env.feature_names():
        pattern = re.sub(r"^p\d+_", "p{p}_", name)
        pattern = re.sub(r"^d\d+_c\d+_", "d{d}_c{c}_", pattern)
        pattern = re.sub(r"^d\d+_", "d{d}_", pattern)
        assert f"`{pattern}`" in doc, pattern
    _, _, infos, _ = rollout(env, seed=0, max_steps=500)
    for info in infos:
        for key in info:
            assert f"`{key}`" in doc, key
