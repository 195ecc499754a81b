"""The native engine (kairos_gym.sim.native_engine) against the Python reference: the golden fingerprints of
the landed slices recomputed natively, and differential runs on random small scenarios (every per-request
column, every decision context, the event trace and the summary equal bit for bit)."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kairos_gym.config import ScenarioConfig
from kairos_gym.errors import ConfigError
from kairos_gym.sim import Decision, Simulator
from kairos_gym.sim.engine import Simulator as PySimulator
from kairos_gym.sim.native_engine import COLUMNS, NativeSimulator, first_divergence
from tests.sim.conftest import NoDeflect

ROOT = Path(__file__).resolve().parents[2]
GOLDEN = json.loads((ROOT / "tests" / "golden" / "fingerprints.json").read_text(encoding="utf-8"))


def _fingerprint_module():
    spec = importlib.util.spec_from_file_location("kairos_fingerprint_native", ROOT / "tools" / "fingerprint.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


FP = _fingerprint_module()

SIM_KEYS = sorted(k for k in GOLDEN if not k.startswith("kairos_gym/"))
SLICE_3A = [k for k in SIM_KEYS if "/nodef" in k and "swap" not in k]
"""Golden cases of the no-deflection slice (3a): every no-deflect simulator case but the swap policy's."""
SLICE_3B = [k for k in SIM_KEYS if "swap" not in k and k not in SLICE_3A]
"""Golden cases of the deflection slice (3b): fixed chunks, LargestSafe and random deflections, reserve memory."""
SLICE_3C = [k for k in SIM_KEYS if "swap" in k]
"""Golden cases of the swap slice (3c): preemption and swap-in under tight KV memory."""
NATIVE = SLICE_3A + SLICE_3B + SLICE_3C


def test_slices_cover_the_golden_cases():
    assert len(SLICE_3A) == 12
    assert {k.split("/")[0] for k in SLICE_3A} == {*FP.SIM_SCENARIOS, "tight-reserve", "incl"}
    assert len(SLICE_3B) == 37  # 33 deflecting rule-policy cases + Kairos (default, exact) on bursty and mooncake
    for part in ("/d512/", "/dls/", "/rand/", "tight-reserve/d256", "tight-reserve/rand", "incl/rand"):
        assert any(part in k for k in SLICE_3B), part
    assert SLICE_3C == ["tight-swap-lifo-slow", "tight-swap-lifo/d256", "tight-swap-lifo/nodef", "tight-swap-lifo/rand",
                        "tight-swap-slow", "tight-swap/d256", "tight-swap/nodef", "tight-swap/rand"]
    assert sorted(NATIVE) == SIM_KEYS  # every simulator golden; the env ones run the default engine


@pytest.mark.parametrize("key", NATIVE)
def test_golden_fingerprints_natively(key):
    got = FP.compute(engine="native", select=lambda k: k == key)
    assert got == {key: GOLDEN[key]}


@pytest.mark.parametrize("env_id", FP.ENV_IDS)
def test_golden_env_trajectories_on_the_native_engine(monkeypatch, env_id):
    """The env goldens (4,000 random masked steps: observations, rewards, summaries) with the env's simulator
    on the native engine (KAIROS_ENGINE, the env's only engine switch)."""
    monkeypatch.setenv("KAIROS_ENGINE", "native")
    import gymnasium as gym

    assert type(gym.make(env_id).unwrapped.sim) is NativeSimulator
    assert FP.compute(select=lambda k: k == env_id) == {env_id: GOLDEN[env_id]}


def test_engine_selection_builds_the_native_simulator(monkeypatch):
    assert type(Simulator("small", seed=0, engine="native")) is NativeSimulator
    monkeypatch.setenv("KAIROS_ENGINE", "native")
    assert type(Simulator("small", seed=0)) is NativeSimulator
    assert type(Simulator("small", seed=0, engine="python")) is PySimulator


# ---------------------------------------------------------------------------------------------- differential runs
class RandomDecisions:
    """Every kind of decision at random: a prefill node or the shortest queue, a deflection with any chunk of
    the menu or LargestSafe, and deflections the node refuses (the fallback path)."""

    def __init__(self, seed: int) -> None:
        self.rng = np.random.default_rng(seed)

    def decide(self, ctx):
        u = self.rng.random()
        menu = (0, *ctx.chunk_menu)
        if u < 0.5:
            d = int(self.rng.integers(len(ctx.decode)))
            return Decision.deflect(d, menu[int(self.rng.integers(len(menu)))])
        k = int(self.rng.integers(len(ctx.prefill) + 1))
        return Decision.prefill_path(None if k == len(ctx.prefill) else k)


@st.composite
def scenarios(draw):
    """Small random scenarios: node counts, batch and budget limits, transfer set-ups, TTFT accounting, chunk
    menus, LargestSafe budgets, deflections allowed or not, and reserve or swap memory that binds (a small KV
    capacity: requests wait for memory, and the swap policy preempts and swaps in)."""
    cluster = {
        "prefill_nodes": draw(st.integers(1, 3)),
        "decode_nodes": draw(st.integers(1, 3)),
        "decode_max_batch": draw(st.sampled_from([1, 2, 5, 32, 256])),
        "prefill_token_budget": draw(st.sampled_from([64, 512, 2048, 8192])),
        "ttft_includes_transfer": draw(st.booleans()),
        "overlong": "reject",
    }
    transfer = {"setup_s": draw(st.sampled_from([0.0, 0.005, 0.05])), "enabled": draw(st.booleans()),
                "bandwidth_bytes_per_s": draw(st.sampled_from([1e9, 17.5e9]))}
    workload = {
        "arrival": {"kind": "gamma", "rate": draw(st.sampled_from([5, 22, 80])), "cv": draw(st.sampled_from([1, 3]))},
        "num_requests": draw(st.integers(1, 120)),
        "lengths": {"kind": "lognormal", "prompt_median": draw(st.sampled_from([50, 600, 1500])),
                    "prompt_sigma": 0.8, "prompt_max": 8000,
                    "output_median": draw(st.sampled_from([1, 3, 60, 150])), "output_sigma": 0.9,
                    "output_max": 1000},
    }
    cluster["max_deflections_per_node"] = draw(st.sampled_from([0, 1, 1]))
    deflection = {"chunk_menu": draw(st.sampled_from([[16], [128, 512], [128, 256, 512, 1024, 2048], [4096]])),
                  "beta": draw(st.sampled_from([0.1, 0.5, 1.0, 3.0]))}
    sc = {"name": "random", "cluster": cluster, "transfer": transfer, "workload": workload, "deflection": deflection,
          "slo": {"tbt_s": draw(st.sampled_from([0.005, 0.02, 0.1]))}}
    if draw(st.booleans()):
        # lifo: the Python reference engine's order (fifo, the default, is native-only: issue 14)
        cluster |= {"memory_policy": "swap", "swap_order": "lifo",
                    "kv_block_tokens": draw(st.sampled_from([1, 16, 100])),
                    "swap_bandwidth_bytes_per_s": draw(st.sampled_from([1e8, 20e9]))}
    kv = draw(st.sampled_from([None, 3000, 12_000, 40_000]))
    return ScenarioConfig.from_dict(sc), kv, draw(st.integers(0, 2**31 - 1))


def _drive(sim, policy) -> list[str]:
    """Run to the end; returns repr of every decision context (floats repr round-trip: bit-exact)."""
    seen = []
    ctx = sim.next_decision()
    while ctx is not None:
        seen.append(repr(ctx))
        sim.apply(policy.decide(ctx))
        ctx = sim.next_decision()
    return seen


def assert_same_run(py, nat, policy_seed: int, policy=RandomDecisions) -> None:
    ctx_py = _drive(py, policy(policy_seed))
    ctx_nat = _drive(nat, policy(policy_seed))
    assert len(ctx_py) == len(ctx_nat)
    for i, (a, b) in enumerate(zip(ctx_py, ctx_nat, strict=True)):
        assert a == b, f"decision {i} differs"
    for k in ("arrival", *COLUMNS):
        a = np.asarray(getattr(py, k))
        b = getattr(nat, k)
        if k == "arrival":
            a = a.astype(np.float64)
        assert a.dtype == b.dtype and a.tobytes() == b.tobytes(), k
    assert repr(py.trace) == repr(nat.trace)
    for k in ("wait_area", "tbt_violations", "tokens_out", "now", "n_preemptions", "swap_bytes", "n_decisions",
              "n_invalid", "n_finished", "n_rejected", "waiting", "done", "_seq"):
        assert repr(getattr(py, k)) == repr(getattr(nat, k)), k
    assert repr(py.chunks) == repr(nat.chunks)
    sp, sn = FP._stable(py.summary()), FP._stable(nat.summary())
    assert json.dumps(sp, sort_keys=True) == json.dumps(sn, sort_keys=True)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scenarios())
def test_random_scenarios_match_the_python_engine(case):
    sc, kv, seed = case
    py = Simulator(sc, seed=seed, kv_capacity=kv, trace=True, engine="python")
    nat = Simulator(sc, seed=seed, kv_capacity=kv, trace=True, engine="native")
    assert_same_run(py, nat, seed)


@pytest.mark.parametrize("oracle", [False, True])
def test_scenario_runs_match_with_contexts(oracle):
    py = PySimulator("bursty", seed=4, oracle=oracle, trace=True)
    nat = NativeSimulator("bursty", seed=4, oracle=oracle, trace=True)
    assert_same_run(py, nat, 4)


def test_first_divergence_of_two_traces():
    py = PySimulator("small", seed=2, trace=True)
    nat = NativeSimulator("small", seed=2, trace=True)
    py.run(RandomDecisions(2))
    nat.run(RandomDecisions(2))
    a, b = py.trace, nat.trace
    assert len(a) > 1000 and first_divergence(a, b) is None
    c = list(b)
    t, kind, x, y, w = c[500]
    c[500] = (t, kind, x, y, float(np.nextafter(w, np.inf)))  # one ulp of the wait area
    assert first_divergence(a, c) == 500
    assert first_divergence(a, b[:-3]) == len(b) - 3
    z = list(a)
    z[0] = (-0.0, *z[0][1:]) if z[0][0] == 0.0 else (0.0, *z[0][1:])
    assert first_divergence(a, z) == 0


def test_reset_replays_and_keeps_old_views():
    nat = NativeSimulator("small", seed=0)
    nat.run(NoDeflect())
    first = nat.first_token
    kept = first.copy()
    nat.reset(1)
    assert first.tobytes() == kept.tobytes()  # the view of the first run outlives the reset
    assert nat.first_token is not first and np.isnan(nat.first_token).all()
    py = PySimulator("small", seed=1)
    assert_same_run(py, nat, 0, policy=lambda s: NoDeflect())


def test_columns_are_read_only():
    nat = NativeSimulator("small", seed=0)
    nat.run(NoDeflect())
    with pytest.raises(ValueError, match="read-only"):
        nat.finish[0] = 0.0


def test_apply_returns_what_the_python_engine_returns():
    """True for a prefill decision or an accepted deflection, False for a refused one (which falls back)."""
    got = []
    for sim in (PySimulator("small", seed=0), NativeSimulator("small", seed=0)):
        out = []
        ctx = sim.next_decision()
        for _ in range(60):
            out.append((sim.apply(Decision.deflect(0, 256)), ctx.decode[0].can_deflect))
            ctx = sim.next_decision()
        got.append((out, sim.n_invalid, repr(sim.chunks[:60])))
    assert got[0] == got[1]
    assert {a for a, _ in got[0][0]} == {True, False} and all(a == b for a, b in got[0][0])


# ---------------------------------------------------------------------------------------------- slices not landed
def test_swap_overlong_error_counts_whole_blocks():
    """overlong: error rounds up to whole blocks under swap, as the Python engine does (same message)."""
    wl = {"arrival": {"kind": "poisson", "rate": 5}, "num_requests": 4,
          "lengths": {"kind": "fixed", "prompt_tokens": 100, "output_tokens": 10}}  # 110 tokens: 2 blocks of 64
    for policy, fits in (("reserve", True), ("swap", False)):
        sc = ScenarioConfig.from_dict({"name": "t", "workload": wl,
                                       "cluster": {"memory_policy": policy, "kv_block_tokens": 64,
                                                   "swap_order": "lifo"}})  # lifo: the Python engine's order
        msgs = []
        for engine in ("python", "native"):
            if fits:
                Simulator(sc, seed=0, kv_capacity=120, engine=engine)
                continue
            with pytest.raises(ConfigError, match="prompt_tokens \\+ output_tokens = 128") as e:
                Simulator(sc, seed=0, kv_capacity=120, engine=engine)
            msgs.append(str(e.value))
        assert fits or msgs[0] == msgs[1]


def test_restore_of_something_not_a_native_snapshot_is_a_config_error():
    """Snapshots and pickling landed in step 6 (tests/sim/test_native_snapshot.py); a non-snapshot is refused."""
    nat = NativeSimulator("small", seed=0)
    for bad in ({}, {"native_snapshot_of": (nat.scenario, False)}, None):
        with pytest.raises(ConfigError, match="native engine"):
            nat.restore(bad)


def test_timeline_node_states_and_pending_events_match_the_python_engine():
    """The introspection the env's renderer and the invariant tests read: the timeline, copies of every node's
    state and the pending events (in heapq's layout), at every decision of a run with deflections."""
    py = PySimulator("small", seed=3, record_timeline=True)
    nat = NativeSimulator("small", seed=3, record_timeline=True)
    pol = RandomDecisions(3)
    pol2 = RandomDecisions(3)
    ctx, ctx2 = py.next_decision(), nat.next_decision()
    k = 0
    while ctx is not None:
        if k % 7 == 0:
            assert py.timeline == nat.timeline
            assert py._events == nat._events
            for a, b in zip(py.dnodes, nat.dnodes, strict=True):
                for f in b._fields:
                    va, vb = getattr(a, f), getattr(b, f)
                    if f == "batch":
                        va = tuple(va)
                    elif f in ("fresh", "smax_idx", "smax_val", "pending", "swapped", "defl", "heap"):
                        va = None if va is None else tuple(va)
                    assert repr(va) == repr(vb), f
            for a, b in zip(py.pnodes, nat.pnodes, strict=True):
                for f in b._fields:
                    va, vb = getattr(a, f), getattr(b, f)
                    if f in ("queue", "step"):
                        va = None if va is None else tuple(tuple(x) for x in va)
                    assert repr(va) == repr(vb), f
        k += 1
        py.apply(pol.decide(ctx))
        nat.apply(pol2.decide(ctx2))
        ctx, ctx2 = py.next_decision(), nat.next_decision()
    assert ctx2 is None and py.timeline == nat.timeline and len(nat.timeline) > 100
    assert {x[4][:5] for x in nat.timeline} == {"prefi", "decod", "chunk"}
    assert NativeSimulator("small", seed=3).timeline == []


@pytest.mark.parametrize("bad", [None, "prefill", Decision("sideways"), Decision.prefill_path(7),
                                 Decision.deflect(9, 512), Decision.deflect(0, 100), Decision.prefill_path(True)])
def test_bad_decisions_raise_the_python_engines_errors(bad):
    msgs = []
    for sim in (PySimulator("small", seed=0), NativeSimulator("small", seed=0)):
        sim.next_decision()
        with pytest.raises(ConfigError) as e:
            sim.apply(bad)
        msgs.append(str(e.value))
        assert sim._pending_rid == 0 and sim.n_decisions == 0  # the decision stays pending
    assert msgs[0] == msgs[1]


def test_apply_without_a_pending_decision():
    nat = NativeSimulator("small", seed=0)
    nat.run(NoDeflect())
    with pytest.raises(RuntimeError, match="no pending decision"):
        nat.apply(Decision.prefill_path())
