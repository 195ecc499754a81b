"""KairosVectorEnv's env i matches a single KairosEnv seeded alike, bit for bit."""

from __future__ import annotations

import numpy as np
import pytest

from kairos_gym.env.core import KairosEnv
from kairos_gym.env.vector import KairosVectorEnv
from kairos_gym.env.vector_infos import unbatch_info
from kairos_gym.errors import ConfigError
from tests.fixtures import silent_logger

KW = {"scenario": "small", "max_decisions": 7, "slo": {"ttft_s": 0.7}}  # a TTFT SLO != 1 s: the reward divides by it


def _same(x: object) -> object:
    """``x`` with every nan (at any depth) as None: Gymnasium's vector layout stores a None among floats as nan."""
    if isinstance(x, dict):
        return {k: _same(v) for k, v in x.items()}
    if isinstance(x, list):
        return [_same(v) for v in x]
    return None if isinstance(x, float) and x != x else x


def _summary(infos: dict, i: int) -> object:
    """Env i's summary from a vector step's infos (Gymnasium's layout: a dict of arrays), comparable by ``_same``."""
    return _same(unbatch_info(infos["summary"], i))


def _pick(masks: np.ndarray, t: int) -> np.ndarray:
    """A deterministic valid action per row, varying with the step and the row."""
    out = np.zeros(masks.shape[0], dtype=np.int64)
    for i, m in enumerate(masks):
        valid = m.nonzero()[0]
        out[i] = valid[(t + 3 * i) % valid.size] if valid.size else 0
    return out


@pytest.mark.parametrize("n", [1, 2, 3, 5, 8])
@pytest.mark.parametrize("reward", ["ttft", "slo"])  # ttft: the vector env's fast path; slo: KairosEnv.step
def test_vector_env_matches_single_envs_bit_for_bit_next_step(n, reward):
    """obs/reward/mask bytes and the flags of every env over several episodes (NEXT_STEP autoreset)."""
    vec = KairosVectorEnv(n, reward=reward, **KW)
    singles = [KairosEnv(reward=reward, **KW) for _ in range(n)]
    vobs, vinfo = vec.reset(seed=11)
    sobs = []
    smask = []
    for i, env in enumerate(singles):
        o, info = env.reset(seed=11 + i)
        sobs.append(o)
        smask.append(info["action_mask"])
    assert vobs.tobytes() == np.stack(sobs).tobytes()
    assert vinfo["action_mask"].tobytes() == np.stack(smask).tobytes()
    done = [False] * n
    episodes = 0
    for t in range(40):
        acts = _pick(vec.action_masks(), t)
        vobs, vrew, vterm, vtrunc, vinfo = vec.step(acts)
        for i, env in enumerate(singles):
            if done[i]:
                o, info = env.reset()
                r, te, tr = 0.0, False, False
            else:
                o, r, te, tr, info = env.step(int(acts[i]))
            assert vobs[i].tobytes() == o.tobytes()
            assert np.float64(vrew[i]).tobytes() == np.float64(r).tobytes()
            assert (bool(vterm[i]), bool(vtrunc[i])) == (te, tr)
            assert vinfo["action_mask"][i].tobytes() == info["action_mask"].tobytes()
            if te or tr:
                episodes += 1
                assert vinfo["_summary"][i] and _summary(vinfo, i) == _same(info["summary"])
            done[i] = te or tr
    assert episodes >= 4 * n  # several episodes per env were compared


def test_same_step_autoreset_returns_the_new_episode_and_the_final_obs():
    """SAME_STEP: the ending step returns the next episode's first obs; final_obs is the single env's last obs."""
    vec = KairosVectorEnv(2, autoreset_mode="same_step", **KW)
    single = KairosEnv(**KW)
    vec.reset(seed=4)
    single.reset(seed=4)
    ended = False
    for t in range(7):
        acts = _pick(vec.action_masks(), t)
        vobs, vrew, vterm, vtrunc, vinfo = vec.step(acts)
        o, r, te, tr, _ = single.step(int(acts[0]))
        assert np.float64(vrew[0]).tobytes() == np.float64(r).tobytes()
        assert (bool(vterm[0]), bool(vtrunc[0])) == (te, tr)
        if te or tr:
            ended = True
            assert vinfo["_final_obs"][0] and vinfo["final_obs"][0].tobytes() == o.tobytes()
            assert vinfo["_final_info"][0] and _summary(vinfo["final_info"], 0) == _same(single.summary())
            o, _ = single.reset()
        assert vobs[0].tobytes() == o.tobytes()
    assert ended


@pytest.mark.parametrize("actions", [[0], [0, 0, 0], [0, 99], [-1, 0], [0.0, 1.0], "ab"])
def test_bad_actions_raise_before_any_env_moves(actions):
    """A batch with a wrong shape, type or an out-of-range index raises ConfigError; no env has moved."""
    vec = KairosVectorEnv(2, **KW)
    vec.reset(seed=0)
    before = [e._decisions for e in vec.envs]
    with pytest.raises(ConfigError, match="actions"):
        vec.step(actions)
    assert [e._decisions for e in vec.envs] == before


@pytest.mark.parametrize("kw", [{"num_envs": 0}, {"num_envs": True}, {"num_envs": 5000},
                                {"autoreset_mode": "disabled"}, {"obs_mode": "dict"}, {"max_episode_steps": 5}])
def test_bad_constructor_arguments_raise_config_error(kw):
    args = {"num_envs": 2, **kw}
    with pytest.raises(ConfigError):
        KairosVectorEnv(**args, scenario="small")


def test_make_vector_env_uses_the_ids_scenario():
    """make_vector_env builds from the spec's kwargs (KairosSmall-v0 -> scenario small), overrides win."""
    from kairos_gym.env.vector import make_vector_env

    vec = make_vector_env("kairos_gym/KairosSmall-v0", 3, max_decisions=5)
    assert vec.num_envs == 3 and vec.envs[0].scenario.name == KairosEnv("small").scenario.name
    assert vec.envs[2].max_decisions == 5
    assert vec.observation_space.shape == (3, vec.envs[0].obs_layout.size)
    with pytest.raises(ConfigError, match="env_id"):
        make_vector_env("CartPole-v1", 2)


def test_sb3_vec_env_same_step_matches_single_envs_and_reports_episodes():
    """KairosVecEnv: SB3 SAME_STEP conventions (terminal_observation, TimeLimit.truncated, episode r/l), env i
    equal to a single env seeded s + i and reset without a seed after each episode."""
    from kairos_gym.env.sb3_vec import KairosVecEnv

    n = 3
    venv = KairosVecEnv(n, **KW)
    venv.seed(21)
    obs = venv.reset()
    singles = [KairosEnv(**KW) for _ in range(n)]
    ret = [0.0] * n
    for i, env in enumerate(singles):
        assert obs[i].tobytes() == env.reset(seed=21 + i)[0].tobytes()
    assert venv.env_method("action_masks")[1].tobytes() == singles[1].action_masks().tobytes()
    episodes = 0
    for t in range(20):
        acts = _pick(np.stack(venv.env_method("action_masks")), t)
        obs, rewards, dones, infos = venv.step(acts)
        assert rewards.dtype == np.float32 and len(infos) == n
        for i, env in enumerate(singles):
            o, r, te, tr, step_info = env.step(int(acts[i]))
            ret[i] += r
            assert rewards[i] == np.float32(r) and bool(dones[i]) == (te or tr)
            if te or tr:
                episodes += 1
                assert infos[i]["terminal_observation"].tobytes() == o.tobytes()
                assert infos[i]["terminal_action_mask"].tobytes() == step_info["action_mask"].tobytes()
                assert infos[i]["TimeLimit.truncated"] == (tr and not te)
                assert infos[i]["episode"]["l"] == 7 and infos[i]["episode"]["r"] == round(ret[i], 6)  # as Monitor
                ret[i] = 0.0
                o, _ = env.reset()
            else:
                assert infos[i] == {}
            assert obs[i].tobytes() == o.tobytes()
    assert episodes == 2 * n


def test_maskable_ppo_learns_on_the_sb3_vec_env():
    """MaskablePPO (sb3-contrib) runs a few hundred steps on KairosVecEnv, masks from env_method."""
    sb3_contrib = pytest.importorskip("sb3_contrib")
    from kairos_gym.env.sb3_vec import KairosVecEnv

    venv = KairosVecEnv(4, **KW)
    model = sb3_contrib.MaskablePPO("MlpPolicy", venv, n_steps=64, batch_size=64, n_epochs=1, seed=0, device="cpu")
    model.set_logger(silent_logger())  # SB3 would make an empty SB3-<date> folder in /tmp
    model.learn(total_timesteps=512)
    assert model.num_timesteps >= 512
    assert len(model.ep_info_buffer) > 0 and model.ep_info_buffer[0]["l"] == 7


@pytest.mark.parametrize("num_envs", [0, True, 5000, 2.0])
def test_bench_vector_refuses_a_bad_num_envs_before_timing(num_envs):
    from kairos_gym.perf.env_throughput import bench_vector_vs_cartpole

    with pytest.raises(ConfigError, match="num_envs"):
        bench_vector_vs_cartpole("kairos_gym/KairosSmall-v0", num_envs, seconds=0.01, repeats=1)


def test_one_native_call_steps_all_envs_when_every_env_is_on_the_fast_path():
    """ttft reward: a _core.VecStepper steps the batch (the bit-identity tests above run through it); slo reward:
    the per-env KairosEnv.step loop. The native call refuses arrays of the wrong length."""
    assert KairosEnv(**KW)._native is not None
    assert KairosVectorEnv(2, **KW)._vs is not None
    assert KairosVectorEnv(2, reward="slo", **KW)._vs is None
    vec = KairosVectorEnv(2, **KW)
    vec.reset(seed=0)
    with pytest.raises(ValueError, match="one entry per env"):
        vec._vs.step(np.zeros(3, dtype=np.int64), np.ones(3, dtype=np.uint8))


@pytest.mark.parametrize("mode", ["next_step", "same_step"])
def test_refused_actions_are_counted_like_a_single_env(mode):
    """Masked-out actions (refused deflections) as well: the summaries' n_invalid_actions and decisions, the
    rewards and the flags equal single envs' (the batched path keeps these counters in arrays)."""
    n = 4
    vec = KairosVectorEnv(n, autoreset_mode=mode, **KW)
    singles = [KairosEnv(**KW) for _ in range(n)]
    vec.reset(seed=5)
    for i, env in enumerate(singles):
        env.reset(seed=5 + i)
    done = [False] * n
    n_invalid = 0
    A = vec.envs[0].action_layout.n
    for t in range(30):
        acts = np.array([(7 * t + i) % A for i in range(n)], dtype=np.int64)
        _, vrew, vterm, vtrunc, vinfo = vec.step(acts)
        for i, env in enumerate(singles):
            if done[i] and mode == "next_step":
                env.reset()
                done[i] = False
                continue
            _, r, te, tr, info = env.step(int(acts[i]))
            n_invalid += info["invalid_action"]
            assert np.float64(vrew[i]).tobytes() == np.float64(r).tobytes()
            assert (bool(vterm[i]), bool(vtrunc[i])) == (te, tr)
            if te or tr:
                got = _summary(vinfo if mode == "next_step" else vinfo["final_info"], i)
                assert got == _same(info["summary"])
                if mode == "same_step":
                    env.reset()
                else:  # the vector env's KairosEnv holds the episode's counters at its end
                    assert vec.envs[i]._n_invalid == info["n_invalid_actions"]
                    assert vec.envs[i]._decisions == info["decisions"]
                    done[i] = True
    assert n_invalid > 10


def test_shared_pricing_memos_leave_every_env_bit_identical_on_a_long_bursty_run():
    """VecStepper shares its envs' pricing memos (attention, menu terms): each env still matches a single env
    seeded alike, decision by decision, over enough bursty-scenario decisions that the memos are reused across
    envs (a memo returning another env's wrong value would show in the observations)."""
    n, kw = 3, {"scenario": "bursty", "workload": {"max_requests": 400}}
    vec = KairosVectorEnv(n, **kw)
    assert vec._vs is not None
    singles = [KairosEnv(**kw) for _ in range(n)]
    vobs, _ = vec.reset(seed=7)
    for i, env in enumerate(singles):
        assert vobs[i].tobytes() == env.reset(seed=7 + i)[0].tobytes()
    rng = np.random.default_rng(3)
    masks = np.stack([e.action_masks() for e in singles])
    for t in range(360):
        acts = np.array([rng.choice(np.flatnonzero(m)) for m in masks])
        vobs, vrew, vte, vtr, vinfo = vec.step(acts)
        for i, env in enumerate(singles):
            o, r, te, tr, info = env.step(int(acts[i]))
            assert vobs[i].tobytes() == o.tobytes() and vrew[i] == r and (vte[i], vtr[i]) == (te, tr), (t, i)
            masks[i] = info["action_mask"]
        assert vinfo["action_mask"].tobytes() == masks.tobytes()
        if vte.any():
            break


def test_run_vector_steps_is_a_fixed_amount_of_work():
    """bench --vector N --decisions D (what callgrind measures): exactly D vector steps, the same episodes twice."""
    from kairos_gym.perf.env_throughput import run_vector_steps

    a = run_vector_steps("kairos_gym/KairosSmall-v0", 3, 250)
    b = run_vector_steps("kairos_gym/KairosSmall-v0", 3, 250)
    assert a["steps"] == 250 and a["env_steps"] == 750 and a["episodes"] == b["episodes"] > 0
    with pytest.raises(ConfigError, match="num_envs"):
        run_vector_steps("kairos_gym/KairosSmall-v0", 0, 10)
    with pytest.raises(ConfigError, match="decisions"):
        run_vector_steps("kairos_gym/KairosSmall-v0", 2, -1)


def test_set_env_swaps_in_another_scenario_and_steps_it_as_a_single_env():
    """env 1 replaced mid-run by a reset KairosEnv of another SLO (and load): env 1 then steps bit for bit as that
    env alone (the batched ttft reward divides by env 1's own SLO), env 0 is untouched; one VecStepper throughout."""
    kw = {**KW, "reward": "ttft", "max_decisions": None}
    vec = KairosVectorEnv(2, **kw)
    ref0 = KairosEnv(**kw)
    vec.reset(seed=[3, 4])
    ref0.reset(seed=3)
    vs = vec._vs
    other = {**kw, "slo": {"ttft_s": 0.35, "tbt_s": 0.2}, "tbt_penalty": 0.25}
    new, twin = KairosEnv(**other), KairosEnv(**other)
    for e in (new, twin):
        e.reset(seed=21)
    for t in range(3):  # the new env arrives mid-episode: its counters carry on
        a = _pick(new.action_masks()[None], t)[0]
        new.step(int(a))
        twin.step(int(a))
    vec.set_env(1, new)
    assert vec._vs is vs and vec.envs[1] is new
    assert vec.action_masks()[1].tobytes() == twin.action_masks().tobytes()
    rewards = set()
    for t in range(60):
        acts = _pick(vec.action_masks(), t)
        vobs, vrew, vterm, vtrunc, _ = vec.step(acts)
        o0, r0, te0, _, _ = ref0.step(int(acts[0]))
        assert vobs[0].tobytes() == o0.tobytes() and vrew[0] == r0 and vterm[0] == te0
        o1, r1, te1, tr1, _ = twin.step(int(acts[1]))
        assert vobs[1].tobytes() == o1.tobytes(), t
        assert np.float64(vrew[1]).tobytes() == np.float64(r1).tobytes() and (vterm[1], vtrunc[1]) == (te1, tr1)
        rewards.add(r1)
        if te0 or te1:
            break
    assert len(rewards) > 1 and vec._dec[1] == twin._decisions  # (batched counters reach the env at its end)


@pytest.mark.parametrize(("i", "env_kw", "reset"), [
    (2, {}, True), (-1, {}, True), (True, {}, True), (0, {}, False),
    (0, {"reward": "slo"}, True), (0, {"max_decisions": 3}, True), (0, {"oracle": True}, True),
    (0, {"deflection": {"chunk_menu": [256, 512]}}, True)])
def test_set_env_refuses_an_env_that_does_not_fit(i, env_kw, reset):
    vec = KairosVectorEnv(2, **KW)
    vec.reset(seed=0)
    before = vec.envs[:]
    env = KairosEnv(**{**KW, **env_kw})
    if reset:
        env.reset(seed=1)
    with pytest.raises(ConfigError):
        vec.set_env(i, env)
    with pytest.raises(ConfigError):
        vec.set_env(0, "an env")
    assert vec.envs == before
