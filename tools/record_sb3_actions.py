"""Record the reference data of tests/train/test_shipped_agent.py: observations, masks and the greedy actions
SB3 takes on them, from the SB3 files the shipped agent was converted from (kept in git history, not shipped).

    python tools/record_sb3_actions.py --from-commit 6be5159   # writes tests/train/data/ppo-kairos-v0-sb3.npz

The SB3 files (model.zip, vecnormalize.pkl) are taken from git history: this project's own files, so they are
loaded trusted. Observations come from stepping each env with SB3's actions from ``reset(seed=0)``; the test
then feeds the recorded observations to the safe actor, so it does not depend on the env's workload draws.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import subprocess
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "tests" / "train" / "data" / "ppo-kairos-v0-sb3.npz"
ENV_IDS = ("kairos_gym/Kairos-v0", "kairos_gym/Kairos-azure-conv-v0", "kairos_gym/Kairos-mooncake-v0")
DECISIONS = 300


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--from-commit", required=True, help="a commit that still has the SB3 files")
    ap.add_argument("--out", default=str(OUT))
    args = ap.parse_args()
    from kairos_gym.agents.sb3_checkpoint import load_model
    from kairos_gym.train.envs import make_eval_env

    with tempfile.TemporaryDirectory() as tmp:
        sha = {}
        for name in ("model.zip", "vecnormalize.pkl"):
            blob = subprocess.run(["git", "-C", str(ROOT), "show", f"{args.from_commit}:agents/checkpoints/"
                                   f"ppo-kairos-v0/{name}"], check=True, capture_output=True).stdout
            (Path(tmp) / name).write_bytes(blob)
            sha[name] = hashlib.sha256(blob).hexdigest()
        model, norm = load_model(Path(tmp) / "model.zip", trust_checkpoint=True)
        arrays: dict[str, np.ndarray] = {}
        for i, env_id in enumerate(ENV_IDS):
            env = make_eval_env(env_id, {})
            obs, info = env.reset(seed=0)
            obs_l, mask_l, act_l = [], [], []
            for _ in range(DECISIONS):
                mask = info["action_mask"].astype(bool)
                x = norm.normalize_obs(obs) if norm is not None else obs
                action, _ = model.predict(x, deterministic=True, action_masks=mask)
                obs_l.append(obs.astype(np.float32))
                mask_l.append(mask)
                act_l.append(int(action))
                obs, _, term, trunc, info = env.step(int(action))
                if term or trunc:
                    break
            arrays[f"obs_{i}"] = np.stack(obs_l)
            arrays[f"mask_{i}"] = np.stack(mask_l)
            arrays[f"action_{i}"] = np.asarray(act_l, dtype=np.int64)
    meta = {"env_ids": list(ENV_IDS), "seed": 0, "from_commit": args.from_commit, "sha256": sha,
            "command": "python tools/record_sb3_actions.py --from-commit " + args.from_commit}
    arrays["meta"] = np.frombuffer(json.dumps(meta).encode("utf-8"), dtype=np.uint8)
    np.savez_compressed(args.out, **arrays)
    print(f"wrote {args.out}: " + ", ".join(f"{e}: {len(arrays[f'action_{i}'])} decisions"
                                            for i, e in enumerate(ENV_IDS)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
