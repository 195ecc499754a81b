"""PPOAgent: the safe checkpoint format by default (nothing unpickled), SB3 zips only with trust_checkpoint;
predicts on observations, decides through the env's encoders; malformed or malicious checkpoints refused."""

from __future__ import annotations

import base64
import json
import pickle
import sys
import zipfile
from contextlib import nullcontext

import numpy as np
import pytest
from kairos_gym.agents import PPOAgent, make_policy, run_policy
from kairos_gym.agents.checkpoint import NORMALIZE_JSON, POLICY_JSON, WEIGHTS_NPZ, load_policy

from kairos_gym.errors import ConfigError
from kairos_gym.sim.hook import Decision
from tests.agents.ctx_helpers import make_ctx
from tests.fixtures import silent_logger, tiny_scenario

pytest.importorskip("stable_baselines3")
pytest.importorskip("sb3_contrib")

TINY = tiny_scenario(40, rate=20, cv=None)


class _Payload:
    """Unpickling this creates ``path``: proof that a loader executed code stored in a file."""

    def __init__(self, path: str) -> None:
        self.path = path

    def __reduce__(self):
        return (open, (self.path, "w"))


def _malicious_checkpoint(folder, marker):
    """A folder shaped like an SB3 checkpoint whose model.zip (a cloudpickle ``:serialized:`` entry, as SB3
    writes them) and vecnormalize.pkl both run code when unpickled."""
    folder.mkdir(parents=True, exist_ok=True)
    blob = base64.b64encode(pickle.dumps(_Payload(str(marker)))).decode()
    data = {"policy_class": {":type:": "<class 'abc.ABCMeta'>", ":serialized:": blob},
            "observation_space": {":type:": "x", ":serialized:": blob}}
    with zipfile.ZipFile(folder / "model.zip", "w") as z:
        z.writestr("data", json.dumps(data))
    (folder / "vecnormalize.pkl").write_bytes(pickle.dumps(_Payload(str(marker))))
    return folder


def test_malicious_sb3_checkpoint_is_not_unpickled_without_trust(tmp_path):
    from kairos_gym.agents.sb3_checkpoint import convert_checkpoint, load_actor, load_model, load_obs_normalizer

    marker = tmp_path / "code-ran"
    ckpt = _malicious_checkpoint(tmp_path / "evil", marker)
    attempts = [
        lambda: PPOAgent(path=ckpt),
        lambda: PPOAgent(path=ckpt / "model.zip"),
        lambda: make_policy("ppo", TINY, path=str(ckpt / "model.zip")),
        lambda: load_actor(ckpt),
        lambda: load_model(ckpt),
        lambda: load_obs_normalizer(ckpt / "model.zip"),
        lambda: convert_checkpoint(ckpt, tmp_path / "out"),
        lambda: PPOAgent(path=ckpt, trust_checkpoint="yes"),  # only a real bool opts in
    ]
    for attempt in attempts:
        with pytest.raises(ConfigError) as e:
            attempt()
        assert "execute arbitrary code" in str(e.value) or e.value.field == "trust_checkpoint"
        assert not marker.exists()
    with pytest.raises(ConfigError, match="--trust-checkpoint"):
        PPOAgent(path=ckpt)
    # the payload is real: with the opt-in, the pickle runs (which is why it is opt-in)
    load_obs_normalizer(ckpt / "model.zip", trust_checkpoint=True).close()  # the "normalizer" is the opened file
    assert marker.exists()


def test_sb3_zip_with_trust_predicts_and_warns_without_statistics(tmp_path):
    from stable_baselines3 import PPO

    PPO("MlpPolicy", "CartPole-v1", n_steps=32, batch_size=16, seed=0).save(tmp_path / "m.zip")
    with pytest.raises(ConfigError, match="trust_checkpoint=True"):
        PPOAgent(path=tmp_path / "m.zip")
    with pytest.warns(UserWarning, match="raw observations"):  # no vecnormalize.pkl, no config to tell
        agent = PPOAgent(path=tmp_path / "m.zip", trust_checkpoint=True)
    assert not agent.maskable and type(agent.model).__name__ == "PPO"
    action, state = agent.predict(np.zeros(4, dtype=np.float32))
    assert int(action) in (0, 1) and state is None
    with pytest.raises(NotImplementedError, match="obs_builder"):
        agent.decide(make_ctx())
    # explicit adapters make decide() work; the path may omit .zip
    with pytest.warns(UserWarning):
        agent = PPOAgent(path=tmp_path / "m", obs_builder=lambda ctx: np.zeros(4, dtype=np.float32),
                         action_decoder=lambda ctx, a: Decision.prefill_path(), trust_checkpoint=True)
    assert agent.decide(make_ctx()) == Decision.prefill_path()
    with pytest.raises(ConfigError):
        PPOAgent(path=tmp_path / "m.zip", algo="dqn", trust_checkpoint=True)


def test_missing_statistics_of_a_normalised_run_are_an_error(tmp_path):
    """A run config that normalises observations + no vecnormalize.pkl: refused (it would see raw observations)."""
    from stable_baselines3 import PPO

    (tmp_path / "final").mkdir()
    PPO("MlpPolicy", "CartPole-v1", n_steps=32, batch_size=16, seed=0).save(tmp_path / "final" / "model.zip")
    (tmp_path / "config.yaml").write_text("CartPole-v1:\n  normalize: {norm_obs: true, norm_reward: false}\n")
    with pytest.raises(ConfigError, match=r"vecnormalize\.pkl"):
        PPOAgent(path=tmp_path / "final", trust_checkpoint=True)
    (tmp_path / "config.yaml").write_text("CartPole-v1:\n  normalize: false\n")
    agent = PPOAgent(path=tmp_path / "final", trust_checkpoint=True)  # trained without: fine, no warning
    assert agent.obs_normalizer is None


def test_maskable_ppo_through_the_env_encoders_and_its_safe_export(tmp_path):
    env_mod = pytest.importorskip("kairos_gym.env")
    from kairos_gym.train.checkpoints import save_safe
    from sb3_contrib import MaskablePPO

    env = env_mod.KairosEnv(TINY)
    model = MaskablePPO("MlpPolicy", env, n_steps=32, batch_size=16, seed=0)
    model.save(tmp_path / "mm.zip")
    with pytest.warns(UserWarning):
        agent = make_policy("ppo", TINY, path=str(tmp_path / "mm.zip"), trust_checkpoint=True)
    assert agent.maskable and agent.env_adapter_error is None
    # the agent's observation of a context is the env's observation of it
    obs, info = env.reset(seed=0)
    ctx = env.decision_context  # a property
    assert np.array_equal(agent.obs_builder(ctx), obs)
    assert np.array_equal(agent.mask_builder(ctx), info["action_mask"].astype(bool))
    s = run_policy(agent, TINY, seed=0)
    assert s["policy"] == "ppo" and s["n_completed"] + s["n_rejected"] == 40 and s["n_invalid_actions"] == 0
    # the safe export of the same model loads without trust and decides identically
    save_safe(model, None, tmp_path / "safe")
    assert sorted(p.name for p in (tmp_path / "safe").iterdir()) == [POLICY_JSON, WEIGHTS_NPZ]
    safe = make_policy("ppo", TINY, path=str(tmp_path / "safe"))
    assert safe.model is None and safe.maskable and safe.describe()["algo"] == "MaskablePPO"
    s2 = run_policy(safe, TINY, seed=0)
    assert {k: v for k, v in s2.items() if "us_" not in k and "wall" not in k and k != "policy_params"} == \
        {k: v for k, v in s.items() if "us_" not in k and "wall" not in k and k != "policy_params"}
    # a model trained on another scenario's shape is refused, in either format
    for path in (str(tmp_path / "safe"), str(tmp_path / "mm.zip")):
        with pytest.raises(ConfigError), pytest.warns(UserWarning) if path.endswith(".zip") else nullcontext():
            make_policy("ppo", {**TINY, "cluster": {"decode_nodes": 3}}, path=path, trust_checkpoint=True)
    with pytest.raises(ConfigError, match="algo"):
        make_policy("ppo", TINY, path=str(tmp_path / "safe"), algo="ppo")


def test_safe_agent_samples_when_not_deterministic(tmp_path):
    from kairos_gym.train.checkpoints import save_safe
    from stable_baselines3 import PPO

    save_safe(PPO("MlpPolicy", "CartPole-v1", n_steps=32, batch_size=16, seed=0), None, tmp_path / "s")
    draws = []
    for _ in range(2):
        agent = PPOAgent(path=tmp_path / "s", seed=3)
        draws.append([int(agent.predict(np.zeros(4, dtype=np.float32), deterministic=False)[0]) for _ in range(40)])
    assert draws[0] == draws[1] and set(draws[0]) == {0, 1}  # reproducible per seed, both actions drawn
    agent = PPOAgent(path=tmp_path / "s")
    assert not agent.maskable and agent.describe()["algo"] == "PPO"
    with pytest.raises(ConfigError, match="flat numpy observation"):
        agent.predict({"x": np.zeros(4)})


@pytest.fixture
def safe_ckpt(tmp_path):
    from kairos_gym.train.checkpoints import save_safe
    from stable_baselines3 import PPO
    from stable_baselines3.common.env_util import make_vec_env
    from stable_baselines3.common.vec_env import VecNormalize

    venv = VecNormalize(make_vec_env("CartPole-v1", n_envs=1, seed=0))
    model = PPO("MlpPolicy", venv, n_steps=32, batch_size=16, seed=0)
    model.set_logger(silent_logger())  # SB3 would make an empty SB3-<date> folder in /tmp
    model.learn(32)
    save_safe(model, venv, tmp_path / "ck")
    return tmp_path / "ck"


def _edit_json(path, **changes):
    data = json.loads(path.read_text())
    data.update(changes)
    path.write_text(json.dumps(data))


@pytest.mark.parametrize("edit, field", [
    (lambda d: _edit_json(d / POLICY_JSON, format="sb3"), "format"),
    (lambda d: _edit_json(d / POLICY_JSON, version=2), "version"),
    (lambda d: _edit_json(d / POLICY_JSON, hidden_sizes=[64, 65]), "policy.npz: layer1.weight"),
    (lambda d: _edit_json(d / POLICY_JSON, observation_size=10 ** 9), "observation_size"),
    (lambda d: _edit_json(d / POLICY_JSON, hidden_sizes=[8] * 17), "hidden_sizes"),
    (lambda d: _edit_json(d / POLICY_JSON, activation="__import__"), "activation"),
    (lambda d: _edit_json(d / POLICY_JSON, pickle="x"), "pickle"),
    (lambda d: (d / NORMALIZE_JSON).unlink(), "normalize.json"),
    (lambda d: _edit_json(d / NORMALIZE_JSON, obs_mean=[0.0]), "obs_mean"),
    (lambda d: (d / NORMALIZE_JSON).write_text('{"norm_obs": true, "obs_mean": [NaN]}'), "normalize.json"),
    (lambda d: _edit_json(d / NORMALIZE_JSON, epsilon=-1), "epsilon"),
    (lambda d: (d / WEIGHTS_NPZ).write_bytes(b"not a zip"), "policy.npz"),
])
def test_malformed_safe_checkpoints_are_refused(safe_ckpt, edit, field):
    assert load_policy(safe_ckpt).normalizer is not None
    edit(safe_ckpt)
    with pytest.raises(ConfigError) as e:
        load_policy(safe_ckpt)
    assert e.value.field == field


def test_npz_with_a_pickled_array_is_refused_unread(safe_ckpt, tmp_path):
    """An object array in policy.npz is a pickle: numpy refuses it (allow_pickle=False), nothing runs."""
    marker = tmp_path / "code-ran"
    with np.load(safe_ckpt / WEIGHTS_NPZ) as z:
        arrays = dict(z)
    arrays["action.bias"] = np.array([_Payload(str(marker))] * 2, dtype=object)
    np.savez(safe_ckpt / WEIGHTS_NPZ, **arrays)
    with pytest.raises(ConfigError) as e:
        load_policy(safe_ckpt)
    assert e.value.field.startswith("policy.npz") and not marker.exists()
    np.savez(safe_ckpt / WEIGHTS_NPZ, **{**arrays, "action.bias": np.zeros(2, np.float32), "extra": np.zeros(1)})
    with pytest.raises(ConfigError, match="exactly the arrays"):
        load_policy(safe_ckpt)
    np.savez(safe_ckpt / WEIGHTS_NPZ, **{**arrays, "action.bias": np.full(2, np.inf, np.float32)})
    with pytest.raises(ConfigError, match="finite"):
        load_policy(safe_ckpt)


def test_safe_inference_imports_no_sb3_and_unpickles_nothing(safe_ckpt):
    import subprocess

    code = ("import pickle, sys\n"
            "def refuse(*a, **k): raise AssertionError('unpickled')\n"
            "pickle.load = pickle.loads = refuse\n"
            "import numpy as np\n"
            "from kairos_gym.agents import PPOAgent\n"
            f"a = PPOAgent(path={str(safe_ckpt)!r})\n"
            "print(int(a.predict(np.zeros(4, dtype=np.float32))[0]) in (0, 1),"
            " any(m.split('.')[0] in ('stable_baselines3', 'sb3_contrib', 'cloudpickle') for m in sys.modules))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120)
    assert out.stdout.split() == ["True", "False"]
