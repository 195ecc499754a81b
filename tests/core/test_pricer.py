"""The native pricer (kairos_gym._core.Pricer) returns bit-identical results to ChunkPricer, for every public
method, on random grids over every shipped scenario and a few other model presets, menus and caps; its tables
grow through the Python callback; bad arguments are ConfigErrors.

The reference is a separate, fresh ChunkPricer (its tables sized on demand), so the tests also pin that the
compiled tables do not depend on their size. Equality is on the float64 bytes (0.0 and -0.0 differ, a NaN
equals only itself), and types must match (int vs float vs bool)."""

from __future__ import annotations

import math
import struct

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kairos_gym.agents.kairos import Kairos, build_model

from kairos_gym.compiled import core
from kairos_gym.errors import ConfigError
from kairos_gym.latency import StepLatencyModel
from kairos_gym.latency.presets import MAX_TOKENS
from kairos_gym.latency.pricing import (
    MAX_TABLE_INDEX,
    MEMO_LIMIT,
    ChunkPricer,
    CostTables,
    core_pricer,
    table_sizes,
)
from kairos_gym.scenario import ScenarioConfig, load_scenario, scenario_names

SHIPPED = ("bursty", "small", "mooncake", "azure-conv", "decode-heavy")


def same(a, b) -> bool:
    """Bitwise equality of nested results: same types, float64 bytes equal."""
    if type(a) is not type(b):
        return False
    if isinstance(a, float):
        return struct.pack("<d", a) == struct.pack("<d", b)
    if isinstance(a, (tuple, list)):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    return a == b


class Case:
    """One pricing configuration: a model, a menu, a decode batch cap and a prefill budget."""

    def __init__(self, label: str, model: StepLatencyModel, menu: tuple[int, ...], cap: int, budget: int) -> None:
        self.label, self.model, self.menu, self.cap, self.budget = label, model, menu, cap, budget
        self.desc = tuple(sorted(menu, reverse=True))
        self.sizes = table_sizes(cap, budget, menu)
        self.native = core_pricer(ChunkPricer(model, menu), *self.sizes)

    def ref(self) -> ChunkPricer:
        return ChunkPricer(self.model, self.menu)


def scenario_case(name: str) -> Case:
    sc = load_scenario(name)
    return Case(name, build_model(sc), tuple(sc.deflection.chunk_menu), sc.cluster.decode_max_batch,
                sc.cluster.prefill_token_budget)


def custom(label: str, cluster: dict, menu=None) -> Case:
    sc = ScenarioConfig.from_dict({"cluster": cluster, **({"deflection": {"chunk_menu": menu}} if menu else {})})
    return Case(label, build_model(sc), tuple(sc.deflection.chunk_menu), sc.cluster.decode_max_batch,
                sc.cluster.prefill_token_budget)


SPECS = {name: (lambda name=name: scenario_case(name)) for name in SHIPPED} | {
    "llama-3-8b": lambda: custom("llama-3-8b", {"model": "llama-3-8b"}),
    "llama-2-70b-tp4": lambda: custom("llama-2-70b-tp4", {"model": "llama-2-70b", "tp": 4, "decode_max_batch": 512},
                                      [64, 512, 4096]),
    "opt-13b-tp2": lambda: custom("opt-13b-tp2", {"model": "opt-13b", "tp": 2, "prefill_token_budget": 8192},
                                  [16, 256, 16384]),
    "kairos-odd-menu": lambda: Case("kairos-odd-menu", StepLatencyModel.from_preset(), (300, 1000, 16384), 64, 512),
}
IDS = list(SPECS)


@pytest.fixture(scope="module")
def cases():
    """The cases, built once per module and released with it (no native object outlives the tests)."""
    return {label: make() for label, make in SPECS.items()}


@pytest.fixture(params=IDS)
def case(request, cases):
    return cases[request.param]


def grid(case: Case, seed: int, n: int = 60):
    """Random (n_decode, dec_pairs, prompt, done, chunk, budget_s) states within the case's bounds."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        b = int(rng.integers(0, case.cap + 1))
        pairs = b * int(rng.integers(1, 8000)) if b else 0
        prompt = int(rng.choice([0, 1, int(rng.integers(1, 20000)), int(rng.choice(case.menu)),
                                 int(rng.choice(case.menu)) * int(rng.integers(1, 4)) + 1]))
        done = int(rng.choice([0, int(rng.integers(0, prompt + 1)), int(rng.choice(case.menu))]))
        chunk = int(rng.choice([*case.menu, int(rng.integers(1, max(case.menu) + 1))]))  # menu or off-menu
        budget_s = float(rng.choice([0.0, 0.01, 0.02, 0.05, 0.1, 0.3, 1.0, math.inf]))
        out.append((b, pairs, prompt, done, chunk, budget_s))
    return out


def test_shipped_scenarios_are_all_covered():
    assert set(SHIPPED) <= set(scenario_names())


def test_limits_match_python():
    assert core().PRICER_MAX_INDEX == MAX_TABLE_INDEX == MAX_TOKENS
    assert core().PRICER_MEMO_LIMIT == MEMO_LIMIT


def test_tables_are_pythons_bytes(case):
    """The core holds exactly the numbers ChunkPricer tabulated (copied once, handed back zero-copy)."""
    t = case.native.tables()
    ref = case.ref()
    ref._grow(*case.sizes)
    n_t, n_s = case.native.table_sizes
    assert n_t > case.sizes[0] and n_s > case.sizes[1]
    assert t["g"].tobytes() == np.array(ref._g[:n_t]).tobytes()
    assert t["gc"].tobytes() == np.array(ref._gc[:n_t]).tobytes()
    assert t["l"].tobytes() == np.array(ref._l[:n_s]).tobytes()
    assert t["lc"].tobytes() == np.array(ref._lc[:n_s]).tobytes()
    assert not t["g"].flags.writeable
    assert same(case.native.sec_per_decode_pair, ref.sec_per_decode_pair)
    assert same(case.native.decode_pair_cost, ref.decode_pair_cost)
    assert case.native.menu == case.menu


def test_single_step_terms_bitwise(case):
    ref, nat = case.ref(), case.native
    rng = np.random.default_rng(1)
    T, S = case.sizes
    for t, s in [(0, 0), (0, 1), (1, 1), (T, S), (T, 1), (case.budget, case.budget), (case.cap, case.cap)] + [
            (int(rng.integers(0, T + 1)), int(rng.integers(0, S + 1))) for _ in range(200)]:
        assert same(nat.base(t, s), ref.base(t, s)), (t, s)
        assert same(nat.base_cost(t, s), ref.base_cost(t, s)), (t, s)
    for c, k in [(0, 0), (0, 77), (1, 0), (case.budget, 0)] + [
            (int(rng.integers(0, 20000)), int(rng.integers(0, 200000))) for _ in range(200)]:
        assert same(nat.attn(c, k), ref.attn(c, k)), (c, k)
    for pf, kv in [(0.0, 0.0), (-1.0, 5.0), (0.5, 1.0), (1e12, 3e6)] + [
            (float(rng.uniform(0, 1e11)), float(rng.integers(0, 10**6))) for _ in range(200)]:
        assert same(nat.attn_time(pf, kv), ref.attn_time(pf, kv)), (pf, kv)
        assert same(nat.attn_cost(pf, kv), tuple(ref.attn_cost(pf, kv))), (pf, kv)
    for b, pairs, _, done, chunk, _ in grid(case, 2, 200):
        for c in (0, chunk, min(chunk, case.menu[0])):
            assert same(nat.step(b, pairs, c, done), ref.step(b, pairs, c, done)), (b, pairs, c, done)
    assert nat.step(0, 0.0, 0, 0) == 0.0
    assert nat.grow_count == 0


def test_schedules_bitwise(case):
    ref, nat = case.ref(), case.native
    for b, pairs, prompt, done, chunk, _ in grid(case, 3, 120):
        for c, d in ((chunk, done), (chunk, 0), (case.menu[-1], done), (case.menu[0], 0)):
            assert same(nat.fixed_schedule(b, pairs, prompt, c, d), ref.fixed_schedule(b, pairs, prompt, c, d)), (
                b, pairs, prompt, c, d)
    for prompt in (0, 1, case.budget - 1, case.budget, case.budget + 1, 3 * case.budget + 7, 17_000):
        budgets = (1, 7, prompt, prompt + 1) if prompt <= 100 else (case.budget // 3, min(prompt, case.budget))
        for budget in {b for b in (*budgets, case.budget) if 1 <= b <= case.budget}:
            assert same(nat.prefill_alone(prompt, budget), ref.prefill_alone(prompt, budget)), (prompt, budget)
    assert nat.grow_count == 0


def test_menu_terms_and_rows_bitwise(case):
    ref, nat = case.ref(), case.native
    menus = [case.menu, tuple(reversed(case.menu)), case.menu[:1], case.menu[1:]]
    for b, pairs, prompt, _, _, budget_s in grid(case, 4, 120):
        for menu in menus:
            terms = ref.menu_terms(prompt, menu)
            assert same(nat.menu_terms(prompt, menu), terms), (prompt, menu)
            for wait in (0.0, 0.013, budget_s if math.isfinite(budget_s) else 0.5):
                assert same(nat.menu_rows(b, pairs, terms, wait), ref.menu_rows(b, pairs, terms, wait)), (b, prompt)
            assert same(nat.menu_schedules(b, pairs, prompt, menu), ref.menu_schedules(b, pairs, prompt, menu))
    assert nat.grow_count == 0


def test_largest_safe_bitwise(case):
    ref, nat = case.ref(), case.native
    for b, pairs, prompt, done, _, budget_s in grid(case, 5, 200):
        for desc in (case.desc, case.desc[1:], case.desc[-1:], ()):
            got = nat.largest_safe(b, pairs, prompt, budget_s, desc, done)
            assert same(got, ref.largest_safe(b, pairs, prompt, budget_s, desc, done)), (b, pairs, prompt, done)
    assert nat.grow_count == 0


def test_largest_safe_budget_boundaries(case):
    """A step exactly at the budget fits; one ulp below, the schedule takes a smaller size or is infeasible."""
    ref, nat = case.ref(), case.native
    b, pairs, prompt = min(case.cap, 16), min(case.cap, 16) * 1200, 3 * case.desc[0] + 5
    for c in case.desc:
        s = ref.step(b, pairs, min(c, prompt), 0)
        for budget in (s, math.nextafter(s, 0.0), math.nextafter(s, math.inf)):
            got = nat.largest_safe(b, pairs, prompt, budget, case.desc)
            assert same(got, ref.largest_safe(b, pairs, prompt, budget, case.desc)), (c, budget)
        ok, _, sizes = nat.largest_safe(b, pairs, prompt, s, case.desc)
        if ok:
            assert sizes[0] >= min(c, prompt)
    # no size fits at all: infeasible with nothing scheduled; the whole prompt as the remainder
    assert same(nat.largest_safe(b, pairs, prompt, 0.0, case.desc), (False, 0.0, []))
    assert same(nat.largest_safe(b, pairs, 0, 0.0, case.desc), (True, 0.0, []))
    assert same(nat.largest_safe(b, pairs, prompt, math.nan, case.desc),
                ref.largest_safe(b, pairs, prompt, math.nan, case.desc))


def test_reachable_extremes_fit_the_compiled_tables(case):
    """table_sizes covers the largest indices a scenario reaches: full batch plus the largest chunk, a full
    prefill step of one-token chunks, LargestSafe and menu rows at the batch cap. No growth, same numbers."""
    ref, nat = case.ref(), case.native
    B, cmax, budget = case.cap, max(case.menu), case.budget
    pairs = B * 40_000
    calls = [
        lambda p: p.base_cost(B + cmax, B + 1), lambda p: p.base_cost(B, B), lambda p: p.base_cost(budget, budget),
        lambda p: p.base(budget, 1), lambda p: p.step(B, pairs, cmax, 0), lambda p: p.step(B, pairs, 0, 0),
        lambda p: p.largest_safe(B, pairs, 40_000, 10.0, case.desc),
        lambda p: p.menu_rows(B, pairs, ref.menu_terms(9999, case.menu), 0.5),
        lambda p: p.fixed_schedule(B, pairs, 5 * cmax + 3, cmax),
    ]
    for call in calls:
        assert same(call(nat), call(ref))
    assert nat.grow_count == 0


@settings(max_examples=150, deadline=None, derandomize=True)
@given(b=st.integers(0, 256), ctx=st.integers(0, 40_000), prompt=st.integers(0, 40_000),
       done=st.integers(0, 5_000), budget=st.floats(0.0, 2.0), chunk=st.integers(1, 3000))
def test_property_every_schedule_bitwise(cases, b, ctx, prompt, done, budget, chunk):
    case = cases["bursty"]
    ref, nat = case.ref(), case.native
    pairs = b * (ctx + 1)
    assert same(nat.largest_safe(b, pairs, prompt, budget, case.desc, done),
                ref.largest_safe(b, pairs, prompt, budget, case.desc, done))
    terms = ref.menu_terms(prompt, case.menu)
    assert same(nat.menu_rows(b, pairs, terms, budget), ref.menu_rows(b, pairs, terms, budget))
    assert same(nat.fixed_schedule(b, pairs, prompt, chunk, done), ref.fixed_schedule(b, pairs, prompt, chunk, done))
    assert same(nat.step(b, pairs, chunk, done), ref.step(b, pairs, chunk, done))


def test_attention_memo_is_bounded_and_changes_no_value():
    nat = core_pricer(ChunkPricer(StepLatencyModel.from_preset()))
    ref = ChunkPricer(StepLatencyModel.from_preset())
    first = nat.attn(513, 7)
    for k in range(MEMO_LIMIT + 10):
        nat.attn(3, k)
    assert nat.cache_size() <= MEMO_LIMIT
    assert same(nat.attn(513, 7), first) and same(first, ref.attn(513, 7))


@pytest.mark.parametrize("case", ["bursty", "llama-3-8b", "llama-2-70b-tp4", "opt-13b-tp2"])
def test_model_time_is_step_time_fast_bitwise(cases, case):
    """The native scalar step time equals StepLatencyModel.step_time_fast (MoE and dense presets, TP)."""
    c = cases[case]
    rng = np.random.default_rng(6)
    edges = [(0.0, 0.0, 0.0, 0.0, 0.0), (1.0, 1.0, 0.0, 0.0, 0.0), (0, 0, 5, 0, 0), (2048, 1, 0, 2048 * 1024.5, 2048)]
    rand = [(float(rng.integers(0, 70_000)), float(rng.integers(0, 600)), float(rng.choice([0.0, rng.uniform(0, 1e8)])),
             float(rng.choice([0.0, rng.uniform(0, 1e9)])), float(rng.uniform(0, 1e6))) for _ in range(3000)]
    for a in edges + rand:
        assert same(c.native.model_time(*a), c.model.step_time_fast(*a)), a
    with pytest.raises(ConfigError, match=r"pricer: model_time: n_seqs = 70000\.0"):
        c.native.model_time(1.0, 70_000.0, 0.0, 0.0, 0.0)


# ---------------------------------------------------------------------------------------------- table growth

def test_tables_grow_through_the_callback_with_the_same_numbers():
    """A native pricer on the minimal tables prices a batch far past them: it calls back once per growth,
    and every price equals a fresh Python pricer's (whose own tables grew differently)."""
    m = StepLatencyModel.from_preset()
    menu = (128, 256, 512, 1024, 2048)
    nat = core_pricer(ChunkPricer(m, menu))
    assert nat.table_sizes == (4097, 513)
    b, pairs = 8_500, 8_500 * 900
    ref = ChunkPricer(m, menu)
    terms = ref.menu_terms(3000, menu)
    assert same(nat.menu_rows(b, pairs, terms, 0.25), ref.menu_rows(b, pairs, terms, 0.25))
    assert nat.grow_count == 1
    n_t, n_s = nat.table_sizes
    assert n_t > b + 2048 and n_s > b + 1
    assert same(nat.largest_safe(b, pairs, 3000, 5.0, tuple(reversed(menu))),
                ref.largest_safe(b, pairs, 3000, 5.0, tuple(reversed(menu))))
    assert same(nat.step(b, pairs, 512, 0), ref.step(b, pairs, 512, 0))
    assert nat.grow_count == 1  # already covered: no second call
    assert same(nat.base_cost(60_000, 30_000), ref.base_cost(60_000, 30_000))
    assert nat.grow_count == 2


def test_grow_callback_arguments_and_validation():
    m = StepLatencyModel.from_preset()
    py = ChunkPricer(m)
    calls = []

    def grow(n_tokens, n_seqs):
        calls.append((n_tokens, n_seqs))
        return py.compile(n_tokens, n_seqs)

    nat = core().Pricer(py.compile(4096, 512), grow)
    nat.base(10_000, 3)
    assert calls == [(10_000, 512)]  # the index asked for, the other table kept at its size
    with pytest.raises(ConfigError, match=r"pricer: largest_safe: tokens of a step = 16777344"):
        nat.largest_safe(MAX_TABLE_INDEX, 0.0, 10, 1.0, (128,))
    assert len(calls) == 1  # refused before any callback or allocation


def test_no_callback_or_a_bad_one_is_a_clear_error():
    m = StepLatencyModel.from_preset()
    py = ChunkPricer(m)
    small = py.compile(4096, 512)
    nat = core().Pricer(small)
    assert same(nat.base(4096, 512), py.base(4096, 512))
    with pytest.raises(RuntimeError, match=r"index past the cost tables .* no grow callback"):
        nat.base(4097, 1)
    with pytest.raises(RuntimeError, match="shorter than asked"):
        core().Pricer(small, lambda t, s: small).base(5000, 1)
    other = ChunkPricer(StepLatencyModel.from_preset("llama-3-8b")).compile(9000, 600)
    with pytest.raises(RuntimeError, match="another model or menu"):
        core().Pricer(small, lambda t, s: other).base(5000, 1)

    def boom(t, s):
        raise KeyError("from the callback")

    with pytest.raises(KeyError, match="from the callback"):
        core().Pricer(small, boom).base(5000, 1)
    with pytest.raises(TypeError, match="grow must be callable"):
        core().Pricer(small, 3)


def test_malformed_tables_are_refused():
    py = ChunkPricer(StepLatencyModel.from_preset())
    t = py.compile(4096, 512)
    fields = {f: getattr(t, f) for f in t.__dataclass_fields__}
    with pytest.raises(TypeError, match=r"CostTables\.g must be a C-contiguous float64"):
        core().Pricer(CostTables(**{**fields, "g": t.g.astype(np.float32)}))
    with pytest.raises(ValueError, match="as many rows"):
        core().Pricer(CostTables(**{**fields, "gc": t.gc[:-1]}))
    with pytest.raises(ConfigError, match="menu size = 0"):
        core().Pricer(CostTables(**{**fields, "menu": (0, 128)}))


def test_compile_bounds_are_checked_before_allocation():
    py = ChunkPricer(StepLatencyModel.from_preset())
    for bad in (-1, MAX_TABLE_INDEX + 1, 2.5, True):
        with pytest.raises(ConfigError, match="pricer tables: n_tokens"):
            py.compile(bad, 10)
    assert len(py._g) == 4097


def test_table_sizes_rule():
    assert table_sizes(256, 2048, (128, 2048)) == (4096, 2048)
    assert table_sizes(256, 300, (128, 512)) == (4096, 512)
    assert table_sizes(4096, 2048, (128, 16384)) == (4096 + 16384, 4097)
    assert table_sizes(8, 1 << 20, (16,)) == (1 << 20, 1 << 20)


# ---------------------------------------------------------------------------------------------- bad arguments

@pytest.mark.parametrize("call, field", [
    (lambda p: p.base(-1, 0), "n_tokens"),
    (lambda p: p.base_cost(0, -2), "n_seqs"),
    (lambda p: p.step(-1, 0.0, 0, 0), "n_decode"),
    (lambda p: p.step(1, math.nan, 0, 0), "dec_pairs"),
    (lambda p: p.step(1, -1.0, 0, 0), "dec_pairs"),
    (lambda p: p.step(1, 2.0**51, 0, 0), "dec_pairs"),
    (lambda p: p.attn(-5, 0), "chunk"),
    (lambda p: p.attn_time(1.0, -1.0), "kv_read"),
    (lambda p: p.attn_time(math.inf, 1.0), "pf_pairs"),
    (lambda p: p.fixed_schedule(1, 2.0, 100, 0), "chunk"),
    (lambda p: p.prefill_alone(100, 0), "budget"),
    (lambda p: p.largest_safe(1, 2.0, 100, 1.0, (128, 0)), "menu size"),
    (lambda p: p.largest_safe(1, 2.0, 100, 1.0, (128,), -1), "done"),
    (lambda p: p.menu_terms(5000, (128, 777)), "menu size"),  # 777 has no prefix sums (not the pricer's menu)
    (lambda p: p.menu_rows(1, 2.0, ((0, 1, 0, 1, 0.0, 0.0, 0.0),)), "term chunk"),
])
def test_bad_arguments_are_config_errors(call, field):
    nat = core_pricer(ChunkPricer(StepLatencyModel.from_preset()))
    with pytest.raises(ConfigError, match=f"pricer: .*{field} = "):
        call(nat)
    assert nat.grow_count == 0


def test_menu_terms_of_a_foreign_size_below_one_chunk_are_fine():
    """Sizes not in the pricer's menu only need prefix sums when the prompt holds a full chunk of them."""
    nat = core_pricer(ChunkPricer(StepLatencyModel.from_preset()))
    ref = ChunkPricer(StepLatencyModel.from_preset())
    assert same(nat.menu_terms(500, (128, 777)), ref.menu_terms(500, (128, 777)))


# ---------------------------------------------------------------------------------------------- Kairos

class PythonPricer(ChunkPricer):
    """What Kairos priced with before the switch: ChunkPricer, and the model's own step_time_fast."""

    __slots__ = ()

    def model_time(self, *args: float) -> float:
        return self.model.step_time_fast(*args)


def python_kairos(name: str, **kw) -> Kairos:
    k = Kairos(name, **kw)
    k.pricer = PythonPricer(k.model, k.chunk_menu)
    k._attn0 = k.model.step_time_fast(1.0, 1.0, 0.0, 0.0, 0.0)
    k._step_full = k.pricer.base(k.prefill_budget, 1)
    return k


@pytest.mark.parametrize("name", ["small", "bursty", "mooncake"])
@pytest.mark.parametrize("exact", [False, True])
def test_kairos_prices_with_the_core_pricer_as_python_does(name, exact):
    """Kairos on its native pricer decides exactly as on the Python one over a whole run (with model error and
    staleness, and exact), and the compiled tables never grow."""
    from kairos_gym.agents.runner import simulate

    sc = load_scenario(name)
    if not exact:  # the realistic information track: served staleness and model error
        sc = sc.with_overrides({"information": {"track": "realistic"}})
    k_nat = Kairos(sc, seed=3)
    k_py = python_kairos(sc, seed=3)
    assert type(k_nat.pricer).__name__ == "Pricer"
    s_nat, sim_nat = simulate(k_nat, sc, 1)
    s_py, sim_py = simulate(k_py, sc, 1)
    for key in ("path", "p_node", "d_node", "first_token", "finish"):
        assert np.asarray(getattr(sim_nat, key)).tobytes() == np.asarray(getattr(sim_py, key)).tobytes(), key
    assert sim_nat.chunks == sim_py.chunks
    timing = {"wall_time_s", "decision_us_p50", "decision_us_p99", "decision_cpu_us_p50", "decision_cpu_us_p99"}
    assert {k: v for k, v in s_nat.items() if k not in timing} == {k: v for k, v in s_py.items() if k not in timing}
    assert 0 < s_nat["deflection_rate"] < 1
    assert k_nat.pricer.grow_count == 0


def test_simulators_of_one_latency_model_and_menu_share_one_pricer():
    """shared_pricer: one ChunkPricer (and core twin) per distinct (model, GPU, tp, calibration, menu); another
    calibration or menu gets its own; results are unchanged (tests/golden pin them)."""
    from kairos_gym.sim import Simulator

    a, b = Simulator("small", seed=0), Simulator("small", seed=1)
    assert a.pricer is b.pricer
    c = Simulator(load_scenario("small").with_overrides({"deflection": {"chunk_menu": [256, 512]}}), seed=0)
    assert c.pricer is not a.pricer
    calib = {"cluster": {"calibration": {"dense_compute_eff": 0.5}}}
    d = Simulator(load_scenario("small").with_overrides(calib), seed=0)
    assert d.pricer is not a.pricer
