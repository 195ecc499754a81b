"""One id per env, every documented id registered by ``import kairos_gym``, and Gymnasium's env checker passes on
the training id (on the KairosEnv ids: test_env_api.py)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import warnings
from pathlib import Path

import gymnasium as gym
from gymnasium.utils.env_checker import check_env

from kairos_gym.env import MaskedActionWarning
from kairos_gym.env.registration import GENERAL_ENV_ID, NAMED_IDS, env_compatible, env_ids, scenario_env_id
from kairos_gym.scenario import scenario_names

ROOT = Path(__file__).resolve().parents[2]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
ID_PATTERN = re.compile(r"(?<![\w/<-])(?:(kairos_gym|kairos_train)/)?(Kairos[A-Za-z0-9-]*-v\d+)(?![\w>-])")
"""An id in the docs, with or without its namespace (``Kairos-v0``, ``kairos_gym/Kairos-v0``); templates such as
``Kairos-<name>-v0`` are not ids."""


def documented_ids() -> dict[str, list[str]]:
    """Every env id the README and docs/*.md name (a bare name gets its namespace) -> the files naming it."""
    found: dict[str, list[str]] = {}
    for path in DOCS:
        for ns, name in ID_PATTERN.findall(path.read_text(encoding="utf-8")):
            ns = ns or ("kairos_train" if name == GENERAL_ENV_ID.partition("/")[2] else "kairos_gym")
            found.setdefault(f"{ns}/{name}", []).append(path.name)
    return found


def test_every_documented_id_is_registered_by_import_kairos_gym(tmp_path):
    out = subprocess.run([sys.executable, "-c", "import json, sys, gymnasium as gym, kairos_gym\n"
                          "print(json.dumps({'ids': sorted(gym.registry), 'mods': sorted(sys.modules)}))"],
                         cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    got = json.loads(out.stdout)
    documented = documented_ids()
    assert "kairos_gym/Kairos-v0" in documented and GENERAL_ENV_ID in documented  # the pattern finds them
    missing = {k: v for k, v in documented.items() if k not in got["ids"]}
    assert missing == {}, f"documented but not registered by `import kairos_gym`: {missing}"
    heavy = [m for m in got["mods"] if m.partition(".")[0] in ("torch", "stable_baselines3", "sb3_contrib")
             or m.startswith("kairos_gym.train")]
    assert heavy == [], heavy  # the general id is registered by its entry-point string


def test_one_id_per_scenario():
    ids = env_ids()
    compatible = [n for n in scenario_names() if env_compatible(n)]
    assert sorted(scenario_env_id(n) for n in compatible) == ids
    assert scenario_env_id("bursty") == "kairos_gym/Kairos-v0" and scenario_env_id("small") == NAMED_IDS["small"]
    assert scenario_env_id("azure-code") == "kairos_gym/Kairos-azure-code-v0"
    for name in NAMED_IDS:  # no second id for the named scenarios
        assert f"kairos_gym/Kairos-{name}-v0" not in gym.registry
    scenarios = [gym.spec(i).kwargs["scenario"] for i in ids]
    assert len(set(scenarios)) == len(scenarios)


def test_gymnasium_env_checker_passes_on_the_general_id():
    """The KairosEnv ids: tests/env/test_env_api.py (Gymnasium's and Stable-Baselines3's checkers)."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the checker reports problems as warnings
        warnings.simplefilter("ignore", MaskedActionWarning)  # it steps with unmasked random actions
        env = gym.make(GENERAL_ENV_ID)
        check_env(env.unwrapped)
        env.close()
