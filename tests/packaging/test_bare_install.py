"""``pip install kairos-gym`` without extras: the simulator, the env and the baselines work with torch,
Stable-Baselines3, sb3-contrib, TensorBoard, matplotlib and tabulate unimportable, and a command that needs an
extra says which one in one line (kairos_gym/extras.py).

Each test runs a fresh interpreter whose ``sys.meta_path`` starts with a finder that refuses those modules, as
an install without them would (tools/wheel_check.sh also installs the bare wheel into a fresh venv)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from kairos_gym.extras import EXTRAS

ROOT = Path(__file__).resolve().parents[2]
BLOCKED = ("torch", "stable_baselines3", "sb3_contrib", "tensorboard", "matplotlib", "tabulate")
BLOCKER = f"""
import sys

class _Refuse:
    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in {BLOCKED!r}:
            raise ImportError("blocked by the test: " + name)
        return None

sys.meta_path.insert(0, _Refuse())
"""
LOADED = f"print(json.dumps(sorted(m for m in sys.modules if m.partition('.')[0] in {BLOCKED!r})))\n"


def _run(code: str, tmp_path: Path, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    return subprocess.run([sys.executable, "-c", BLOCKER + code], cwd=tmp_path, env=env, capture_output=True,
                          text=True, timeout=timeout)


def test_the_blocked_modules_are_the_extras():
    assert set(BLOCKED) - {"tabulate"} == set(EXTRAS["train"]) | set(EXTRAS["plots"])


def test_every_id_makes_resets_and_steps_without_extras(tmp_path):
    out = _run("""
import json, sys
import gymnasium as gym
import kairos_gym

ids = sorted(k for k in gym.registry if k.startswith(("kairos_gym/", "kairos_train/")))
for env_id in ids:
    env = gym.make(env_id)
    obs, info = env.reset(seed=0)
    for _ in range(3):
        obs, r, term, trunc, info = env.step(env.action_space.sample(mask=info["action_mask"]))
    env.close()
vec = gym.make_vec("kairos_gym/KairosSmall-v0", num_envs=2)
vec.reset(seed=0)
vec.step(vec.action_space.sample())
print(json.dumps(ids))
""" + LOADED, tmp_path)
    assert out.returncode == 0, out.stderr
    ids, loaded = (json.loads(line) for line in out.stdout.splitlines()[-2:])
    assert "kairos_gym/Kairos-v0" in ids and "kairos_gym/KairosSmall-v0" in ids and len(ids) > 10
    assert loaded == []


def test_simulate_and_evaluate_with_rule_policies_and_the_shipped_agent(tmp_path):
    out = _run("""
import json, sys
from kairos_gym.cli.main import main

assert main(["simulate", "--scenario", "small", "--policy", "kairos", "--seed", "0", "--json", "sim.json"]) == 0
assert main(["evaluate", "--scenario", "small", "--policies", "no-deflect,sq,sl,kairos,ppo", "--seeds", "0",
             "--json", "eval.json"]) == 0
from kairos_gym.agents import make_policy, run_policy

s = run_policy(make_policy("sl", "small", seed=0), "small", seed=0)
assert s["n_completed"] > 0
""" + LOADED, tmp_path)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout.splitlines()[-1]) == []
    assert json.loads((tmp_path / "sim.json").read_text())["policy"] == "kairos"
    assert len(json.loads((tmp_path / "eval.json").read_text())["runs"]) == 5


@pytest.mark.parametrize(("argv", "extra"), [
    (["train", "--config", str(ROOT / "configs" / "ppo" / "smoke.yaml"), "--out", "run"], "train"),
    (["distill", "--config", str(ROOT / "configs" / "ppo" / "distill.yaml"), "--out", "run"], "train"),
    (["convert", "--trust-checkpoint", "model.zip", "dest"], "train"),
    (["evaluate", "--scenario", "small", "--policies", "kairos", "--seeds", "0", "--plots", "plots"], "plots"),
    (["sweep", "--scenario", "small", "--loads", "1", "--policies", "kairos", "--seeds", "0", "--sq-thresholds",
      "", "--sl-thresholds", "", "--chunks", "", "--plots", "plots"], "plots"),
])
def test_a_command_needing_a_missing_extra_says_which_in_one_line(tmp_path, argv, extra):
    out = _run(f"""
from kairos_gym.cli.main import main

raise SystemExit(main({argv!r}))
""", tmp_path)
    assert out.returncode == 2, out.stderr
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1, out.stderr
    assert lines[0].startswith(f"kairos-gym {argv[0]}: error: ") and f"needs the [{extra}] extra" in lines[0]
    assert f"pip install 'kairos-gym[{extra}]'" in lines[0]
    assert not (tmp_path / "run").exists() and not (tmp_path / "plots").exists()  # stopped before any work


def test_library_modules_needing_an_extra_say_which(tmp_path):
    out = _run("""
from kairos_gym.extras import MissingExtraError

try:
    import kairos_gym.env.sb3_vec
except MissingExtraError as e:
    print(e)
""", tmp_path)
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("kairos_gym.env.sb3_vec needs the [train] extra"), out.stdout


def test_demo_without_plots_writes_the_table_and_json(tmp_path):
    out = _run("""
from kairos_gym.cli.main import main

raise SystemExit(main(["demo", "--scenario", "small", "--seeds", "0", "--out", "demo", "--no-progress"]))
""", tmp_path)
    assert out.returncode == 0, out.stderr
    assert "no plots: they need the [plots] extra" in out.stdout
    assert (tmp_path / "demo" / "evaluate.json").is_file() and not list((tmp_path / "demo").glob("*.png"))
