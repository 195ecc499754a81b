"""What a submitted checkpoint declares it trained on (suite v2's "trained on" column, docs/benchmark.md).

A checkpoint folder written by ``kairos-gym train --export`` or ``kairos-gym distill`` holds the training config
(``config.yaml``). Its families are read from it, never guessed:

- a domain config (``kairos_train/KairosGeneral-v0``): ``env_kwargs.families`` (absent: the domain's default families
  of its ``suite``, train/domain.py);
- a single-scenario config (``kairos_gym/Kairos-<scenario>-v0``, ``Kairos-v0`` = bursty): that scenario;
- a distillation config (a ``distill:`` section): its ``families``.

How it trained comes from the same file: ``algo`` (RL) or ``distill`` (supervised), and the reward. Anything else
(no config, a config of another shape) is "undeclared", and the report says so.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kairos_gym.env.registration import GENERAL_ENV_ID
from kairos_gym.errors import ConfigError


def _scenario_of(env_id: str) -> str | None:
    """The shipped scenario whose Gymnasium id is ``env_id`` (kairos_gym.env.registration.scenario_env_id)."""
    from kairos_gym.env.registration import scenario_env_id
    from kairos_gym.scenario import scenario_names

    return next((name for name in scenario_names() if scenario_env_id(name) == env_id), None)


def declared(folder: str | Path) -> tuple[tuple[str, ...] | None, str | None]:
    """``(families, how)`` a checkpoint folder's ``config.yaml`` declares; ``(None, None)`` where it declares
    nothing readable."""
    from kairos_gym.yaml_io import load_yaml_file

    path = Path(folder) / "config.yaml"
    if not path.is_file():
        return None, None
    try:
        cfg = load_yaml_file(path)
    except ConfigError:
        return None, None
    if not isinstance(cfg, dict):
        return None, None
    if isinstance(cfg.get("distill"), dict):
        fams = cfg["distill"].get("families")
        return (tuple(fams) if _names(fams) else None), "supervised: distilled from the Oracle" + _detail(path.parent)
    if len(cfg) != 1:
        return None, None
    env_id, section = next(iter(cfg.items()))
    if not isinstance(section, dict):
        return None, None
    kwargs: Any = section.get("env_kwargs") or {}
    how = f"RL: {section.get('algo', 'maskable_ppo')}, {kwargs.get('reward', 'misses')} reward"
    if isinstance(section.get("init_from"), str):
        how += f", fine-tuned from {Path(section['init_from']).name}"
    how += _detail(path.parent)
    if env_id == GENERAL_ENV_ID:
        fams = kwargs.get("families")
        if fams is None:
            from kairos_gym.benchmark.suites import SUITES, default_training_families

            suite = kwargs.get("suite", "v1")
            fams = default_training_families(suite) if suite in SUITES else None
        return (tuple(fams) if _names(fams) else None), how
    scenario = _scenario_of(str(env_id))
    return ((scenario,) if scenario else None), how


def _detail(folder: Path) -> str:
    """``"; seed S, ..."``: the seed and the training budget the folder's meta.json records (written by ``kairos-gym
    train --export`` or ``kairos-gym distill``); "" where it records none."""
    from kairos_gym.json_file import read_json_file

    path = folder / "meta.json"
    if not path.is_file():
        return ""
    try:
        meta = read_json_file("trained on", "meta.json", path, 16 << 20, "checkpoint meta.json")
    except ConfigError:
        return ""
    if not isinstance(meta, dict) or not isinstance(meta.get("seed"), int):
        return ""
    parts = [f"seed {meta['seed']}"]
    if isinstance(meta.get("samples"), int) and isinstance(meta.get("label_instances"), int):
        parts.append(f"{meta['samples']:,} Oracle-labelled decisions from {meta['label_instances']} instances")
    if isinstance(meta.get("timesteps"), int):
        parts.append(f"{meta['timesteps']:,} steps")
        ev = meta.get("exported_eval")
        step = ev.get("timesteps") if isinstance(ev, dict) else None
        if meta.get("exported") == "best" and isinstance(step, int):
            parts.append(f"exported: best validation at {step:,}")
        elif isinstance(meta.get("exported"), str):
            parts.append(f"exported: {meta['exported']}")
    return "; " + ", ".join(parts)


def _names(value: Any) -> bool:
    return isinstance(value, (list, tuple)) and bool(value) and all(isinstance(v, str) for v in value)
