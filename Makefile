# kairos-gym: two commands do everything (see README Quickstart).
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test lint perf core wheel-check emulated clean

# The Python side: torch pinned first (the build the results are recorded with), then the package with its dev
# extra. The editable install compiles nothing (KAIROS_SKIP_CORE, CMakeLists.txt): the core rule below does.
$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install torch==2.13.0
	$(BIN)/pip install -e ".[dev]" --config-settings=cmake.define.KAIROS_SKIP_CORE=ON
	touch $(STAMP)

# The native core, built once into build/core-dev with the compiler's progress shown (every source the first time:
# a fresh-clone `make demo` took 2 min 40 s in all on the 2-core VM), then incrementally after a .cpp/.hpp edit
# (tools/build_core.sh).
CORE_SOURCES := $(wildcard src/core/*.cpp src/core/*.hpp src/bindings/*.cpp src/bindings/*.hpp) CMakeLists.txt
CORE_STAMP := build/core-dev/.built

$(CORE_STAMP): $(STAMP) $(CORE_SOURCES)
	PY=$(BIN)/python bash tools/build_core.sh
	touch $(CORE_STAMP)

core: $(CORE_STAMP)

demo: $(STAMP) $(CORE_STAMP)
	$(BIN)/kairos-gym demo

test: $(STAMP) $(CORE_STAMP)
	$(BIN)/ruff check .
	$(BIN)/python -m pytest -q

# Same results on every machine: `kairos-gym verify` and the golden tests again under emulated CPUs (glibc's AVX2/FMA/AVX-512 code,
# numpy's SIMD targets and torch's kernels hidden); each must give the default run's results bit for bit.
emulated: $(STAMP) $(CORE_STAMP)
	$(BIN)/python tools/emulated_cpus.py

lint: $(STAMP)
	$(BIN)/ruff check .

# Build the wheel, install it into two fresh venvs outside the checkout (bare, and with [train,plots]), gym.make
# every id in both, run a short demo.
wheel-check:
	PY=$(PY) bash tools/wheel_check.sh

perf: $(STAMP) $(CORE_STAMP)
	$(BIN)/kairos-gym perf

clean:
	rm -rf $(VENV) build *.egg-info kairos_gym/_core*.so
