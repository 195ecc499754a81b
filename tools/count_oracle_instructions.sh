#!/usr/bin/env bash
# Machine-independent cost of one rollout Oracle run: CPU instructions counted by valgrind's callgrind, per search
# (agents/oracle_run.py SEARCHES: reference, the Oracle without its exact constant-factor savings; exhaustive;
# bounded), with the ratio of each to the first. This VM's speed drifts by up to ~1.6x from minute to minute;
# instruction counts do not.
#
#   tools/count_oracle_instructions.sh [SCENARIO] [REQUESTS] [SEARCHES]
#   e.g. tools/count_oracle_instructions.sh bursty 300 reference,exhaustive,bounded
#
# Each search runs `run_with_cost` on the first REQUESTS requests of SCENARIO (seed 0, one thread, the default
# bases) in a fresh process; a run on 2 requests is subtracted (imports and set-up cancel out). Takes ~40x the plain
# run time (about 6 minutes for the default, most of it the reference search). Needs valgrind.
set -euo pipefail
SCENARIO="${1:-bursty}"
N="${2:-300}"
SEARCHES="${3:-reference,exhaustive,bounded}"
HERE="$(cd "$(dirname "$0")/.." && pwd)"
PY="${PYTHON:-$HERE/.venv/bin/python}"
command -v valgrind >/dev/null || { echo "count_oracle_instructions.sh: valgrind not found (install valgrind)" >&2; exit 2; }
[[ "$N" =~ ^[0-9]+$ && "$N" -gt 2 ]] || { echo "count_oracle_instructions.sh: REQUESTS must be a whole number > 2, got '$N'" >&2; exit 2; }
DRIVER='
import sys
from kairos_gym.agents.oracle_run import run_with_cost
from kairos_gym.scenario import load_scenario
scenario, n, search = sys.argv[1], int(sys.argv[2]), sys.argv[3]
sc = load_scenario(scenario).with_overrides({"workload": {"max_requests": n}})
_, row = run_with_cost(sc, 0, 1, search)
print(row["rollout_decisions"], row["slo_attainment"])
'
commas() { echo "$1" | sed ':a;s/\B[0-9]\{3\}\>/,&/;ta'; }
count() {  # search requests -> "instructions rollout_decisions slo_attainment"
  local log
  log=$(cd "$HERE" && valgrind --tool=callgrind --callgrind-out-file=/dev/null "$PY" -c "$DRIVER" "$SCENARIO" "$2" "$1" 2>&1)
  echo "$(echo "$log" | awk '/Collected/ {print $4}') $(echo "$log" | grep -v '^==' | tail -1)"
}
"$PY" -c "import sys; from kairos_gym.agents.oracle_run import SEARCHES; bad = [s for s in sys.argv[1].split(',') if s not in SEARCHES]; sys.exit(f'count_oracle_instructions.sh: SEARCHES: {bad} not in {SEARCHES}' if bad else 0)" "$SEARCHES"
first=""
for s in ${SEARCHES//,/ }; do
  read -r base _ _ <<< "$(count "$s" 2)"
  read -r many dec slo <<< "$(count "$s" "$N")"
  net=$(( many - base ))
  [ -z "$first" ] && first=$net
  ratio=$(awk -v a="$first" -v b="$net" 'BEGIN { printf "%.2f", a / b }')
  printf '%s, %s requests, %-10s %15s instructions (%s rollout decisions, SLO attainment %s): %sx fewer than the first\n' \
    "$SCENARIO" "$N" "$s" "$(commas "$net")" "$(commas "$dec")" "$slo" "$ratio"
done
rev=$(cd "$HERE" && git rev-parse --short HEAD 2>/dev/null || echo "$HERE")
if (cd "$HERE" && ! git diff --quiet HEAD -- src agents kairos_gym 2>/dev/null); then rev="$rev with uncommitted changes"; fi
echo "($rev, $(date -u +%Y-%m-%d))"
