"""The flags of policies from outside the registry, shared by every command that runs policies: ``--policy
FILE.py:CLASS`` (a class in the user's file) and ``--checkpoint DIR`` (a trained agent's folder), both repeatable
and mixed with ``--policies NAME,...``, the guard's time limits, ``--isolate`` where offered and
``--trust-checkpoint`` where offered.

``evaluate``, ``sweep``, ``compare``, ``leaderboard`` and ``precision`` take them through
:func:`add_external_flags` and :func:`external_policies`; ``simulate`` (one policy: ``--policy`` is a registry
name or a file spec, or ``--checkpoint DIR``) through :func:`add_limit_flags` and :func:`one_external`. Every
entry is loaded and checked by the one loader, :mod:`kairos_gym.agents.policy_file_loader`, when the flags are
read, before any run: a missing file, a missing class, a class without ``decide``, a missing or malformed
checkpoint is one ConfigError naming the flag, the value and what is allowed.
"""

from __future__ import annotations

import argparse
import dataclasses
from typing import TYPE_CHECKING, Any

from kairos_gym.errors import ConfigError
from kairos_gym.flags import parse_float, parse_int

if TYPE_CHECKING:
    from kairos_gym.agents.policy_file_loader import ExternalPolicy

TRUST_HELP = ("let --checkpoint load a Stable-Baselines3 zip (with its vecnormalize.pkl): it is unpickled, which can "
              "execute code stored in the file, so only for files you made or trust")


def policy_file_help(verb: str) -> str:
    """The help text of ``--policy FILE.py:CLASS``: the command ``verb``s the class (run, rank, measure)."""
    from kairos_gym.agents.policy_file_loader import MAX_EXTERNAL

    return (f"also {verb} the class CLASS of the Python file FILE.py (repeatable; its row: file:FILE.py:CLASS). This "
            "RUNS the file, as 'python FILE.py' would: only your own or trusted code. The class needs decide(ctx) -> "
            f"Decision; it is built with scenario= and seed= when its __init__ takes them (at most {MAX_EXTERNAL} "
            "--policy/--checkpoint in all)")


def add_limit_flags(p: argparse.ArgumentParser, *, isolate: bool = True) -> None:
    """``--decision-time-limit`` and ``--run-time-limit`` of a ``--policy``/``--checkpoint`` entry (the guard,
    :mod:`kairos_gym.agents.policy_guard`) and, with ``isolate``, ``--isolate`` and ``--isolate-memory``."""
    from kairos_gym.agents.policy_guard import DEFAULT_DECISION_S, DEFAULT_RUN_S, MAX_LIMIT_S

    p.add_argument("--decision-time-limit", default=str(DEFAULT_DECISION_S), metavar="S",
                   help=f"wall-time limit of one decide(ctx) call of a --policy/--checkpoint entry, seconds in "
                   f"(0, {MAX_LIMIT_S:g}] (default {DEFAULT_DECISION_S:g}); past it the entry's run stops with an "
                   "error naming it")
    p.add_argument("--run-time-limit", default=str(DEFAULT_RUN_S), metavar="S",
                   help=f"wall-time limit of one run (one instance) of such an entry, seconds in (0, {MAX_LIMIT_S:g}] "
                   f"(default {DEFAULT_RUN_S:g})")
    if not isolate:
        return
    from kairos_gym.agents.policy_isolation import DEFAULT_MEMORY_BYTES

    p.add_argument("--isolate", action="store_true",
                   help="run each --policy/--checkpoint entry in a process of its own, under the memory limit of "
                   "--isolate-memory and a CPU-time limit (POSIX): a crash or an exit of the entry cannot stop "
                   "this command")
    p.add_argument("--isolate-memory", default=str(DEFAULT_MEMORY_BYTES), metavar="BYTES",
                   help=f"address-space limit of an isolated entry (bytes; default {DEFAULT_MEMORY_BYTES})")


def add_external_flags(p: argparse.ArgumentParser, verb: str, *, isolate: bool = True, trust: bool = False) -> None:
    """``--policy FILE.py:CLASS`` and ``--checkpoint DIR`` (repeatable): policies from outside the registry that
    the command ``verb``s (run, rank, measure) beside the others; their limits (:func:`add_limit_flags`); with
    ``trust``, ``--trust-checkpoint`` (Stable-Baselines3 zips for ``--checkpoint``)."""
    p.add_argument("--policy", action="append", default=[], metavar="FILE.py:CLASS", help=policy_file_help(verb))
    p.add_argument("--checkpoint", action="append", default=[], metavar="DIR",
                   help=f"also {verb} the trained agent of this checkpoint folder (policy.json, policy.npz; or a run "
                   "folder such as runs/ppo/fast/final), repeatable; its row: checkpoint:DIR. Nothing is unpickled"
                   + (" unless --trust-checkpoint" if trust else ""))
    if trust:
        p.add_argument("--trust-checkpoint", action="store_true", help=TRUST_HELP)
    add_limit_flags(p, isolate=isolate)


def external_limits(args: argparse.Namespace, where: str) -> tuple[Any, int | None]:
    """The guard's :class:`~kairos_gym.agents.policy_guard.Limits` of ``--decision-time-limit`` and
    ``--run-time-limit``, and ``--isolate-memory`` when ``--isolate`` is on (None: in this process)."""
    from kairos_gym.agents.policy_guard import MAX_LIMIT_S, Limits

    decision = parse_float(where, "--decision-time-limit", args.decision_time_limit, 0.0, MAX_LIMIT_S)
    run = parse_float(where, "--run-time-limit", args.run_time_limit, 0.0, MAX_LIMIT_S)
    memory = None
    if hasattr(args, "isolate_memory"):
        from kairos_gym.agents.policy_isolation import MAX_MEMORY_BYTES, MIN_MEMORY_BYTES, check_isolation

        memory = parse_int(where, "--isolate-memory", args.isolate_memory, MIN_MEMORY_BYTES, MAX_MEMORY_BYTES)
        memory = check_isolation(where, memory) if args.isolate else None
    return Limits(decision_s=decision, run_s=run), memory


def _trust(args: argparse.Namespace) -> bool | None:
    """``--trust-checkpoint`` as the loader takes it: None where the command has no such flag."""
    return getattr(args, "trust_checkpoint", None)


def external_policies(args: argparse.Namespace, where: str) -> list[ExternalPolicy]:
    """The ``--policy`` and ``--checkpoint`` entries, loaded (a ``--policy`` file is run: it is the user's code)
    under the limits of the flags, at most ``MAX_EXTERNAL`` in all, their labels distinct."""
    from kairos_gym.agents.policy_file_loader import MAX_EXTERNAL, policy_from_checkpoint, policy_from_file

    if len(args.policy) + len(args.checkpoint) > MAX_EXTERNAL:
        raise ConfigError(where, "--policy/--checkpoint", len(args.policy) + len(args.checkpoint),
                          f"at most {MAX_EXTERNAL} entries in all")
    limits, memory = external_limits(args, where)
    externals = [policy_from_file(s, where, "--policy") for s in args.policy]
    externals += [policy_from_checkpoint(d, where, "--checkpoint", trust_checkpoint=_trust(args))
                  for d in args.checkpoint]
    labels = [e.label for e in externals]
    for i, e in enumerate(externals):
        if e.label in labels[:i]:
            raise ConfigError(where, e.flag, e.spec, f"each policy once ({e.label} is given twice)")
    return [dataclasses.replace(e, limits=limits, isolate_memory=memory) for e in externals]


def is_policy_file(spec: str) -> bool:
    """Is ``spec`` meant as a class in a Python file (``FILE.py:CLASS``), not a registry name? Registry names hold
    no ``:``, ``/`` or ``.``; anything with one goes to the file loader, whose error says what a spec looks like."""
    return any(ch in spec for ch in ":/.")


def one_external(args: argparse.Namespace, where: str) -> ExternalPolicy | None:
    """``simulate``'s one policy from outside the registry: ``--policy FILE.py:CLASS`` or ``--checkpoint DIR``
    (not both), loaded under the limits of the flags; None for a registry name."""
    from kairos_gym.agents.policy_file_loader import policy_from_checkpoint, policy_from_file

    limits, _ = external_limits(args, where)
    if args.checkpoint is not None and args.policy is not None:
        raise ConfigError(where, "--checkpoint", args.checkpoint, "not with --policy (simulate runs one policy: "
                          "a registry name or a FILE.py:CLASS with --policy, or --checkpoint DIR)")
    if args.checkpoint is not None:
        ext = policy_from_checkpoint(args.checkpoint, where, "--checkpoint", trust_checkpoint=_trust(args))
    elif args.policy is not None and is_policy_file(args.policy):
        ext = policy_from_file(args.policy, where, "--policy")
    else:
        return None
    return dataclasses.replace(ext, limits=limits)


__all__ = ["TRUST_HELP", "add_external_flags", "add_limit_flags", "external_limits", "external_policies",
           "is_policy_file", "one_external", "policy_file_help"]
