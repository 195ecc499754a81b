"""RLlib's PPO with action masking, on Ray's new API stack, then the agent against Kairos.

    pip install "kairos-gym[ray]"                        # Ray, Tune and RLlib's dependencies (docs/scale-out.md)
    OMP_NUM_THREADS=1 python examples/rllib_ppo.py         # 10 iterations of 2,000 decisions, about 25 s
    OMP_NUM_THREADS=1 python examples/rllib_ppo.py --smoke # one iteration of 400 (what CI runs)

Without Ray the script says so and exits 0. ``kairos-gym train --backend rllib --config configs/ppo/rllib-smoke.yaml``
does the same from a training config (docs/scale-out.md, "RLlib: masked PPO"); this is the RLlib code itself.

RLlib's modules see only the observation, never ``info["action_mask"]``, so the mask travels in the observation:
the env creator registered by :func:`kairos_gym.train.rllib.train.register` wraps the env in ``MaskedObservation``
(``{"observations": <the flat observation>, "action_mask": <the mask>}``), and ``MaskedPPOTorchModule``, RLlib's
default PPO module on the ``observations`` part, gives the invalid actions a logit of RLlib's FLOAT_MIN, i.e.
probability 0, in every forward pass.
"""

from __future__ import annotations

import argparse
import os
import sys

os.environ.setdefault("OMP_NUM_THREADS", "1")  # before torch is imported: torch's threads would fight the env's

ENV_ID = "kairos_gym/KairosSmall-v0"  # 200 requests per episode
EVAL_SEED = 100  # a workload seed the training episodes do not use


def main() -> None:
    """Train RLlib's PPO with the masking module, then compare one greedy episode with Kairos."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--smoke", action="store_true", help="one training iteration of 400 decisions")
    args = parser.parse_args()
    try:
        import ray
        from ray.rllib.algorithms.ppo import PPOConfig
        from ray.rllib.core.columns import Columns
        from ray.rllib.core.rl_module.rl_module import RLModuleSpec
    except ImportError:
        print("skipped: Ray is not installed; pip install 'kairos-gym[ray]' (docs/scale-out.md)")
        return

    import torch
    from kairos_gym.agents import run_policy
    from kairos_gym.train.rllib.env import make_masked_env
    from kairos_gym.train.rllib.module import MaskedPPOTorchModule
    from kairos_gym.train.rllib.train import register

    batch, iterations = (400, 1) if args.smoke else (2000, 10)  # decisions per iteration, iterations
    config = (
        PPOConfig()
        .environment(register(), env_config={"env_id": ENV_ID})  # the masked env creator, by name
        .framework("torch")
        .env_runners(num_env_runners=0, num_envs_per_env_runner=2)  # sample in this process, 2 envs
        .learners(num_learners=0)
        .training(train_batch_size_per_learner=batch, minibatch_size=batch // 8, num_epochs=4, lr=3e-4, lambda_=0.95)
        .rl_module(rl_module_spec=RLModuleSpec(module_class=MaskedPPOTorchModule,
                                               model_config={"fcnet_hiddens": [32, 32], "vf_share_layers": False}))
        .debugging(seed=0)
    )
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        algo = config.build_algo()
        for i in range(1, iterations + 1):
            runners = algo.train()["env_runners"]
            print(f"iteration {i}/{iterations}: {runners.get('num_env_steps_sampled_lifetime', '?')} decisions, "
                  f"mean episode return {runners.get('episode_return_mean', float('nan')):.1f}")

        # one whole episode, the most likely action each time (the module's masked logits)
        module = algo.get_module()
        env = make_masked_env({"env_id": ENV_ID})
        obs, info = env.reset(seed=EVAL_SEED)
        while True:
            batch = {Columns.OBS: {k: torch.as_tensor(v)[None] for k, v in obs.items()}}
            with torch.no_grad():
                logits = module.forward_inference(batch)[Columns.ACTION_DIST_INPUTS]
            obs, _, terminated, truncated, info = env.step(int(logits.argmax()))
            if terminated or truncated:
                break
        algo.stop()
    finally:
        ray.shutdown()
    mine, kairos = info["summary"], run_policy("kairos", "small", EVAL_SEED)
    for key in ("slo_attainment", "ttft_p95", "n_invalid_actions"):
        print(f"{key}: agent {mine[key]:.3f} vs kairos {kairos[key]:.3f}")


if __name__ == "__main__":
    sys.exit(main())
