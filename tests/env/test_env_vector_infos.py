"""``gym.make_vec``'s KairosVectorEnv returns infos in Gymnasium's vector layout with the keys, dtypes and values of
``gymnasium.vector.SyncVectorEnv`` over ``gym.make`` envs of the same id, seeds and actions: side by side, on the
batched native path and on the per-env path, in both autoreset modes, with pulls and re-entries, and through
masked-out actions, truncations and terminations."""

from __future__ import annotations

import math
import warnings

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.vector import AutoresetMode

from kairos_gym.env import KairosEnv
from kairos_gym.env.vector import KairosVectorEnv
from kairos_gym.env.vector_infos import add_info, unbatch_info
from kairos_gym.scenario import ScenarioConfig
from tests.fixtures import LENGTHS, tiny_scenario

from .common import TINY

ID = "kairos_gym/Kairos-v0"
MODES = {"next_step": AutoresetMode.NEXT_STEP, "same_step": AutoresetMode.SAME_STEP}
PULL = ScenarioConfig.from_dict({**tiny_scenario(120, name="pull-t", lengths=LENGTHS),
                                 "deflection": {"decision_points": "arrival+pull"}})


def assert_same(got: object, want: object, where: str = "infos") -> None:
    """The same keys, array dtypes and shapes, and values bit for bit (object arrays element by element)."""
    if isinstance(want, dict):
        assert isinstance(got, dict), where
        assert sorted(got) == sorted(want), f"{where}: keys differ: {sorted(set(got) ^ set(want))}"
        for k in want:
            assert_same(got[k], want[k], f"{where}[{k!r}]")
    elif isinstance(want, np.ndarray):
        assert isinstance(got, np.ndarray), where
        assert (got.dtype, got.shape) == (want.dtype, want.shape), f"{where}: {got.dtype}{got.shape} != " \
                                                                   f"{want.dtype}{want.shape}"
        if want.dtype == object:
            for j, (g, w) in enumerate(zip(got, want, strict=True)):
                assert_same(g, w, f"{where}[{j}]")
        else:
            assert got.tobytes() == want.tobytes(), f"{where}: {got} != {want}"
    elif isinstance(want, float) and math.isnan(want):
        assert isinstance(got, float) and math.isnan(got), where
    else:
        assert type(got) is type(want) and got == want, f"{where}: {got!r} != {want!r}"


def side_by_side(n: int, mode: str, steps: int, seed: int = 3, unmasked: float = 0.15, **kwargs):
    """Step a KairosVectorEnv from gym.make_vec and a SyncVectorEnv alike; compare everything at every step.
    Returns the KairosVectorEnv and the number of episode ends seen."""
    vec = gym.make_vec(ID, num_envs=n, vectorization_mode="vector_entry_point", autoreset_mode=mode, **kwargs)
    sync = gym.make_vec(ID, num_envs=n, vectorization_mode="sync", vector_kwargs={"autoreset_mode": MODES[mode]},
                        **kwargs)
    assert type(vec.unwrapped) is KairosVectorEnv
    rng = np.random.default_rng(seed)
    ends = 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the masked-out actions' warning; gym.make's checker
        (vobs, vinfo), (sobs, sinfo) = vec.reset(seed=seed), sync.reset(seed=seed)
        assert vobs.tobytes() == sobs.tobytes()
        assert_same(vinfo, sinfo, "reset infos")
        for t in range(steps):
            masks = sinfo["action_mask"]
            acts = np.array([rng.integers(m.size) if rng.random() < unmasked else rng.choice(np.flatnonzero(m))
                             for m in masks], dtype=np.int64)
            vout, sout = vec.step(acts), sync.step(acts)
            for name, g, w in zip(("obs", "rewards", "terminated", "truncated"), vout[:4], sout[:4], strict=True):
                assert np.asarray(g).tobytes() == np.asarray(w).tobytes(), (t, name)
            vinfo, sinfo = vout[4], sout[4]
            assert_same(vinfo, sinfo, f"step {t} infos")
            ends += int(np.count_nonzero(vout[2] | vout[3]))
    return vec.unwrapped, ends


@pytest.mark.parametrize("mode", ["next_step", "same_step"])
@pytest.mark.parametrize("reward", ["ttft", "slo"])  # ttft: the batched native path; slo: env by env
def test_infos_equal_sync_vector_envs(mode, reward):
    vec, ends = side_by_side(3, mode, 60, scenario=TINY, reward=reward, max_decisions=9)
    assert (vec._vs is not None) == (reward == "ttft") and ends >= 9


@pytest.mark.parametrize("mode", ["next_step", "same_step"])
def test_infos_equal_sync_vector_envs_through_terminations(mode):
    """Whole episodes (terminated, full-run summaries) of a 40-request workload, envs ending at different steps."""
    side_by_side(2, mode, 130, scenario=TINY, workload={"max_requests": 40})


def test_pull_and_reentry_keys_equal_sync_vector_envs():
    side_by_side(2, "next_step", 40, scenario=PULL, max_decisions=15)
    side_by_side(2, "same_step", 40, scenario="bursty-prefill-failure", workload={"max_requests": 60},
                 max_decisions=20)


def test_every_step_key_of_the_single_env_is_batched():
    """A step's infos hold every key of KairosEnv.step's info, and env i's unbatched info equals a single env's."""
    vec = KairosVectorEnv(2, scenario=TINY)
    singles = [KairosEnv(TINY) for _ in range(2)]
    vec.reset(seed=0)
    for i, env in enumerate(singles):
        env.reset(seed=i)
    acts = np.array([1, 0])
    _, _, _, _, infos = vec.step(acts)
    for i, env in enumerate(singles):
        _, _, _, _, info = env.step(int(acts[i]))
        assert_same(unbatch_info(infos, i), info)


@pytest.mark.parametrize("mode", ["next_step", "same_step"])
def test_lean_infos_opt_out(mode):
    """step_infos=False, summaries=False: only the mask (and SAME_STEP's final_obs / final_info)."""
    vec = KairosVectorEnv(2, autoreset_mode=mode, step_infos=False, summaries=False, scenario=TINY, max_decisions=3)
    _, info = vec.reset(seed=0)
    assert {"sim_seed", "n_requests", "action_mask"} <= set(info)  # reset() still returns the reset keys
    seen = set()
    for _ in range(8):
        _, _, _, _, info = vec.step(np.zeros(2, dtype=np.int64))
        seen |= set(info)
    extra = {"final_obs", "_final_obs", "final_info", "_final_info"} if mode == "same_step" else set()
    assert seen == {"action_mask", "_action_mask"} | extra
    with pytest.raises(AttributeError):
        vec.step_infos = True  # fixed at construction


def test_add_info_matches_gymnasium_and_keeps_what_gymnasium_cannot():
    """The same layout and conversions as VectorEnv._add_info (None in a float array: nan); a value numpy cannot
    store in its key's array (None in an int array, a str in a float one) makes an object array where Gymnasium's
    fails."""
    sync = gym.vector.SyncVectorEnv([lambda: gym.make("CartPole-v1")] * 3)
    a = {"x": 1.5, "n": 2, "ok": True, "m": np.arange(3, dtype=np.int8), "s": {"p": 0.5, "q": None}, "name": "a"}
    b = {"x": None, "n": 3, "s": {"p": 1.5, "q": [1]}}
    theirs = sync._add_info(sync._add_info({}, a, 0), b, 2)
    ours = add_info(3, add_info(3, {}, a, 0), b, 2)
    assert_same(ours, theirs)
    assert unbatch_info(ours, 1) == {}
    assert_same(unbatch_info(ours, 2), {"x": math.nan, "n": 3, "s": {"p": 1.5, "q": [1]}})
    mixed = add_info(3, add_info(3, add_info(3, {}, {"n": 1, "p": 0.5}, 0), {"n": None, "p": "x"}, 1), {"n": 4}, 2)
    assert mixed["n"].dtype == object and list(mixed["n"]) == [1, None, 4] and list(mixed["_n"]) == [1, 1, 1]
    assert mixed["p"].dtype == object and list(mixed["p"]) == [0.5, "x", 0.0]  # env 2 has none: 0 as before
    with pytest.raises(TypeError):
        sync._add_info(sync._add_info({}, {"n": 1}, 0), {"n": None}, 1)
