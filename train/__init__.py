"""Training and evaluation entry points (evaluation harness, plots; PPO training is not built yet)."""
