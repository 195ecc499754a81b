"""The "train" commands: ``train`` (PPO from a training config, docs/training.md), ``distill`` (the Oracle into a
masked MLP), ``select`` (two distilled students on the train-side selection set), ``compare`` (checkpoints and
policy files against the baselines on several scenarios and loads), ``card`` (a checkpoint folder's record, read
from its files), ``convert`` (an SB3 checkpoint to the safe format), ``reward-order`` and ``perf-train`` (training
throughput, listed with the performance commands)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from kairos_gym.cli.common import Subparsers, add_command, command_line, write_text
from kairos_gym.cli.external import add_external_flags, external_policies
from kairos_gym.errors import ConfigError
from kairos_gym.evaluation.backends.base import MAX_WORKERS
from kairos_gym.extras import installed, require
from kairos_gym.flags import check_outputs, parse_int, parse_seeds


def add_commands(sub: Subparsers) -> None:
    """Register ``train``, ``distill``, ``lofo``, ``curves``, ``select``, ``compare``, ``card``, ``convert``,
    ``reward-order`` and ``perf-train``."""
    for add in (_add_train, _add_distill, _add_lofo, _add_curves, _add_select, _add_compare, _add_card, _add_convert,
                _add_reward_order, _add_perf_train):
        add(sub)


def _add_train(sub: Subparsers) -> None:
    p = add_command(sub, "train", cmd_train)
    p.add_argument("--config", required=True, help="training config YAML, e.g. configs/ppo/kairos-v0.yaml")
    p.add_argument("--env-id", help="the config section to use (default: its only env id)")
    p.add_argument("--algo", choices=("maskable_ppo", "ppo", "maskable_dqn"),
                   help="override the config's algo within its family (ppo: the ablation without masks)")
    p.add_argument("--timesteps", type=int, help="override n_timesteps (total, also when resuming)")
    p.add_argument("--seed", type=int, help="override the config's seed")
    p.add_argument("--n-envs", type=int, help="override n_envs (1-64)")
    p.add_argument("--vec-backend", choices=("native", "dummy", "subproc"),
                   help="override vec_backend (native: one native call steps all envs)")
    p.add_argument("--eval-freq", type=int, help="override eval.freq (timesteps; 0: no periodic evaluation)")
    p.add_argument("--out", help="run folder (default runs/ppo/<config name>/seed<seed>; runs/dqn/... for "
                   "maskable_dqn)")
    p.add_argument("--resume", metavar="PATH", help="continue from SB3's training state: a checkpoint zip, a folder "
                   "with model.zip or a run folder (needs --trust-checkpoint)")
    p.add_argument("--trust-checkpoint", action="store_true", help="let --resume unpickle the checkpoint (SB3 model "
                   "zip with cloudpickle entries, vecnormalize.pkl): that can execute code stored in the files, so "
                   "only for your own runs or files you trust")
    p.add_argument("--export", metavar="DIR", help="copy the best (else final) model in the safe format (policy.json, "
                   "policy.npz, normalize.json), the config and meta here at the end")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.add_argument("-v", "--verbose", action="count", default=0, help="print each evaluation")
    # scale-out (docs/scale-out.md; needs the extra kairos-gym[ray])
    p.add_argument("--backend", default="sb3", metavar="sb3|rllib",
                   help="sb3 (default): Stable-Baselines3 in this process; rllib: RLlib PPO with the masking RLModule "
                   "(the config's keys mapped onto RLlib's, docs/scale-out.md)")
    p.add_argument("--tune", metavar="SPACE.yaml", help="a Ray Tune sweep of the SB3 pipeline over this search space "
                   "(docs/scale-out.md); trials and TensorBoard logs under --out (default runs/tune/<config name>)")
    p.add_argument("--workers", default=None, metavar="N", help="rllib/--tune: CPUs of the local Ray instance "
                   f"(default: all), 1..{MAX_WORKERS}")
    p.add_argument("--address", default=None, metavar="ADDR", help="rllib/--tune: join this Ray cluster instead")
    p.add_argument("--num-env-runners", default="0", metavar="N", help="rllib: remote EnvRunner actors (default 0: "
                   f"sampling in the driver), 0..{MAX_WORKERS}")


def cmd_train(args: argparse.Namespace) -> int:
    """``kairos-gym train``: the plain SB3 run, or with --backend rllib / --tune the scale-out run."""
    require("train", "training")
    from kairos_gym.train.config import load_config
    from kairos_gym.train.trainer import train, with_overrides

    for flag in ("timesteps", "n_envs"):
        v = getattr(args, flag)
        if v is not None and v < 1:
            raise ConfigError("train", "--" + flag.replace("_", "-"), v, "a whole number >= 1")
    for flag in ("seed", "eval_freq"):
        v = getattr(args, flag)
        if v is not None and v < 0:
            raise ConfigError("train", "--" + flag.replace("_", "-"), v, "a whole number >= 0")
    if args.resume is not None and not args.trust_checkpoint:
        from kairos_gym.agents.checkpoint import require_trust

        require_trust(args.resume, False, "train", "--resume", "--trust-checkpoint")
    cfg = load_config(args.config, args.env_id)
    cfg = with_overrides(cfg, algo=args.algo, timesteps=args.timesteps, seed=args.seed, n_envs=args.n_envs,
                         eval_freq=args.eval_freq, vec_backend=args.vec_backend)
    scale = _scale_out(args, cfg)
    if scale is not None:
        return scale
    family = "dqn" if cfg.algo == "maskable_dqn" else "ppo"
    out = Path(args.out) if args.out else Path("runs") / family / Path(args.config).stem / f"seed{cfg.seed}"
    check_outputs("train", folders={"--out": (out, ()), "--export": (args.export, ())})
    command = command_line(args)
    meta = train(cfg, out, resume=args.resume, trust_checkpoint=args.trust_checkpoint, progress=not args.no_progress,
                 export=args.export, command=command, verbose=args.verbose)
    print(f"trained {cfg.algo} on {cfg.env_id}: {meta['timesteps']} timesteps in {meta['train_seconds']:.0f} s "
          f"(evaluation {meta['eval_seconds']:.0f} s of it); run folder {out}")
    for key in ("best_eval", "last_eval"):
        ev = meta.get(key)
        if ev:
            ref = next(iter(ev["reference"].values()))
            norm = ""
            if ev.get("normalized_score") is not None:  # a domain run (train/domain.py): its validation score
                rs = ref.get("normalized", {}).get("all", {}).get("mean")
                norm = (f"normalized_score {ev['normalized_score']:.4g} ({cfg.eval.reference} "
                        + ("n/a" if rs is None else f"{rs:.4g}") + "), ")
            print(f"{key:<9} @ {ev['timesteps']}: " + norm + ", ".join(
                f"{k} {ev[k]:.4g} ({cfg.eval.reference} {ref[k]:.4g})"
                for k in ("slo_attainment", "ttft_p95", "tbt_violation_rate", "deflection_rate")))
    if args.export:
        print(f"exported to {args.export}")
    return 0


def _scale_out(args: argparse.Namespace, cfg: Any) -> int | None:
    """``--backend rllib`` or ``--tune``: run it and return the exit status; None for the plain SB3 run."""
    from kairos_gym.flags import parse_int

    backend = getattr(args, "backend", "sb3")
    if backend not in ("sb3", "rllib"):
        raise ConfigError("train", "--backend", backend, "sb3 or rllib")
    tune_spec = getattr(args, "tune", None)
    workers = None if args.workers is None else parse_int("train", "--workers", args.workers, 1, MAX_WORKERS)
    runners = parse_int("train", "--num-env-runners", args.num_env_runners, 0, MAX_WORKERS)
    if backend == "sb3" and tune_spec is None:
        for flag, v in (("--workers", args.workers), ("--address", args.address)):
            if v is not None:
                raise ConfigError("train", flag, v, "only with --backend rllib or --tune")
        return None
    if args.address is not None and workers is not None:
        raise ConfigError("train", "--workers", workers, "not with --address (the cluster's CPUs run the work)")
    for flag, v in (("--resume", args.resume), ("--export", args.export)):
        if v is not None:
            raise ConfigError("train", flag, v, "only with the plain SB3 run (not with --backend rllib or --tune)")
    if backend == "rllib" and tune_spec is not None:
        raise ConfigError("train", "--tune", tune_spec, "only with --backend sb3 (Tune sweeps the SB3 pipeline)")
    name = Path(args.config).stem
    if tune_spec is not None:
        from kairos_gym.train.tune import run_tune

        out = Path(args.out) if args.out else Path("runs") / "tune" / name
        res = run_tune(cfg, tune_spec, out, workers=workers, address=args.address)
        print(f"tuned {len(res['trials'])} trials into {res['out']} (tensorboard --logdir {res['out']}); best "
              f"{res['metric']} {res['best'][res['metric']]} with {res['best']['params']}")
        return 0
    from kairos_gym.train.rllib.train import train_rllib

    out = Path(args.out) if args.out else Path("runs") / "rllib" / name / f"seed{cfg.seed}"
    meta = train_rllib(cfg, out, num_env_runners=runners, workers=workers, address=args.address,
                       log=sys.stdout if args.verbose else None)
    print(f"trained RLlib PPO (masked) on {cfg.env_id}: {meta['env_steps']} env steps in {meta['iterations']} "
          f"iterations, {meta['train_seconds']:.0f} s; invalid actions {meta['invalid_actions']}; run folder {out}")
    return 0


def _add_distill(sub: Subparsers) -> None:
    p = add_command(sub, "distill", cmd_distill)
    p.add_argument("--config", required=True, help="YAML file with a distill: section (configs/ppo/distill.yaml)")
    p.add_argument("--out", required=True, help="run folder (data.npz, seed<s>/, meta.json)")
    p.add_argument("--data", help="a data.npz of an earlier run: skip round 0's label collection")
    from kairos_gym.evaluation.backends import add_backend_flags

    add_backend_flags(p)  # the label instances (the Oracle's runs) on a process pool or Ray: the serial labels


def cmd_distill(args: argparse.Namespace) -> int:
    """``kairos-gym distill``: the run's log lines on stdout."""
    require("train", "distillation")
    from kairos_gym.evaluation.backends import backend_from_args
    from kairos_gym.train.distill import load_config, run

    cfg = load_config(args.config)
    if args.data is not None and not Path(args.data).is_file():
        raise ConfigError("distill", "--data", args.data, "an existing data.npz")
    with backend_from_args("distill", args) as backend:
        run(cfg, args.out, args.data, log=lambda s: print(s, flush=True), backend=backend)
    return 0


def _add_lofo(sub: Subparsers) -> None:
    p = add_command(sub, "lofo", cmd_lofo)
    p.add_argument("--config", required=True, help="a suite-v2 domain recipe (kairos_train/KairosGeneral-v0 with "
                   "suite: v2), e.g. configs/ppo/v2-seen.yaml")
    p.add_argument("--hold-out", default=None, metavar="F1,F2",
                   help="the families to hold out, one at a time (default: every family of the recipe)")
    p.add_argument("--seeds", default="0", help="training seeds, e.g. 0 or 0-2 (default 0; at most 10)")
    p.add_argument("--timesteps", type=int, default=None,
                   help="timesteps per run (default: the recipe's n_timesteps)")
    p.add_argument("--tracks", default="exact,realistic", help="information tracks to score on "
                   "(default exact,realistic)")
    p.add_argument("--runs", default="runs/lofo", help="folder of the training runs (default runs/lofo; a finished "
                   "run with the same config is reused)")
    p.add_argument("--out", default="out/lofo-v2.md", help="the markdown report (default out/lofo-v2.md)")
    p.add_argument("--json", default=None, metavar="PATH", help="also write the whole study as JSON")
    p.add_argument("--from-json", default=None, metavar="PATH", help="write the report from a saved --json "
                   "instead of running")
    p.add_argument("--no-progress", action="store_true", help="no progress bar for the scoring runs")
    from kairos_gym.evaluation.backends import add_backend_flags

    add_backend_flags(p)  # the scoring runs on a process pool or Ray (training runs in this process)


def cmd_lofo(args: argparse.Namespace) -> int:
    """``kairos-gym lofo``: train (or reuse) the runs, score them on the held-out families, write the report."""
    from kairos_gym.cli.common import progress, write_json

    check_outputs("lofo", {"--out": args.out, "--json": args.json})
    if args.from_json is not None:
        from kairos_gym.json_file import read_json_file
        from kairos_gym.train.lofo import MAX_JSON_BYTES, check_study, render

        res = check_study(read_json_file("lofo", "--from-json", args.from_json, MAX_JSON_BYTES,
                                         "lofo study JSON (the --json of an earlier run)"), args.from_json)
        write_text(args.out, render(res), where="lofo")
        print(f"wrote {args.out} (from {args.from_json})")
        return 0
    require("train", "lofo")
    from kairos_gym.evaluation.backends import backend_from_args
    from kairos_gym.train.config import load_config
    from kairos_gym.train.lofo import TRACKS, parse_held_out, render, run_lofo

    cfg = load_config(args.config)
    held = parse_held_out(cfg, args.hold_out)
    seeds = parse_seeds(args.seeds, "--seeds", "lofo")
    if args.timesteps is not None and args.timesteps < 1:
        raise ConfigError("lofo", "--timesteps", args.timesteps, "a whole number >= 1")
    tracks = [t.strip() for t in args.tracks.split(",")]
    if not tracks or any(t not in TRACKS for t in tracks) or len(set(tracks)) != len(tracks):
        raise ConfigError("lofo", "--tracks", args.tracks, "distinct names among " + ", ".join(TRACKS))
    with backend_from_args("lofo", args) as backend:
        res = run_lofo(cfg, args.runs, held, seeds, args.timesteps, tracks, backend=backend,
                       log=lambda s: print(s, flush=True), progress=progress(args, "lofo"),
                       command=command_line(args))
    write_json(args.json, res, where="lofo")
    write_text(args.out, render(res), where="lofo")
    print(f"wrote {args.out} ({res['elapsed_s']:.0f} s)")
    return 0


def _add_curves(sub: Subparsers) -> None:
    p = add_command(sub, "curves", cmd_curves)
    p.add_argument("runs", nargs="+", metavar="RUN", help="training run folders of one domain recipe, one per seed "
                   "(each with eval_history.jsonl)")
    p.add_argument("--out", default=None, metavar="PATH", help="write the markdown table here (default: stdout only)")
    p.add_argument("--json", default=None, metavar="PATH", help="also write the curves as JSON")
    p.add_argument("--plot", default=None, metavar="PNG", help="also draw the IQM curve and each run's (needs the "
                   "[plots] extra)")
    p.add_argument("--tensorboard", default=None, metavar="DIR", help="also write the aggregate curves as "
                   "TensorBoard scalars into DIR (needs the [train] extra)")


def cmd_curves(args: argparse.Namespace) -> int:
    """``kairos-gym curves``: the table on stdout (and the files asked for)."""
    from kairos_gym.cli.common import write_json
    from kairos_gym.train.curves import curves, plot, render, write_tensorboard

    check_outputs("curves", {"--out": args.out, "--json": args.json, "--plot": args.plot},
                  folders={"--tensorboard": (args.tensorboard, ())})
    if args.plot is not None:
        require("plots", "curves --plot")
    if args.tensorboard is not None:
        require("train", "curves --tensorboard")
    res = curves(args.runs)
    text = render(res)
    print(text, end="")
    if args.out is not None:
        write_text(args.out, text, where="curves")
    write_json(args.json, res, where="curves")
    if args.plot is not None:
        plot(res, args.plot)
    if args.tensorboard is not None:
        write_tensorboard(res, args.tensorboard)
    return 0


def _add_select(sub: Subparsers) -> None:
    from kairos_gym.agents.ppo import GENERAL_CHECKPOINT
    from kairos_gym.train.selection import DEFAULT_INSTANCES, MAX_INSTANCES

    p = add_command(sub, "select", cmd_select)
    p.add_argument("--candidate", required=True, help="the candidate's checkpoint folder (policy.json)")
    p.add_argument("--incumbent", default=str(GENERAL_CHECKPOINT.parent),
                   help="the incumbent's checkpoint folder (default: the shipped distilled-oracle)")
    p.add_argument("--config", default="configs/ppo/distill.yaml",
                   help="the distill config whose families, tiers and label jobs define the set")
    p.add_argument("--instances", default=str(DEFAULT_INSTANCES),
                   help=f"instances per cell and track (1 to {MAX_INSTANCES}; default {DEFAULT_INSTANCES})")
    p.add_argument("--json", default=None, help="write the per-instance scores and the decision here")


def cmd_select(args: argparse.Namespace) -> int:
    """``kairos-gym select``: each track's figures and the decision (ship or not)."""
    from kairos_gym.train.selection import MAX_INSTANCES, WHERE, select

    n = parse_int(WHERE, "--instances", args.instances, 1, MAX_INSTANCES)
    return select(args.candidate, args.incumbent, args.config, n, args.json)


def _add_compare(sub: Subparsers) -> None:
    from kairos_gym.evaluation.compare import DEFAULT_SCENARIOS

    p = add_command(sub, "compare", cmd_compare)
    p.add_argument("--scenarios", default=",".join(DEFAULT_SCENARIOS),
                   help="scenario specs, comma-separated: a shipped name or YAML path, optionally with "
                   ":section.key=value overrides (one ':' per override)")
    p.add_argument("--policies", default="no-deflect,kairos,ppo",
                   help="policy specs, comma-separated: registry names with optional :param=value parameters (ppo: "
                   "the shipped agent); '' for none but --checkpoint/--policy")
    add_external_flags(p, "compare", isolate=False, trust=True)
    p.add_argument("--seeds", default="0-4", help="seeds, e.g. 0-4 or 0,3,7 (distinct; see kairos_gym.flags)")
    p.add_argument("--json", metavar="PATH", help="write the runs as JSON to this file")
    p.add_argument("--markdown", metavar="PATH", help="write the markdown table to this file")


def cmd_compare(args: argparse.Namespace) -> int:
    """``kairos-gym compare``: a table per scenario, then the markdown table of all; every flag, output, scenario
    and policy checked before the first run."""
    import json

    from kairos_gym.evaluation.compare import compare, markdown
    from kairos_gym.evaluation.evaluate import format_table

    seeds = parse_seeds(args.seeds, "--seeds", "compare")
    check_outputs("compare", {"--json": args.json, "--markdown": args.markdown})
    if args.trust_checkpoint and installed("torch"):  # an SB3 zip loads through torch: one thread (2 fight the
        # runs on 2 cores); without torch the loader says which extra it needs
        import torch

        torch.set_num_threads(1)
    externals = external_policies(args, "compare")
    results = compare([s for s in args.scenarios.split(",") if s], [s for s in args.policies.split(",") if s], seeds,
                      externals=externals, log=sys.stderr)
    for res in results:
        print(format_table(res))
        print()
    md = markdown(results)
    print(md)
    if args.markdown:
        write_text(args.markdown, md + "\n", where="compare", flag="--markdown")
    if args.json:
        write_text(args.json, json.dumps(results, indent=2, default=str) + "\n", where="compare", flag="--json")
    return 0


def _add_card(sub: Subparsers) -> None:
    from kairos_gym.cli.common import JSON_HELP

    p = add_command(sub, "card", cmd_card)
    p.add_argument("dir", metavar="DIR", help="a safe checkpoint folder (policy.json; meta.json, config.yaml and "
                   "history.jsonl where the trainer wrote them), e.g. agents/checkpoints/ppo-kairos-v0")
    p.add_argument("--json", default=None, metavar="OUT", help=JSON_HELP + ": the parsed meta.json, config.yaml, "
                   "history.jsonl and policy.json, and what the config says it trained on")


def cmd_card(args: argparse.Namespace) -> int:
    """``kairos-gym card DIR``: the card on stdout (``--json``: the parsed files too)."""
    from kairos_gym.benchmark.card import WHERE, read_card, render_card
    from kairos_gym.cli.common import write_json

    check_outputs(WHERE, {"--json": args.json}, stdout_ok=("--json",))
    card = read_card(args.dir)
    if args.json != "-":
        print(render_card(card), end="")
    write_json(args.json, card, where=WHERE)
    return 0


def _add_convert(sub: Subparsers) -> None:
    p = add_command(sub, "convert", cmd_convert)
    p.add_argument("src", help="SB3 model zip, a folder with model.zip, or a run folder")
    p.add_argument("dest", help="folder to write the safe checkpoint into")
    p.add_argument("--trust-checkpoint", action="store_true",
                   help="required: reading SRC unpickles it, which can execute code stored in the file")


def cmd_convert(args: argparse.Namespace) -> int:
    """``kairos-gym convert --trust-checkpoint SRC DEST``."""
    require("train", "reading a Stable-Baselines3 checkpoint")
    from kairos_gym.agents.sb3_checkpoint import convert_checkpoint

    dest = convert_checkpoint(args.src, args.dest, trust_checkpoint=args.trust_checkpoint)
    print(f"wrote {dest / 'policy.json'}")
    return 0


def _add_reward_order(sub: Subparsers) -> None:
    from kairos_gym.evaluation.reward_order import DEFAULT_POLICIES, MAX_EPISODE_REQUESTS

    p = add_command(sub, "reward-order", cmd_reward_order)
    p.add_argument("--scenario", default="bursty", help="a shipped scenario name or a YAML path (default bursty)")
    p.add_argument("--requests", default="500",
                   help=f"requests per episode (the workload's first N), 1-{MAX_EPISODE_REQUESTS:,} (default 500)")
    p.add_argument("--seeds", default="0-2", help="workload seeds, e.g. 0-2 or 0,5 (default 0-2)")
    p.add_argument("--policies", default=",".join(DEFAULT_POLICIES),
                   help="comma-separated registry policies, at least two (default: " + ",".join(DEFAULT_POLICIES) + ")")
    p.add_argument("--rewards", default="misses,ttft,slo,goodput",
                   help="comma-separated reward kinds (default misses,ttft,slo,goodput)")
    p.add_argument("--json", metavar="PATH", help="write every episode and the discordant pairs as JSON")


def cmd_reward_order(args: argparse.Namespace) -> int:
    """``kairos-gym reward-order``: per reward, the pairs of policies (same seed) its returns order against the
    SLO attainment."""
    from kairos_gym.cli.common import write_json
    from kairos_gym.evaluation.reward_order import MAX_EPISODE_REQUESTS, reward_order
    from kairos_gym.scenario import load_scenario

    w = "reward-order"
    n = parse_int(w, "--requests", args.requests, 1, MAX_EPISODE_REQUESTS)
    seeds = parse_seeds(args.seeds, "--seeds", w)
    policies = [x.strip() for x in str(args.policies).split(",")]
    rewards = [x.strip() for x in str(args.rewards).split(",")]
    check_outputs(w, {"--json": args.json}, stdout_ok=["--json"])
    sc = load_scenario(args.scenario).with_overrides({"workload": {"max_requests": n}})
    res = reward_order(policies, sc, seeds, rewards)
    print(f"{len(policies)} policies x {len(seeds)} seeds on {args.scenario} (first {n} requests): pairs on one seed "
          "whose returns are ordered against their SLO attainment")
    for r, v in res["rewards"].items():
        print(f"  {r:<8} {v['discordant']:>4} of {v['pairs']} pairs discordant ({100 * v['share']:.1f}%)")
    write_json(args.json, res, where=w)
    return 0



def _add_perf_train(sub: Subparsers) -> None:
    from kairos_gym.cli.common import JSON_HELP

    p = add_command(sub, "perf-train", cmd_perf_train)
    p.add_argument("--timesteps", default="40960",
                   help="environment steps of one timing run per recipe (rounded up to whole rollouts: 4,096 steps "
                   "for general-fast and kairos-v0-fast, 8,192 for v2-seen), 1..10000000")
    p.add_argument("--repeats", default="3", help="timing runs per recipe, alternating, 1..20 (the median is reported)")
    p.add_argument("--seed", default="0", help="the recipes' seed")
    p.add_argument("--config", action="append", metavar="PATH",
                   help="time this training config instead (repeatable, in order; a bare file name is one of "
                   "configs/ppo/; ratios to the last). Default: general-fast.yaml, v2-seen.yaml, then "
                   "kairos-v0-fast.yaml")
    p.add_argument("--json", metavar="PATH", help=JSON_HELP)


def cmd_perf_train(args: argparse.Namespace) -> int:
    """``kairos-gym perf-train``: every flag checked before the first timing run."""
    from kairos_gym.cli.common import write_json
    from kairos_gym.flags import SEED_LIMIT

    w = "perf-train"
    timesteps = parse_int(w, "--timesteps", args.timesteps, 1, 10_000_000)
    repeats = parse_int(w, "--repeats", args.repeats, 1, 20)
    seed = parse_int(w, "--seed", args.seed, 0, SEED_LIMIT)
    check_outputs(w, {"--json": args.json}, stdout_ok=["--json"])
    require("train", "timing training")
    from kairos_gym.table import render_table
    from kairos_gym.train.throughput import bench_train

    recipes = None if not args.config else tuple((Path(c).stem, c) for c in args.config)
    res = bench_train(timesteps, repeats, seed, recipes)
    if args.json == "-":
        write_json("-", res)
        return 0
    print(render_table(
        ["recipe", "config", "backend", "envs", "steps/s\n(median)", "ratio to\nthe last", "steps per\nCPU s",
         "steps/s of each run"],
        [[r["recipe"], r["config"], r["vec_backend"], str(r["n_envs"]), f"{r['steps_per_s']:,}", f"{r['ratio']:.3f}",
          f"{r['steps_per_cpu_s']:,}", ", ".join(f"{x:,}" for x in r["steps_per_s_runs"])]
         for r in res["rows"]],
        notes=[f"MaskablePPO model.learn of {res['rows'][0]['steps']:,} steps per run, {repeats} runs per recipe "
               "(envs and model built outside the timing; no evaluations or checkpoints)"]))
    write_json(args.json, res)
    return 0
