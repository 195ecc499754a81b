#!/usr/bin/env bash
# Builds kairos_gym/_core for an editable install, the one build of `make demo` / `make test` (whose `pip install
# -e` compiles nothing, CMakeLists.txt's KAIROS_SKIP_CORE) and the .cpp edit loop (`make core`): configures once
# into build/core-dev, then rebuilds only what changed (~0.5 s for a small edit; every source the first time, with
# the compiler's progress lines shown) and installs the module into kairos_gym/, where the editable install finds
# it. Needs nanobind in the venv (the dev extra has it). JOBS: parallel compile jobs (default 2).
set -euo pipefail
cd "$(dirname "$0")/.."
PY="${PY:-.venv/bin/python}"
B=build/core-dev
gen=()
if command -v ninja >/dev/null 2>&1; then gen=(-G Ninja); fi
if [ ! -f "$B/CMakeCache.txt" ]; then
    echo "build_core: configuring $B (the first build compiles every source, a minute or more)"
    cmake -S . -B "$B" "${gen[@]}" -DCMAKE_BUILD_TYPE=Release -DKAIROS_SKIP_CORE=OFF \
        -DPython_EXECUTABLE="$("$PY" -c 'import sys; print(sys.executable)')" \
        -Dnanobind_DIR="$("$PY" -m nanobind --cmake_dir)" >/dev/null
fi
echo "build_core: building kairos_gym._core in $B"
cmake --build "$B" -j "${JOBS:-2}"
# install by rename (a new file, not the old one overwritten): a process that has the old module loaded (a test run,
# a benchmark) keeps its copy intact instead of crashing on a module rewritten under it
stage=$(mktemp -d "$B/stage.XXXXXX")
cmake --install "$B" --prefix "$stage" >/dev/null
for so in "$stage"/kairos_gym/_core*; do
    mv -f "$so" "kairos_gym/$(basename "$so")"
done
rm -rf "$stage"
