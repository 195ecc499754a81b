"""The simulator's construction arguments: one class (``kairos_gym.sim.Simulator`` is
``kairos_gym.sim.simulator.Simulator``, no ``engine=`` argument), ``kv_capacity=`` and the per-event trace."""

from __future__ import annotations

import itertools

import pytest

from kairos_gym.errors import ConfigError
from kairos_gym.scenario import ScenarioConfig
from kairos_gym.sim import Simulator
from kairos_gym.sim import simulator as simulator_module
from tests.golden.engine_cases import recorded, run_digests
from tests.sim.conftest import SMALL, DeflectAll, NoDeflect
from tests.tool_loader import load_tool


def _fingerprint_module():
    return load_tool("fingerprint")


def test_there_is_one_simulator_class():
    assert Simulator is simulator_module.Simulator
    assert type(Simulator("small", seed=0)) is Simulator


def test_an_engine_argument_is_refused():
    with pytest.raises(TypeError, match="engine"):
        Simulator("small", seed=0, engine="python")  # type: ignore[call-arg]


def test_the_scenario_crosses_as_a_typed_core_config():
    """The core's config is a class with named, typed fields (no dict): an unknown field is an AttributeError and
    a value of the wrong type a TypeError; the nested kv and info fields are references."""
    cfg = Simulator("small", seed=0)._core_config()
    assert (cfg.n_prefill, cfg.n_decode) == (2, 2) and cfg.menu == [128, 256, 512, 1024, 2048]
    with pytest.raises(AttributeError):
        cfg.n_prefil = 3  # type: ignore[attr-defined]
    with pytest.raises(TypeError):
        cfg.tbt_s = "fast"
    cfg.kv.fifo = False
    assert cfg.kv.fifo is False


def test_request_columns_come_from_the_core():
    from kairos_gym.compiled import core

    names = simulator_module.request_columns()
    assert names == tuple(core().REQUEST_COLUMNS) and len(set(names)) == len(names)
    sim = Simulator("small", seed=0)
    for k in names:
        col = getattr(sim, k)
        assert col.dtype in ("float64", "int64") and len(col) == sim.n and not col.flags.writeable
    with pytest.raises(KeyError, match="no request column"):
        sim._core.column("nope")


@pytest.mark.parametrize("bad", [0, -5, True, 1.5, "12000", 2**41])
def test_kv_capacity_is_checked(bad):
    with pytest.raises(ConfigError, match="kv_capacity"):
        Simulator("small", seed=0, kv_capacity=bad)


def test_kv_capacity_seam_gives_the_recorded_run():
    """``kv_capacity=`` gives the recorded run (the one of setting every node's capacity after construction); the
    capacity matters in this case (the default gives another run)."""
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
