#!/usr/bin/env bash
# Machine-independent cost of the env: CPU instructions per decision, counted by valgrind's callgrind
# (this VM's speed drifts by up to ~1.6x from minute to minute; instruction counts do not). Needs valgrind.
#
#   tools/count_instructions.sh [ENV_ID] [DECISIONS]      e.g. tools/count_instructions.sh kairos_gym/Kairos-v0 3000
#   SRC=/path/to/other/checkout tools/count_instructions.sh ...   (measure another commit with this venv)
#
# Runs `kairos_gym.perf.env_throughput.run_decisions` (the random masked policy of `kairos-gym perf`, numpy
# default_rng(0) draws) from THIS checkout's env_throughput.py against SRC's package, so any commit is measured
# with the same driver: DECISIONS decisions and 1 decision, printing
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
import runpy, sys
driver, env_id, n = sys.argv[1:4]
# a file path: sys.path is left alone, kairos_gym comes from SRC
runpy.run_path(driver, run_name="count_instructions")["run_decisions"](env_id, int(n))
'
count() {
  (cd "$SRC" && PYTHONPATH="$SRC" valgrind --tool=callgrind --callgrind-out-file=/dev/null \
    "$PY" -c "$DRIVER" "$HERE/kairos_gym/perf/env_throughput.py" "$ENV_ID" "$1" 2>&1 >/dev/null | awk '/Collected/ {print $4}')
}
one=$(count 1)
many=$(count "$N")
echo "$ENV_ID: $(( (many - one) / (N - 1) )) instructions per decision ($N decisions, random masked policy, $(cd "$SRC" && git rev-parse --short HEAD 2>/dev/null || echo "$SRC"))"
