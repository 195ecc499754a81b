"""``kairos-gym check NAME``: the benchmark's design checks (kairos_gym/benchmark/checks/): does a fault schedule
(``fault-switch``), a two-state MMPP scenario (``mix-shift``) or the regime-shift task (``regime-shift``) make a
policy switch, and what sizing the normalised scores would take (``normalised-sizing``). Each prints markdown
tables on stdout."""

from __future__ import annotations

import argparse

from kairos_gym.cli.common import Subparsers, add_command
from kairos_gym.errors import ConfigError
from kairos_gym.flags import parse_float, parse_int

PREFIX = "check "


def add_commands(sub: Subparsers) -> None:
    """Register ``check`` and its subcommands."""
    p = add_command(sub, "check", None)
    checks = p.add_subparsers(dest="check", required=True, metavar="NAME")
    for add in (_add_fault_switch, _add_mix_shift, _add_regime_shift, _add_normalised_sizing):
        add(checks)


def _add_instance_flags(p: argparse.ArgumentParser, scenario: str, scenario_help: str) -> None:
    """``--scenario``, ``--requests``, ``--seeds`` and ``--grid`` of fault-switch and mix-shift."""
    from kairos_gym.benchmark.checks.mix_shift import MAX_REQUESTS, MAX_SEEDS

    p.add_argument("--scenario", default=scenario, help=f"a shipped scenario name or a YAML path ({scenario_help}; "
                   f"default {scenario})")
    p.add_argument("--requests", default=None,
                   help=f"requests per instance (1-{MAX_REQUESTS:,}; default: the scenario's num_requests)")
    p.add_argument("--seeds", default=str(MAX_SEEDS), help=f"test seeds 0..N-1 (1-{MAX_SEEDS}; default {MAX_SEEDS})")
    p.add_argument("--grid", action="store_true", help="also every rule of the static grid in the episode")


def _instances(args: argparse.Namespace) -> tuple[int | None, int]:
    """The checked ``--requests`` (None: the scenario's) and ``--seeds``."""
    from kairos_gym.benchmark.checks.mix_shift import MAX_REQUESTS, MAX_SEEDS

    w = args.command_name
    requests = None if args.requests is None else parse_int(w, "--requests", args.requests, 1, MAX_REQUESTS)
    return requests, parse_int(w, "--seeds", args.seeds, 1, MAX_SEEDS)


def _add_fault_switch(sub: Subparsers) -> None:
    from kairos_gym.benchmark.suite import TIER_NAMES

    p = add_command(sub, "fault-switch", cmd_fault_switch, "does a scenario's fault schedule make a policy switch? "
                    "The fault-free cluster, then each policy inside and outside the fault windows, per SLO tier",
                    prefix=PREFIX)
    _add_instance_flags(p, "fault-shift", "with a faults: section")
    p.add_argument("--tiers", default=",".join(TIER_NAMES), help="comma-separated SLO tiers (of "
                   f"{', '.join(TIER_NAMES)}; default all)")
    p.add_argument("--oracle", default="0", metavar="N", help="also the Oracle on the first N test seeds of every "
                   "tier (0-the number of seeds; default 0: ~15-90 s per 500-request instance)")


def cmd_fault_switch(args: argparse.Namespace) -> int:
    """``kairos-gym check fault-switch``."""
    from kairos_gym.benchmark.checks.fault_switch import report
    from kairos_gym.benchmark.suite import TIER_NAMES

    requests, seeds = _instances(args)
    oracle = parse_int(args.command_name, "--oracle", args.oracle, 0, seeds)
    tiers = args.tiers.split(",")
    if len(set(tiers)) != len(tiers) or any(t not in TIER_NAMES for t in tiers):
        raise ConfigError(args.command_name, "--tiers", args.tiers, f"distinct names of {', '.join(TIER_NAMES)}")
    return report(args.scenario, requests, seeds, tiers, args.grid, oracle)


def _add_mix_shift(sub: Subparsers) -> None:
    p = add_command(sub, "mix-shift", cmd_mix_shift, "does a two-state MMPP scenario make a policy switch? Each "
                    "state alone, then each policy per state, per SLO tier", prefix=PREFIX)
    _add_instance_flags(p, "mix-shift", "MMPP arrivals, by_state lengths")
    p.add_argument("--kv", action="store_true", help="also the mean KV preemptions per run (n_preemptions) in "
                   "every table")


def cmd_mix_shift(args: argparse.Namespace) -> int:
    """``kairos-gym check mix-shift``."""
    from kairos_gym.benchmark.checks.mix_shift import report

    requests, seeds = _instances(args)
    return report(args.scenario, requests, seeds, args.grid, args.kv)


def _add_regime_shift(sub: Subparsers) -> None:
    from kairos_gym.benchmark.checks.regime_shift import MAX_SEEDS

    p = add_command(sub, "regime-shift", cmd_regime_shift, "does the regime-shift task make a policy switch? SLO "
                    "attainment overall and per MMPP state, per tier", prefix=PREFIX)
    p.add_argument("--seeds", default=str(MAX_SEEDS), help=f"test seeds 0..N-1 (1-{MAX_SEEDS}; default {MAX_SEEDS})")


def cmd_regime_shift(args: argparse.Namespace) -> int:
    """``kairos-gym check regime-shift``."""
    from kairos_gym.benchmark.checks.regime_shift import MAX_SEEDS, report

    report(parse_int(args.command_name, "--seeds", args.seeds, 1, MAX_SEEDS))
    return 0


def _add_normalised_sizing(sub: Subparsers) -> None:
    p = add_command(sub, "normalised-sizing", cmd_normalised_sizing, "what sizing the normalised scores would take: "
                    "from an oracle-precision --json file, the widest interval per task and the instances that "
                    "would bring every one to the target", prefix=PREFIX)
    p.add_argument("json", help="an oracle-precision --json file")
    p.add_argument("--half-width", default="0.05", help="target half-width of every normalised score's 95%% "
                   "interval, in (0, 1] (default 0.05)")


def cmd_normalised_sizing(args: argparse.Namespace) -> int:
    """``kairos-gym check normalised-sizing``."""
    from kairos_gym.benchmark.checks.normalised_sizing import report

    report(args.json, parse_float(args.command_name, "--half-width", args.half_width, 0.0, 1.0))
    return 0
