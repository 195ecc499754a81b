#!/usr/bin/env bash
# Builds the wheel (compiling the native core kairos_gym._core) once and installs it into two fresh venvs outside
# the checkout, using it as a user would:
# - bare (`pip install kairos-gym`, no extras): torch, Stable-Baselines3, sb3-contrib, TensorBoard, matplotlib and
#   tabulate absent; `import kairos_gym` + gym.make, reset and step of every registered id (KairosEnv ids and
#   kairos_train/KairosGeneral-v0), a rule-policy `kairos-gym simulate`, and `kairos-gym train` stopping with one
#   line naming the [train] extra;
# - full (torch==2.13.0, then the wheel with [train,plots]): `import kairos_gym` + gym.make of every registered id,
#   `kairos-gym --version`, `kairos-gym verify` (the recorded reference hashes are package data and must be
#   reproduced), and `kairos-gym demo` on the short `small` scenario.
# Catches package data missing from the wheel, top-level names leaking into site-packages (only `kairos_gym` may
# be installed) and a heavy import on the core paths. Run by .ci/run after `make test`; needs the package
# registry for the dependencies, torch==2.13.0 and the build backend, nothing else.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
PY="${PY:-python3}"
"$PY" -m venv "$work/venv"
pip="$work/venv/bin/pip"
"$pip" install --quiet --upgrade pip
echo "wheel_check: building the wheel (compiles the C++ core, a few minutes)"
# the compiler's progress lines ([ 12%] Building CXX object ...) only; a failed build still fails the pipeline
{ "$pip" wheel -v --no-deps --wheel-dir "$work/dist" "$root" 2>&1; } \
    | { grep -E "^ *\[ *[0-9]+(%|/[0-9]+)\]|(^| )error:|FAILED" || true; }
wheel="$(ls "$work"/dist/kairos_gym-*.whl)"
cd "$work"   # outside the checkout: nothing may resolve through the source tree

# --- the bare install: no extras
"$PY" -m venv "$work/bare"
"$work/bare/bin/pip" install --quiet --upgrade pip
"$work/bare/bin/pip" install --quiet "$wheel"
"$work/bare/bin/python" - <<'PYEOF'
import importlib.util

import gymnasium as gym

import kairos_gym

heavy = [m for m in ("torch", "stable_baselines3", "sb3_contrib", "tensorboard", "matplotlib", "tabulate")
         if importlib.util.find_spec(m) is not None]
assert heavy == [], f"the bare install pulled {heavy}"
ids = sorted(k for k in gym.registry if k.startswith(("kairos_gym/", "kairos_train/")))
assert "kairos_train/KairosGeneral-v0" in ids, ids
for env_id in ids:
    env = gym.make(env_id)
    obs, info = env.reset(seed=0)
    env.step(env.action_space.sample(mask=info["action_mask"]))
    env.close()
print(f"wheel_check: bare install: gym.make + reset + step ok for {len(ids)} ids, no torch/SB3/matplotlib")
PYEOF
"$work/bare/bin/kairos-gym" simulate --scenario small --policy sl --seed 0 --json "$work/bare-sim.json" >/dev/null
test -s "$work/bare-sim.json"
if "$work/bare/bin/kairos-gym" train --config "$root/configs/ppo/smoke.yaml" --out "$work/bare-run" 2>"$work/err"; then
    echo "wheel_check: train ran without the [train] extra" >&2; exit 1
fi
grep -q "needs the \[train\] extra" "$work/err" && test "$(wc -l <"$work/err")" -eq 1
echo "wheel_check: bare install: $(cat "$work/err")"

# --- the full install: torch first (the CPU build, pinned), then the wheel with its extras
"$pip" install --quiet torch==2.13.0
"$pip" install --quiet "$wheel[train,plots]"
site="$("$work/venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
for leaked in agents train configs tests; do
    if [ -e "$site/$leaked" ]; then echo "wheel_check: top-level '$leaked' installed into site-packages" >&2; exit 1; fi
done
"$work/venv/bin/python" - <<'PYEOF'
import gymnasium as gym

import kairos_gym
from kairos_gym.env.registration import env_ids

assert kairos_gym.__file__.startswith(__import__("sysconfig").get_paths()["purelib"]), kairos_gym.__file__
from kairos_gym import compiled

assert compiled.checkout_root() is None  # an installed wheel: no sources beside it
info = compiled.build_info()
assert info["fp_contract_off"] and not info["fast_math"], info
print(f"wheel_check: the C++ core built by {info['compiler']} (sources {info['source_hash']})")
ids = env_ids()
assert "kairos_gym/Kairos-v0" in ids and "kairos_gym/KairosSmall-v0" in ids, ids
for env_id in ids:
    env = gym.make(env_id)
    obs, info = env.reset(seed=0)
    env.step(env.action_space.sample(mask=info["action_mask"]))
    env.close()
print(f"wheel_check: gym.make + reset + step ok for {len(ids)} ids")
PYEOF
"$work/venv/bin/kairos-gym" --version
# the installed wheel reproduces the recorded reference (kairos_gym/data/verify.json, package data)
"$work/venv/bin/kairos-gym" verify
"$work/venv/bin/kairos-gym" demo --scenario small --seeds 0 --out "$work/demo"
test -s "$work/demo/evaluate.json"
echo "wheel_check: ok"
