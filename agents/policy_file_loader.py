"""Policies from outside the package: a class in a Python file (``--policy path/to/file.py:ClassName``) or a
trained agent's safe checkpoint folder (``--checkpoint DIR``), built the same way for every run.

``--policy`` **executes the file**, exactly as ``python path/to/file.py`` would run its top level (it is the
user's own code, run on purpose; no pickle is involved): pass only files you wrote or trust. The file's folder
is not put on ``sys.path``. The named class must be defined (or imported) at the file's top level and build
with at most two keyword arguments, ``scenario`` (a :class:`~kairos_gym.scenario.ScenarioConfig`) and ``seed``
(int), each passed only when its ``__init__`` names it (or takes ``**kwargs``); its instances must have
``decide(ctx: DecisionContext) -> Decision`` (docs/policies.md, "Writing a policy"). A fresh instance is built
for every run, so per-run state cannot leak from one instance of the suite to the next.

``--checkpoint`` loads a checkpoint in the project's safe format (``policy.json`` + ``policy.npz`` +
``normalize.json``; :mod:`kairos_gym.agents.checkpoint`) as :class:`~kairos_gym.agents.ppo.PPOAgent`: data
only, nothing executed. It is read and checked once when the flag is parsed (a malformed file or an unknown
``inputs`` layout is refused before any run); its input layout (``inputs``: the observation, or the observation
plus the one-hot of Kairos's action on the run's track, :mod:`kairos_gym.agents.inputs`) is applied by PPOAgent.
A Stable-Baselines3 zip (it carries pickles) is refused, unless the command offers ``--trust-checkpoint`` and it
is given.

Rows are labelled by what they are: ``file:FILE.py:CLASS`` and ``checkpoint:DIR`` (the folder as given). Every
command that takes these flags (``simulate``, ``evaluate``, ``sweep``, ``compare``, ``leaderboard``,
``precision``; kairos_gym/cli/external.py) loads them here and runs them through :func:`run_external` under the
guard of :mod:`kairos_gym.agents.policy_guard`.

Every problem is a :class:`~kairos_gym.errors.ConfigError` naming the flag and the value: a malformed spec, a
missing or oversized file, a file that fails to run, a missing name, a name that is not a class, a class that
does not build or has no ``decide``, a missing or malformed checkpoint. :func:`probe` runs a policy on a short
prefix of a scenario, so a ``decide`` that raises or returns something other than a valid ``Decision`` is
reported before the real runs; a ``decide`` that raises is reported with the line of the user's file it came
from (:mod:`kairos_gym.agents.policy_crash`).
"""

from __future__ import annotations

import hashlib
import importlib.util
import inspect
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kairos_gym.agents.policy_crash import crash_report
from kairos_gym.agents.policy_guard import Limits, PolicyFailure, PolicyTimeout, guard

from kairos_gym.errors import ConfigError
from kairos_gym.scenario import ScenarioConfig

MAX_POLICY_FILE_BYTES = 1 << 20
"""Largest policy file ``--policy`` runs (bytes)."""

MAX_EXTERNAL = 16
"""Most ``--policy`` plus ``--checkpoint`` entries of one command."""

PROBE_REQUESTS = 40
"""Requests of the :func:`probe` run (the first ones of the scenario's workload)."""

SPEC_ALLOWED = "path/to/file.py:ClassName (an existing .py file, a colon, a Python class name)"


@dataclass(frozen=True)
class ExternalPolicy:
    """A policy from outside the registry: ``label`` names it in tables, ``build(scenario, seed)`` makes a
    fresh instance for one run, ``spec`` is the flag value as given, ``source`` the resolved path of a
    ``--policy`` file (its frames locate a crash; None for a checkpoint)."""

    label: str
    spec: str
    flag: str
    where: str
    build: Callable[[ScenarioConfig, int], Any]
    limits: Limits = field(default_factory=Limits)
    isolate_memory: int | None = None  # bytes: run in a child process under this address-space limit (--isolate)
    source: str | None = None


def parse_policy_spec(spec: Any, where: str = "leaderboard", flag: str = "--policy") -> tuple[Path, str]:
    """``"dir/file.py:ClassName"`` -> ``(Path("dir/file.py"), "ClassName")`` (split at the last colon); the file
    must exist, be a regular ``.py`` file of at most :data:`MAX_POLICY_FILE_BYTES`."""
    if not isinstance(spec, str) or ":" not in spec:
        raise ConfigError(where, flag, spec, SPEC_ALLOWED)
    path_text, cls_name = spec.rsplit(":", 1)
    if not cls_name.isidentifier():
        raise ConfigError(where, flag, spec, SPEC_ALLOWED + f" ({cls_name!r} is not a Python name)")
    path = Path(path_text)
    if path.suffix != ".py":
        raise ConfigError(where, flag, spec, SPEC_ALLOWED + f" ({path_text!r} does not end in .py)")
    if not path.is_file():
        raise ConfigError(where, flag, spec, SPEC_ALLOWED + f" (no file {path_text!r})")
    size = path.stat().st_size
    if size > MAX_POLICY_FILE_BYTES:
        raise ConfigError(where, flag, spec, f"a policy file of at most {MAX_POLICY_FILE_BYTES} bytes ({size})")
    return path, cls_name


def load_policy_class(spec: str, where: str = "leaderboard", flag: str = "--policy") -> type:
    """Run the file of ``spec`` as a fresh module and return its class (see the module docstring)."""
    path, cls_name = parse_policy_spec(spec, where, flag)
    resolved = path.resolve()
    module_name = "kairos_gym_user_policy_" + hashlib.sha256(str(resolved).encode()).hexdigest()[:16]
    mod_spec = importlib.util.spec_from_file_location(module_name, resolved)
    if mod_spec is None or mod_spec.loader is None:
        raise ConfigError(where, flag, spec, SPEC_ALLOWED + " (Python cannot load it as a module)")
    module = importlib.util.module_from_spec(mod_spec)
    sys.modules[module_name] = module  # dataclasses and typing look the module up while it runs
    try:
        mod_spec.loader.exec_module(module)
    except (Exception, SystemExit) as e:
        sys.modules.pop(module_name, None)
        raise ConfigError(where, flag, spec, f"a Python file that runs; it raised {type(e).__name__}: {e}") from e
    obj = getattr(module, cls_name, None)
    if obj is None:
        found = sorted(k for k, v in vars(module).items()
                       if inspect.isclass(v) and callable(getattr(v, "decide", None)))
        raise ConfigError(where, flag, spec, f"a class defined in {path.name}; classes there with a decide method: "
                          + (", ".join(found) if found else "none"))
    if not inspect.isclass(obj):
        raise ConfigError(where, flag, spec, f"the name of a class ({cls_name} is a {type(obj).__name__})")
    if not callable(getattr(obj, "decide", None)):
        raise ConfigError(where, flag, spec, f"a class with a decide(ctx) -> Decision method ({cls_name} has none)")
    return obj


def _constructor_kwargs(cls: type, scenario: ScenarioConfig, seed: int, where: str, flag: str,
                        spec: str) -> dict[str, Any]:
    """``scenario`` and ``seed`` for the ones ``cls.__init__`` names (all with ``**kwargs``); any other required
    parameter is an error."""
    try:
        params = inspect.signature(cls).parameters
    except (TypeError, ValueError):  # no introspectable signature: build it without arguments
        return {}
    var_kw = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())
    kwargs: dict[str, Any] = {}
    for key, value in (("scenario", scenario), ("seed", seed)):
        p = params.get(key)
        if var_kw or (p is not None and p.kind in (inspect.Parameter.POSITIONAL_OR_KEYWORD,
                                                    inspect.Parameter.KEYWORD_ONLY)):
            kwargs[key] = value
    missing = [p.name for p in params.values() if p.default is inspect.Parameter.empty and p.name not in kwargs
               and p.kind not in (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD)]
    if missing:
        raise ConfigError(where, flag, spec, "a class that builds with no arguments but scenario= and seed= "
                          f"(its __init__ also requires {', '.join(missing)})")
    return kwargs


def policy_from_file(spec: str, where: str = "leaderboard", flag: str = "--policy") -> ExternalPolicy:
    """The :class:`ExternalPolicy` of ``--policy path/to/file.py:ClassName``: the file runs once, here; each
    ``build(scenario, seed)`` constructs a new instance (a constructor that raises is a ConfigError)."""
    cls = load_policy_class(spec, where, flag)

    def build(scenario: ScenarioConfig, seed: int) -> Any:
        kwargs = _constructor_kwargs(cls, scenario, seed, where, flag, spec)
        try:
            policy = cls(**kwargs)
        except (Exception, SystemExit, KeyboardInterrupt) as e:
            args = ", ".join(f"{k}=..." for k in kwargs) or "no arguments"
            raise ConfigError(where, flag, spec, f"a class that builds with {args}; {cls.__name__}({args}) raised "
                              f"{type(e).__name__}: {e}") from e
        if not callable(getattr(policy, "decide", None)):
            raise ConfigError(where, flag, spec, "a class whose instances have a decide(ctx) method")
        return policy

    path, cls_name = parse_policy_spec(spec, where, flag)
    return ExternalPolicy(label=f"file:{path.name}:{cls_name}", spec=spec, flag=flag, where=where, build=build,
                          source=str(path.resolve()))


def policy_from_checkpoint(folder: str, where: str = "leaderboard", flag: str = "--checkpoint", *,
                           trust_checkpoint: bool | None = None) -> ExternalPolicy:
    """The :class:`ExternalPolicy` of ``--checkpoint DIR``: a safe-format checkpoint (or a run folder with one)
    as :class:`~kairos_gym.agents.ppo.PPOAgent`. ``trust_checkpoint``: None where the command has no
    ``--trust-checkpoint`` (a Stable-Baselines3 zip is refused), False where it has one that was not given (refused,
    naming the flag), True where it was given (the zip is unpickled: it can execute code stored in it)."""
    from kairos_gym.agents.checkpoint import load_policy, require_trust, resolve_checkpoint
    from kairos_gym.agents.ppo import PPOAgent

    if not isinstance(folder, str) or not folder:
        raise ConfigError(where, flag, folder, "a checkpoint folder in the safe format (policy.json, policy.npz)")
    try:
        kind, target = resolve_checkpoint(folder, f"{where} {flag}")
    except ConfigError:
        what = "no such file or folder" if not Path(folder).exists() else "no checkpoint found there"
        raise ConfigError(where, flag, folder, "a checkpoint folder with policy.json (+ policy.npz, normalize.json) "
                          "or a run folder holding one" + ("" if trust_checkpoint is None else ", or with "
                          "--trust-checkpoint a Stable-Baselines3 model .zip") + f" ({what})") from None
    if kind != "safe" and trust_checkpoint is None:
        raise ConfigError(where, flag, folder, "a checkpoint in the safe format (policy.json + policy.npz); a "
                          "Stable-Baselines3 zip carries pickles: convert it (docs/training.md, Checkpoints and trust)")
    if kind != "safe":
        require_trust(target, bool(trust_checkpoint), where, flag, "--trust-checkpoint")
    try:  # read (and check: sizes, arrays, its input layout) once, before any run
        if kind == "safe":
            load_policy(target)
        else:
            from kairos_gym.agents.sb3_checkpoint import load_actor

            load_actor(target, trust_checkpoint=True)
    except ConfigError as e:
        raise ConfigError(where, flag, folder, f"a checkpoint that loads: {e}") from e
    trusted = kind != "safe"

    def build(scenario: ScenarioConfig, seed: int) -> Any:
        try:
            return PPOAgent(scenario, seed=seed, path=folder, trust_checkpoint=trusted)
        except ConfigError as e:
            raise ConfigError(where, flag, folder, f"a checkpoint that loads for scenario {scenario.name}: {e}") from e

    return ExternalPolicy(label=f"checkpoint:{folder}", spec=folder, flag=flag, where=where, build=build)


def probe(policy: ExternalPolicy, scenario: ScenarioConfig, seed: int = 0, requests: int = PROBE_REQUESTS) -> None:
    """Build ``policy`` for ``scenario`` and run it on the first ``requests`` requests of its workload: a
    ``decide`` that raises, or returns anything but a valid Decision, is a ConfigError naming the flag."""
    old = scenario.workload.max_requests
    n = requests if old is None else min(old, requests)
    # the prefix is scored from its first request (a warm start's burn-in would leave nothing to score)
    prefix = {"workload": {"max_requests": n}, "slo": {"burn_in_requests": 0}}
    run_checked(policy, scenario.with_overrides(prefix), seed)


def run_checked(policy: ExternalPolicy, scenario: ScenarioConfig, seed: int,
                progress: Callable[[], Any] | None = None) -> dict[str, Any]:
    """The summary of :func:`run_external` (summary ``policy``: the instance's ``name``, else its class name)."""
    return run_external(policy, scenario, seed, progress=progress)[0]


def run_external(policy: ExternalPolicy, scenario: ScenarioConfig, seed: int, *,
                 progress: Callable[[], Any] | None = None, record_timeline: bool = False,
                 setup: Callable[[Any], Any] | None = None) -> tuple[dict[str, Any], Any]:
    """One run of a fresh instance under the guard, through :func:`kairos_gym.agents.runner.simulate` (the
    built-ins' runner; ``progress``, ``record_timeline`` and ``setup`` as there): ``(summary, simulator)``, the
    simulator None for an isolated run (``--isolate``: in a child process, which takes neither ``setup`` nor
    ``record_timeline``). Any error of the user's code becomes a ConfigError naming the flag and the spec; a
    ``decide`` that raises is reported with its exception and the line of the user's file it came from."""
    from kairos_gym.agents.runner import simulate

    if policy.isolate_memory is not None:
        from kairos_gym.agents.policy_isolation import run_isolated

        if setup is not None or record_timeline:
            raise ConfigError(policy.where, "--isolate", True, "a run whose simulator stays in this process: not "
                              "with outputs that need it (per-request records, plots)")
        out = run_isolated(policy, scenario, seed, policy.isolate_memory)
        if progress is not None:
            progress()
        return out, None
    instance = guard(policy.build(scenario, seed), policy.limits)
    try:
        return simulate(instance, scenario, seed, progress=progress, record_timeline=record_timeline, setup=setup)
    except (PolicyTimeout, PolicyFailure) as e:
        raise ConfigError(policy.where, policy.flag, policy.spec,
                          f"a policy within its limits; on scenario {scenario.name} seed {seed}: {e}") from None
    except ConfigError as e:
        raise ConfigError(policy.where, policy.flag, policy.spec,
                          f"a policy whose decide(ctx) returns a valid kairos_gym.sim.hook.Decision: {e}") from e
    except Exception as e:
        raise ConfigError(policy.where, policy.flag, policy.spec,
                          f"a policy whose decide(ctx) runs; on scenario {scenario.name} seed {seed} it raised "
                          f"{crash_report(e, policy.source)}") from e
