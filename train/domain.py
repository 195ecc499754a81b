"""Domain randomisation over the benchmark's TRAIN split: the ``kairos_train/KairosGeneral-v0`` env.

Every episode of :class:`DomainEnv` draws, with the env's own generator,

- a **task family** of the suite (:data:`kairos_gym.benchmark.suite.FAMILIES`; by default every family without
  faults, :func:`default_families`), uniformly;
- an **SLO tier** (``strict``, ``default``, ``relaxed``; the suite's SLOs of that family and tier,
  :meth:`kairos_gym.benchmark.suite.Task.base`), uniformly;
- an **information track** (``exact``, ``realistic``; :func:`kairos_gym.benchmark.suite.on_track`), uniformly;
- a **load factor** ``f`` uniform in ``[load[0], load[1]]`` (default :data:`LOAD_RANGE`): every arrival rate of
  the family's process is multiplied by ``f`` (Poisson / Gamma ``rate``, MMPP ``rate_on`` and ``rate_off``, a
  trace's ``rate_scale``); request lengths and counts are unchanged (:func:`scale_load`);
- a **training instance** of the family's train side (:func:`training_instance`): for a synthetic family a fresh
  workload seed in ``[TRAIN_SEED_MIN, 2**31)`` (the suite's test seeds are 0-9 and its train seeds 1000-1001,
  all below); for a trace family one of the suite's train windows except the last (the trace does not depend
  on the seed; the drawn seed then seeds only the realistic track's noise).

The last train instance of every family (:func:`validation_instance`: seed 1001, or the second train window) is
held out of training: :func:`validation_cases` are those instances at every tier and track of the domain, at
load 1, on which :class:`kairos_gym.train.callbacks.DomainEvalCallback` logs the normalised score during
training. No draw is ever a test instance of the suite (tests/train/test_domain.py checks it).

The observation is the plain :class:`~kairos_gym.env.core.KairosEnv` observation (57 features and 11 actions on
every family of the suite: same cluster shape and chunk menu; 13 actions with ``largest_safe_action``), so a
checkpoint trained here runs on any task through ``kairos-gym leaderboard --checkpoint DIR``. What it carries
of the domain: the SLOs (``ttft_slo``, ``tbt_slo``; every predicted time is also scaled by the episode's SLO)
and the load regime through the state (queued tokens and requests, predicted waits, the ~5 s EWMA utilisations,
batch sizes). There is no
explicit arrival-rate or track feature: the policy infers the regime from the state (adding one would change
the observation of every env and of the shipped checkpoint). A family whose observation or action layout
differs from the first one's is refused (ConfigError), not padded.

``reset(seed=s)`` re-seeds the domain generator from ``s`` (and Gymnasium's ``np_random``, which the draws do
not use): the same seed gives the same draw and the same episode (the inner KairosEnv is always reset with an
explicit simulator seed); ``reset()`` takes the next draw. ``info["domain"]`` at reset says what was drawn.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import gymnasium as gym
import numpy as np

from kairos_gym.benchmark.suite import TRAIN_SEED_MIN
from kairos_gym.env.registration import GENERAL_ENTRY_POINT, GENERAL_ENV_ID, GENERAL_VECTOR_ENTRY_POINT
from kairos_gym.errors import ConfigError
from kairos_gym.scenario import ScenarioConfig

DOMAIN_ENV_ID = GENERAL_ENV_ID
"""The Gymnasium id of :class:`DomainEnv`, registered by ``import kairos_gym`` (kairos_gym/env/registration.py,
by its entry-point string) and again, if missing, on import of this module (a namespace of its own: it is not one
of ``kairos_gym.env.env_ids()``, the KairosEnv ids). Needs no torch."""
WHERE = "KairosGeneral-v0"
LOAD_RANGE = (0.7, 1.3)
"""Default range of the per-episode load factor (multiplies every arrival rate)."""
MAX_LOAD = 4.0
"""Largest load factor accepted (a factor ``f`` divides a trace's span by ``f``)."""
MIN_LOAD = 0.05
"""Smallest load factor accepted."""
DOMAIN_KEYS = ("suite", "families", "tiers", "tracks", "load", "largest_safe_action", "inputs", "reward",
               "tbt_penalty", "max_decisions")
"""Keyword arguments of :class:`DomainEnv` (a training config's ``env_kwargs``)."""
VALIDATION_LOAD = 1.0
"""Load factor of the held-out validation cases."""
_SEED_TAG = 0x67656E  # mixes into the domain generator's seed so it differs from the inner env's streams


DOMAIN_SUITES = ("v1", "v2")
"""The suites a domain draws from (``suite``; kairos_gym/benchmark/suites.py): v1's train side (default), or v2's
**seen** families only (its unseen families are never a training draw)."""


def _suite(name: str = "v1") -> dict[tuple[str, str], Any]:
    from kairos_gym.benchmark.suites import SUITES

    return {(t.family, t.tier): t for t in SUITES[name] if t.split != "unseen"}


def family_names(suite: str = "v1") -> tuple[str, ...]:
    """The suite's task families a domain may draw (v2: the seen ones), in suite order."""
    from kairos_gym.benchmark.suites import training_families

    return training_families(suite)


def default_families(suite: str = "v1") -> tuple[str, ...]:
    """The families a domain draws from when ``families`` is not given: every family of the suite whose scenario
    has no ``faults:`` section. A fault family's observation carries the availability group (P + D + 1 more
    features: docs/reliability.md), so it cannot share a domain with the others; name it alone (or with other
    fault families of its layout) in ``families``."""
    from kairos_gym.benchmark.suites import default_training_families

    return default_training_families(suite)


def _tiers(suite: str) -> tuple[str, ...]:
    """The SLO tiers of a suite's tasks (v2: its tasks' own SLOs only)."""
    return tuple(dict.fromkeys(tier for _f, tier in _suite(suite)))


def _choice(where: str, field: str, value: Any, allowed: Sequence[str]) -> tuple[str, ...]:
    """``value`` (None: every allowed name) as a tuple of distinct allowed names, in the given order."""
    if value is None:
        return tuple(allowed)
    if isinstance(value, str) or not isinstance(value, (list, tuple)) or not value:
        raise ConfigError(where, field, value, "a non-empty list of names from " + ", ".join(allowed))
    for v in value:
        if not isinstance(v, str) or v not in allowed:
            raise ConfigError(where, field, v, "names from " + ", ".join(allowed))
    if len(set(value)) != len(value):
        raise ConfigError(where, field, value, "each name once")
    return tuple(value)


def _load_range(where: str, value: Any) -> tuple[float, float]:
    allowed = f"[low, high] with {MIN_LOAD:g} <= low <= high <= {MAX_LOAD:g} (finite numbers; low = high: a fixed load)"
    if isinstance(value, str) or not isinstance(value, (list, tuple)) or len(value) != 2:
        raise ConfigError(where, "load", value, allowed)
    lo, hi = value
    for v in (lo, hi):
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not np.isfinite(v):
            raise ConfigError(where, "load", value, allowed)
    if not MIN_LOAD <= lo <= hi <= MAX_LOAD:
        raise ConfigError(where, "load", value, allowed)
    return float(lo), float(hi)


@dataclass(frozen=True)
class DomainSpec:
    """What :class:`DomainEnv` draws from: families, tiers, tracks (names) and the load range; ``largest_safe``:
    every scenario offers the LargestSafe action (``deflection.largest_safe_action``)."""

    families: tuple[str, ...]
    tiers: tuple[str, ...]
    tracks: tuple[str, ...]
    load: tuple[float, float]
    largest_safe: bool = False
    suite: str = "v1"

    @classmethod
    def parse(cls, families: Any = None, tiers: Any = None, tracks: Any = None, load: Any = LOAD_RANGE,
              where: str = WHERE, largest_safe: Any = False, suite: Any = "v1") -> DomainSpec:
        """Validate the names, the load range and the flag (no simulation); every bad value is a ConfigError."""
        from kairos_gym.benchmark.suite import TRACKS

        if not isinstance(suite, str) or suite not in DOMAIN_SUITES:
            raise ConfigError(where, "suite", suite, "one of " + ", ".join(DOMAIN_SUITES))
        if not isinstance(largest_safe, bool):
            raise ConfigError(where, "largest_safe_action", largest_safe, "true or false")
        fams = (default_families(suite) if families is None
                else _choice(where, "families", families, family_names(suite)))
        return cls(fams, _choice(where, "tiers", tiers, _tiers(suite)),
                   _choice(where, "tracks", tracks, TRACKS), _load_range(where, load), largest_safe, suite)


def check_kwargs(kwargs: Mapping[str, Any], where: str = WHERE) -> None:
    """Refuse unknown keys and bad domain values of :class:`DomainEnv` keyword arguments before any work (the
    KairosEnv keys ``reward``, ``tbt_penalty`` and ``max_decisions`` are checked by KairosEnv itself)."""
    for k, v in kwargs.items():
        if k not in DOMAIN_KEYS:
            raise ConfigError(where, str(k), v, "one of " + ", ".join(DOMAIN_KEYS))
    check_inputs(kwargs.get("inputs", "observation"), kwargs.get("largest_safe_action", False), where)
    DomainSpec.parse(kwargs.get("families"), kwargs.get("tiers"), kwargs.get("tracks"),
                     kwargs.get("load", LOAD_RANGE), where, kwargs.get("largest_safe_action", False),
                     kwargs.get("suite", "v1"))


def check_inputs(inputs: Any, largest_safe: Any, where: str = WHERE) -> str:
    """``inputs``, the policy's input layout (:data:`kairos_gym.agents.checkpoint.INPUTS`): ``observation`` or
    ``observation+kairos`` (the observation, then the one-hot of Kairos's action at the same decision:
    kairos_gym/agents/inputs.py), which needs ``largest_safe_action`` (Kairos deflects with LargestSafe chunks)."""
    from kairos_gym.agents.checkpoint import INPUTS

    if inputs not in INPUTS:
        raise ConfigError(where, "inputs", inputs, "one of " + ", ".join(INPUTS))
    if inputs != "observation" and largest_safe is not True:
        raise ConfigError(where, "inputs", inputs, "observation, or largest_safe_action: true with "
                          f"{inputs} (Kairos's deflections are LargestSafe actions)")
    return str(inputs)


def spec_from_kwargs(kwargs: Mapping[str, Any], where: str = WHERE) -> DomainSpec:
    """The :class:`DomainSpec` of :class:`DomainEnv` keyword arguments (checked by :func:`check_kwargs`)."""
    check_kwargs(kwargs, where)
    return DomainSpec.parse(kwargs.get("families"), kwargs.get("tiers"), kwargs.get("tracks"),
                            kwargs.get("load", LOAD_RANGE), where, kwargs.get("largest_safe_action", False),
                            kwargs.get("suite", "v1"))


# ---------------------------------------------------------------------------------------------- instances
def training_instance(task: Any, rng: np.random.Generator) -> Any:
    """A training instance of ``task`` drawn with ``rng``: a fresh seed in ``[TRAIN_SEED_MIN, 2**31)`` for a
    synthetic family; for a trace family one of its train windows but the last (run with a fresh seed)."""
    from kairos_gym.benchmark.suite import Instance

    seed = int(rng.integers(TRAIN_SEED_MIN, 2**31))
    if not task.windows:
        return Instance(seed)
    pool = task.train[:-1]
    return Instance(seed, pool[int(rng.integers(len(pool)))].window_s)


def validation_instance(task: Any) -> Any:
    """The held-out train instance of ``task`` (its last train instance; never drawn by :func:`training_instance`)."""
    return task.train[-1]


def scale_load(sc: ScenarioConfig, factor: float) -> ScenarioConfig:
    """``sc`` with every arrival rate multiplied by ``factor`` (the arrival section's ``rate_overrides``: Poisson,
    Gamma and profile ``rate``, MMPP ``rate_on`` and ``rate_off``, trace ``rate_scale``); ``factor == 1`` returns
    ``sc`` itself."""
    if factor == 1.0:
        return sc
    arr = sc.workload.arrival
    return sc.with_overrides({"workload": {"arrival": {"kind": arr.kind, **arr.rate_overrides(factor)}}})


@functools.lru_cache(maxsize=64)
def task_base(family: str, tier: str, track: str, largest_safe: bool = False, suite: str = "v1") -> ScenarioConfig:
    """The suite's scenario of ``family`` at ``tier`` on ``track`` (cached: the tier SLOs cost a simulation); with
    ``largest_safe``, also offering the LargestSafe action (one more action per decode node; the observation and
    the simulator's physics are unchanged: Kairos and the ``-ls`` baselines deflect that way on every task)."""
    from kairos_gym.benchmark.suite import on_track

    sc = on_track(_suite(suite)[(family, tier)].base(), track)
    return sc.with_overrides({"deflection": {"largest_safe_action": True}}) if largest_safe else sc


@dataclass(frozen=True)
class Draw:
    """One episode's domain draw."""

    family: str
    tier: str
    track: str
    load: float
    instance: Any  # kairos_gym.benchmark.suite.Instance
    largest_safe: bool = False
    suite: str = "v1"

    def scenario(self) -> ScenarioConfig:
        base = task_base(self.family, self.tier, self.track, self.largest_safe, self.suite)
        return scale_load(self.instance.scenario(base), self.load)

    def as_dict(self) -> dict[str, Any]:
        return {"family": self.family, "tier": self.tier, "track": self.track, "load": self.load,
                "instance": self.instance.label, "seed": self.instance.seed}


def draw(spec: DomainSpec, rng: np.random.Generator) -> Draw:
    """One episode's family, tier, track, load factor and training instance (in that order of draws)."""
    fam = spec.families[int(rng.integers(len(spec.families)))]
    tier = spec.tiers[int(rng.integers(len(spec.tiers)))]
    track = spec.tracks[int(rng.integers(len(spec.tracks)))]
    lo, hi = spec.load
    load = float(lo if lo == hi else rng.uniform(lo, hi))
    return Draw(fam, tier, track, load, training_instance(_suite(spec.suite)[(fam, tier)], rng), spec.largest_safe,
                spec.suite)


@dataclass(frozen=True)
class ValidationCase:
    """A held-out train-side instance of one task on one track, at load :data:`VALIDATION_LOAD`."""

    family: str
    tier: str
    track: str
    instance: Any
    largest_safe: bool = False
    suite: str = "v1"

    @property
    def label(self) -> str:
        task = self.family if self.tier == "default" else f"{self.family}/{self.tier}"
        return f"{task}@{self.track}"

    def scenario(self) -> ScenarioConfig:
        base = task_base(self.family, self.tier, self.track, self.largest_safe, self.suite)
        return scale_load(self.instance.scenario(base), VALIDATION_LOAD)


def validation_cases(spec: DomainSpec) -> list[ValidationCase]:
    """Every family x tier x track of ``spec`` on the family's :func:`validation_instance`."""
    suite = _suite(spec.suite)
    return [ValidationCase(f, t, tr, validation_instance(suite[(f, t)]), spec.largest_safe, spec.suite)
            for f in spec.families for t in spec.tiers for tr in spec.tracks]


# ---------------------------------------------------------------------------------------------- validation
ANCHOR_BASELINE = "no-deflect"
"""The 0 of the validation's normalised score (the leaderboard's)."""
ANCHOR_REFERENCE = "kairos-exact"
"""The 1 of the validation's normalised score: the leaderboard's reference until the clairvoyant Oracle lands
(always run on the exact track, as in the leaderboard)."""
VALIDATION_KEYS = ("slo_attainment", "ttft_p95", "tbt_violation_rate", "deflection_rate")
"""Figures kept per validation run."""


def run_reference(case: ValidationCase, policy: str) -> dict[str, float]:
    """A registry policy's figures (:data:`VALIDATION_KEYS`) on ``case`` (a track-pinned policy such as
    kairos-exact on its own track, as the leaderboard runs it)."""
    from kairos_gym.benchmark.entries import PINNED_TRACK
    from kairos_gym.benchmark.suite import on_track
    from kairos_gym.evaluation.evaluate import run_one

    sc = case.scenario()
    if policy in PINNED_TRACK:
        sc = on_track(sc, PINNED_TRACK[policy])
    summary = run_one(sc, policy, case.instance.seed)[0]
    return {k: float(summary[k]) for k in VALIDATION_KEYS}


def run_actor(actor: Any, case: ValidationCase) -> dict[str, float]:
    """A greedy actor's figures on ``case``: one whole episode of a bare KairosEnv of the case's scenario."""
    from kairos_gym.train.checkpoints import run_episode

    from kairos_gym.env.core import KairosEnv

    summary = run_episode(actor, KairosEnv(case.scenario()), case.instance.seed)
    return {k: float(summary[k]) for k in VALIDATION_KEYS}


def normalized_score(x: float, no_deflect: float, reference: float) -> float | None:
    """``(x - no_deflect) / (reference - no_deflect)``; None when the reference beats no-deflect by less than the
    leaderboard's ``MIN_HEADROOM`` (no room to normalise in, as in the leaderboard)."""
    from kairos_gym.benchmark.scoring import MIN_HEADROOM

    head = reference - no_deflect
    return None if head < MIN_HEADROOM else (x - no_deflect) / head


def summarize_scores(scores: Mapping[str, float | None]) -> dict[str, Any]:
    """Mean and IQM (``scipy.stats.trim_mean(x, 0.25)``) of the normalised scores that exist, per track too
    (case labels end in ``@<track>``); ``n`` cases scored."""
    def agg(vals: list[float]) -> dict[str, float | None]:
        if not vals:
            return {"mean": None, "iqm": None, "n": 0}
        x = np.sort(np.asarray(vals, dtype=np.float64))
        cut = int(0.25 * len(x))
        return {"mean": float(x.mean()), "iqm": float(x[cut:len(x) - cut].mean()), "n": len(x)}

    out = {"all": agg([v for v in scores.values() if v is not None])}
    for track in dict.fromkeys(k.rpartition("@")[2] for k in scores):
        out[track] = agg([v for k, v in scores.items() if v is not None and k.endswith("@" + track)])
    return out


# ---------------------------------------------------------------------------------------------- the env
def first_env(spec: DomainSpec, env_kwargs: Mapping[str, Any]) -> Any:
    """A KairosEnv of the first family's default scenario, after checking that every family of ``spec`` has its
    observation and action layout (ConfigError naming the first that differs: a domain is never padded)."""
    from kairos_gym.env.core import KairosEnv

    first: KairosEnv | None = None
    for fam in spec.families:
        env = KairosEnv(task_base(fam, _tiers(spec.suite)[0], "exact", spec.largest_safe, spec.suite), **env_kwargs)
        if first is None:
            first = env
        elif env.feature_names() != first.feature_names() or env.action_space != first.action_space:
            raise ConfigError(WHERE, "families", fam, "families whose observation and action layouts equal "
                              f"{spec.families[0]}'s ({first.obs_layout.size} features, "
                              f"{first.action_space.n} actions; {fam}: {env.obs_layout.size}, "
                              f"{env.action_space.n})")
    assert first is not None
    return first


def seed_rng(seed: Any) -> np.random.Generator:
    """The domain generator of an env reset with ``seed`` (a whole number >= 0; ConfigError otherwise)."""
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ConfigError(f"{WHERE}.reset", "seed", seed, "None or a whole number >= 0")
    return np.random.default_rng([int(seed), _SEED_TAG])


class DomainEnv(gym.Env):
    """A KairosEnv whose scenario is drawn per episode from the suite's train side (see the module docstring).

    Args:
        suite: ``v1`` (default: its train side) or ``v2`` (its seen families only, at their own SLOs, on v2's
            warm-started production-length instances; :data:`DOMAIN_SUITES`).
        families, tiers, tracks: names to draw from (default: all of the suite's; families without faults).
        load: ``[low, high]`` of the uniform load factor (default :data:`LOAD_RANGE`).
        largest_safe_action: every scenario also offers the LargestSafe action per decode node (13 actions on the
            suite's 2P2D instead of 11; :class:`~kairos_gym.agents.ppo.PPOAgent` recognises such a checkpoint by
            its action count and offers the action on the leaderboard's tasks too). Default False.
        inputs: ``observation`` (default) or ``observation+kairos``: each observation followed by the one-hot
            (13 values) of the action Kairos, built for the episode's scenario and track, takes at the same decision
            (:class:`~kairos_gym.agents.inputs.KairosFeature`; what the distilled student reads, so PPO can start from
            it). Needs ``largest_safe_action``.
        reward, tbt_penalty, max_decisions: passed to every episode's :class:`~kairos_gym.env.core.KairosEnv`.
    """

    metadata: dict[str, Any] = {"render_modes": []}  # noqa: RUF012

    def __init__(self, families: Any = None, tiers: Any = None, tracks: Any = None, load: Any = LOAD_RANGE,
                 largest_safe_action: Any = False, suite: Any = "v1", inputs: Any = "observation",
                 **env_kwargs: Any) -> None:
        from kairos_gym.env.core import KairosEnv

        check_kwargs({"families": families, "tiers": tiers, "tracks": tracks, "load": load,
                      "largest_safe_action": largest_safe_action, "suite": suite, "inputs": inputs, **env_kwargs})
        self.spec_domain = DomainSpec.parse(families, tiers, tracks, load, largest_safe=largest_safe_action,
                                            suite=suite)
        self.env_kwargs = dict(env_kwargs)
        self.inputs = str(inputs)
        """The observation's input layout (``observation`` or ``observation+kairos``)."""
        first = first_env(self.spec_domain, self.env_kwargs)
        self.action_space = first.action_space
        self._names = first.feature_names()
        self.observation_space = first.observation_space
        if self.inputs != "observation":
            n = int(first.action_space.n)
            low = np.concatenate([first.observation_space.low, np.zeros(n, dtype=np.float32)])
            high = np.concatenate([first.observation_space.high, np.ones(n, dtype=np.float32)])
            self.observation_space = gym.spaces.Box(low, high, dtype=np.float32)
            self._names = (*self._names, *(f"kairos_action_{a}" for a in range(n)))
        self._rng = np.random.default_rng()
        self.env: KairosEnv | None = None
        self.draw: Draw | None = None
        self._kairos: Any = None

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[Any, dict[str, Any]]:
        from kairos_gym.env.core import KairosEnv

        if options:
            raise ConfigError(f"{WHERE}.reset", "options", options, "None or {} (no reset options)")
        if seed is not None:
            self._rng = seed_rng(seed)
        # Gymnasium's np_random is seeded as usual (the env checker's contract); the draws use the domain generator
        super().reset(seed=None if seed is None else int(seed))
        d = draw(self.spec_domain, self._rng)
        self.draw = d
        sc = d.scenario()
        self.env = KairosEnv(sc, **self.env_kwargs)
        if self.inputs != "observation":
            from kairos_gym.agents.inputs import KairosFeature

            self._kairos = KairosFeature(sc, self.env.action_layout)
        obs, info = self.env.reset(seed=d.instance.seed)
        info["domain"] = d.as_dict()
        return self._with_inputs(obs, False), info

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        if self.env is None:
            raise RuntimeError("DomainEnv.step() called before reset()")
        obs, reward, term, trunc, info = self.env.step(action)
        return self._with_inputs(obs, term or trunc), reward, term, trunc, info

    def _with_inputs(self, obs: Any, done: bool) -> Any:
        """``obs``, followed under ``observation+kairos`` by the one-hot of Kairos's action at the pending decision
        (zeros once the episode is over: there is no decision left)."""
        if self.inputs == "observation":
            return obs
        assert self.env is not None and self._kairos is not None
        ctx = None if done else self.env.decision_context
        extra = np.zeros(self._kairos.size, dtype=np.float32) if ctx is None else self._kairos.encode(ctx)
        return np.concatenate([obs, extra]).astype(np.float32, copy=False)

    def action_masks(self) -> np.ndarray:
        """int8 mask of the valid actions at the pending decision (MaskablePPO)."""
        if self.env is None:
            raise RuntimeError("DomainEnv.action_masks() called before reset()")
        return self.env.action_masks()

    def feature_names(self) -> tuple[str, ...]:
        return self._names


def register() -> None:
    """Register :data:`DOMAIN_ENV_ID` (once)."""
    if DOMAIN_ENV_ID not in gym.registry:
        gym.register(id=DOMAIN_ENV_ID, entry_point=GENERAL_ENTRY_POINT, vector_entry_point=GENERAL_VECTOR_ENTRY_POINT)


register()
