"""The "benchmark" commands: ``leaderboard`` (the standard suite, results/leaderboard.md), ``precision`` and
``oracle-precision`` (instances enough for a target interval), ``oracle-cache`` (the Oracle's cached scores),
``convergence`` (how long an instance must be), ``pull-compare`` (Kairos against Kairos-pull) and ``results`` (the
paper's claims, results/paper-claims.md).

The three suite commands share their flags and the handling of them: the policies and tasks, the external
policies (``--policy``/``--checkpoint``, at most ``MAX_EXTERNAL`` in all), the Oracle cache, the report and JSON
outputs and the backend (:func:`add_suite_flags`, :func:`add_report_flags`, :func:`add_sizing_flags`,
:func:`suite_selection`, :func:`oracle_cache_path`, :func:`run_suite`; the external policies' flags are those of
every command that runs policies, kairos_gym/cli/external.py)."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from functools import partial
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

from kairos_gym.cli.common import (
    JSON_HELP,
    NO_PROGRESS_HELP,
    SEEDS_HELP,
    Subparsers,
    add_command,
    command_line,
    progress,
    write_json,
    write_text,
)
from kairos_gym.cli.external import add_external_flags, external_policies
from kairos_gym.errors import ConfigError
from kairos_gym.evaluation.backends import add_backend_flags, backend_from_args
from kairos_gym.flags import check_outputs, parse_float, parse_int, parse_seeds

if TYPE_CHECKING:
    from kairos_gym.benchmark.suite import Task

LEADERBOARD_OUT = "out/leaderboard.md"
MAX_V2_JSON_BYTES = 64 * 1024 * 1024
"""Largest ``--from-json`` file (bytes): a v2 run's JSON is about 90 KB."""
LEADERBOARD_V2_OUT = "out/leaderboard-v2.md"
"""``leaderboard --suite v2 --out``'s default (results/leaderboard-v2.md is the tracked board)."""
"""``leaderboard --out``'s default: under the output folder (git-ignored), never the tracked results/leaderboard.md."""
CACHE_HELP = ("the Oracle's cached per-instance scores, read where valid (default: "
              "kairos_gym/benchmark/oracle_cache.json; regenerate with kairos-gym oracle-cache); instances without a "
              "valid entry run the Oracle")


def add_commands(sub: Subparsers) -> None:
    """Register ``leaderboard``, ``precision``, ``oracle-precision``, ``oracle-cache``, ``convergence``,
    ``headroom``, ``pull-compare`` and ``results``."""
    for add in (_add_leaderboard, _add_precision, _add_oracle_precision, _add_oracle_cache, _add_convergence,
                _add_headroom, _add_pull_compare, _add_results):
        add(sub)


# ---------------------------------------------------------------------------- shared by the suite commands
def add_suite_flags(p: argparse.ArgumentParser, policies_default: str, policies_help: str) -> None:
    """``--policies`` (registry names and best-static) and ``--tasks`` (a subset of the suite)."""
    from kairos_gym.benchmark.suite import SUITE, TIER_NAMES

    p.add_argument("--policies", default=policies_default, help=policies_help)
    p.add_argument("--tasks", default=None, metavar="NAMES",
                   help="run only these tasks (comma-separated): task names, family names (every tier of it: "
                   + ", ".join(dict.fromkeys(t.family for t in SUITE)) + ") or tier names (every family at it: "
                   + ", ".join(TIER_NAMES) + "); default: the whole suite")


def add_report_flags(p: argparse.ArgumentParser, out_default: str | None, out_help: str, json_help: str) -> None:
    """``--out`` (the markdown report), ``--json``, ``--no-progress`` and the backend flags."""
    p.add_argument("--out", default=out_default, help=out_help)
    p.add_argument("--json", metavar="PATH", help=json_help)
    p.add_argument("--no-progress", action="store_true", help=NO_PROGRESS_HELP)
    add_backend_flags(p)


def add_sizing_flags(p: argparse.ArgumentParser, bounds: ModuleType, mean_of: str, pilot_per: str) -> None:
    """``--half-width`` and ``--pilot`` of precision and oracle-precision: their defaults and bounds
    (``HALF_WIDTH``, ``MAX_HALF_WIDTH``, ``PILOT``, ``MIN_PILOT``, ``MAX_PILOT``) from the module ``bounds``."""
    b = bounds
    p.add_argument("--half-width", default=str(b.HALF_WIDTH), metavar="D",
                   help=f"target half-width of the 95%% interval of {mean_of}, in (0, {b.MAX_HALF_WIDTH:g}] (default "
                   f"{b.HALF_WIDTH:g})")
    p.add_argument("--pilot", default=str(b.PILOT), metavar="N0",
                   help=f"{pilot_per}, {b.MIN_PILOT}..{b.MAX_PILOT} (default {b.PILOT})")


def suite_selection(args: argparse.Namespace, where: str) -> tuple[list[str], tuple[Task, ...] | None]:
    """The checked ``--policies`` (registry names and best-static) and ``--tasks`` (None: the whole suite)."""
    from kairos_gym.agents.registry import POLICIES
    from kairos_gym.benchmark.entries import BEST_STATIC
    from kairos_gym.benchmark.suite import select_tasks
    from kairos_gym.flags import parse_names

    policies = parse_names(where, "--policies", args.policies, [*POLICIES, BEST_STATIC])
    return policies, (None if args.tasks is None else select_tasks(args.tasks, where=where))


def oracle_cache_path(args: argparse.Namespace) -> Path:
    """``--oracle-cache`` (default: the committed cache), read once so that a bad file fails before any run."""
    from kairos_gym.benchmark import oracle_cache

    cache = oracle_cache.CACHE if args.oracle_cache is None else Path(args.oracle_cache)
    oracle_cache.load(cache)
    return cache


def run_suite(args: argparse.Namespace, run: Callable[..., dict[str, Any]], *, lines: bool = False) -> dict[str, Any]:
    """``run(progress=, command=, backend=)`` on the backend of the flags, with the command's progress bar (with
    ``lines``, progress lines when stderr is not a terminal: kairos_gym/progress.py) and the command line for the
    report's header."""
    from kairos_gym.progress import command_progress

    bar = command_progress(args.command_name, args.no_progress) if lines else progress(args, args.command_name)
    with backend_from_args(args.command_name, args) as backend, bar:
        return run(progress=bar, command=command_line(args), backend=backend)


def write_report(out: str, markdown: str, res: dict[str, Any], counts: str = "") -> None:
    """Write the markdown report and say so, with the run's wall time (s) and ``counts``."""
    write_text(out, markdown)
    print(f"wrote {out} ({res['elapsed_s']:.0f} s{counts})")


# ---------------------------------------------------------------------------- leaderboard
def _add_leaderboard(sub: Subparsers) -> None:
    from kairos_gym.benchmark.board_v2 import DEFAULT_POLICIES_V2
    from kairos_gym.benchmark.entries import DEFAULT_POLICIES, REQUIRED

    p = add_command(sub, "leaderboard", cmd_leaderboard)
    add_suite_flags(p, DEFAULT_POLICIES, "registry names and best-static (the static rule tuned on the train "
                    f"instances), each once; must include {', '.join(REQUIRED)}. Every one runs every task of the "
                    "suite (docs/benchmark.md)")
    add_external_flags(p, "rank")
    p.add_argument("--track", default="both", metavar="exact|realistic|both",
                   help="information track(s) to run (docs/benchmark.md): every policy on every task of each, one "
                   "section per track (kairos-exact, the reference, always on exact); default both")
    p.add_argument("--oracle-cache", default=None, metavar="PATH", help=CACHE_HELP + " (suite v1 only)")
    p.add_argument("--from-json", action="append", default=None, metavar="PATH",
                   help="suite v2: write the report from saved run results (--json of earlier runs, one per track; "
                   "repeat the flag) instead of running; with --tasks, each saved run restricted to those tasks (so "
                   "a whole board merges with a run of some of its tasks)")
    p.add_argument("--seed-group", action="append", default=[], metavar="NAME=LABEL,...",
                   help="suite v2: report these entries (the same training recipe, different seeds; 2-16 entry labels "
                   "such as checkpoint:DIR) as one recipe: the mean of their headlines with a two-level bootstrap "
                   "interval over seeds and instances (docs/benchmark.md); repeatable, at most 8")
    p.add_argument("--suite", default="v1", metavar="v1|v2",
                   help="the suite by name (docs/benchmark.md): v1 (seven families x three SLO tiers, 500-request "
                   "instances, Oracle-normalised; default) or v2 (seen and unseen families, 30 warm-started "
                   f"production-length instances per task, raw SLO points; its default policies: "
                   f"{DEFAULT_POLICIES_V2}; default --out {LEADERBOARD_V2_OUT})")
    add_report_flags(p, LEADERBOARD_OUT, f"markdown file to write (default {LEADERBOARD_OUT}, its folder created; "
                     "--out results/leaderboard.md regenerates the tracked board)",
                     "also write every figure, score and interval as JSON to this file (one track: its result; "
                     "both: {\"tracks\": {track: result}})")


def cmd_leaderboard(args: argparse.Namespace) -> int:
    """``kairos-gym leaderboard``: every flag, the outputs, the cache and the external policies checked first."""
    from kairos_gym.benchmark.entries import check_entries
    from kairos_gym.benchmark.leaderboard import run_tracks
    from kairos_gym.benchmark.leaderboard_report import tracks_md
    from kairos_gym.benchmark.submission_summary import submission_summary
    from kairos_gym.benchmark.suite import parse_tracks

    w = "leaderboard"
    from kairos_gym.benchmark.suites import suite_named

    suite_named(args.suite)
    if args.suite == "v2":
        return leaderboard_v2(args)
    if args.seed_group:
        raise ConfigError(w, "--seed-group", args.seed_group[0], "nothing with --suite v1 (suite v2 only)")
    policies, suite = suite_selection(args, w)
    tracks = parse_tracks(args.track)
    check_outputs(w, {"--out": args.out, "--json": args.json})
    check_entries(policies, [])
    cache = oracle_cache_path(args)
    externals = external_policies(args, w)
    res = run_suite(args, partial(run_tracks, tracks, policies, externals, suite=suite, oracle_cache=cache),
                    lines=True)
    write_report(args.out, tracks_md(res), res)
    write_json(args.json, res["tracks"][tracks[0]] if len(tracks) == 1 else res)
    summary = submission_summary(res["tracks"], args.out)
    if summary:
        print(summary)
    return 0


def read_v2_json(path: str) -> list[dict[str, Any]]:
    """The v2 results of every track in ``--json`` of an earlier run (one track, or ``{"tracks": {...}}`` of a
    ``--track both`` run; bounded, safe JSON; each checked complete)."""
    from kairos_gym.json_file import read_json_file

    data = read_json_file("leaderboard", "--from-json", path, MAX_V2_JSON_BYTES,
                          "file holding the --json of a --suite v2 run")
    if isinstance(data, dict) and isinstance(data.get("tracks"), dict) and data["tracks"]:
        return [_v2_track(path, r) for r in data["tracks"].values()]
    return [_v2_track(path, data)]


def _v2_track(path: str, res: Any) -> dict[str, Any]:
    from kairos_gym.benchmark.board_v2 import card
    from kairos_gym.benchmark.board_v2_stats import check_scores

    if not isinstance(res, dict) or res.get("suite") != "v2" or "scores" not in res:
        raise ConfigError("leaderboard", "--from-json", path, "the --json of a --suite v2 run")
    try:
        check_scores(res)
    except (ValueError, KeyError, TypeError) as e:
        raise ConfigError("leaderboard", "--from-json", path, f"a complete v2 result ({e})") from e
    for e in res["entries"]:  # a result saved before entries carried how they were trained: their cards say
        e.setdefault("how_trained", card(e["label"], e["kind"])[1])
    return res


def leaderboard_v2(args: argparse.Namespace) -> int:
    """``kairos-gym leaderboard --suite v2``: one report section per track (kairos_gym/benchmark/board_v2.py)."""
    from kairos_gym.agents.registry import POLICIES
    from kairos_gym.benchmark.board_v2 import (
        BEST_RULE,
        DEFAULT_POLICIES_V2,
        check_v2_entries,
        merge_runs,
        restrict_tasks,
        run_v2,
    )
    from kairos_gym.benchmark.board_v2_report import leaderboard_v2_md, submission_summary_v2
    from kairos_gym.benchmark.entries import DEFAULT_POLICIES
    from kairos_gym.benchmark.seed_groups import check_groups, parse_seed_group
    from kairos_gym.benchmark.suite import parse_tracks, select_tasks
    from kairos_gym.benchmark.suite_v2 import SUITE
    from kairos_gym.flags import parse_names

    w = "leaderboard"
    if args.oracle_cache is not None:
        raise ConfigError(w, "--oracle-cache", args.oracle_cache, "nothing with --suite v2 (v2 runs no Oracle)")
    groups = [parse_seed_group(w, "--seed-group", g) for g in args.seed_group]
    spec = DEFAULT_POLICIES_V2 if args.policies == DEFAULT_POLICIES else args.policies
    policies = parse_names(w, "--policies", spec, [*POLICIES, BEST_RULE])
    suite = SUITE if args.tasks is None else select_tasks(args.tasks, SUITE, where=w)
    tracks = parse_tracks(args.track)
    out = LEADERBOARD_V2_OUT if args.out == LEADERBOARD_OUT else args.out
    check_outputs(w, {"--out": out, "--json": args.json})
    externals = external_policies(args, w)
    check_v2_entries(policies, externals)
    if not args.from_json:  # the labels of the run to come; saved runs' labels are checked once read
        named = check_groups(w, "--seed-group", groups, [*policies, *(e.label for e in externals)])
    results = {}
    if args.from_json:  # the tracks are the saved runs' own, in the order of --track both
        for path in args.from_json:
            for res in read_v2_json(path):
                if args.tasks is not None:  # the saved runs' tasks restricted to these (suite order)
                    res = restrict_tasks(res, [t.name for t in suite], path)
                results[res["track"]] = (res if res["track"] not in results
                                         else merge_runs(results[res["track"]], res, path))
        tracks = tuple(tr for tr in ("exact", "realistic") if tr in results)
        for res in results.values():
            named = check_groups(w, "--seed-group", groups, [e["label"] for e in res["entries"]])
    for track in ([] if args.from_json else tracks):
        results[track] = run_suite(args, partial(run_v2, policies, externals, suite=suite, track=track), lines=True)
    md = "\n".join(leaderboard_v2_md(results[tr], groups=named) for tr in tracks)
    write_text(out, md)
    if args.from_json:
        print(f"wrote {out} (from {len(results)} saved run(s))")
    else:
        print(f"wrote {out} ({sum(r['elapsed_s'] for r in results.values()):.0f} s)")
    write_json(args.json, results[tracks[0]] if len(tracks) == 1 else {"tracks": results})
    summary = submission_summary_v2(results, out)
    if summary:
        print(summary)
    return 0


# ---------------------------------------------------------------------------- precision
def _add_precision(sub: Subparsers) -> None:
    from kairos_gym.benchmark import precision
    from kairos_gym.benchmark.precision import DEFAULT_MAX_INSTANCES, DEFAULT_POLICIES, MAX_INSTANCES

    p = add_command(sub, "precision", cmd_precision)
    add_suite_flags(p, DEFAULT_POLICIES, "registry names and best-static, each once (the Oracle is refused: 2-60 s "
                    "per instance); default: the leaderboard's default policies but the Oracle")
    add_external_flags(p, "measure")
    p.add_argument("--track", default="both", metavar="exact|realistic|both",
                   help="information track(s) (kairos-exact always on exact); default both")
    add_sizing_flags(p, precision, "a mean SLO attainment", "stage-1 instances per (task, policy, track)")
    p.add_argument("--max-instances", default=str(DEFAULT_MAX_INSTANCES), metavar="N",
                   help=f"cap on a cell's instances, --pilot + 1..{MAX_INSTANCES} (default {DEFAULT_MAX_INSTANCES})")
    p.add_argument("--resume", metavar="PATH", help="an earlier run's --json file: its per-instance scores are used "
                   "instead of re-running (each reused cell's instance 0 is re-run and must be equal; new tasks, "
                   "policies or instances run), so the result is a fresh run's")
    add_report_flags(p, "results/precision.md", "markdown file to write (default results/precision.md)",
                     "also write every cell (per-instance scores included) as JSON")


def cmd_precision(args: argparse.Namespace) -> int:
    """``kairos-gym precision``: every flag, the outputs and the external policies checked first."""
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
    from kairos_gym.benchmark.suite import parse_tracks

    w = WHERE
    policies, suite = suite_selection(args, w)
    tracks = parse_tracks(args.track, where=w)
    half = parse_float(w, "--half-width", args.half_width, 0.0, MAX_HALF_WIDTH)
    pilot = parse_int(w, "--pilot", args.pilot, MIN_PILOT, MAX_PILOT)
    cap = parse_int(w, "--max-instances", args.max_instances, pilot + 1, MAX_INSTANCES)
    check_settings(half, pilot, cap)
    check_outputs(w, {"--out": args.out, "--json": args.json})
    check_policy_names(policies, [])
    externals = external_policies(args, w)
    check_policy_names(policies, externals)
    resume = None if args.resume is None else load_precision_resume(args.resume, w, MAX_INSTANCES)
    res = run_suite(args, partial(run_precision, policies, externals, suite=suite, tracks=tracks, half_width=half,
                                  pilot=pilot, max_instances=cap, resume=resume))
    write_report(args.out, precision_md(res), res, f", {res['runs']:,} runs")
    write_json(args.json, res)
    return 0


# ---------------------------------------------------------------------------- oracle-precision
def _add_oracle_precision(sub: Subparsers) -> None:
    from kairos_gym.benchmark import oracle_precision
    from kairos_gym.benchmark.oracle_precision import (
        COST_RATIO,
        DEFAULT_MAX_INSTANCES,
        DEFAULT_MAX_ORACLE,
        DEFAULT_POLICIES,
        MAX_COST_RATIO,
        MAX_ORACLE,
        MAX_ROUNDS,
        ROUNDS,
        TRACK,
    )
    from kairos_gym.benchmark.precision import MAX_INSTANCES
    from kairos_gym.benchmark.suite import TRACKS

    p = add_command(sub, "oracle-precision", cmd_oracle_precision)
    add_suite_flags(p, DEFAULT_POLICIES, "phase-1 policies: registry names and best-static, each once, including "
                    "the Oracle's bases (no-deflect, kairos-exact, always-deflect-ls, sq-ls, sl-ls, best-static); "
                    "default: the leaderboard's default policies but the Oracle")
    add_sizing_flags(p, oracle_precision, "the Oracle's mean SLO attainment", "pilot instances per task (both phases)")
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
    p.add_argument("--oracle-cache", default=None, metavar="PATH", help=CACHE_HELP)
    p.add_argument("--track", default=TRACK, metavar="TRACK",
                   help=", ".join(TRACKS) + ": information track of the phase-1 policies (default exact; "
                   "realistic: the Oracle's bases also run on the exact track, as its rollouts do)")
    add_report_flags(p, None, "markdown file to write (default results/oracle-precision.md, "
                     "results/oracle-precision-realistic.md with --track realistic)",
                     "also write every task's figures (per-instance scores included) as JSON")


def cmd_oracle_precision(args: argparse.Namespace) -> int:
    """``kairos-gym oracle-precision``: every flag, the outputs and the cache checked first."""
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

    w = WHERE
    policies, suite = suite_selection(args, w)
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
    cache = oracle_cache_path(args)
    res = run_suite(args, partial(run_oracle_precision, policies, suite=suite, half_width=half, pilot=pilot,
                                  cost_ratio=ratio, max_instances=n1, max_oracle=n2, oracle_cache=cache,
                                  rounds=rounds, resume=resume, track=args.track))
    if args.resume is not None:
        res["resumed_from"] = args.resume
    write_report(out, oracle_precision_md(res), res,
                 f", {res['oracle_runs']:,} Oracle instances, {res['phase1_runs']:,} phase-1 runs")
    write_json(args.json, res)
    return 0


# ---------------------------------------------------------------------------- oracle-cache, pull-compare, results
def _add_oracle_cache(sub: Subparsers) -> None:
    from kairos_gym.benchmark.oracle_cache import CACHE

    p = add_command(sub, "oracle-cache", cmd_oracle_cache)
    p.add_argument("--tasks", help="task, family or tier names (default: every task of the suite)")
    p.add_argument("--max-requests", help="only instances of at most this many requests")
    p.add_argument("--out", default=str(CACHE), help="the cache file (default: the committed one)")
    p.add_argument("--compare", default=None, metavar="PATH",
                   help="instead of computing: compare the cache PATH with --out entry for entry (summaries and "
                   "checks; exit 1 where one differs)")
    add_backend_flags(p)


def cmd_oracle_cache(args: argparse.Namespace) -> int:
    """``kairos-gym oracle-cache``: the flags and the existing cache file checked before the first Oracle run."""
    from kairos_gym.benchmark import oracle_cache

    w = "oracle-cache"
    cap = None if args.max_requests is None else parse_int(w, "--max-requests", args.max_requests, 1, 10**7)
    if args.tasks is not None:
        from kairos_gym.benchmark.suite import select_tasks

        select_tasks(args.tasks, where=w)
    ours = oracle_cache.load(args.out)
    if args.compare is not None:
        theirs = oracle_cache.load(args.compare)
        res = oracle_cache.compare(theirs, ours)
        print(f"{args.compare}: {res['compared']} of {len(theirs)} entries in {args.out}, {res['equal']} equal, "
              f"{len(res['differ'])} differ, {len(res['missing'])} missing")
        for task, inst in res["differ"]:
            print(f"  differs: {task} {inst}")
        return 1 if res["differ"] else 0
    with backend_from_args(w, args) as backend:
        oracle_cache.regenerate(args.tasks, cap, args.out, backend=backend)
    return 0


def _add_convergence(sub: Subparsers) -> None:
    from kairos_gym.benchmark.convergence import MAX_SEEDS, SEED_BASE, families

    p = add_command(sub, "convergence", cmd_convergence)
    p.add_argument("--families", default=",".join(families()),
                   help="synthetic families of the v1 suite, comma-separated (default: every one)")
    p.add_argument("--burn-in", default="0,500,1000", metavar="B,...",
                   help="burn-in lengths (requests simulated, not scored; default 0,500,1000)")
    p.add_argument("--lengths", default="250,500,1000,2000,4000,8000", metavar="L,...",
                   help="scored lengths (requests; default 250,500,1000,2000,4000,8000)")
    p.add_argument("--seeds", default="10", metavar="N",
                   help=f"workload seeds per cell, {SEED_BASE} onwards (default 10; at most {MAX_SEEDS})")
    p.add_argument("--json", default=None, metavar="PATH", help="also write every cell's scores as JSON ('-': stdout)")
    p.add_argument("--no-progress", action="store_true", help=NO_PROGRESS_HELP)
    add_backend_flags(p)


def cmd_convergence(args: argparse.Namespace) -> int:
    """``kairos-gym convergence``: the study's markdown table on stdout (``--json``: the cells)."""
    from kairos_gym.benchmark import convergence as cv
    from kairos_gym.flags import parse_int_list, parse_names

    w = "convergence"
    fams = parse_names(w, "--families", args.families, cv.families())
    burn = parse_int_list(w, "--burn-in", args.burn_in, 0, cv.MAX_BURN_IN)
    lengths = parse_int_list(w, "--lengths", args.lengths, 1, cv.MAX_SCORED)
    n_seeds = parse_int(w, "--seeds", args.seeds, 2, cv.MAX_SEEDS)
    check_outputs(w, {"--json": None if args.json in (None, "-") else args.json})
    cv.check_grid(w, burn, lengths, fams)
    seeds = list(range(cv.SEED_BASE, cv.SEED_BASE + n_seeds))
    with backend_from_args(w, args) as backend:
        cells = cv.study(fams, burn, lengths, seeds, backend, progress=progress(args, "convergence"))
    rows = cv.summary_rows(cells)
    print(cv.markdown(rows, n_seeds), end="")
    write_json(args.json, {"seeds": seeds, "policies": list(cv.POLICIES),
                           "cells": [{"family": c.family, "burn_in": c.burn_in, "scored": c.scored,
                                      "scores": c.scores} for c in cells],
                           "rows": rows}, where=w)
    return 0


def _add_headroom(sub: Subparsers) -> None:
    p = add_command(sub, "headroom", cmd_headroom)
    p.add_argument("--board", default="results/leaderboard-v2-exact.json", metavar="PATH",
                   help="a v2 exact-track run (leaderboard --suite v2 --track exact --json; default "
                        "results/leaderboard-v2-exact.json)")
    p.add_argument("--instances", default="3", metavar="K",
                   help="Oracle runs per task: its first K test instances (default 3; at most 30; 0: the certified "
                        "bound only)")
    p.add_argument("--tasks", default=None, help="comma-separated task names (default: every task of the board)")
    p.add_argument("--cache", default="out/oracle-v2-cache.json", metavar="PATH",
                   help="the Oracle runs' cache: runs found there are reused, new ones added (default "
                        "out/oracle-v2-cache.json; the committed one: results/oracle-v2-cache.json)")
    p.add_argument("--cached-only", action="store_true", help="run no Oracle: each task uses the cached runs of "
                   "its first test instances, up to K (none: the certified bound alone)")
    p.add_argument("--out", default="out/headroom-v2.md", help="the markdown report (default out/headroom-v2.md)")
    p.add_argument("--json", default=None, metavar="PATH", help="also write the study as JSON")
    add_backend_flags(p)


def cmd_headroom(args: argparse.Namespace) -> int:
    """``kairos-gym headroom``: the certified bound and the measured Oracle headroom per v2 task (exact track)."""
    from kairos_gym.benchmark import headroom_v2 as hr
    from kairos_gym.flags import parse_names
    from kairos_gym.json_file import read_json_file

    w = "headroom"
    board = hr.check_board(read_json_file(w, "--board", args.board, MAX_V2_JSON_BYTES,
                                          "v2 leaderboard run JSON"), args.board)
    k = parse_int(w, "--instances", args.instances, 0, hr.MAX_INSTANCES)
    names = [t["task"] for t in board["tasks"]]
    tasks = None if args.tasks is None else parse_names(w, "--tasks", args.tasks, names)
    check_outputs(w, {"--out": args.out, "--json": args.json, "--cache": args.cache})
    with backend_from_args(w, args) as backend:
        res = hr.run_headroom(board, k, tasks, cache=args.cache, backend=backend,
                              log=lambda s: print(s, flush=True), command=command_line(args),
                              cached_only=args.cached_only)
    write_json(args.json, res, where=w)
    write_text(args.out, hr.render(res), where=w)
    print(f"wrote {args.out} ({res['elapsed_s']:.0f} s)")
    return 0


def _add_pull_compare(sub: Subparsers) -> None:
    from kairos_gym.benchmark.pull_compare import DEFAULT_TASKS
    from kairos_gym.benchmark.suite import TIER_NAMES

    p = add_command(sub, "pull-compare", cmd_pull_compare)
    p.add_argument("--tasks", default=DEFAULT_TASKS, help=f"task or family names (default {DEFAULT_TASKS})")
    p.add_argument("--tier", default="default", choices=TIER_NAMES, help="SLO tier of the tasks (default: default)")
    p.add_argument("--json", metavar="PATH", help=JSON_HELP)


def cmd_pull_compare(args: argparse.Namespace) -> int:
    """``kairos-gym pull-compare``: the markdown table on stdout (and the rows as JSON with ``--json``)."""
    from kairos_gym.benchmark.pull_compare import measure, table
    from kairos_gym.benchmark.suite import select_tasks

    select_tasks(args.tasks, where="pull-compare")
    check_outputs("pull-compare", {"--json": args.json}, stdout_ok=["--json"])
    rows = measure(args.tasks, args.tier)
    if args.json == "-":
        write_json("-", rows, where="pull-compare")
        return 0
    print(table(rows), end="")
    write_json(args.json, rows, where="pull-compare")
    return 0


def _add_results(sub: Subparsers) -> None:
    p = add_command(sub, "results", cmd_results)
    p.add_argument("--out", default="results/paper-claims.md",
                   help="markdown file to write (default results/paper-claims.md)")
    p.add_argument("--seeds", default="0-4", help="instances of the synthetic scenarios and of the Oracle "
                   "(trace instances are fixed windows); " + SEEDS_HELP)
    p.add_argument("--json", metavar="PATH", help="also write every figure as JSON to this file")
    p.add_argument("--no-progress", action="store_true", help=NO_PROGRESS_HELP)


def cmd_results(args: argparse.Namespace) -> int:
    """``kairos-gym results``: results/paper-claims.md and, with --json, every figure."""
    from kairos_gym.benchmark.paper_claims import build_results, results_md

    seeds = parse_seeds(args.seeds, "--seeds", "results")
    check_outputs("results", {"--out": args.out, "--json": args.json})
    with progress(args, "results") as bar:
        res = build_results(seeds, progress=bar)
    write_report(args.out, results_md(res), res)
    write_json(args.json, res)
    return 0
