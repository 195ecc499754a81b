"""The engine seams: ``Simulator(engine=...)`` / ``KAIROS_ENGINE``, ``kv_capacity=`` and the per-event trace."""

from __future__ import annotations

import importlib.util
import itertools
from pathlib import Path

import pytest

from kairos_gym.config import ScenarioConfig
from kairos_gym.errors import ConfigError
from kairos_gym.sim import Simulator, engine_name
from kairos_gym.sim.engine import Simulator as PySimulator
from kairos_gym.sim.native_engine import NativeSimulator
from tests.sim.conftest import SMALL, DeflectAll, NoDeflect

ROOT = Path(__file__).resolve().parents[2]


def _fingerprint_module():
    spec = importlib.util.spec_from_file_location("kairos_fingerprint_sel", ROOT / "tools" / "fingerprint.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_default_engine_is_native_and_python_is_selectable(monkeypatch):
    monkeypatch.delenv("KAIROS_ENGINE", raising=False)
    assert engine_name() == "native"
    assert type(Simulator("small", seed=0)) is NativeSimulator
    monkeypatch.setenv("KAIROS_ENGINE", "")
    assert engine_name() == "native"
    monkeypatch.setenv("KAIROS_ENGINE", "python")
    assert type(Simulator("small", seed=0)) is PySimulator
    assert type(Simulator("small", seed=0, engine="native")) is NativeSimulator


def test_bad_engine_names_are_refused(monkeypatch):
    with pytest.raises(ConfigError, match="Simulator: engine = 'rust'"):
        Simulator("small", seed=0, engine="rust")
    with pytest.raises(ConfigError, match="engine = 1"):
        engine_name(1)  # type: ignore[arg-type]
    monkeypatch.setenv("KAIROS_ENGINE", "Native")
    with pytest.raises(ConfigError, match="KAIROS_ENGINE = 'Native'"):
        Simulator("small", seed=0)


@pytest.mark.parametrize("bad", [0, -5, True, 1.5, "12000", 2**41])
def test_kv_capacity_is_checked(bad):
    with pytest.raises(ConfigError, match="kv_capacity"):
        Simulator("small", seed=0, kv_capacity=bad)


def test_kv_capacity_seam_equals_setting_the_nodes():
    """``kv_capacity=`` gives the run that setting every node's capacity after construction gave."""
    fp = _fingerprint_module()
    sc = ScenarioConfig.from_dict({**SMALL, "cluster": {"memory_policy": "reserve", "overlong": "reject"}})
    a = Simulator(sc, seed=0, kv_capacity=12_000, engine="python")
    b = Simulator(sc, seed=0, engine="python")  # the Python engine's nodes are settable
    for d in b.dnodes:
        d.kv_capacity = 12_000
    b.kv_capacity = 12_000
    assert [d.kv_capacity for d in a.dnodes] == [12_000] * len(a.dnodes)
    fa, fb = fp.fingerprint(a, a.run(DeflectAll(256))), fp.fingerprint(b, b.run(DeflectAll(256)))
    assert fa == fb
    c = Simulator(sc, seed=0, engine="python")
    assert fp.fingerprint(c, c.run(DeflectAll(256))) != fa  # the capacity matters in this case


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


def test_copies_and_pickles_of_a_python_engine_stay_python(monkeypatch):
    """Unpickling or copying a Python-engine simulator under KAIROS_ENGINE=native gives a Python-engine one
    (Simulator.__new__ picks the engine, and pickle calls it without the constructor's arguments)."""
    import copy
    import pickle

    fp = _fingerprint_module()
    ref = Simulator("small", seed=0, engine="python")
    expected = fp.fingerprint(ref, ref.run(NoDeflect()))
    sim = Simulator("small", seed=0, engine="python")
    sim.apply(NoDeflect().decide(sim.next_decision()))
    monkeypatch.setenv("KAIROS_ENGINE", "native")
    for twin in (pickle.loads(pickle.dumps(sim)), copy.deepcopy(sim)):
        assert type(twin) is PySimulator
        assert twin.now == sim.now and twin.n_decisions == 1
        assert fp.fingerprint(twin, twin.run(NoDeflect())) == expected
