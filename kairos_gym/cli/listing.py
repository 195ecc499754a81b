"""The "discover" command: ``kairos-gym list [scenarios|policies|tasks|envs]``, the names the other commands take,
one line each, read from the registries that define them (no list of its own):

- scenarios: the shipped files ``configs/scenarios/*.yaml`` (their ``description``);
- policies: the registry, :data:`kairos_gym.agents.registry.POLICIES` (one line each from ``DESCRIPTIONS``);
- tasks: the benchmark suite, :data:`kairos_gym.benchmark.suite.SUITE`;
- envs: the Gymnasium ids ``import kairos_gym`` registers (:func:`kairos_gym.env.registration.register_envs`)
  and any other id of a kairos namespace registered in this process.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable

from kairos_gym.cli.common import Subparsers, add_command
from kairos_gym.errors import ConfigError

SECTIONS = ("scenarios", "policies", "tasks", "envs")
"""What ``kairos-gym list`` can list, in the order it lists them all."""
NAMESPACES = ("kairos_gym/", "kairos_train/")
"""Gymnasium namespaces of the project's ids."""

Row = tuple[str, str]
"""(name, one-line description)."""


def add_commands(sub: Subparsers) -> None:
    """Register ``list``."""
    p = add_command(sub, "list", cmd_list)
    p.add_argument("what", nargs="?", default=None, metavar="|".join(SECTIONS),
                   help="the section to list (default: all four, in this order)")


def scenario_rows() -> list[Row]:
    """The shipped scenarios: file stem and the file's ``description``."""
    from kairos_gym.configs import SCENARIO_DIR
    from kairos_gym.yaml_io import load_yaml_file

    rows = []
    for path in sorted(SCENARIO_DIR.glob("*.yaml")):
        doc = load_yaml_file(path)
        desc = doc.get("description", "") if isinstance(doc, dict) else ""
        rows.append((path.stem, str(desc)))
    return rows


def policy_rows() -> list[Row]:
    """The registry's policies, in its order."""
    from kairos_gym.agents.registry import DESCRIPTIONS, POLICIES

    return [(name, DESCRIPTIONS.get(name, "")) for name in POLICIES]


def task_rows() -> list[Row]:
    """Every suite's tasks (v1, then v2: ``v2:<task>``): family, SLO tier or split, scenario and instances."""
    from kairos_gym.benchmark.suite import TIERS
    from kairos_gym.benchmark.suites import SUITES
    from kairos_gym.flags import format_seeds

    rows = []
    for name, suite in SUITES.items():
        for t in suite:
            tier = "its scenario's SLOs" if t.tier == "default" else f"{t.tier} SLOs ({TIERS[t.tier]:g}x unloaded)"
            test = (f"{len(t.test)} trace windows" if t.windows
                    else f"seeds {format_seeds([i.seed for i in t.test])}")
            what = f"{t.family} at {tier}" + (f", {t.split}" if t.split else "")
            label = t.name if name == "v1" else f"{name}:{t.name}"
            rows.append((label, f"{what}: scenario {t.scenario}; test {test}, {len(t.train)} train"))
    return rows


def env_rows() -> list[Row]:
    """The registered Gymnasium ids of the project's namespaces: the scenario each makes (and its description)."""
    import gymnasium as gym

    from kairos_gym.env.registration import register_envs

    register_envs()
    scenarios = dict(scenario_rows())
    rows = []
    for env_id in sorted(k for k in gym.registry if k.startswith(NAMESPACES)):
        spec = gym.spec(env_id)
        scenario = (spec.kwargs or {}).get("scenario")
        if isinstance(scenario, str):
            desc = f"scenario {scenario}" + (f": {scenarios[scenario]}" if scenarios.get(scenario) else "")
        else:
            desc = f"entry point {spec.entry_point}"
        rows.append((env_id, desc))
    return rows


HEADINGS: dict[str, tuple[str, Callable[[], list[Row]]]] = {
    "scenarios": ("scenarios (--scenario NAME; configs/scenarios/NAME.yaml, docs/scenarios.md)", scenario_rows),
    "policies": ("policies (--policy NAME of simulate, --policies NAME,... of evaluate, sweep, leaderboard; "
                 "docs/policies.md)", policy_rows),
    "tasks": ("tasks of the benchmark suite (leaderboard --tasks NAME, a family or a tier; docs/benchmark.md)",
              task_rows),
    "envs": ("Gymnasium ids (gym.make(ID) after import kairos_gym; docs/env.md)", env_rows),
}
"""Each section's heading and the function giving its rows."""


def format_section(heading: str, rows: list[Row]) -> str:
    """The heading, then one line per row: the name padded to the longest name, two spaces, the description."""
    width = max((len(name) for name, _ in rows), default=0)
    return "\n".join([f"{heading}:", *(f"  {name:<{width}}  {desc}".rstrip() for name, desc in rows)])


def cmd_list(args: argparse.Namespace) -> int:
    """``kairos-gym list [WHAT]``: the sections on stdout, a blank line between two."""
    if args.what is not None and args.what not in SECTIONS:
        raise ConfigError("list", "WHAT", args.what, "one of " + ", ".join(SECTIONS) + " (or nothing: all four)")
    chosen = SECTIONS if args.what is None else (args.what,)
    texts = []
    for what in chosen:
        heading, rows = HEADINGS[what]
        texts.append(format_section(heading, rows()))
    print("\n\n".join(texts))
    return 0
