"""The "performance" commands: throughput and memory measured on this machine (figures for docs/benchmarks.md,
not asserted in tests). ``perf``: the simulator, the pricing and the env; ``soak``: peak memory over a long
scenario; ``perf-scenario``: the wall time of one whole scenario; ``perf-env``: the env's decisions per second;
``perf-components``: the native components against their Python counterparts; ``perf-pool``: the process pool's
driver cost."""

from __future__ import annotations

import argparse
import json

from kairos_gym.cli.common import JSON_HELP, Subparsers, add_command, write_json
from kairos_gym.flags import MAX_BENCH_REPEATS, MAX_BENCH_SECONDS, SEED_LIMIT, check_outputs, parse_float, parse_int


def add_commands(sub: Subparsers) -> None:
    """Register ``perf``, ``soak``, ``perf-scenario``, ``perf-env``, ``perf-components``, ``perf-pool`` and
    ``perf-oracle``."""
    for add in (_add_perf, _add_soak, _add_perf_scenario, _add_perf_env, _add_perf_components, _add_perf_pool,
                _add_perf_oracle):
        add(sub)


def _add_perf(sub: Subparsers) -> None:
    p = add_command(sub, "perf", cmd_perf)
    p.add_argument("--json", metavar="PATH", help=JSON_HELP)
    p.add_argument("--env-seconds", default="3.0",
                   help=f"length of one env timing run (seconds, finite, > 0 and <= {MAX_BENCH_SECONDS:g})")
    p.add_argument("--env-repeats", default="3",
                   help=f"env timing runs per id, 1..{MAX_BENCH_REPEATS}; the median is reported (the VM's speed "
                   "drifts)")


def cmd_perf(args: argparse.Namespace) -> int:
    """``kairos-gym perf``: the tables (or the JSON) of :func:`kairos_gym.perf.throughput.run_bench`."""
    from kairos_gym.perf.throughput import run_bench
    from kairos_gym.table import render_table

    # checked before the minutes of simulator timing, not after
    seconds = parse_float("perf", "--env-seconds", args.env_seconds, 0.0, MAX_BENCH_SECONDS)
    repeats = parse_int("perf", "--env-repeats", args.env_repeats, 1, MAX_BENCH_REPEATS)
    check_outputs("perf", {"--json": args.json}, stdout_ok=["--json"])
    res = run_bench(env_seconds=seconds, env_repeats=repeats)
    if args.json == "-":
        write_json("-", res)
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
    write_json(args.json, res)
    return 0


def _add_soak(sub: Subparsers) -> None:
    p = add_command(sub, "soak", cmd_soak)
    p.add_argument("--scenario", default="soak-24h", help="shipped scenario name or YAML path (default: soak-24h)")
    p.add_argument("--checkpoints", default="1h,24h", help="simulated times to report at (default: 1h,24h)")
    p.add_argument("--seed", default="0", help="workload seed, a whole number >= 0")
    p.add_argument("--json", metavar="PATH", help="also write the summary and the checkpoints' rows as JSON")


def cmd_soak(args: argparse.Namespace) -> int:
    """``kairos-gym soak``: 0 when completed + rejected + timed out = arrived, else 1."""
    from kairos_gym.perf.soak import parse_checkpoints, soak

    marks = parse_checkpoints(args.checkpoints)
    seed = parse_int("soak", "--seed", args.seed, 0, SEED_LIMIT - 1)
    check_outputs("soak", {"--json": args.json})
    res = soak(args.scenario, marks, seed)
    write_json(args.json, {**res, "seed": seed}, where="soak")
    return 0 if res["conserved"] else 1


def _add_perf_scenario(sub: Subparsers) -> None:
    p = add_command(sub, "perf-scenario", cmd_perf_scenario)
    p.add_argument("--scenario", default="azure-conv", help="shipped scenario name or YAML path (default: azure-conv)")
    p.add_argument("--repeats", default="3", metavar="1..10", help="timed runs (default 3)")


def cmd_perf_scenario(args: argparse.Namespace) -> int:
    """``kairos-gym perf-scenario``: :func:`kairos_gym.perf.throughput.bench_whole_run` as JSON."""
    from kairos_gym.perf.throughput import bench_whole_run

    repeats = parse_int("perf-scenario", "--repeats", args.repeats, 1, 10)
    print(json.dumps(bench_whole_run(args.scenario, repeats=repeats), indent=1))
    return 0


def _add_perf_env(sub: Subparsers) -> None:
    p = add_command(sub, "perf-env", cmd_perf_env)
    p.add_argument("--seconds", default="5.0",
                   help=f"length of one timing run (s, finite, > 0 and <= {MAX_BENCH_SECONDS:g})")
    p.add_argument("--repeats", default="3",
                   help=f"timing runs per id, 1..{MAX_BENCH_REPEATS} (the median is reported)")
    p.add_argument("--env", action="append", help="env id (repeatable; default Kairos-v0 and KairosSmall-v0)")
    p.add_argument("--decisions", default=None,
                   help="instead of timing: run exactly this many decisions, 0..10000000 (for instruction counts; "
                   "with --vector N: this many vector steps of N envs)")
    p.add_argument("--vs-cartpole", action="store_true", help="time each id against CartPole-v1 in this process")
    p.add_argument("--vector", default=None, metavar="N",
                   help="time a KairosVectorEnv of N envs of each id (env-steps/s) against single-env CartPole-v1")
    p.add_argument("--step-infos", action="store_true",
                   help="with --vector: the vector env's per-step info keys on (gym.make_vec's default; without "
                   "the flag: step_infos=False, summaries=False, the training configuration)")
    p.add_argument("--json", metavar="PATH", help="also write the results (a list, one per id) as JSON")


def cmd_perf_env(args: argparse.Namespace) -> int:
    """``kairos-gym perf-env``: every flag checked before the first timing run."""
    from kairos_gym.env.vector import MAX_NUM_ENVS
    from kairos_gym.perf import env_throughput as et

    w = "perf-env"
    seconds = parse_float(w, "--seconds", args.seconds, 0.0, MAX_BENCH_SECONDS)
    repeats = parse_int(w, "--repeats", args.repeats, 1, MAX_BENCH_REPEATS)
    decisions = None if args.decisions is None else parse_int(w, "--decisions", args.decisions, 0, et.MAX_DECISIONS)
    vector = None if args.vector is None else parse_int(w, "--vector", args.vector, 1, MAX_NUM_ENVS)
    check_outputs(w, {"--json": args.json})
    results = []
    for env_id in args.env or ["kairos_gym/Kairos-v0", "kairos_gym/KairosSmall-v0"]:
        if vector is not None and decisions is not None:
            res = et.run_vector_steps(env_id, vector, decisions, step_infos=args.step_infos)
        elif vector is not None:
            res = et.bench_vector_vs_cartpole(env_id, vector, seconds, repeats, step_infos=args.step_infos)
        elif args.vs_cartpole:
            res = et.bench_vs_cartpole(env_id, seconds, repeats)
        elif decisions is not None:
            res = et.run_decisions(env_id, decisions)
        else:
            res = et.bench_env(env_id, seconds=seconds, repeats=repeats)
        print(json.dumps(res))
        results.append(res)
    write_json(args.json, results, where=w)
    return 0


def _add_perf_components(sub: Subparsers) -> None:
    from kairos_gym.perf.components import MAX_HEAP, MAX_OPS, MAX_REPEATS

    p = add_command(sub, "perf-components", cmd_perf_components)
    p.add_argument("--ops", default="200000", help=f"operations per sequence (1000..{MAX_OPS:,}; default 200,000)")
    p.add_argument("--repeats", default="5",
                   help=f"timed runs of each variant, the fastest reported (1..{MAX_REPEATS}; default 5)")
    p.add_argument("--seed", default="0", help="seed of the operation sequences (0..2^32-1; default 0)")
    p.add_argument("--heap", default="64",
                   help=f"events kept queued in the event-queue sequence (1..{MAX_HEAP:,}; default 64)")
    p.add_argument("--json", metavar="PATH", help="also write the rates as JSON")


def cmd_perf_components(args: argparse.Namespace) -> int:
    """``kairos-gym perf-components``: 1 when a native variant differs from Python's."""
    from kairos_gym.perf.components import MAX_HEAP, MAX_OPS, MAX_REPEATS, report

    w = "perf-components"
    ops = parse_int(w, "--ops", args.ops, 1000, MAX_OPS)
    repeats = parse_int(w, "--repeats", args.repeats, 1, MAX_REPEATS)
    seed = parse_int(w, "--seed", args.seed, 0, 2**32 - 1)
    heap = parse_int(w, "--heap", args.heap, 1, MAX_HEAP)
    check_outputs(w, {"--json": args.json})
    rates: dict = {}
    status = report(ops, repeats, seed, heap, rates)
    if status == 0:
        write_json(args.json, {"ops": ops, "repeats": repeats, "seed": seed, "heap": heap, **rates}, where=w)
    return status


def _add_perf_pool(sub: Subparsers) -> None:
    from kairos_gym.perf.pool import MAX_TASKS, MAX_WORKERS

    p = add_command(sub, "perf-pool", cmd_perf_pool)
    p.add_argument("--tasks", default="20000", help=f"tasks in the map (1-{MAX_TASKS:,}; default 20,000)")
    p.add_argument("--workers", default="2", help=f"worker processes (1-{MAX_WORKERS}; default 2)")


def cmd_perf_pool(args: argparse.Namespace) -> int:
    """``kairos-gym perf-pool``."""
    from kairos_gym.perf.pool import MAX_TASKS, MAX_WORKERS, measure

    tasks = parse_int("perf-pool", "--tasks", args.tasks, 1, MAX_TASKS)
    workers = parse_int("perf-pool", "--workers", args.workers, 1, MAX_WORKERS)
    cpu, wall = measure(tasks, workers)
    print(f"{tasks:,} tasks on {workers} workers: driver CPU {cpu:.2f} s, wall {wall:.2f} s")
    return 0


def _add_perf_oracle(sub: Subparsers) -> None:
    from kairos_gym.perf.oracle_speed import MAX_REQUESTS

    p = add_command(sub, "perf-oracle", cmd_perf_oracle)
    p.add_argument("--scenario", default="bursty", help="a shipped scenario name or a YAML path (default bursty)")
    p.add_argument("--requests", default="500", help=f"requests of the instance (1-{MAX_REQUESTS:,}; default 500)")
    p.add_argument("--seed", default="0", help=f"workload seed, 0..{SEED_LIMIT - 1} (default 0)")
    p.add_argument("--threads", default="1,2", help="comma-separated rollout thread counts, each 1-64 (default 1,2; "
                   "--growth: the first)")
    p.add_argument("--search", default="exhaustive,bounded",
                   help="comma-separated searches: reference (the Oracle before its exact constant-factor savings: "
                   "a cost baseline), exhaustive (every rollout to the end), bounded (default exhaustive,bounded; "
                   "--suite: must include those two)")
    p.add_argument("--suite", action="store_true",
                   help="the searches on the benchmark suite's instances instead (one thread): cost ratio per task")
    p.add_argument("--instances", default="1", help="--suite: test instances per task, 1-30 (default 1)")
    p.add_argument("--tasks", default=None, help="--suite: a comma-separated task list (default: every task)")
    p.add_argument("--growth", default=None, metavar="N,N,...",
                   help=f"the bounded search on the first N requests of --scenario for each N (1-{MAX_REQUESTS:,}): "
                   "cost and its growth exponent")
    p.add_argument("--plot", default=None, metavar="PNG", help="--growth: a log-log plot of the cost (PNG)")
    p.add_argument("--empty", action="store_true",
                   help="instead: per suite task, the share of arrivals finding the cluster empty under kairos-exact "
                   "(--instances, --tasks), where a rollout's state could repeat another's")
    p.add_argument("--json", metavar="PATH", help=JSON_HELP)


def cmd_perf_oracle(args: argparse.Namespace) -> int:
    """``kairos-gym perf-oracle``."""
    import sys

    from kairos_gym.benchmark.oracle_cost import measure_suite
    from kairos_gym.errors import ConfigError
    from kairos_gym.flags import parse_int_list
    from kairos_gym.perf.oracle_speed import MAX_REQUESTS, SEARCHES, measure, measure_growth, plot_growth
    from kairos_gym.scenario import load_scenario

    w = "perf-oracle"
    if sum(map(bool, (args.suite, args.growth, args.empty))) > 1:
        raise ConfigError(w, "--suite/--growth/--empty", "more than one", "one measurement per run")
    if args.plot and not args.growth:
        raise ConfigError(w, "--plot", args.plot, "only with --growth")
    requests = parse_int(w, "--requests", args.requests, 1, MAX_REQUESTS)
    seed = parse_int(w, "--seed", args.seed, 0, SEED_LIMIT - 1)
    threads = parse_int_list(w, "--threads", str(args.threads), 1, 64)
    searches = [s.strip() for s in str(args.search).split(",")]
    if not searches or any(s not in SEARCHES for s in searches) or len(set(searches)) != len(searches):
        raise ConfigError(w, "--search", args.search, "a comma-separated list of distinct " + " / ".join(SEARCHES))
    instances = parse_int(w, "--instances", args.instances, 1, 30)
    sizes = parse_int_list(w, "--growth", args.growth, 1, MAX_REQUESTS) if args.growth else ()
    check_outputs(w, {"--json": args.json, "--plot": args.plot}, stdout_ok=["--json"])

    def note(msg: str) -> None:
        print(msg, file=sys.stderr, flush=True)

    if args.empty:
        from kairos_gym.benchmark.oracle_cost import empty_arrivals
        from kairos_gym.benchmark.suite import select_tasks

        rows_e = empty_arrivals("kairos-exact", instances, select_tasks(args.tasks, where=w) if args.tasks else None)
        for r in rows_e:
            print(f"{r['task']:<24} {r['empty']:>5,} of {r['arrivals']:>6,} arrivals find the cluster empty "
                  f"({100 * r['share']:5.1f}%), busy periods of {r['busy_period']:6.1f} arrivals on average")
        write_json(args.json, rows_e, where=w)
        return 0
    if args.suite:
        from kairos_gym.benchmark.suite import select_tasks

        tasks = select_tasks(args.tasks, where=w) if args.tasks else None
        if "exhaustive" not in searches or "bounded" not in searches:
            raise ConfigError(w, "--search", args.search, "with --suite, a list that includes exhaustive and bounded")
        res = measure_suite(instances, tasks, progress=note, searches=searches)
        for a in (*res["tasks"], {**res["total"], "task": "suite"}):
            ref = (f"; reference {a['reference_wall_s']:.1f} s ({a['reference_wall_ratio']:.1f}x)"
                   if "reference_wall_s" in a else "")
            print(f"{a['task']:<24} {a['instances']:>2} inst  {a['exhaustive_rollout_decisions']:>13,.0f} -> "
                  f"{a['bounded_rollout_decisions']:>12,.0f} rollout decisions ({a['cost_ratio']:>8.1f}x)  "
                  f"{a['exhaustive_wall_s']:7.1f} -> {a['bounded_wall_s']:6.1f} s ({a['wall_ratio']:.1f}x){ref}")
        write_json(args.json, res, where=w)
        return 0
    load_scenario(args.scenario)  # a bad scenario fails here, before any run
    if sizes:
        res = measure_growth(args.scenario, sizes, seed, threads[0], progress=note)
        for r in res["rows"]:
            print(f"{r['requests']:>7,} requests: {r['wall_s']:8.2f} s wall, {r['rollout_decisions']:>14,} rollout "
                  f"decisions, SLO attainment {r['slo_attainment']:.4f}")
        if "exponent_wall" in res:
            print(f"growth exponent: wall {res['exponent_wall']:.2f}, rollout decisions "
                  f"{res['exponent_rollout_decisions']:.2f}")
        if args.plot:
            plot_growth(res, args.plot)
        write_json(args.json, res, where=w)
        return 0
    rows = measure(args.scenario, requests, seed, threads, searches)
    for r in rows:
        print(f"{r['search']:>10}, {r['threads']:>2} threads: {r['wall_s']:7.2f} s wall, {r['rollouts']:,} rollouts "
              f"({r['pruned']:,} stopped after {100 * r['stopped_share']:.0f}% of what was left, {r['reused']:,} "
              f"values reused), {r['rollout_decisions']:,} rollout "
              f"decisions; ratio {r['cost_ratio']:.2f}x decisions, {r['speedup']:.2f}x wall; SLO attainment "
              f"{r['slo_attainment']:.4f}")
    write_json(args.json, {"scenario": args.scenario, "requests": requests, "seed": seed, "runs": rows}, where=w)
    return 0
