"""Test-run options. ``--engine python|native`` runs the whole session on that simulator engine: it sets
``KAIROS_ENGINE`` (read at every ``Simulator(...)`` without ``engine=``, and inherited by subprocesses such as
SubprocVecEnv workers and CLI runs) before any test is collected. Without it, ``KAIROS_ENGINE`` from the
environment (or the default engine) applies. ``make test`` runs the whole suite on the default engine (native)
and tests/golden, tests/sim, tests/env and tests/agents a second time with ``--engine python`` (the reference)."""

from __future__ import annotations

import os

import pytest


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--engine", choices=("python", "native"), default=None,
                     help="simulator engine of the whole run (sets KAIROS_ENGINE; default: as the environment says)")


def pytest_configure(config: pytest.Config) -> None:
    engine = config.getoption("--engine")
    if engine is not None:
        os.environ["KAIROS_ENGINE"] = engine


def pytest_report_header(config: pytest.Config) -> str:
    from kairos_gym.sim import engine_name

    return f"kairos-gym simulator engine: {engine_name()}"
