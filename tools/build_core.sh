#!/usr/bin/env bash
# Incremental rebuild of kairos_gym/_core for an editable install (the .cpp edit loop, `make core`): configures
# once into build/core-dev, then rebuilds only what changed (~0.5 s for a small edit) and installs the module into
# kairos_gym/, where the editable install finds it. Needs nanobind in the venv (the dev extra has it).
set -euo pipefail
cd "$(dirname "$0")/.."
PY="${PY:-.venv/bin/python}"
B=build/core-dev
gen=()
if command -v ninja >/dev/null 2>&1; then gen=(-G Ninja); fi
if [ ! -f "$B/CMakeCache.txt" ]; then
    cmake -S . -B "$B" "${gen[@]}" -DCMAKE_BUILD_TYPE=Release \
        -DPython_EXECUTABLE="$("$PY" -c 'import sys; print(sys.executable)')" \
        -Dnanobind_DIR="$("$PY" -m nanobind --cmake_dir)" >/dev/null
fi
cmake --build "$B" -j "${JOBS:-2}"
cmake --install "$B" --prefix . >/dev/null
