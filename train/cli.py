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

from kairos_gym.errors import ConfigError


def _add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--config", required=True, help="training config YAML, e.g. configs/ppo/kairos-v0.yaml")
    p.add_argument("--env-id", help="the config section to use (default: its only env id)")
    p.add_argument("--algo", choices=("maskable_ppo", "ppo"), help="override the config's algo (ppo: the ablation)")
    p.add_argument("--timesteps", type=int, help="override n_timesteps (total, also when resuming)")
    p.add_argument("--seed", type=int, help="override the config's seed")
    p.add_argument("--n-envs", type=int, help="override n_envs (keep <= 2 on a 2-core machine)")
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
        from kairos_gym.agents.policy_file import require_trust

        require_trust(args.resume, False, "train", "--resume", "--trust-checkpoint")
    cfg = load_config(args.config, args.env_id)
    cfg = with_overrides(cfg, algo=args.algo, timesteps=args.timesteps, seed=args.seed, n_envs=args.n_envs,
                         eval_freq=args.eval_freq)
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
