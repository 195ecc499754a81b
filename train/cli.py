"""``kairos-gym train``: PPO training from a training config (kairos-gym's YAML layout, see docs/training.md).

Registered as a subcommand in ``kairos_gym/cli.py`` (``add_train_parser``). Also runnable alone:
``python -m kairos_gym.train.cli --config configs/ppo/kairos-v0.yaml``.
"""

from __future__ import annotations

import argparse
import shlex
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from kairos_gym.errors import ConfigError
from kairos_gym.evaluation.backends.base import MAX_WORKERS


def _add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--config", required=True, help="training config YAML, e.g. configs/ppo/kairos-v0.yaml")
    p.add_argument("--env-id", help="the config section to use (default: its only env id)")
    p.add_argument("--algo", choices=("maskable_ppo", "ppo"), help="override the config's algo (ppo: the ablation)")
    p.add_argument("--timesteps", type=int, help="override n_timesteps (total, also when resuming)")
    p.add_argument("--seed", type=int, help="override the config's seed")
    p.add_argument("--n-envs", type=int, help="override n_envs (1-64)")
    p.add_argument("--vec-backend", choices=("native", "dummy", "subproc"),
                   help="override vec_backend (native: one native call steps all envs)")
    p.add_argument("--eval-freq", type=int, help="override eval.freq (timesteps; 0: no periodic evaluation)")
    p.add_argument("--out", help="run folder (default runs/ppo/<config name>/seed<seed>)")
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


def add_train_parser(sub: argparse._SubParsersAction) -> None:
    """Register the ``train`` subcommand on a ``kairos-gym`` subparsers object."""
    p = sub.add_parser("train", help="train a PPO / MaskablePPO agent from a training config (configs/ppo/*.yaml)")
    _add_arguments(p)
    p.set_defaults(func=cmd_train)


def cmd_train(args: argparse.Namespace) -> int:
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
    out = Path(args.out) if args.out else Path("runs") / "ppo" / Path(args.config).stem / f"seed{cfg.seed}"
    command = "kairos-gym train " + shlex.join(sys.argv[2:] if sys.argv[1:2] == ["train"] else sys.argv[1:])
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


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m kairos_gym.train.cli", description=__doc__.splitlines()[0])
    _add_arguments(parser)
    args = parser.parse_args(argv)
    try:
        return cmd_train(args)
    except ConfigError as e:
        print(f"kairos-gym train: error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
