"""The simulator's seams: one engine (``kairos_gym.sim.Simulator`` is the native simulator; the Python reference
engine and its ``engine=`` / ``KAIROS_ENGINE`` selection were removed), ``kv_capacity=`` and the per-event trace."""

from __future__ import annotations

import importlib.util
import itertools
import subprocess
import sys
from pathlib import Path

import pytest

from kairos_gym.errors import ConfigError
from kairos_gym.scenario import ScenarioConfig
from kairos_gym.sim import Simulator
from kairos_gym.sim.simulator import NativeSimulator
from tests.golden.engine_cases import recorded, run_digests
from tests.sim.conftest import SMALL, DeflectAll, NoDeflect
from tests.tool_loader import load_tool

ROOT = Path(__file__).resolve().parents[2]


def _fingerprint_module():
    return load_tool("fingerprint")


def test_the_simulator_is_the_native_one(monkeypatch):
    monkeypatch.delenv("KAIROS_ENGINE", raising=False)
    assert Simulator is NativeSimulator
    assert type(Simulator("small", seed=0)) is NativeSimulator
    import kairos_gym.sim as sim_pkg

    assert not hasattr(sim_pkg, "engine_name") and not hasattr(sim_pkg, "ENGINES")
    assert importlib.util.find_spec("kairos_gym.sim.engine") is None  # the Python engine's module is gone


def test_an_engine_argument_is_refused():
    with pytest.raises(TypeError, match="engine"):
        Simulator("small", seed=0, engine="python")  # type: ignore[call-arg]


@pytest.mark.parametrize("value", ["python", "Native", "rust"])
def test_kairos_engine_other_than_native_is_a_config_error(monkeypatch, value):
    """A stale ``KAIROS_ENGINE=python`` (or any other engine name) is refused at construction, not ignored."""
    monkeypatch.setenv("KAIROS_ENGINE", value)
    with pytest.raises(ConfigError, match=f"KAIROS_ENGINE = '{value}'.*Python reference engine was removed"):
        Simulator("small", seed=0)


@pytest.mark.parametrize("value", ["", "native"])
def test_kairos_engine_native_or_empty_is_accepted(monkeypatch, value):
    monkeypatch.setenv("KAIROS_ENGINE", value)
    assert type(Simulator("small", seed=0)) is NativeSimulator


def test_kairos_engine_python_fails_a_cli_run_with_one_error():
    """The CLI turns the refusal into ``kairos-gym <cmd>: error: ...`` with exit status 2."""
    import os

    env = {**os.environ, "KAIROS_ENGINE": "python"}
    res = subprocess.run([sys.executable, "-m", "kairos_gym.cli", "simulate", "--scenario", "small", "--policy",
                          "no-deflect"], capture_output=True, text=True, env=env, cwd=ROOT, timeout=120)
    assert res.returncode == 2, res.stderr
    assert res.stderr.startswith("kairos-gym simulate: error: environment variable KAIROS_ENGINE")
    assert "Traceback" not in res.stderr and res.stderr.count("error:") == 1


@pytest.mark.parametrize("bad", [0, -5, True, 1.5, "12000", 2**41])
def test_kv_capacity_is_checked(bad):
    with pytest.raises(ConfigError, match="kv_capacity"):
        Simulator("small", seed=0, kv_capacity=bad)


def test_kv_capacity_seam_gives_the_recorded_run():
    """``kv_capacity=`` gives the run the Python engine gave (recorded: there it equalled setting every node's
    capacity after construction); the capacity matters in this case (the default gives another run)."""
    sc = ScenarioConfig.from_dict({**SMALL, "cluster": {"memory_policy": "reserve", "overlong": "reject"}})
    a = Simulator(sc, seed=0, kv_capacity=12_000)
    assert [d.kv_capacity for d in a.dnodes] == [12_000] * len(a.dnodes)
    assert run_digests(a, DeflectAll(256)) == recorded("small/kv-capacity-12000")
    c = Simulator(sc, seed=0)
    assert run_digests(c, DeflectAll(256))["columns"] != recorded("small/kv-capacity-12000")["columns"]


def test_trace_records_every_event_and_changes_nothing():
    fp = _fingerprint_module()
    plain = Simulator("small", seed=1)
    traced = Simulator("small", seed=1, trace=True)
    assert plain.trace is None
    assert fp.fingerprint(plain, plain.run(NoDeflect())) == fp.fingerprint(traced, traced.run(NoDeflect()))
    tr = traced.trace
    assert tr is not None and len(tr) == traced._seq  # every pushed event was popped once
    assert all(a[0] <= b[0] for a, b in itertools.pairwise(tr))
    assert {e[1] for e in tr} >= {0, 1, 2, 3, 4}  # arrivals, prefill steps, set-ups, transfers, boundaries
    traced.reset()
    assert traced.trace == []


def test_trace_flag_is_checked():
    with pytest.raises(ConfigError, match="trace = 1"):
        Simulator("small", seed=0, trace=1)  # type: ignore[arg-type]
