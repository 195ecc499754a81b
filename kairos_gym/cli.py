"""The ``kairos-gym`` command line. Thin: parses flags, calls the library, prints or writes results.

Every flag value and every output path is checked before any work starts (:mod:`kairos_gym.flags`): a bad
one exits with status 2 and one line naming the flag, the value and what is allowed. Tables go to stdout
(:func:`kairos_gym.table.render_table`, at most 120 columns); progress bars to stderr, only on a terminal
(``--no-progress`` turns them off).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from kairos_gym.errors import ConfigError
from kairos_gym.evaluation.backends import BackendError, add_backend_flags, backend_from_args
from kairos_gym.flags import (
    MAX_BENCH_REPEATS,
    MAX_BENCH_SECONDS,
    MAX_LIST,
    MAX_SEEDS,
    SEED_LIMIT,
    check_outputs,
    parse_float,
    parse_float_list,
    parse_int,
    parse_int_list,
    parse_seeds,
)

if TYPE_CHECKING:
    from kairos_gym.progress import RunProgress
    from kairos_gym.scenario import ScenarioConfig
    from kairos_gym.sim import Simulator

SEEDS_HELP = (f"seeds as a comma list and/or ranges a-b, e.g. 0-4 or 0,3,7 (distinct, each below {SEED_LIMIT}, at "
              f"most {MAX_SEEDS}; every policy runs on the same seeds)")
JSON_HELP = "write the results as JSON to this file ('-': print the JSON instead of the table)"
NO_PROGRESS_HELP = "no progress bar (bars go to stderr, and only when it is a terminal)"
MAX_BATCH = 4096
"""Largest ``latency --batches`` value (decode requests in one step)."""
MAX_CONTEXT = 1 << 20
"""Largest ``latency --contexts`` value (tokens)."""
MAX_CHUNK = 1 << 16
"""Largest ``latency --chunks`` / ``sweep --chunks`` value (tokens)."""

ORACLE_PREFIX = 300
"""Requests of the demo's Oracle run (the first ones of the first seed's workload)."""


def _progress(args: argparse.Namespace, desc: str) -> RunProgress:
    """The run counter of a command: a bar on stderr when it is a terminal and --no-progress is not given."""
    from kairos_gym.progress import RunProgress, progress_enabled

    return RunProgress(desc, enabled=progress_enabled(getattr(args, "no_progress", False)))


def _names(text: str) -> list[str]:
    return [x.strip() for x in text.split(",") if x.strip()]


def _command_line(args: argparse.Namespace, name: str) -> str:
    """The command as typed (or as main() was called), for the headers of generated reports."""
    import shlex

    return " ".join([getattr(args, "prog", "kairos-gym"), shlex.join(getattr(args, "argv", [name]))])


def _write_text(path: str, text: str) -> None:
    """Write a generated report (its folder created)."""
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    Path(path).write_text(text, encoding="utf-8")


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
    p.add_argument("--model", default="deepseek-v2-lite", help="model preset (kairos_gym/data/models.yaml)")
    p.add_argument("--gpu", default="a100-80gb", help="GPU preset (kairos_gym/data/hardware.yaml)")
    p.add_argument("--tp", default="1", help="tensor-parallel degree: 1, 2, 4 or 8")
    p.add_argument("--batches", default="1,8,16,32,64",
                   help=f"decode batch sizes, distinct, 1..{MAX_BATCH}, at most {MAX_LIST}")
    p.add_argument("--contexts", default="512,1024,2048,4096",
                   help=f"context length of each decode request (tokens), 1..{MAX_CONTEXT}, at most {MAX_LIST}")
    p.add_argument("--chunks", default="128,256,512,1024,2048",
                   help=f"deflected chunk sizes (tokens), 1..{MAX_CHUNK}, at most {MAX_LIST}")
    p.add_argument("--json", metavar="PATH", help="write the table as JSON ('-' for stdout)")
    p.add_argument("--calibration-report", metavar="PATH", nargs="?", const="docs/calibration.md",
                   help="write the calibration report (default docs/calibration.md)")
    p.add_argument("--fit", action="store_true", help="refit the dense-GEMM parameters to the Vidur data")
    p.add_argument("--bench", action="store_true", help="time the pricing of one Kairos decision")
    p.set_defaults(func=_cmd_latency)


def _cmd_latency(args: argparse.Namespace) -> int:
    from kairos_gym.latency import StepLatencyModel
    from kairos_gym.latency.report import calibration_report_md, format_latency_table, latency_table

    w = "latency"
    tp = parse_int(w, "--tp", args.tp, 1, 64)
    batches = parse_int_list(w, "--batches", args.batches, 1, MAX_BATCH)
    contexts = parse_int_list(w, "--contexts", args.contexts, 1, MAX_CONTEXT)
    chunks = parse_int_list(w, "--chunks", args.chunks, 1, MAX_CHUNK)
    check_outputs(w, {"--json": args.json, "--calibration-report": args.calibration_report}, stdout_ok=["--json"])
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
    m = StepLatencyModel.from_preset(args.model, args.gpu, tp)
    if args.bench:
        from kairos_gym.perf.pricing_speed import bench_pricing

        res = bench_pricing(m)
        for k, v in res.items():
            print(f"{k}: {v}")
        _write_json(args.json, res)
        return 0
    table = latency_table(m, batches, contexts, chunks)
    if args.json == "-":
        _write_json("-", table)
    else:
        print(format_latency_table(table))
        _write_json(args.json, table)
    return 0


# ---------------------------------------------------------------------------- simulate
def _add_simulate(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("simulate", help="run one policy on one scenario and print the summary")
    p.add_argument("--scenario", default="bursty", help="shipped scenario name or YAML path (default: bursty)")
    p.add_argument("--policy", default="no-deflect", help="registry name of the policy (docs/policies.md)")
    p.add_argument("--seed", default="0", help=f"workload seed, a whole number in [0, {SEED_LIMIT})")
    p.add_argument("--json", metavar="PATH", help="write the summary JSON ('-' for stdout)")
    p.add_argument("--requests-csv", metavar="PATH", help="write the per-request record as CSV (with metrics.mode: "
                   "streaming, row by row as requests settle, in that order)")
    p.add_argument("--no-progress", action="store_true", help=NO_PROGRESS_HELP)
    p.set_defaults(func=_cmd_simulate)


def _cmd_simulate(args: argparse.Namespace) -> int:
    from kairos_gym.agents.registry import make_policy
    from kairos_gym.agents.runner import simulate
    from kairos_gym.scenario import load_scenario
    from kairos_gym.sim.requests_csv import write_requests_csv
    from kairos_gym.table import format_summary

    seed = parse_int("simulate", "--seed", args.seed, 0, SEED_LIMIT - 1)
    check_outputs("simulate", {"--json": args.json, "--requests-csv": args.requests_csv}, stdout_ok=["--json"])
    sc = load_scenario(args.scenario)
    make_policy(args.policy, sc, seed)  # a bad name or parameter fails here, before the run
    bar = None
    if not args.no_progress and sys.stderr.isatty():
        from tqdm import tqdm

        bar = tqdm(desc=f"{sc.name}/{args.policy}", unit="req", file=sys.stderr, mininterval=0.5)
    streamed = None  # metrics.mode streaming: the CSV is written as requests settle, never held whole
    if args.requests_csv and sc.metrics.mode == "streaming":
        import csv

        Path(args.requests_csv).parent.mkdir(parents=True, exist_ok=True)
        streamed = open(args.requests_csv, "w", newline="", encoding="utf-8")  # closed below
        writer = csv.writer(streamed)

        def setup(sim: Simulator) -> None:
            writer.writerow(sim.stream_requests_csv(writer.writerow))
    try:
        summary, sim = simulate(args.policy, sc, seed, progress=bar.update if bar is not None else None,
                                setup=setup if streamed is not None else None)
    finally:
        if bar is not None:
            bar.close()
        if streamed is not None:
            streamed.close()
    summary["policy"] = args.policy
    if args.json != "-":
        print(format_summary(summary))
    _write_json(args.json, summary)
    if args.requests_csv and streamed is None:
        write_requests_csv(sim, args.requests_csv)
    return 0


# ---------------------------------------------------------------------------- sweep
def _add_sweep(sub: argparse._SubParsersAction) -> None:
    from kairos_gym.evaluation.sweep import MAX_LOAD, MAX_THRESHOLD

    p = sub.add_parser("sweep", help="load sweep and SQ/SL threshold sweeps against Kairos (and the Oracle)")
    p.add_argument("--scenario", default="bursty", help="shipped scenario name or YAML path (default: bursty)")
    p.add_argument("--loads", default="0.5,0.75,1.0,1.25",
                   help=f"multipliers of the arrival rate, each in (0, {MAX_LOAD:g}], at most {MAX_LIST} ('' for no "
                   "load sweep)")
    p.add_argument("--policies", default="no-deflect,sq,sl,kairos", help="policies of the load sweep (registry names)")
    p.add_argument("--sq-thresholds", default="2048,8192,32768",
                   help=f"SQ queue thresholds (tokens), each in [0, {MAX_THRESHOLD:g}], at most {MAX_LIST}")
    p.add_argument("--sl-thresholds", default="1024,2048,8192",
                   help=f"SL prompt-length thresholds (tokens), each in [0, {MAX_THRESHOLD:g}], at most {MAX_LIST}")
    p.add_argument("--chunks", default="512,2048",
                   help="fixed chunk sizes (tokens, whole numbers from the scenario's chunk menu) of SQ and SL; "
                   "'' for no threshold sweep")
    p.add_argument("--references", default="no-deflect,kairos",
                   help="policies shown beside SQ/SL on the threshold plot (e.g. add oracle)")
    p.add_argument("--seeds", default="0-2", help=SEEDS_HELP)
    p.add_argument("--json", metavar="PATH", help=JSON_HELP)
    p.add_argument("--plots", metavar="DIR", help="write slo_vs_load.png and pareto_ttft_tbt.png into this folder")
    p.add_argument("--no-progress", action="store_true", help=NO_PROGRESS_HELP)
    add_backend_flags(p)
    p.set_defaults(func=_cmd_sweep)


def _cmd_sweep(args: argparse.Namespace) -> int:
    from kairos_gym.agents.registry import POLICIES
    from kairos_gym.evaluation.sweep import MAX_LOAD, MAX_THRESHOLD, format_sweep, sweep
    from kairos_gym.flags import parse_names

    w = "sweep"
    seeds = parse_seeds(args.seeds, "--seeds", w)
    loads = parse_float_list(w, "--loads", args.loads, 0.0, MAX_LOAD)
    sq = parse_float_list(w, "--sq-thresholds", args.sq_thresholds, 0.0, MAX_THRESHOLD, lo_open=False)
    sl = parse_float_list(w, "--sl-thresholds", args.sl_thresholds, 0.0, MAX_THRESHOLD, lo_open=False)
    chunks = parse_int_list(w, "--chunks", args.chunks, 0, MAX_CHUNK, empty_ok=True)
    policies = parse_names(w, "--policies", args.policies, POLICIES, empty_ok=not loads)
    refs = parse_names(w, "--references", args.references, POLICIES, empty_ok=True)
    check_outputs(w, {"--json": args.json}, {"--plots": (args.plots, ("slo_vs_load.png", "pareto_ttft_tbt.png"))},
                  stdout_ok=["--json"])
    with backend_from_args(w, args) as backend, _progress(args, "sweep") as bar:
        res = sweep(args.scenario, list(loads), policies, seeds, sq, sl, chunks if (sq or sl) else (), refs,
                    args.plots, progress=bar, backend=backend)
    if args.json != "-":
        print(format_sweep(res))
        if res.get("plots"):
            print("plots: " + ", ".join(res["plots"]))
    _write_json(args.json, res)
    return 0


# ---------------------------------------------------------------------------- results
def _add_results(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("results", help="regenerate results/paper-claims.md: the paper's claims next to the simulator's")
    p.add_argument("--out", default="results/paper-claims.md",
                   help="markdown file to write (default results/paper-claims.md)")
    p.add_argument("--seeds", default="0-4", help="instances of the synthetic scenarios and of the Oracle "
                   "(trace instances are fixed windows); " + SEEDS_HELP)
    p.add_argument("--json", metavar="PATH", help="also write every figure as JSON to this file")
    p.add_argument("--no-progress", action="store_true", help=NO_PROGRESS_HELP)
    p.set_defaults(func=_cmd_results)


def _cmd_results(args: argparse.Namespace) -> int:
    from kairos_gym.benchmark.paper_claims import build_results, results_md

    seeds = parse_seeds(args.seeds, "--seeds", "results")
    check_outputs("results", {"--out": args.out, "--json": args.json})
    with _progress(args, "results") as bar:
        res = build_results(seeds, progress=bar)
    _write_text(args.out, results_md(res))
    print(f"wrote {args.out} ({res['elapsed_s']:.0f} s)")
    _write_json(args.json, res)
    return 0


# ---------------------------------------------------------------------------- leaderboard
def _add_leaderboard(sub: argparse._SubParsersAction) -> None:
    from kairos_gym.benchmark.entries import DEFAULT_POLICIES, MAX_EXTERNAL, REQUIRED
    from kairos_gym.benchmark.suite import SUITE, TIER_NAMES

    p = sub.add_parser("leaderboard",
                       help="run the standard suite and write results/leaderboard.md (docs/benchmark.md)")
    p.add_argument("--policies", default=DEFAULT_POLICIES,
                   help="registry names and best-static (the static rule tuned on the train instances), each once; "
                   f"must include {', '.join(REQUIRED)}. Every one runs every task of the suite (docs/benchmark.md)")
    p.add_argument("--tasks", default=None, metavar="NAMES",
                   help="run only these tasks (comma-separated): task names, family names (every tier of it: "
                   + ", ".join(dict.fromkeys(t.family for t in SUITE)) + ") or tier names (every family at it: "
                   + ", ".join(TIER_NAMES) + "); default: the whole suite")
    p.add_argument("--policy", action="append", default=[], metavar="FILE.py:CLASS",
                   help="also rank the class CLASS of the Python file FILE.py (repeatable). This RUNS the file, as "
                   "'python FILE.py' would: only your own or trusted code. The class needs decide(ctx) -> Decision; "
                   f"it is built with scenario= and seed= when its __init__ takes them (at most {MAX_EXTERNAL} "
                   "--policy/--checkpoint in all)")
    p.add_argument("--checkpoint", action="append", default=[], metavar="DIR",
                   help="also rank the trained agent of this safe-format checkpoint folder (policy.json, policy.npz; "
                   "or a run folder), repeatable; nothing is unpickled")
    p.add_argument("--track", default="both", metavar="exact|realistic|both",
                   help="information track(s) to run (docs/benchmark.md): every policy on every task of each, one "
                   "section per track (kairos-exact, the reference, always on exact); default both")
    p.add_argument("--out", default="results/leaderboard.md",
                   help="markdown file to write (default results/leaderboard.md)")
    p.add_argument("--json", metavar="PATH", help="also write every figure, score and interval as JSON to this file "
                   "(one track: its result; both: {\"tracks\": {track: result}})")
    p.add_argument("--oracle-cache", default=None, metavar="PATH",
                   help="the Oracle's cached per-instance scores (default: "
                   "kairos_gym/benchmark/oracle_cache.json; regenerate with "
                   "python -m kairos_gym.benchmark.oracle_cache); instances without a valid entry run the Oracle")
    p.add_argument("--no-progress", action="store_true", help=NO_PROGRESS_HELP)
    add_backend_flags(p)
    p.set_defaults(func=_cmd_leaderboard)


def _cmd_leaderboard(args: argparse.Namespace) -> int:

    from kairos_gym.agents.policy_file_loader import policy_from_checkpoint, policy_from_file
    from kairos_gym.agents.registry import POLICIES
    from kairos_gym.benchmark.entries import BEST_STATIC, MAX_EXTERNAL, check_entries
    from kairos_gym.benchmark.leaderboard import run_tracks
    from kairos_gym.benchmark.leaderboard_report import tracks_md
    from kairos_gym.benchmark.suite import parse_tracks, select_tasks
    from kairos_gym.flags import parse_names

    w = "leaderboard"
    policies = parse_names(w, "--policies", args.policies, [*POLICIES, BEST_STATIC])
    tracks = parse_tracks(args.track)
    suite = None if args.tasks is None else select_tasks(args.tasks)
    check_outputs(w, {"--out": args.out, "--json": args.json})
    if len(args.policy) + len(args.checkpoint) > MAX_EXTERNAL:
        raise ConfigError(w, "--policy/--checkpoint", len(args.policy) + len(args.checkpoint),
                          f"at most {MAX_EXTERNAL} entries in all")
    check_entries(policies, [])
    from kairos_gym.benchmark import oracle_cache

    cache = oracle_cache.CACHE if args.oracle_cache is None else Path(args.oracle_cache)
    oracle_cache.load(cache)  # a bad cache file fails here, before any run
    externals = [policy_from_file(s, w, "--policy") for s in args.policy]
    externals += [policy_from_checkpoint(d, w, "--checkpoint") for d in args.checkpoint]
    command = _command_line(args, "leaderboard")
    with backend_from_args(w, args) as backend, _progress(args, "leaderboard") as bar:
        res = run_tracks(tracks, policies, externals, suite=suite, progress=bar, command=command,
                         oracle_cache=cache, backend=backend)
    _write_text(args.out, tracks_md(res))
    print(f"wrote {args.out} ({res['elapsed_s']:.0f} s)")
    _write_json(args.json, res["tracks"][tracks[0]] if len(tracks) == 1 else res)
    return 0


# ---------------------------------------------------------------------------- precision
def _add_precision(sub: argparse._SubParsersAction) -> None:
    from kairos_gym.benchmark.entries import MAX_EXTERNAL
    from kairos_gym.benchmark.precision import (
        DEFAULT_MAX_INSTANCES,
        DEFAULT_POLICIES,
        HALF_WIDTH,
        MAX_HALF_WIDTH,
        MAX_INSTANCES,
        MAX_PILOT,
        MIN_PILOT,
        PILOT,
    )
    from kairos_gym.benchmark.suite import SUITE, TIER_NAMES

    p = sub.add_parser("precision", help="Stein's two-stage protocol: enough instances per task for the target "
                       "interval of each policy's mean (docs/benchmark.md); writes results/precision.md")
    p.add_argument("--policies", default=DEFAULT_POLICIES,
                   help="registry names and best-static, each once (the Oracle is refused: 2-60 s per instance); "
                   "default: the leaderboard's default policies but the Oracle")
    p.add_argument("--tasks", default=None, metavar="NAMES",
                   help="task names, family names (" + ", ".join(dict.fromkeys(t.family for t in SUITE))
                   + ") or tier names (" + ", ".join(TIER_NAMES) + "), comma-separated; default: the whole suite")
    p.add_argument("--policy", action="append", default=[], metavar="FILE.py:CLASS",
                   help="also measure the class CLASS of the Python file FILE.py (repeatable; runs in this process). "
                   "This RUNS the file, as 'python FILE.py' would: only your own or trusted code. The class needs "
                   "decide(ctx) -> Decision; it is built with scenario= and seed= when its __init__ takes them (at "
                   f"most {MAX_EXTERNAL} --policy/--checkpoint in all)")
    p.add_argument("--checkpoint", action="append", default=[], metavar="DIR",
                   help="also measure the trained agent of this safe-format checkpoint folder (repeatable; runs in "
                   "this process)")
    p.add_argument("--track", default="both", metavar="exact|realistic|both",
                   help="information track(s) (kairos-exact always on exact); default both")
    p.add_argument("--half-width", default=str(HALF_WIDTH), metavar="D",
                   help=f"target half-width of the 95%% interval of a mean SLO attainment, in (0, {MAX_HALF_WIDTH:g}] "
                   f"(default {HALF_WIDTH:g}: an interval narrower than 2 SLO-attainment points)")
    p.add_argument("--pilot", default=str(PILOT), metavar="N0",
                   help=f"stage-1 instances per (task, policy, track), {MIN_PILOT}..{MAX_PILOT} (default {PILOT})")
    p.add_argument("--max-instances", default=str(DEFAULT_MAX_INSTANCES), metavar="N",
                   help=f"cap on a cell's instances, --pilot + 1..{MAX_INSTANCES} (default {DEFAULT_MAX_INSTANCES})")
    p.add_argument("--resume", metavar="PATH", help="an earlier run's --json file: its per-instance scores are used "
                   "instead of re-running (each reused cell's instance 0 is re-run and must be equal; new tasks, "
                   "policies or instances run), so the result is a fresh run's")
    p.add_argument("--out", default="results/precision.md",
                   help="markdown file to write (default results/precision.md)")
    p.add_argument("--json", metavar="PATH", help="also write every cell (per-instance scores included) as JSON")
    p.add_argument("--no-progress", action="store_true", help=NO_PROGRESS_HELP)
    add_backend_flags(p)
    p.set_defaults(func=_cmd_precision)


def _cmd_precision(args: argparse.Namespace) -> int:

    from kairos_gym.agents.policy_file_loader import policy_from_checkpoint, policy_from_file
    from kairos_gym.agents.registry import POLICIES
    from kairos_gym.benchmark.entries import BEST_STATIC, MAX_EXTERNAL
    from kairos_gym.benchmark.precision import (
        MAX_HALF_WIDTH,
        MAX_INSTANCES,
        MAX_PILOT,
        MIN_PILOT,
        WHERE,
        check_policy_names,
        check_settings,
        precision_md,
        run_precision,
    )
    from kairos_gym.benchmark.precision_resume import load_precision_resume
    from kairos_gym.benchmark.suite import parse_tracks, select_tasks
    from kairos_gym.flags import parse_names

    w = WHERE
    policies = parse_names(w, "--policies", args.policies, [*POLICIES, BEST_STATIC])
    tracks = parse_tracks(args.track, where=w)
    suite = None if args.tasks is None else select_tasks(args.tasks, where=w)
    half = parse_float(w, "--half-width", args.half_width, 0.0, MAX_HALF_WIDTH)
    pilot = parse_int(w, "--pilot", args.pilot, MIN_PILOT, MAX_PILOT)
    cap = parse_int(w, "--max-instances", args.max_instances, pilot + 1, MAX_INSTANCES)
    check_settings(half, pilot, cap)
    check_outputs(w, {"--out": args.out, "--json": args.json})
    check_policy_names(policies, [])
    if len(args.policy) + len(args.checkpoint) > MAX_EXTERNAL:
        raise ConfigError(w, "--policy/--checkpoint", len(args.policy) + len(args.checkpoint),
                          f"at most {MAX_EXTERNAL} entries in all")
    externals = [policy_from_file(s, w, "--policy") for s in args.policy]
    externals += [policy_from_checkpoint(d, w, "--checkpoint") for d in args.checkpoint]
    check_policy_names(policies, externals)
    resume = None if args.resume is None else load_precision_resume(args.resume, w, MAX_INSTANCES)
    command = _command_line(args, "precision")
    with backend_from_args(w, args) as backend, _progress(args, "precision") as bar:
        res = run_precision(policies, externals, suite=suite, tracks=tracks, half_width=half, pilot=pilot,
                            max_instances=cap, progress=bar, command=command, backend=backend, resume=resume)
    _write_text(args.out, precision_md(res))
    print(f"wrote {args.out} ({res['elapsed_s']:.0f} s, {res['runs']:,} runs)")
    _write_json(args.json, res)
    return 0


# ---------------------------------------------------------------------------- oracle-precision
def _add_oracle_precision(sub: argparse._SubParsersAction) -> None:
    from kairos_gym.benchmark.oracle_precision import (
        COST_RATIO,
        DEFAULT_MAX_INSTANCES,
        DEFAULT_MAX_ORACLE,
        DEFAULT_POLICIES,
        HALF_WIDTH,
        MAX_COST_RATIO,
        MAX_HALF_WIDTH,
        MAX_ORACLE,
        MAX_PILOT,
        MAX_ROUNDS,
        MIN_PILOT,
        PILOT,
        ROUNDS,
        TRACK,
    )
    from kairos_gym.benchmark.precision import MAX_INSTANCES
    from kairos_gym.benchmark.suite import SUITE, TIER_NAMES, TRACKS

    p = sub.add_parser("oracle-precision", help="two-phase sampling of the Oracle's per-task means, headroom and "
                       "normalised scores to a target interval (docs/benchmark.md); writes results/oracle-precision.md")
    p.add_argument("--policies", default=DEFAULT_POLICIES,
                   help="phase-1 policies: registry names and best-static, each once, including the Oracle's bases "
                   "(no-deflect, kairos-exact, always-deflect-ls, sq-ls, sl-ls, best-static); default: the "
                   "leaderboard's default policies but the Oracle")
    p.add_argument("--tasks", default=None, metavar="NAMES",
                   help="task names, family names (" + ", ".join(dict.fromkeys(t.family for t in SUITE))
                   + ") or tier names (" + ", ".join(TIER_NAMES) + "), comma-separated; default: the whole suite")
    p.add_argument("--half-width", default=str(HALF_WIDTH), metavar="D",
                   help=f"target half-width of the 95%% interval of the Oracle's mean SLO attainment, in (0, "
                   f"{MAX_HALF_WIDTH:g}] (default {HALF_WIDTH:g})")
    p.add_argument("--pilot", default=str(PILOT), metavar="N0",
                   help=f"pilot instances per task (both phases), {MIN_PILOT}..{MAX_PILOT} (default {PILOT})")
    p.add_argument("--cost-ratio", default=f"{COST_RATIO:g}", metavar="R",
                   help=f"cost of one Oracle instance in phase-1 instances, for the sizes' split, in [1, "
                   f"{MAX_COST_RATIO:g}] (default {COST_RATIO:g})")
    p.add_argument("--max-instances", default=str(DEFAULT_MAX_INSTANCES), metavar="N1",
                   help=f"cap on phase-1 instances per task, --max-oracle..{MAX_INSTANCES} (default "
                   f"{DEFAULT_MAX_INSTANCES})")
    p.add_argument("--max-oracle", default=str(DEFAULT_MAX_ORACLE), metavar="N2",
                   help=f"cap on Oracle instances per task, --pilot + 1..{MAX_ORACLE} (default {DEFAULT_MAX_ORACLE})")
    p.add_argument("--rounds", default=str(ROUNDS), metavar="R",
                   help=f"sizing rounds, 2..{MAX_ROUNDS}: the pilot, sizes from the pilot, then re-sizing from all the "
                   f"data where a task's half-width is still above the target (default {ROUNDS})")
    p.add_argument("--resume", default=None, metavar="JSON",
                   help="an earlier run's --json file: its per-instance scores are used instead of re-running (each "
                   "task's first instance of every entry is re-run and must be equal): the result of a fresh run")
    p.add_argument("--oracle-cache", default=None, metavar="PATH",
                   help="cached Oracle scores read where valid (default: kairos_gym/benchmark/oracle_cache.json)")
    p.add_argument("--track", default=TRACK, metavar="TRACK",
                   help=", ".join(TRACKS) + ": information track of the phase-1 policies (default exact; "
                   "realistic: the Oracle's bases also run on the exact track, as its rollouts do)")
    p.add_argument("--out", default=None, help="markdown file to write (default results/oracle-precision.md, "
                   "results/oracle-precision-realistic.md with --track realistic)")
    p.add_argument("--json", metavar="PATH", help="also write every task's figures (per-instance scores included) "
                   "as JSON")
    p.add_argument("--no-progress", action="store_true", help=NO_PROGRESS_HELP)
    add_backend_flags(p)
    p.set_defaults(func=_cmd_oracle_precision)


def _cmd_oracle_precision(args: argparse.Namespace) -> int:

    from kairos_gym.agents.registry import POLICIES
    from kairos_gym.benchmark import oracle_cache
    from kairos_gym.benchmark.entries import BEST_STATIC
    from kairos_gym.benchmark.oracle_precision import (
        MAX_COST_RATIO,
        MAX_HALF_WIDTH,
        MAX_ORACLE,
        MAX_PILOT,
        MAX_ROUNDS,
        MIN_PILOT,
        WHERE,
        check_policy_names,
        check_settings,
        check_track,
        load_resume,
        oracle_precision_md,
        run_oracle_precision,
    )
    from kairos_gym.benchmark.precision import MAX_INSTANCES
    from kairos_gym.benchmark.suite import select_tasks
    from kairos_gym.flags import parse_names

    w = WHERE
    policies = parse_names(w, "--policies", args.policies, [*POLICIES, BEST_STATIC])
    suite = None if args.tasks is None else select_tasks(args.tasks, where=w)
    half = parse_float(w, "--half-width", args.half_width, 0.0, MAX_HALF_WIDTH)
    pilot = parse_int(w, "--pilot", args.pilot, MIN_PILOT, MAX_PILOT)
    ratio = parse_float(w, "--cost-ratio", args.cost_ratio, 1.0, MAX_COST_RATIO, lo_open=False)
    n2 = parse_int(w, "--max-oracle", args.max_oracle, pilot + 1, MAX_ORACLE)
    n1 = parse_int(w, "--max-instances", args.max_instances, n2, MAX_INSTANCES)
    rounds = parse_int(w, "--rounds", args.rounds, 2, MAX_ROUNDS)
    check_settings(half, pilot, ratio, n1, n2, rounds)
    check_track(args.track)
    out = args.out or ("results/oracle-precision.md" if args.track == "exact"
                       else "results/oracle-precision-realistic.md")
    check_outputs(w, {"--out": out, "--json": args.json})
    check_policy_names(policies)
    resume = None if args.resume is None else load_resume(args.resume)
    cache = oracle_cache.CACHE if args.oracle_cache is None else Path(args.oracle_cache)
    oracle_cache.load(cache)  # a bad cache file fails here, before any run
    command = _command_line(args, "oracle-precision")
    with backend_from_args(w, args) as backend, _progress(args, "oracle-precision") as bar:
        res = run_oracle_precision(policies, suite=suite, half_width=half, pilot=pilot, cost_ratio=ratio,
                                   max_instances=n1, max_oracle=n2, progress=bar, command=command, backend=backend,
                                   oracle_cache=cache, rounds=rounds, resume=resume, track=args.track)
    if args.resume is not None:
        res["resumed_from"] = args.resume
    _write_text(out, oracle_precision_md(res))
    print(f"wrote {out} ({res['elapsed_s']:.0f} s, {res['oracle_runs']:,} Oracle instances, "
          f"{res['phase1_runs']:,} phase-1 runs)")
    _write_json(args.json, res)
    return 0


# ---------------------------------------------------------------------------- bench
def _add_bench(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("bench", help="throughput of the simulator, the pricing and the env on this machine")
    p.add_argument("--json", metavar="PATH", help=JSON_HELP)
    p.add_argument("--env-seconds", default="3.0",
                   help=f"length of one env timing run (seconds, finite, > 0 and <= {MAX_BENCH_SECONDS:g})")
    p.add_argument("--env-repeats", default="3",
                   help=f"env timing runs per id, 1..{MAX_BENCH_REPEATS}; the median is reported (the VM's speed "
                   "drifts)")
    p.set_defaults(func=_cmd_bench)


def _cmd_bench(args: argparse.Namespace) -> int:
    from kairos_gym.perf.throughput import run_bench
    from kairos_gym.table import render_table

    # checked before the minutes of simulator timing, not after
    seconds = parse_float("bench", "--env-seconds", args.env_seconds, 0.0, MAX_BENCH_SECONDS)
    repeats = parse_int("bench", "--env-repeats", args.env_repeats, 1, MAX_BENCH_REPEATS)
    check_outputs("bench", {"--json": args.json}, stdout_ok=["--json"])
    res = run_bench(env_seconds=seconds, env_repeats=repeats)
    if args.json == "-":
        _write_json("-", res)
        return 0
    print(render_table(
        ["simulator\n(no-deflect)", "requests", "wall\n(s)", "sim-s /\nwall-s", "requests /\nwall-s"],
        [[r["scenario"], f"{r['requests']:,}", f"{r['wall_time_s']:.2f}", f"{r['sim_s_per_wall_s']:.1f}",
          f"{r['requests_per_wall_s']:.1f}"] for r in res["simulator"]]))
    pr = res["pricing_us"]
    print(f"\npricing: {int(pr['candidates'])} candidates (2 decode nodes x 5 chunks): "
          f"scalar p50 {pr['scalar_us_p50']} us, p99 {pr['scalar_us_p99']} us")
    if isinstance(res["env"], list):
        print()
        print(render_table(
            ["env id (random masked policy)", "decisions/s\n(median)", "decisions/s of each run"],
            [[r["env_id"], f"{r['decisions_per_s']:,.0f}", ", ".join(f"{x:,}" for x in r["decisions_per_s_runs"])]
             for r in res["env"]]))
    else:
        print(f"env: {res['env']}")
    print(f"\npeak RSS {res['peak_rss_mib']} MiB")
    _write_json(args.json, res)
    return 0


# ---------------------------------------------------------------------------- verify
def _add_verify(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("verify", help="does this machine reproduce the published results? (a few seconds; "
                       "docs/reliability.md)")
    p.add_argument("--json", metavar="PATH", help=JSON_HELP)
    p.add_argument("--reference", metavar="PATH", help="the reference hashes to compare with (default: the "
                   "package's kairos_gym/data/verify.json)")
    p.add_argument("--dump", metavar="PATH.npz", help="also write every stage's arrays to this .npz file (to "
                   "compare two machines array by array)")
    p.add_argument("--record", action="store_true", help="developers: write this machine's hashes as the reference "
                   "(--reference, default the package's file) instead of comparing")
    p.set_defaults(func=_cmd_verify)


def _cmd_verify(args: argparse.Namespace) -> int:
    from kairos_gym.verify import REFERENCE, record, run_verify, verdict_text

    ref = args.reference or REFERENCE
    if args.record:
        if args.dump is not None or args.json is not None:
            raise ConfigError("verify", "--record", "with --dump/--json", "--record alone (optionally --reference)")
        check_outputs("verify", {"--reference": str(ref)})
        out = record(ref)
        print(f"recorded {len(out['stages'])} stages ({', '.join(out['stages'])}) at commit {out['commit']} -> {ref}")
        return 0
    check_outputs("verify", {"--json": args.json, "--dump": args.dump}, stdout_ok=["--json"])
    if args.dump is not None and not str(args.dump).endswith(".npz"):
        raise ConfigError("verify", "--dump", args.dump, "a path ending in .npz")
    res = run_verify(ref, dump=args.dump)
    res["verdict"] = verdict_text(res)
    if args.json == "-":
        _write_json("-", res)
    else:
        for r in res["stages"]:
            print(f"{r['stage']:<14} {r['status']:<13} {r['seconds']:6.2f} s  {r.get('detail', r['what'])}")
        print(f"verdict: {res['verdict']}")
        _write_json(args.json, res)
    return 0 if res["reproduces"] else 1


# ---------------------------------------------------------------------------- evaluate
def _add_evaluate(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("evaluate", help="every policy on the same workloads; table, JSON, plots")
    p.add_argument("--scenario", default="bursty", help="shipped scenario name or YAML path (default: bursty)")
    p.add_argument("--policies", default="no-deflect,always-deflect,sq,sl,kairos,ppo",
                   help="comma-separated registry names (docs/policies.md), each once")
    p.add_argument("--seeds", default="0-4", help=SEEDS_HELP)
    p.add_argument("--json", metavar="PATH", help="write every run's summary as JSON ('-': print it instead of the "
                   "table)")
    p.add_argument("--plots", metavar="DIR", help="write the plots of the first seed's runs into this folder: "
                   "ttft_cdf.png, tbt_cdf.png, utilization.png, timeline.png")
    p.add_argument("--no-progress", action="store_true", help=NO_PROGRESS_HELP)
    add_backend_flags(p)
    p.set_defaults(func=_cmd_evaluate)


def _cmd_evaluate(args: argparse.Namespace) -> int:
    from kairos_gym.agents.registry import POLICIES
    from kairos_gym.evaluation.evaluate import evaluate, format_table
    from kairos_gym.evaluation.plots import PLOT_FILES
    from kairos_gym.flags import parse_names

    seeds = parse_seeds(args.seeds, "--seeds", "evaluate")
    policies = parse_names("evaluate", "--policies", args.policies, POLICIES)
    check_outputs("evaluate", {"--json": args.json}, {"--plots": (args.plots, PLOT_FILES)}, stdout_ok=["--json"])
    with backend_from_args("evaluate", args) as backend, _progress(args, "evaluate") as bar:
        result = evaluate(args.scenario, policies, seeds, args.plots, progress=bar, backend=backend)
    if args.json != "-":
        print(format_table(result))
        if result.get("plots"):
            print("plots: " + ", ".join(result["plots"]))
    _write_json(args.json, {"runs": result["runs"]})
    return 0


# ---------------------------------------------------------------------------- demo
def _add_demo(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("demo", help="the main job: evaluate the policies on the default bursty scenario")
    p.add_argument("--scenario", default="bursty", help="shipped scenario name or YAML path (default: bursty)")
    p.add_argument("--out", default="out/demo", help="folder for the plots and evaluate.json (default out/demo)")
    p.add_argument("--seeds", default="0-2", help=SEEDS_HELP + "; the Oracle runs on the first")
    p.add_argument("--no-progress", action="store_true", help=NO_PROGRESS_HELP)
    p.set_defaults(func=_cmd_demo)


def _cmd_demo(args: argparse.Namespace) -> int:
    from kairos_gym.evaluation.evaluate import evaluate, format_table
    from kairos_gym.evaluation.plots import PLOT_FILES
    from kairos_gym.latency import StepLatencyModel
    from kairos_gym.latency.report import seed_target_checks
    from kairos_gym.table import render_table

    seeds = parse_seeds(args.seeds, "--seeds", "demo")
    check_outputs("demo", folders={"--out": (args.out, (*PLOT_FILES, "evaluate.json"))})
    from kairos_gym.scenario import load_scenario

    load_scenario(args.scenario)  # a bad scenario fails before anything is printed
    m = StepLatencyModel.from_preset()
    print(render_table(
        ["target", "value (ms)", "bound (ms)", "check"],
        [[r["target"], str(r["value_ms"]), str(r["bound_ms"]), "ok" if r["ok"] else "FAIL"]
         for r in seed_target_checks(m)],
        title="Step-latency model (deepseek-v2-lite / a100-80gb / TP1) against the seed targets:"))
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
    with _progress(args, "demo") as bar:
        result = evaluate(args.scenario, policies, seeds, Path(args.out), progress=bar)
    print(format_table(result))
    first_seed = seeds[0]
    prefix, cap = _oracle_prefix(args.scenario, first_seed)
    with _progress(args, "demo: Oracle") as bar:
        oracle = evaluate(prefix, ["no-deflect", "kairos", "oracle"], [first_seed], progress=bar)
    print()
    print(f"Oracle (clairvoyant rollouts to the end of the prefix) on the first {cap} requests of the "
          f"seed-{first_seed} workload above (max_requests: {cap}, a true prefix):")
    print(format_table(oracle))
    _write_json(str(Path(args.out) / "evaluate.json"), {"runs": result["runs"] + oracle["runs"]})
    print(f"plots and JSON in {args.out}/: " + ", ".join(Path(p).name for p in result["plots"]) + ", evaluate.json")
    return 0


def _oracle_prefix(scenario: str, seed: int, limit: int = ORACLE_PREFIX) -> tuple[ScenarioConfig, int]:
    """The demo's Oracle scenario: ``scenario`` cut to the first ``min(limit, n)`` requests of its
    seed-``seed`` workload (n requests) with ``max_requests``, a true prefix (workloads are prefix-stable,
    docs/workloads.md). The Oracle rolls every option forward, so it only runs on a short prefix."""
    import numpy as np

    from kairos_gym.scenario import load_scenario
    from kairos_gym.workload import generate

    base = load_scenario(scenario)
    cap = min(limit, len(generate(base.workload, np.random.default_rng(seed))))  # the simulator's draw
    return base.with_overrides({"workload": {"max_requests": cap}}), cap


def _add_train(sub: argparse._SubParsersAction) -> None:
    from kairos_gym.train.cli import add_train_parser

    add_train_parser(sub)


COMMANDS = (
    _add_latency, _add_simulate, _add_evaluate, _add_sweep, _add_results, _add_leaderboard, _add_precision,
    _add_oracle_precision, _add_bench, _add_demo, _add_verify, _add_train,
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
    # the exact command, for headers that record it (leaderboard): as typed, or as main() was called
    args.argv = list(sys.argv[1:] if argv is None else argv)
    args.prog = ("python -m kairos_gym.cli" if argv is None and Path(sys.argv[0]).name == "cli.py" else "kairos-gym")
    try:
        return int(args.func(args) or 0)
    except BrokenPipeError:  # e.g. `kairos-gym latency | head`: the reader left; not an error of ours
        import os

        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())  # Python flushes stdout at exit: point it somewhere that accepts
        return 0
    except ConfigError as e:
        print(f"kairos-gym {args.command}: error: {e}", file=sys.stderr)
        return 2
    except BackendError as e:  # a run still failed after its retries (docs/scale-out.md)
        print(f"kairos-gym {args.command}: error: {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
