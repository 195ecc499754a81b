# kairos-gym: two commands do everything (see README Quickstart).
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test lint bench wheel-check clean

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet torch==2.13.0
	$(BIN)/pip install --quiet -e ".[dev]"
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/kairos-gym demo

test: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/python -m pytest -q

lint: $(STAMP)
	$(BIN)/ruff check .

# Build the wheel, install it into a fresh venv outside the checkout, gym.make every id, run a short demo.
wheel-check:
	PY=$(PY) bash tools/wheel_check.sh

bench: $(STAMP)
	$(BIN)/kairos-gym bench

clean:
	rm -rf $(VENV) build *.egg-info
