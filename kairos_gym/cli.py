"""The ``kairos-gym`` command line. Thin: parses flags, calls the library, prints or writes results.

Bad flags exit with status 2 and one line naming the flag, the value and what is allowed.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from kairos_gym.errors import ConfigError

if TYPE_CHECKING:
    from kairos_gym.config import ScenarioConfig

ORACLE_PREFIX = 300
"""Requests of the demo's Oracle run (the first ones of the first seed's workload)."""


def _int_list(flag: str) -> Callable[[str], tuple[int, ...]]:
    def parse(text: str) -> tuple[int, ...]:
        try:
            vals = tuple(int(x) for x in text.split(",") if x.strip())
        except ValueError:
            raise argparse.ArgumentTypeError(f"{flag} = {text!r}: allowed: comma-separated integers") from None
        if not vals or min(vals) < 0:
            raise argparse.ArgumentTypeError(f"{flag} = {text!r}: allowed: comma-separated integers >= 0")
        return vals

    return parse


def _write_json(path: str | None, obj: object) -> None:
    if path is None:
        return
    text = json.dumps(obj, indent=2, sort_keys=True)
    if path == "-":
        print(text)
    else:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        Path(path).write_text(text + "\n", encoding="utf-8")


# ---------------------------------------------------------------------------- latency
def _add_latency(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("latency", help="step-latency table of a model/GPU/TP preset; calibration report and fit")
    p.add_argument("--model", default="deepseek-v2-lite")
    p.add_argument("--gpu", default="a100-80gb")
    p.add_argument("--tp", type=int, default=1)
    p.add_argument("--batches", type=_int_list("--batches"), default=(1, 8, 16, 32, 64))
    p.add_argument("--contexts", type=_int_list("--contexts"), default=(512, 1024, 2048, 4096))
    p.add_argument("--chunks", type=_int_list("--chunks"), default=(128, 256, 512, 1024, 2048))
    p.add_argument("--json", metavar="PATH", help="write the table as JSON ('-' for stdout)")
    p.add_argument("--calibration-report", metavar="PATH", nargs="?", const="docs/calibration.md",
                   help="write the calibration report (default docs/calibration.md)")
    p.add_argument("--fit", action="store_true", help="refit the dense-GEMM parameters to the Vidur data")
    p.add_argument("--bench", action="store_true", help="time the pricing of one Kairos decision")
    p.set_defaults(func=_cmd_latency)


def _cmd_latency(args: argparse.Namespace) -> int:
    from kairos_gym.latency import StepLatencyModel
    from kairos_gym.latency.report import calibration_report_md, format_latency_table, latency_table

    if args.fit:
        from kairos_gym.latency.fit import FIT_PARAMS, fit

        cal, mape = fit()
        print(f"overall MAPE {mape:.3f}% (64..4096 tokens, all models and TPs); put these in calibration.yaml:")
        for k in FIT_PARAMS:
            print(f"  {k}: {getattr(cal, k):.4g}")
        return 0
    if args.calibration_report:
        Path(args.calibration_report).parent.mkdir(parents=True, exist_ok=True)
        Path(args.calibration_report).write_text(calibration_report_md(), encoding="utf-8")
        print(f"wrote {args.calibration_report}")
        return 0
    m = StepLatencyModel.from_preset(args.model, args.gpu, args.tp)
    if args.bench:
        from kairos_gym.latency.bench import bench_pricing

        res = bench_pricing(m)
        for k, v in res.items():
            print(f"{k}: {v}")
        _write_json(args.json, res)
        return 0
    table = latency_table(m, args.batches, args.contexts, args.chunks)
    if args.json == "-":
        _write_json("-", table)
    else:
        print(format_latency_table(table))
        _write_json(args.json, table)
    return 0


# ---------------------------------------------------------------------------- simulate
def _add_simulate(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("simulate", help="run one policy on one scenario and print the summary")
    p.add_argument("--scenario", default="bursty", help="shipped scenario name or YAML path")
    p.add_argument("--policy", default="no-deflect")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--json", metavar="PATH", help="write the summary JSON ('-' for stdout)")
    p.add_argument("--requests-csv", metavar="PATH", help="write the per-request record as CSV")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.set_defaults(func=_cmd_simulate)


def _cmd_simulate(args: argparse.Namespace) -> int:
    from kairos_gym.agents.runner import simulate
    from kairos_gym.config import load_scenario
    from kairos_gym.report import format_summary, write_requests_csv

    sc = load_scenario(args.scenario)
    bar = None
    if not args.no_progress and sys.stderr.isatty():
        from tqdm import tqdm

        bar = tqdm(desc=f"{sc.name}/{args.policy}", unit="req", file=sys.stderr, mininterval=0.5)
    try:
        summary, sim = simulate(args.policy, sc, args.seed, progress=bar.update if bar is not None else None)
    finally:
        if bar is not None:
            bar.close()
    summary["policy"] = args.policy
    if args.json != "-":
        print(format_summary(summary))
    _write_json(args.json, summary)
    if args.requests_csv:
        write_requests_csv(sim, args.requests_csv)
    return 0


# ---------------------------------------------------------------------------- sweep
def _add_sweep(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("sweep", help="load sweep and SQ/SL threshold sweeps against Kairos (and the Oracle)")
    p.add_argument("--scenario", default="bursty")
    p.add_argument("--loads", default="0.5,0.75,1.0,1.25", help="multipliers of the arrival rate ('' for none)")
    p.add_argument("--policies", default="no-deflect,sq,sl,kairos", help="policies of the load sweep")
    p.add_argument("--sq-thresholds", default="2048,8192,32768", help="SQ queue thresholds (tokens)")
    p.add_argument("--sl-thresholds", default="1024,2048,8192", help="SL prompt-length thresholds (tokens)")
    p.add_argument("--chunks", default="512,2048", help="fixed chunk sizes of SQ and SL")
    p.add_argument("--references", default="no-deflect,kairos", help="policies on the threshold plot (e.g. oracle)")
    p.add_argument("--seeds", default="0-2")
    p.add_argument("--json", metavar="PATH")
    p.add_argument("--plots", metavar="DIR")
    p.set_defaults(func=_cmd_sweep)


def _cmd_sweep(args: argparse.Namespace) -> int:
    from kairos_gym.train.evaluate import parse_seeds
    from kairos_gym.train.sweep import format_sweep, parse_floats, sweep

    def names(text: str) -> list[str]:
        return [x.strip() for x in text.split(",") if x.strip()]

    chunks = tuple(int(c) for c in parse_floats("--chunks", args.chunks))
    res = sweep(args.scenario, parse_floats("--loads", args.loads), names(args.policies), parse_seeds(args.seeds),
                tuple(parse_floats("--sq-thresholds", args.sq_thresholds)),
                tuple(parse_floats("--sl-thresholds", args.sl_thresholds)), chunks, names(args.references),
                args.plots)
    print(format_sweep(res))
    if res.get("plots"):
        print("plots: " + ", ".join(res["plots"]))
    _write_json(args.json, res)
    return 0


# ---------------------------------------------------------------------------- results
def _add_results(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("results", help="regenerate docs/results.md: the paper's claims next to the simulator's")
    p.add_argument("--out", default="docs/results.md")
    p.add_argument("--seeds", default="0-4")
    p.add_argument("--trace-seeds", default="0-2")
    p.add_argument("--json", metavar="PATH")
    p.set_defaults(func=_cmd_results)


def _cmd_results(args: argparse.Namespace) -> int:
    from kairos_gym.train.evaluate import parse_seeds
    from kairos_gym.train.results import build_results, results_md

    res = build_results(parse_seeds(args.seeds), parse_seeds(args.trace_seeds))
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(results_md(res), encoding="utf-8")
    print(f"wrote {args.out} ({res['elapsed_s']:.0f} s)")
    _write_json(args.json, res)
    return 0


# ---------------------------------------------------------------------------- leaderboard
def _add_leaderboard(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("leaderboard", help="run the standard suite and write LEADERBOARD.md")
    p.add_argument("--policies", default="no-deflect,always-deflect,sq,sl,kairos,ppo")
    p.add_argument("--out", default="LEADERBOARD.md")
    p.add_argument("--json", metavar="PATH")
    p.set_defaults(func=_cmd_leaderboard)


def _cmd_leaderboard(args: argparse.Namespace) -> int:
    from kairos_gym.train.evaluate import parse_seeds
    from kairos_gym.train.leaderboard import SUITE, leaderboard_md, run_suite

    suite = {n: parse_seeds(s) for n, s in SUITE.items()}
    res = run_suite([p.strip() for p in args.policies.split(",") if p.strip()], suite)
    Path(args.out).write_text(leaderboard_md(res, suite), encoding="utf-8")
    print(f"wrote {args.out} ({res['elapsed_s']:.0f} s)")
    _write_json(args.json, res)
    return 0


# ---------------------------------------------------------------------------- bench
def _add_bench(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("bench", help="throughput of the simulator, the pricing and the env on this machine")
    p.add_argument("--json", metavar="PATH")
    p.add_argument("--env-seconds", type=float, default=3.0, help="length of one env timing run (s)")
    p.add_argument("--env-repeats", type=int, default=3,
                   help="env timing runs per id; the median is reported (the VM's speed drifts)")
    p.set_defaults(func=_cmd_bench)


def _cmd_bench(args: argparse.Namespace) -> int:
    from kairos_gym.bench import run_bench

    if not args.env_seconds > 0:  # checked before the minutes of simulator timing, not after
        raise ConfigError("kairos-gym bench", "--env-seconds", args.env_seconds, "a number of seconds > 0")
    if args.env_repeats < 1:
        raise ConfigError("kairos-gym bench", "--env-repeats", args.env_repeats, "a whole number >= 1")
    res = run_bench(env_seconds=args.env_seconds, env_repeats=args.env_repeats)
    for row in res["simulator"]:
        print(f"simulator {row['scenario']:<11} {row['requests']:>6} requests  {row['wall_time_s']:>7.2f} s wall  "
              f"{row['sim_s_per_wall_s']:>7.1f} sim-s/wall-s  {row['requests_per_wall_s']:>8.1f} req/wall-s")
    pr = res["pricing_us"]
    print(f"pricing   {int(pr['candidates'])} candidates (2 decode nodes x 5 chunks): "
          f"scalar p50 {pr['scalar_us_p50']} us, p99 {pr['scalar_us_p99']} us")
    if isinstance(res["env"], list):
        for row in res["env"]:
            runs = ", ".join(f"{r:,}" for r in row["decisions_per_s_runs"])
            print(f"env       {row['env_id']:<28} {row['decisions_per_s']:>8,.0f} decisions/s median "
                  f"(random masked policy; runs: {runs})")
    else:
        print(f"env       {res['env']}")
    print(f"peak RSS  {res['peak_rss_mib']} MiB")
    _write_json(args.json, res)
    return 0


# ---------------------------------------------------------------------------- evaluate
def _add_evaluate(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("evaluate", help="every policy on the same workloads; table, JSON, plots")
    p.add_argument("--scenario", default="bursty")
    p.add_argument("--policies", default="no-deflect,always-deflect,sq,sl,kairos,ppo")
    p.add_argument("--seeds", default="0-4")
    p.add_argument("--json", metavar="PATH")
    p.add_argument("--plots", metavar="DIR")
    p.set_defaults(func=_cmd_evaluate)


def _cmd_evaluate(args: argparse.Namespace) -> int:
    from kairos_gym.train.evaluate import evaluate, format_table, parse_seeds

    policies = [p.strip() for p in args.policies.split(",") if p.strip()]
    result = evaluate(args.scenario, policies, parse_seeds(args.seeds), args.plots)
    print(format_table(result))
    if result.get("plots"):
        print("plots: " + ", ".join(result["plots"]))
    _write_json(args.json, {"runs": result["runs"]})
    return 0


# ---------------------------------------------------------------------------- demo
def _add_demo(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("demo", help="the main job: evaluate the policies on the default bursty scenario")
    p.add_argument("--scenario", default="bursty", help="shipped scenario name or YAML path (default: bursty)")
    p.add_argument("--out", default="out/demo", help="folder for plots and JSON")
    p.add_argument("--seeds", default="0-2")
    p.set_defaults(func=_cmd_demo)


def _cmd_demo(args: argparse.Namespace) -> int:
    from kairos_gym.latency import StepLatencyModel
    from kairos_gym.latency.report import seed_target_checks
    from kairos_gym.train.evaluate import evaluate, format_table, parse_seeds

    m = StepLatencyModel.from_preset()
    print("Step-latency model (deepseek-v2-lite / a100-80gb / TP1) against the seed targets:")
    for r in seed_target_checks(m):
        print(f"  {r['target']:<48} {r['value_ms']:>12} ms  bound {r['bound_ms']:>8} ms  {'ok' if r['ok'] else 'FAIL'}")
    print()
    from kairos_gym.agents.registry import make_policy

    policies = []
    for name in ("no-deflect", "always-deflect", "random", "sq", "sl", "kairos", "ppo"):
        try:
            make_policy(name, args.scenario)
        except ConfigError as e:  # e.g. no trained checkpoint shipped for ppo
            print(f"(skipping policy {name}: {e})")
            continue
        policies.append(name)
    result = evaluate(args.scenario, policies, parse_seeds(args.seeds), Path(args.out))
    print(format_table(result))
    first_seed = parse_seeds(args.seeds)[0]
    prefix, cap = _oracle_prefix(args.scenario, first_seed)
    oracle = evaluate(prefix, ["no-deflect", "kairos", "oracle"], [first_seed])
    print()
    print(f"Oracle (lookahead over the true simulator) on the first {cap} requests of the seed-{first_seed} "
          f"workload above (max_requests: {cap}, a true prefix):")
    print(format_table(oracle))
    _write_json(str(Path(args.out) / "evaluate.json"), {"runs": result["runs"] + oracle["runs"]})
    print(f"plots and JSON in {args.out}/: " + ", ".join(Path(p).name for p in result["plots"]) + ", evaluate.json")
    return 0


def _oracle_prefix(scenario: str, seed: int, limit: int = ORACLE_PREFIX) -> tuple[ScenarioConfig, int]:
    """The demo's Oracle scenario: ``scenario`` cut to the first ``min(limit, n)`` requests of its
    seed-``seed`` workload (n requests) with ``max_requests``, a true prefix (workloads are prefix-stable,
    docs/workloads.md). The Oracle rolls every option forward, so it only runs on a short prefix."""
    import numpy as np

    from kairos_gym.config import load_scenario
    from kairos_gym.workload import generate

    base = load_scenario(scenario)
    cap = min(limit, len(generate(base.workload, np.random.default_rng(seed))))  # the simulator's draw
    return base.with_overrides({"workload": {"max_requests": cap}}), cap


def _add_train(sub: argparse._SubParsersAction) -> None:
    from kairos_gym.train.cli import add_train_parser

    add_train_parser(sub)


COMMANDS = (
    _add_latency, _add_simulate, _add_evaluate, _add_sweep, _add_results, _add_leaderboard, _add_bench, _add_demo,
    _add_train,
)


def build_parser() -> argparse.ArgumentParser:
    """The argument parser with every subcommand."""
    from kairos_gym import __version__

    parser = argparse.ArgumentParser(prog="kairos-gym", description=__doc__.splitlines()[0])
    parser.add_argument("--version", action="version", version=f"kairos-gym {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    for add in COMMANDS:
        add(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``kairos-gym`` console script."""
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except ConfigError as e:
        print(f"kairos-gym {args.command}: error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
