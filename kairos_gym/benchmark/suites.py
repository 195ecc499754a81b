"""The benchmark's suites by name (``--suite v1|v2``): published numbers name the suite they are on.

``v1`` (:mod:`kairos_gym.benchmark.suite`): seven families at three SLO tiers, 10 test instances of ~500 requests
from an empty cluster, normalised against the Oracle. ``v2`` (:mod:`kairos_gym.benchmark.suite_v2`): seen and
unseen families, 30 warm-started production-length instances per task, raw SLO points as the headline. Both stay
runnable by name; their task lists, instances and scoring are frozen (a change is a new suite name).
"""

from __future__ import annotations

from kairos_gym.benchmark.suite import SUITE as V1
from kairos_gym.benchmark.suite import Task
from kairos_gym.benchmark.suite_v2 import SUITE as V2
from kairos_gym.errors import ConfigError

SUITES: dict[str, tuple[Task, ...]] = {"v1": V1, "v2": V2}
"""Every suite by name."""
DEFAULT_SUITE = "v1"
"""The suite ``kairos-gym leaderboard`` runs unless ``--suite`` says otherwise."""


def suite_named(name: str, where: str = "leaderboard") -> tuple[Task, ...]:
    """The tasks of suite ``name`` (ConfigError naming ``--suite`` otherwise)."""
    if name not in SUITES:
        raise ConfigError(where, "--suite", name, "one of " + ", ".join(SUITES))
    return SUITES[name]


def training_families(name: str) -> tuple[str, ...]:
    """The families a learnt entry may train on in suite ``name`` (v2: the seen ones), in suite order."""
    return tuple(dict.fromkeys(t.family for t in suite_named(name) if t.split != "unseen"))


def default_training_families(name: str) -> tuple[str, ...]:
    """:func:`training_families` without fault families (the domain env's default, train/domain.py: a fault family's
    observation carries the availability features and cannot share a domain with the others)."""
    first = {}
    for t in suite_named(name):
        first.setdefault(t.family, t)
    return tuple(f for f in training_families(name) if not first[f].base().faults.enabled)
