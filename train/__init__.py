"""Training and evaluation entry points: the evaluation harness and plots (``evaluate``, ``plots``), PPO training
(``trainer``, ``config``, ``envs``, ``callbacks``, ``checkpoints``, ``cli``: docs/training.md) and the
generalisation table of a trained checkpoint (``compare``)."""
