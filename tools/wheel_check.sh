#!/usr/bin/env bash
# Builds the wheel (compiling the native core kairos_gym._core), installs it into a fresh venv outside the checkout and uses it as a user would:
# `import kairos_gym` + gym.make of every registered id, `kairos-gym --version`, `kairos-gym verify` (the
# recorded reference hashes are package data and must be reproduced), and `kairos-gym demo` on the
# short `small` scenario. Catches package data missing from the wheel and top-level names leaking into
# site-packages (only `kairos_gym` may be installed). Run by .ci/run after `make test`; needs the package
# registry for torch==2.13.0 and the build backend, nothing else.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
PY="${PY:-python3}"
"$PY" -m venv "$work/venv"
pip="$work/venv/bin/pip"
"$pip" install --quiet --upgrade pip
"$pip" install --quiet torch==2.13.0
"$pip" wheel --quiet --no-deps --wheel-dir "$work/dist" "$root"
"$pip" install --quiet "$work"/dist/kairos_gym-*.whl
cd "$work"   # outside the checkout: nothing may resolve through the source tree
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
