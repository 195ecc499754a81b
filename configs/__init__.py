"""Shipped configuration files, installed as package data of ``kairos_gym.configs``.

``scenarios/<name>.yaml``: the scenarios (docs/scenarios.md); ``ppo/<name>.yaml``: PPO training configs
(docs/training.md). :data:`CONFIG_DIR` is where they are, in a checkout or in an installed wheel alike.
"""

from pathlib import Path

CONFIG_DIR: Path = Path(__file__).resolve().parent
SCENARIO_DIR: Path = CONFIG_DIR / "scenarios"
PPO_CONFIG_DIR: Path = CONFIG_DIR / "ppo"
