"""The installed package has one top-level name, registers its ids on import, and finds its data anywhere."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _run_outside_checkout(code: str, tmp_path: Path) -> str:
    """Run ``code`` in a fresh interpreter whose cwd and sys.path hold no part of the checkout."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    out = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    return out.stdout


def test_import_kairos_gym_registers_ids_without_loading_the_simulator(tmp_path):
    out = _run_outside_checkout(
        "import json, sys, kairos_gym, gymnasium as gym\n"
        "ids = sorted(k for k in gym.registry if k.startswith('kairos_gym/'))\n"
        "mods = sorted(m for m in sys.modules if m.startswith('kairos_gym'))\n"
        "print(json.dumps({'ids': ids, 'mods': mods}))\n", tmp_path)
    got = json.loads(out)
    assert "kairos_gym/Kairos-v0" in got["ids"] and "kairos_gym/KairosSmall-v0" in got["ids"]
    shipped = sorted(p.stem for p in (ROOT / "configs" / "scenarios").glob("*.yaml"))
    from kairos_gym.env.registration import env_compatible, scenario_env_id

    for name in shipped:  # but streaming-metrics scenarios (soak-24h: the env reads per-request records)
        assert (scenario_env_id(name) in got["ids"]) == env_compatible(name)
    assert len(got["ids"]) == sum(map(env_compatible, shipped))  # one id per scenario
    heavy = [m for m in got["mods"] if m.startswith(("kairos_gym.sim", "kairos_gym.env.core", "kairos_gym.scenario"))
             and m != "kairos_gym.configs"]
    assert heavy == [], f"import kairos_gym loaded {heavy}"


def test_registration_waits_for_gymnasium_and_works_in_either_order(tmp_path):
    """``import kairos_gym`` alone imports no gymnasium; the ids are there whichever of the two comes first, and
    whichever gymnasium module is imported first (kairos_gym/post_import.py)."""
    count = "print(sum(k.startswith('kairos_gym/') for k in registry))\n"
    alone = _run_outside_checkout("import sys, kairos_gym\nprint('gymnasium' in sys.modules)\n", tmp_path)
    assert alone.strip() == "False"
    runs = [_run_outside_checkout(code + count, tmp_path) for code in (
        "import kairos_gym\nfrom gymnasium.envs.registration import registry\n",
        "from gymnasium.envs.registration import registry\nimport kairos_gym\n",
        "import kairos_gym, gymnasium\nregistry = gymnasium.registry\n")]
    assert len(set(runs)) == 1 and int(runs[0]) > 2, runs
    # the module keeps its own loader, and the hook leaves sys.meta_path once it fired
    out = _run_outside_checkout(
        "import sys, kairos_gym, gymnasium\n"
        "print(type(gymnasium.__loader__).__name__, type(gymnasium.__spec__.loader).__name__,"
        " any(type(f).__name__ == '_PostImportFinder' for f in sys.meta_path))\n", tmp_path)
    assert out.split() == ["SourceFileLoader", "SourceFileLoader", "False"]


def test_gym_make_after_plain_import(tmp_path):
    out = _run_outside_checkout(
        "import kairos_gym, gymnasium as gym\n"
        "env = gym.make('kairos_gym/KairosSmall-v0')\n"
        "obs, info = env.reset(seed=0)\n"
        "print(obs.shape[0], env.unwrapped.scenario.name)\n", tmp_path)
    n, name = out.split()
    assert int(n) > 0 and name == "small"


def test_only_kairos_gym_is_a_top_level_name(tmp_path):
    out = _run_outside_checkout(
        "import importlib.util, json\n"
        "print(json.dumps({n: importlib.util.find_spec(n) is not None for n in ('agents', 'train', 'configs',"
        " 'kairos_gym.agents', 'kairos_gym.train', 'kairos_gym.configs')}))\n", tmp_path)
    found = json.loads(out)
    assert found == {"agents": False, "train": False, "configs": False, "kairos_gym.agents": True,
                     "kairos_gym.train": True, "kairos_gym.configs": True}


def test_shipped_data_resolves_through_the_package():
    from kairos_gym.agents.ppo import DEFAULT_CHECKPOINT
    from kairos_gym.configs import PPO_CONFIG_DIR, SCENARIO_DIR

    from kairos_gym.scenario import scenario_names

    assert "bursty" in scenario_names() and "small" in scenario_names()
    assert (SCENARIO_DIR / "bursty.yaml").is_file() and (PPO_CONFIG_DIR / "kairos-v0.yaml").is_file()
    assert DEFAULT_CHECKPOINT.parent.is_dir()


def test_version_flag(capsys):
    import pytest

    import kairos_gym
    from kairos_gym.cli.main import main

    with pytest.raises(SystemExit) as e:
        main(["--version"])
    assert e.value.code == 0
    assert capsys.readouterr().out.strip() == f"kairos-gym {kairos_gym.__version__}"
    assert kairos_gym.__version__ != "0.0.0+unknown"


def test_pyproject_declares_no_top_level_packages_besides_kairos_gym():
    import tomllib

    cfg = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]
    assert all(p == "kairos_gym" or p.startswith("kairos_gym.") for p in cfg["packages"])
    # every Python package folder of the source tree is installed
    for d in ("agents", "train", "configs"):
        assert cfg["package-dir"][f"kairos_gym.{d}"] == d


def test_every_config_folder_is_packaged():
    """Each folder of configs/ holding YAML files installs as ``kairos_gym.configs.<folder>`` with its YAML as
    package data (pyproject.toml lists them: setuptools does not find data-only folders by itself)."""
    tomllib = pytest.importorskip("tomllib")  # Python 3.11+

    tool = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    folders = sorted(p.name for p in (ROOT / "configs").iterdir() if p.is_dir() and any(p.glob("*.yaml")))
    assert {"ppo", "dqn", "scenarios"} <= set(folders)
    for name in folders:
        assert f"kairos_gym.configs.{name}" in tool["packages"], name
        assert tool["package-data"].get(f"kairos_gym.configs.{name}") == ["*.yaml"], name
