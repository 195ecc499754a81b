"""Record the actions the shipped ``distilled-oracle`` actor takes on 300 rows of a label dataset, the data of
``tests/train/test_shipped_general.py::test_shipped_actor_takes_the_recorded_actions``.

    python tools/record_general_actions.py --data runs/base/data.npz [--checkpoint agents/checkpoints/distilled-oracle]
        [--out tests/train/data/distilled-oracle-actions.npz] [--rows 300]

Rows are drawn without replacement by ``numpy.random.default_rng(0)`` and sorted; each row's actor input follows
the checkpoint's layout (``policy.json`` ``inputs``: the observation, or the observation followed by the one-hot of
the row's Kairos action, :func:`kairos_gym.train.distill.student_inputs`). Stored: ``obs`` (the actor inputs,
float32), ``mask``, ``action`` (the actor's greedy masked action), ``view`` (0 exact, 1 realistic).
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
from kairos_gym.agents.checkpoint import load_policy
from kairos_gym.train.distill import load_dataset, student_inputs

ROOT = Path(__file__).resolve().parents[1]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", required=True, help="a label dataset written by train/distill.py (data.npz)")
    ap.add_argument("--checkpoint", default=str(ROOT / "agents" / "checkpoints" / "distilled-oracle"))
    ap.add_argument("--out", default=str(ROOT / "tests" / "train" / "data" / "distilled-oracle-actions.npz"))
    ap.add_argument("--rows", type=int, default=300)
    args = ap.parse_args()
    actor = load_policy(Path(args.checkpoint))
    data = load_dataset(args.data)
    x = student_inputs(data, getattr(actor, "inputs", "observation"))
    n = len(x)
    if not 1 <= args.rows <= n:
        raise SystemExit(f"--rows: {args.rows} is not between 1 and the dataset's {n} rows")
    rows = np.sort(np.random.default_rng(0).choice(n, size=args.rows, replace=False))
    obs, mask = x[rows].astype(np.float32), data["mask"][rows]
    action = np.array([actor.act(o, m) for o, m in zip(obs, mask, strict=True)], dtype=np.int64)
    np.savez_compressed(args.out, obs=obs, mask=mask, action=action, view=data["view"][rows])
    print(f"{args.rows} rows of {n} -> {args.out} (inputs {getattr(actor, 'inputs', 'observation')}, "
          f"{obs.shape[1]} features; {np.bincount(action, minlength=mask.shape[1]).tolist()} per action)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
