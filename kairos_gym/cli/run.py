"""The "run" commands: ``simulate`` (one policy, one scenario), ``evaluate`` (every policy on the same workloads),
``sweep`` (loads and SQ/SL thresholds), ``demo`` (the main job), ``measure`` (the baselines' table, the
acceptance criteria) and ``fault-runs`` (the documented fault runs). ``simulate``, ``evaluate`` and ``sweep`` also
run a user's policy file (``--policy FILE.py:CLASS``) and trained checkpoints (``--checkpoint DIR``) beside the
registry's (kairos_gym/cli/external.py)."""

from __future__ import annotations

import argparse
import contextlib
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from kairos_gym.cli.common import (
    JSON_HELP,
    MAX_CHUNK,
    NO_PROGRESS_HELP,
    SEEDS_HELP,
    Subparsers,
    add_command,
    progress,
    write_json,
)
from kairos_gym.cli.external import TRUST_HELP, add_external_flags, add_limit_flags, external_policies, one_external
from kairos_gym.errors import ConfigError
from kairos_gym.evaluation.backends import add_backend_flags, backend_from_args
from kairos_gym.extras import available, require
from kairos_gym.flags import (
    MAX_LIST,
    SEED_LIMIT,
    check_outputs,
    parse_float_list,
    parse_int,
    parse_int_list,
    parse_seeds,
)

if TYPE_CHECKING:
    from kairos_gym.scenario import ScenarioConfig
    from kairos_gym.sim import Simulator

ORACLE_PREFIX = 300
"""Requests of the demo's Oracle run (the first ones of the first seed's workload)."""
SCENARIO_HELP = "shipped scenario name or YAML path (default: bursty)"


def add_commands(sub: Subparsers) -> None:
    """Register ``simulate``, ``evaluate``, ``sweep``, ``demo``, ``measure`` and ``fault-runs``."""
    for add in (_add_simulate, _add_evaluate, _add_sweep, _add_demo, _add_measure, _add_fault_runs):
        add(sub)


def _add_simulate(sub: Subparsers) -> None:
    p = add_command(sub, "simulate", cmd_simulate)
    p.add_argument("--scenario", default="bursty", help=SCENARIO_HELP)
    p.add_argument("--policy", default=None, metavar="NAME|FILE.py:CLASS",
                   help="the policy: a registry name (kairos-gym list policies; docs/policies.md) or the class CLASS "
                   "of the Python file FILE.py, which this RUNS as 'python FILE.py' would: only your own or trusted "
                   "code (default: no-deflect)")
    p.add_argument("--checkpoint", default=None, metavar="DIR",
                   help="instead of --policy: the trained agent of this checkpoint folder (policy.json, policy.npz; "
                   "or a run folder such as runs/ppo/fast/final)")
    p.add_argument("--trust-checkpoint", action="store_true", help=TRUST_HELP)
    p.add_argument("--seed", default="0", help=f"workload seed, a whole number in [0, {SEED_LIMIT})")
    p.add_argument("--json", metavar="PATH", help="write the summary JSON ('-' for stdout)")
    p.add_argument("--requests-csv", metavar="PATH", help="write the per-request record as CSV (with metrics.mode: "
                   "streaming, row by row as requests settle, in that order)")
    p.add_argument("--no-progress", action="store_true", help=NO_PROGRESS_HELP)
    add_limit_flags(p, isolate=False)


def cmd_simulate(args: argparse.Namespace) -> int:
    """``kairos-gym simulate``: the policy (a registry name, a file's class or a checkpoint) built and checked
    before the run; the summary on stdout."""
    from kairos_gym.agents.registry import POLICIES, make_policy
    from kairos_gym.scenario import load_scenario
    from kairos_gym.sim.requests_csv import write_requests_csv
    from kairos_gym.table import format_summary

    w = "simulate"
    seed = parse_int(w, "--seed", args.seed, 0, SEED_LIMIT - 1)
    check_outputs(w, {"--json": args.json, "--requests-csv": args.requests_csv}, stdout_ok=["--json"])
    ext = one_external(args, w)
    name = "no-deflect" if args.policy is None else args.policy
    if ext is None and name not in POLICIES:
        raise ConfigError(w, "--policy", name, "a registry name (" + ", ".join(POLICIES) + ") or FILE.py:CLASS, a "
                          "class in a Python file")
    sc = load_scenario(args.scenario)
    if ext is None:
        make_policy(name, sc, seed)  # a bad parameter fails here, before the run
    else:
        from kairos_gym.agents.policy_file_loader import probe

        probe(ext, sc, seed)  # a class that does not build, or a decide that fails early, before the run
    label = name if ext is None else ext.label
    bar = None
    if not args.no_progress and sys.stderr.isatty():
        from tqdm import tqdm

        bar = tqdm(desc=f"{sc.name}/{label}", unit="req", file=sys.stderr, mininterval=0.5)
    stream = bool(args.requests_csv) and sc.metrics.mode == "streaming"  # rows written as requests settle
    with contextlib.ExitStack() as stack:
        setup = None
        if stream:
            import csv

            from kairos_gym.output_file import open_output

            # the rows go to a temporary file, renamed over the target only when the run has ended well
            writer = csv.writer(stack.enter_context(open_output(args.requests_csv, "w", newline="",
                                                                where="simulate", flag="--requests-csv")))

            def setup(sim: Simulator) -> None:
                writer.writerow(sim.stream_requests_csv(writer.writerow))
        tick = bar.update if bar is not None else None
        try:
            if ext is None:
                from kairos_gym.agents.runner import simulate

                summary, sim = simulate(name, sc, seed, progress=tick, setup=setup)
            else:
                from kairos_gym.agents.policy_file_loader import run_external

                summary, sim = run_external(ext, sc, seed, progress=tick, setup=setup)
        finally:
            if bar is not None:
                bar.close()
    summary["policy"] = label
    if args.json != "-":
        print(format_summary(summary))
    write_json(args.json, summary, where="simulate")
    if args.requests_csv and not stream:
        write_requests_csv(sim, args.requests_csv)
    return 0



def _add_sweep(sub: Subparsers) -> None:
    from kairos_gym.evaluation.sweep import MAX_LOAD, MAX_THRESHOLD

    p = add_command(sub, "sweep", cmd_sweep)
    p.add_argument("--scenario", default="bursty", help=SCENARIO_HELP)
    p.add_argument("--loads", default="0.5,0.75,1.0,1.25",
                   help=f"multipliers of the arrival rate, each in (0, {MAX_LOAD:g}], at most {MAX_LIST} ('' for no "
                   "load sweep)")
    p.add_argument("--policies", default="no-deflect,sq,sl,kairos", help="policies of the load sweep (registry names; "
                   "'' for none but --policy/--checkpoint)")
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
    add_external_flags(p, "sweep (in the load sweep, and beside the references of the threshold sweep)",
                       isolate=False, trust=True)
    add_backend_flags(p)


def cmd_sweep(args: argparse.Namespace) -> int:
    from kairos_gym.agents.registry import POLICIES
    from kairos_gym.evaluation.sweep import MAX_LOAD, MAX_THRESHOLD, format_sweep, sweep
    from kairos_gym.flags import parse_names

    w = "sweep"
    seeds = parse_seeds(args.seeds, "--seeds", w)
    loads = parse_float_list(w, "--loads", args.loads, 0.0, MAX_LOAD)
    sq = parse_float_list(w, "--sq-thresholds", args.sq_thresholds, 0.0, MAX_THRESHOLD, lo_open=False)
    sl = parse_float_list(w, "--sl-thresholds", args.sl_thresholds, 0.0, MAX_THRESHOLD, lo_open=False)
    chunks = parse_int_list(w, "--chunks", args.chunks, 0, MAX_CHUNK, empty_ok=True)
    given = bool(args.policy or args.checkpoint)
    policies = parse_names(w, "--policies", args.policies, POLICIES, empty_ok=not loads or given)
    refs = parse_names(w, "--references", args.references, POLICIES, empty_ok=True)
    check_outputs(w, {"--json": args.json}, {"--plots": (args.plots, ("slo_vs_load.png", "pareto_ttft_tbt.png"))},
                  stdout_ok=["--json"])
    if args.plots:
        require("plots", "--plots")
    externals = external_policies(args, w)  # after the flags: a --policy file is run here
    with backend_from_args(w, args) as backend, progress(args, "sweep") as bar:
        res = sweep(args.scenario, list(loads), policies, seeds, sq, sl, chunks if (sq or sl) else (), refs,
                    args.plots, progress=bar, backend=backend, externals=externals)
    if args.json != "-":
        print(format_sweep(res))
        if res.get("plots"):
            print("plots: " + ", ".join(res["plots"]))
    write_json(args.json, res)
    return 0



def _add_evaluate(sub: Subparsers) -> None:
    p = add_command(sub, "evaluate", cmd_evaluate)
    p.add_argument("--scenario", default="bursty", help=SCENARIO_HELP)
    p.add_argument("--policies", default="no-deflect,always-deflect,sq,sl,kairos,ppo",
                   help="comma-separated registry names (kairos-gym list policies; docs/policies.md), each once ('' "
                   "for none but --policy/--checkpoint)")
    p.add_argument("--seeds", default="0-4", help=SEEDS_HELP)
    p.add_argument("--json", metavar="PATH", help="write every run's summary as JSON ('-': print it instead of the "
                   "table)")
    p.add_argument("--plots", metavar="DIR", help="write the plots of the first seed's runs into this folder: "
                   "ttft_cdf.png, tbt_cdf.png, utilization.png, timeline.png")
    p.add_argument("--no-progress", action="store_true", help=NO_PROGRESS_HELP)
    add_external_flags(p, "evaluate", isolate=False, trust=True)
    add_backend_flags(p)


def cmd_evaluate(args: argparse.Namespace) -> int:
    """``kairos-gym evaluate``: the flags, the outputs and every policy (registry names, files, checkpoints)
    checked before the first run; the table on stdout."""
    from kairos_gym.agents.registry import POLICIES
    from kairos_gym.evaluation.evaluate import evaluate, format_table
    from kairos_gym.evaluation.plots import PLOT_FILES
    from kairos_gym.flags import parse_names

    seeds = parse_seeds(args.seeds, "--seeds", "evaluate")
    policies = parse_names("evaluate", "--policies", args.policies, POLICIES,
                           empty_ok=bool(args.policy or args.checkpoint))
    check_outputs("evaluate", {"--json": args.json}, {"--plots": (args.plots, PLOT_FILES)}, stdout_ok=["--json"])
    if args.plots:
        require("plots", "--plots")
    externals = external_policies(args, "evaluate")  # after the flags: a --policy file is run here
    with backend_from_args("evaluate", args) as backend, progress(args, "evaluate") as bar:
        result = evaluate(args.scenario, policies, seeds, args.plots, progress=bar, backend=backend,
                          externals=externals)
    if args.json != "-":
        print(format_table(result))
        if result.get("plots"):
            print("plots: " + ", ".join(result["plots"]))
    write_json(args.json, {"runs": result["runs"]})
    return 0


def _add_demo(sub: Subparsers) -> None:
    p = add_command(sub, "demo", cmd_demo)
    p.add_argument("--scenario", default="bursty", help=SCENARIO_HELP)
    p.add_argument("--out", default="out/demo", help="folder for the plots and evaluate.json (default out/demo)")
    p.add_argument("--seeds", default="0-2", help=SEEDS_HELP + "; the Oracle runs on the first")
    p.add_argument("--no-progress", action="store_true", help=NO_PROGRESS_HELP)
    p.add_argument("--json", metavar="PATH", help="also write the runs as JSON: the scenario, seeds, policies, every "
                   "run's summary and the Oracle prefix's runs")


def cmd_demo(args: argparse.Namespace) -> int:
    from kairos_gym.evaluation.evaluate import evaluate, format_table
    from kairos_gym.evaluation.plots import PLOT_FILES
    from kairos_gym.latency import StepLatencyModel
    from kairos_gym.latency.report import seed_target_checks
    from kairos_gym.table import render_table

    seeds = parse_seeds(args.seeds, "--seeds", "demo")
    check_outputs("demo", {"--json": args.json}, folders={"--out": (args.out, (*PLOT_FILES, "evaluate.json"))})
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
    plots = available("plots")  # without matplotlib (the [plots] extra) the demo writes the table and JSON only
    with progress(args, "demo") as bar:
        result = evaluate(args.scenario, policies, seeds, Path(args.out) if plots else None, progress=bar)
    print(format_table(result))
    first_seed = seeds[0]
    prefix, cap = _oracle_prefix(args.scenario, first_seed)
    with progress(args, "demo: Oracle") as bar:
        oracle = evaluate(prefix, ["no-deflect", "kairos", "oracle"], [first_seed], progress=bar)
    print()
    print(f"Oracle (clairvoyant rollouts to the end of the prefix) on the first {cap} requests of the "
          f"seed-{first_seed} workload above (max_requests: {cap}, a true prefix):")
    print(format_table(oracle))
    write_json(str(Path(args.out) / "evaluate.json"), {"runs": result["runs"] + oracle["runs"]})
    write_json(args.json, {"scenario": args.scenario, "seeds": seeds, "policies": policies, "runs": result["runs"],
                           "oracle": {"seed": first_seed, "requests": cap, "runs": oracle["runs"]}}, where="demo")
    if plots:
        print(f"plots and JSON in {args.out}/: " + ", ".join(Path(p).name for p in result["plots"]) + ", evaluate.json")
    else:
        print(f"JSON in {args.out}/evaluate.json; no plots: they need the [plots] extra (pip install "
              "'kairos-gym[plots]')")
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




def _add_measure(sub: Subparsers) -> None:
    from kairos_gym.workload.config import MAX_REQUESTS

    p = add_command(sub, "measure", cmd_measure)
    p.add_argument("--scenario", help="a scenario name or YAML path (default: the bursty stand-in dict scenario)")
    p.add_argument("--requests", default="3000",
                   help=f"requests of the dict scenario, 1..{MAX_REQUESTS} (default 3000)")
    p.add_argument("--rate", type=float, default=20.0, help="arrival rate of the dict scenario (req/s, default 20)")
    p.add_argument("--seed", default="0", help=f"workload seed, a whole number in [0, {SEED_LIMIT})")
    p.add_argument("--policies", default="no-deflect,always-deflect,random,sq,sl,kairos",
                   help="comma-separated registry names (ppo needs --ppo-path; oracle costs O(requests^2))")
    p.add_argument("--ppo-path", help="checkpoint of the ppo policy: a safe folder (policy.json) or, with "
                   "--trust-checkpoint, an SB3 model zip")
    p.add_argument("--trust-checkpoint", action="store_true",
                   help="allow an SB3 zip for --ppo-path (it is unpickled, which can execute code stored in it)")
    p.add_argument("--sweep", action="store_true", help="also sweep SQ and SL thresholds x chunks 512/2048")
    p.add_argument("--json", metavar="PATH", help="write the rows as JSON (with --acceptance: its rows and checks)")
    p.add_argument("--acceptance", action="store_true",
                   help="check the acceptance criteria on the shipped bursty and decode-heavy scenarios (PASS/FAIL, "
                   "exit status 1 if one fails)")


def cmd_measure(args: argparse.Namespace) -> int:
    """``kairos-gym measure``: every flag and the output path checked before the first run."""
    from kairos_gym.evaluation.measure import acceptance, dict_scenario, run_rows
    from kairos_gym.workload.config import MAX_REQUESTS

    seed = parse_int("measure", "--seed", args.seed, 0, SEED_LIMIT - 1)
    n_req = parse_int("measure", "--requests", args.requests, 1, MAX_REQUESTS)
    check_outputs("measure", {"--json": args.json})
    if args.acceptance:
        return acceptance(seed, json_path=args.json)
    scenario = args.scenario if args.scenario else dict_scenario(n_req, args.rate)
    names = [n.strip() for n in args.policies.split(",") if n.strip()]
    return run_rows(scenario, seed, names, ppo_path=args.ppo_path, trust_checkpoint=args.trust_checkpoint,
                    sweep=args.sweep, json_path=args.json)


def _add_fault_runs(sub: Subparsers) -> None:
    p = add_command(sub, "fault-runs", cmd_fault_runs)
    p.add_argument("--seed", default="0", help=f"workload seed, a whole number in [0, {SEED_LIMIT}) (default 0)")
    p.add_argument("--json", metavar="PATH", help=JSON_HELP)


def cmd_fault_runs(args: argparse.Namespace) -> int:
    """``kairos-gym fault-runs``: the tables of :func:`kairos_gym.evaluation.fault_runs.fault_runs`."""
    from kairos_gym.evaluation.fault_runs import counters_text, fault_runs
    from kairos_gym.table import render_table

    seed = parse_int("fault-runs", "--seed", args.seed, 0, SEED_LIMIT - 1)
    check_outputs("fault-runs", {"--json": args.json}, stdout_ok=["--json"])
    res = fault_runs(seed)
    if args.json == "-":
        write_json("-", res, where="fault-runs")
        return 0
    print(render_table(
        ["scenario (kairos,\nreentry: prefill)", "completed", "rejected", "TTFT P50\n(s)", "TTFT P99\n(s)",
         "SLO att", "fault counters"],
        [[r["scenario"], f"{r['n_completed']:,}", f"{r['n_rejected']:,}", f"{r['ttft_p50']:.3f}",
          f"{r['ttft_p99']:.3f}", f"{r['slo_attainment']:.3f}", counters_text(r["faults"])] for r in res["shipped"]]))
    print()
    print(render_table(
        ["scenario", "policy", "reentry", "TTFT P50\n(s)", "TTFT P99\n(s)", "SLO att", "re-entries", "deflected"],
        [[r["scenario"], r["policy"], r["reentry"], f"{r['ttft_p50']:.3f}", f"{r['ttft_p99']:.3f}",
          f"{r['slo_attainment']:.3f}", *_reentries(r)] for r in res["reentry"]]))
    write_json(args.json, res, where="fault-runs")
    return 0


def _reentries(row: dict) -> list[str]:
    """A re-entry row's victims (re-entry decisions under ``policy``; the requests a failure sent back under
    ``prefill``) and its deflected re-entries (``-`` under ``prefill``)."""
    f = row["faults"]
    if row["reentry"] == "policy":
        return [f"{f['reentry_decisions']:,}", f"{f['reentry_deflected']:,}"]
    return [f"{f['requeued'] + f['transfers_lost'] + f['decode_reentries']:,}", "-"]
