"""Training with Stable-Baselines3: sb3-contrib's MaskablePPO on a registered env id, then the agent against Kairos.

    OMP_NUM_THREADS=1 python examples/sb3_maskable_ppo.py                    # 30,000 decisions, about a minute
    OMP_NUM_THREADS=1 python examples/sb3_maskable_ppo.py --out runs/example  # ... and save the model there
    python examples/sb3_maskable_ppo.py --smoke                              # 256 decisions (what CI runs)

``OMP_NUM_THREADS=1``: on a small machine torch's intra-op threads (one per core) fight the env for the cores and
training runs several times slower (docs/env.md, "Performance"); this script sets it when you have not.

Every ``kairos_gym/...`` env defines ``action_masks()``, which MaskablePPO calls by itself: the agent never picks a
deflection the cluster cannot take. The project's own pipeline (``kairos-gym train --config configs/ppo/smoke.yaml``,
docs/training.md) adds observation and reward normalisation, held-out evaluation, checkpoints and TensorBoard.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")  # before torch is imported

import gymnasium as gym
from sb3_contrib import MaskablePPO

import kairos_gym  # noqa: F401  (registers the kairos_gym/... ids)

ENV_ID = "kairos_gym/KairosSmall-v0"  # the small scenario: 200 requests per episode
EVAL_SEED = 100  # a workload seed training never sees (training draws its episodes' seeds from the env's generator)


def evaluate(model: MaskablePPO, seed: int) -> dict:
    """One whole episode on workload ``seed``, greedy masked actions; the run's summary (docs/metrics.md)."""
    env = gym.make(ENV_ID)
    obs, info = env.reset(seed=seed)
    while True:
        action, _ = model.predict(obs, deterministic=True, action_masks=info["action_mask"].astype(bool))
        obs, _, terminated, truncated, info = env.step(int(action))
        if terminated or truncated:
            return info["summary"]


def main() -> None:
    """Train, then compare the agent with Kairos on the same held-out workload."""
    from kairos_gym.agents import run_policy

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--smoke", action="store_true", help="train on 256 decisions only")
    parser.add_argument("--out", type=Path, help="save the model (model.zip) into this folder")
    args = parser.parse_args()

    env = gym.make(ENV_ID)
    steps, n_steps = (256, 128) if args.smoke else (30_000, 1024)
    model = MaskablePPO("MlpPolicy", env, n_steps=n_steps, batch_size=64, n_epochs=4, seed=0, verbose=0)
    model.learn(total_timesteps=steps)
    print(f"trained MaskablePPO on {ENV_ID} for {model.num_timesteps} decisions")

    agent = evaluate(model, EVAL_SEED)
    kairos = run_policy("kairos", "small", EVAL_SEED)  # the same workload through the simulator directly
    for key in ("slo_attainment", "ttft_p95", "deflection_rate", "n_invalid_actions"):
        print(f"{key}: agent {agent[key]:.3f} vs kairos {kairos[key]:.3f}")
    if args.out is not None:
        args.out.mkdir(parents=True, exist_ok=True)
        model.save(args.out / "model.zip")
        print(f"saved {args.out / 'model.zip'}; evaluate it beside Kairos with:\n  kairos-gym evaluate --scenario "
              f"small --policies kairos --checkpoint {args.out / 'model.zip'} --trust-checkpoint")


if __name__ == "__main__":
    main()
