#!/usr/bin/env bash
# Machine-independent cost of the env: CPU instructions per decision, counted by valgrind's callgrind
# (this VM's speed drifts by up to ~1.6x from minute to minute; instruction counts do not). Needs valgrind.
#
#   tools/count_instructions.sh [ENV_ID] [DECISIONS]      e.g. tools/count_instructions.sh kairos_gym/Kairos-v0 3000
#   SRC=/path/to/other/checkout tools/count_instructions.sh ...   (measure another commit with this venv)
#
# Steps the env DECISIONS times with the random masked policy of `kairos-gym bench` (uniform over the
# valid actions, draws from numpy's default_rng(0); the same loop as kairos_gym.env.bench.run_decisions,
# inlined here so that it runs on any checkout) and once with 1 decision, and prints
# (instructions(N) - instructions(1)) / (N - 1): imports and env construction cancel out.
# Takes ~30x the plain run time (about a minute for 3,000 decisions).
set -euo pipefail
ENV_ID="${1:-kairos_gym/Kairos-v0}"
N="${2:-3000}"
HERE="$(cd "$(dirname "$0")/.." && pwd)"
SRC="${SRC:-$HERE}"
PY="${PYTHON:-$HERE/.venv/bin/python}"
command -v valgrind >/dev/null || { echo "count_instructions.sh: valgrind not found (install valgrind)" >&2; exit 2; }
[[ "$N" =~ ^[0-9]+$ && "$N" -gt 1 ]] || { echo "count_instructions.sh: DECISIONS must be a whole number > 1, got '$N'" >&2; exit 2; }
DRIVER='
import sys
import numpy as np, gymnasium as gym
import kairos_gym.env  # noqa: F401
env_id, n = sys.argv[1], int(sys.argv[2])
env = gym.make(env_id)
draws = np.random.default_rng(0).random(n).tolist()
_, info = env.reset(seed=0)
episodes = 0
for u in draws:
    valid = info["action_mask"].nonzero()[0]
    _, _, terminated, truncated, info = env.step(int(valid[int(u * valid.size)]))
    if terminated or truncated:
        episodes += 1
        _, info = env.reset(seed=episodes)
'
count() {
  (cd "$SRC" && PYTHONPATH="$SRC" valgrind --tool=callgrind --callgrind-out-file=/dev/null \
    "$PY" -c "$DRIVER" "$ENV_ID" "$1" 2>&1 >/dev/null | awk '/Collected/ {print $4}')
}
one=$(count 1)
many=$(count "$N")
echo "$ENV_ID: $(( (many - one) / (N - 1) )) instructions per decision ($N decisions, random masked policy, $(cd "$SRC" && git rev-parse --short HEAD 2>/dev/null || echo "$SRC"))"
