"""The "discover" command ``kairos-gym traces``: the statistics of the shipped traces and rate profiles
(:mod:`kairos_gym.workload.trace_stats`; the tables of docs/workloads.md), of trace files given by path, or of the
workloads scenarios draw (``--scenarios``; the table of docs/scenarios.md)."""

from __future__ import annotations

import argparse
from typing import Any

from kairos_gym.cli.common import Subparsers, add_command, write_json
from kairos_gym.flags import MAX_LIST, SEED_LIMIT, check_outputs, parse_int, parse_strings


def add_commands(sub: Subparsers) -> None:
    """Register ``traces``."""
    p = add_command(sub, "traces", cmd_traces)
    p.add_argument("traces", nargs="*", metavar="TRACE", help="packaged trace names or trace CSV paths (default: "
                   "every packaged trace, and the packaged rate profile)")
    p.add_argument("--scenarios", metavar="LIST", help="instead: the workload each of these scenarios (comma "
                   f"separated names or YAML paths, at most {MAX_LIST}) draws for --seed")
    p.add_argument("--seed", default="0", help=f"the seed of --scenarios' workloads, a whole number in [0, "
                   f"{SEED_LIMIT})")
    p.add_argument("--json", metavar="PATH", help="write the statistics as JSON ('-': print the JSON instead of the "
                   "tables)")


def scenario_stats(names: list[str], seed: int) -> list[dict[str, Any]]:
    """The :func:`~kairos_gym.workload.trace_stats.workload_stats` of the workload each scenario draws for
    ``seed`` (the simulator's draw: ``generate(workload, default_rng(seed))``), with its ``name``."""
    import numpy as np

    from kairos_gym.scenario import load_scenario
    from kairos_gym.workload import generate
    from kairos_gym.workload.trace_stats import workload_stats

    scenarios = [load_scenario(n) for n in names]  # every name checked before the first draw
    return [{"name": n, **workload_stats(generate(sc.workload, np.random.default_rng(seed)))}
            for n, sc in zip(names, scenarios, strict=True)]


def _num(x: float | None, fmt: str) -> str:
    return "–" if x is None else format(x, fmt)


def _lengths(r: dict[str, Any], side: str) -> str:
    return f"{r[f'{side}_p50']:,.0f} / {r[f'{side}_p99']:,.0f}"


def format_workloads(rows: list[dict[str, Any]], title: str) -> str:
    """The table of :func:`~kairos_gym.workload.trace_stats.workload_stats` rows (each with a ``name``; the
    means, maxima, P95s and empty minutes are in the JSON)."""
    from kairos_gym.table import render_table

    headers = ["name", "requests", "span\n(s)", "rate\n(req/s)", "IAT\nCV",
               "prompt p50 / p99\n(tokens)", "output p50 / p99\n(tokens)",
               "prompt\n(tokens/s)"]
    body = [[r["name"], f"{r['requests']:,}", _num(r["span_s"], ",.0f"), _num(r["rate"], ".3f"),
             _num(r["iat_cv"], ".2f"),
             _lengths(r, "prompt"), _lengths(r, "output"), _num(r["prompt_tokens_per_s"], ",.0f")] for r in rows]
    return render_table(headers, body, title=title, keep=2)


def format_profiles(name: str, rows: list[dict[str, Any]]) -> str:
    """The table of :func:`~kairos_gym.workload.trace_stats.profile_stats` of the profile file ``name``."""
    from kairos_gym.table import render_table

    def spread(s: dict[str, Any] | None) -> str:
        if s is None:
            return "–"
        p = "–" if s["p90_over_p10"] is None else f"{s['p90_over_p10']:.2f}"
        m = "–" if s["max_over_min"] is None else f"{s['max_over_min']:.1f}"
        return f"{s['peak_over_mean']:.2f} / {s['min_over_mean']:.2f} / {p} / {m}"

    headers = ["model", "windows", "window\n(s)", "days", "whole profile: peak / min\nover mean, p90 / p10, max / min",
               "first day: peak / min\nover mean, p90 / p10, max / min"]
    body = [[r["model"], f"{r['windows']:,}", f"{r['window_s']:g}", f"{r['days']:g}", spread(r), spread(r["day1"])]
            for r in rows]
    return render_table(headers, body, title=f"Rate profile {name}: the spread of each model's window rates")


def cmd_traces(args: argparse.Namespace) -> int:
    """``kairos-gym traces``: the tables on stdout, or the JSON."""
    from kairos_gym.errors import ConfigError
    from kairos_gym.workload.trace_stats import packaged_stats, trace_stats

    w = "traces"
    seed = parse_int(w, "--seed", args.seed, 0, SEED_LIMIT - 1)
    check_outputs(w, {"--json": args.json}, stdout_ok=["--json"])
    if args.scenarios is not None:
        if args.traces:
            raise ConfigError(w, "--scenarios", args.scenarios, "either trace files or --scenarios, not both")
        names = parse_strings(w, "--scenarios", args.scenarios, "comma-separated scenario names or YAML paths")
        res: dict[str, Any] = {"seed": seed, "scenarios": scenario_stats(names, seed)}
        tables = [format_workloads(res["scenarios"], f"The workloads the scenarios draw for seed {seed}")]
    elif args.traces:
        if len(args.traces) > MAX_LIST:
            raise ConfigError(w, "TRACE", f"{len(args.traces)} files", f"at most {MAX_LIST}")
        res = {"traces": [trace_stats(t) for t in args.traces]}
        tables = [format_workloads(res["traces"], "Traces")]
    else:
        res = packaged_stats()
        tables = [format_workloads(res["traces"], "The packaged traces (kairos_gym/data/traces/)")]
        tables += [format_profiles(name, rows) for name, rows in res["profiles"].items()]
    if args.json != "-":
        print("\n\n".join(tables))
    write_json(args.json, res)
    return 0
