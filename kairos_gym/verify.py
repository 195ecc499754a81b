"""``kairos-gym verify``: does this machine reproduce the published results, bit for bit?

Recomputes, in a few seconds, a chain of stages from the bottom of the house to the top (docs/reliability.md,
"Same results on every machine"), hashes each stage's arrays and compares the hashes with the reference
recorded in the package (``kairos_gym/data/verify.json``)::

    portable_math  the core's portable exp/log/log1p/expm1/pow/cos on a fixed grid of inputs
    latency_model  StepLatencyModel step times (scalar and numpy paths) on a grid of batches
    pricer_tables  the ChunkPricer's compiled cost tables and constants
    workloads      generated workloads of shipped scenarios (gamma, poisson, MMPP, profile, trace arrivals;
                   lognormal, by-state and pareto lengths)
    decisions      every decision context a policy sees in a few runs (the native pricer's priced options)
    runs           per-request records and summaries of simulator runs (fixed and random policies, Kairos)
    env            a short Gymnasium trajectory under a seeded random masked policy

A stage's hash is the sha256 over, per array in a fixed order, its name, dtype, shape and exact little-endian
bytes (floats as float64, integers and booleans as int64, text as UTF-8 JSON). Nothing machine-dependent
(timings, paths) is hashed. The first stage that differs is where a machine's results part from the
reference: a later stage usually differs *because* an earlier one does.

``kairos-gym verify --record`` (developers: after a change meant to alter results, together with the golden
data) rewrites the reference with this machine's hashes and the commit they were computed at.
"""

from __future__ import annotations

import functools
import hashlib
import json
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from kairos_gym.errors import ConfigError

REFERENCE = Path(__file__).resolve().parent / "data" / "verify.json"
"""The recorded reference hashes (package data)."""
FORMAT = 1
"""Version of the reference file's layout and of the hashing rule; bump it when either changes."""
MAX_REFERENCE_BYTES = 1 << 20
"""Largest reference file read (bytes)."""

Arrays = dict[str, np.ndarray]


# ---------------------------------------------------------------------------- hashing
def canonical(value: Any) -> np.ndarray:
    """``value`` as the array whose bytes are hashed: float64 for floats, int64 for integers and booleans,
    UTF-8 bytes (uint8) for text and JSON of objects and mappings. Widening float32 to float64 is exact. A uint8
    array is taken as text bytes already (kept as it is: canonical is idempotent)."""
    if isinstance(value, (str, bytes, dict)):
        return _text(value)
    try:
        a = np.asarray(value)
    except ValueError:  # ragged lists
        return _text(value)
    if a.dtype == np.uint8:
        return np.ascontiguousarray(a)
    if a.dtype.kind == "f":
        return np.ascontiguousarray(a, dtype="<f8")
    if a.dtype.kind in "iub":
        return np.ascontiguousarray(a, dtype="<i8")
    return _text(a.tolist())


def _text(obj: Any) -> np.ndarray:
    if isinstance(obj, bytes):
        obj = obj.decode("utf-8")
    raw = obj if isinstance(obj, str) else json.dumps(obj, sort_keys=True, default=repr)
    return np.frombuffer(raw.encode("utf-8"), dtype=np.uint8)


def array_hash(a: np.ndarray) -> str:
    """sha256 (hex) of one canonical array: dtype, shape and bytes."""
    h = hashlib.sha256()
    h.update(f"{a.dtype.str}{a.shape}".encode())
    h.update(a.tobytes())
    return h.hexdigest()


def stage_hash(arrays: Mapping[str, np.ndarray]) -> tuple[str, dict[str, str]]:
    """The stage's sha256 (hex) over its arrays in order, and each array's own sha256 (first 16 hex digits)."""
    h = hashlib.sha256()
    per: dict[str, str] = {}
    for name, a in arrays.items():
        ah = array_hash(a)
        h.update(name.encode() + b"\0" + ah.encode())
        per[name] = ah[:16]
    return h.hexdigest(), per


# ---------------------------------------------------------------------------- stage: portable_math
PORTABLE_MATH: tuple[tuple[str, int, tuple[float, float]], ...] = (
    ("exp", 1, (-745.0, 709.0)),
    ("log", 1, (1e-300, 1e300)),
    ("log1p", 1, (-0.999, 1e6)),
    ("expm1", 1, (-745.0, 709.0)),
    ("pow", 2, (1e-3, 1e4)),  # base range; the exponent is drawn from POW_EXPONENTS
    ("cos", 1, (-1.5e6, 1.5e6)),
)
"""The core's portable functions (src/core/portable_math.hpp): name, arity and input range of the grid."""
POW_EXPONENTS = (-3.0, 3.0)
PORTABLE_MATH_POINTS = 4096
"""Grid points per function (bit patterns drawn uniformly, so every binade of the range is covered)."""


def _core_function(name: str) -> Callable[..., Any] | None:
    """The core's binding of the portable function ``name`` (``_core.pm_<name>``, src/bindings/
    portable_math_bindings.cpp), or None in a build without it."""
    from kairos_gym import _core

    f = getattr(_core, f"pm_{name}", None)
    return f if callable(f) else None


def _portable_math_available() -> bool:
    return all(_core_function(name) is not None for name, _, _ in PORTABLE_MATH)


def bit_grid(lo: float, hi: float, n: int, seed: int) -> np.ndarray:
    """``n`` doubles in [lo, hi] drawn uniformly over their bit patterns (integer arithmetic and a bit cast
    only: the same on every machine), sorted, with both ends included."""
    rng = np.random.default_rng(seed)

    def positive(a: float, b: float, k: int) -> np.ndarray:  # 0 <= a < b
        ia, ib = (np.array([a, b], dtype="<f8").view("<i8")).tolist()
        return rng.integers(ia, ib, size=k, endpoint=True, dtype=np.int64).view("<f8")

    if lo >= 0:
        x = positive(lo, hi, n)
    elif hi <= 0:
        x = -positive(-hi, -lo, n)
    else:
        x = np.concatenate([-positive(0.0, -lo, n // 2), positive(0.0, hi, n - n // 2)])
    return np.sort(np.concatenate([[lo, hi], x[: n - 2]]))


def _apply(f: Callable[..., Any], *args: np.ndarray) -> np.ndarray:
    """``f`` over the grid, elementwise (one scalar call per point: the binding's scalar path)."""
    return np.array([float(f(*map(float, xs))) for xs in zip(*args, strict=True)], dtype=np.float64)


def stage_portable_math() -> Arrays:
    out: Arrays = {}
    for i, (name, arity, (lo, hi)) in enumerate(PORTABLE_MATH):
        f = _core_function(name)
        assert f is not None  # checked by the stage's available()
        x = bit_grid(lo, hi, PORTABLE_MATH_POINTS, seed=i)
        if arity == 2:
            y = bit_grid(*POW_EXPONENTS, PORTABLE_MATH_POINTS, seed=100 + i)[np.random.default_rng(200 + i)
                                                                              .permutation(PORTABLE_MATH_POINTS)]
            out[f"{name}/x"], out[f"{name}/y"], out[name] = x, y, _apply(f, x, y)
        else:
            out[f"{name}/x"], out[name] = x, _apply(f, x)
    return out


# ---------------------------------------------------------------------------- stages: latency_model, pricer_tables
LATENCY_PRESETS: tuple[tuple[str, str, str, int, bool], ...] = (
    ("bursty", "deepseek-v2-lite", "a100-80gb", 1, True),  # MoE, the shipped scenarios' calibrated model
    ("llama-3-8b-h100-tp2", "llama-3-8b", "h100-80gb", 2, False),  # dense, uncalibrated
)
"""(label, model, GPU, TP, calibrated with the bursty scenario's calibration) of the latency stages."""


def _latency_model(model: str, gpu: str, tp: int, calibrated: bool) -> Any:
    from kairos_gym.latency.model import StepLatencyModel
    from kairos_gym.scenario import load_scenario

    cal = dict(load_scenario("bursty").cluster.calibration) if calibrated else {}
    return StepLatencyModel.from_preset(model, gpu, tp, cal or None)


def _step_grid() -> np.ndarray:
    """Batches (tokens, sequences, decode pairs, prefill pairs, KV read tokens) as rows, as dump_stages.py."""
    return np.array([(pt, dt, dp, kv, s) for pt in (0, 1, 37, 512, 2048, 8191) for dt in (0, 1, 64)
                     for dp in (0, 100.0, 123456.0) for kv in (0, 4096.0) for s in (0, 1, 64)], dtype=np.float64)


def stage_latency_model() -> Arrays:
    g = _step_grid()
    out: Arrays = {"grid": g}
    for label, model, gpu, tp, cal in LATENCY_PRESETS:
        m = _latency_model(model, gpu, tp, cal)
        out[f"{label}/step_time_fast"] = np.array([m.step_time_fast(*map(float, row)) for row in g])
        t, f, c = m.step_cost_agg(g[:, 0], g[:, 1], g[:, 2], g[:, 3], g[:, 4])
        out[f"{label}/step_cost_agg"] = np.stack([np.broadcast_to(v, g.shape[:1]) for v in (t, f, c)], axis=1)
        out[f"{label}/step_time"] = np.array([m.step_time(ctx, chunks) for ctx, chunks in (
            ((), ()), ((100,), ()), ((10, 2000, 30000), ()), ((), ((512, 0),)), ((), ((512, 4096),)),
            ((5, 50, 500, 5000), ((256, 0), (1024, 8192))), (tuple(range(1, 257)), ((8192, 0),)))])
    return out


def stage_pricer_tables() -> Arrays:
    from dataclasses import astuple

    from kairos_gym.latency.pricing import ChunkPricer
    from kairos_gym.scenario import load_scenario

    menu = load_scenario("bursty").deflection.chunk_menu
    out: Arrays = {}
    for label, model, gpu, tp, cal in LATENCY_PRESETS:
        t = ChunkPricer(_latency_model(model, gpu, tp, cal), menu).compile(8192, 256)
        out[f"{label}/g"], out[f"{label}/gc"], out[f"{label}/l"], out[f"{label}/lc"] = t.g, t.gc, t.l, t.lc
        out[f"{label}/consts"] = np.array([t.kdec, *t.kdec_cost, t.apf_c, t.kv_m, t.p, t.inv_p, t.attn_pf_pair,
                                           t.peak_c_attn_pf], dtype=np.float64)
        out[f"{label}/step"] = canonical(repr(astuple(t.step)))  # repr of floats: exact (shortest round trip)
        out[f"{label}/menu"] = canonical(np.array(t.menu, dtype=np.int64))
    return out


# ---------------------------------------------------------------------------- stage: workloads
WORKLOADS: tuple[tuple[str, str, Mapping[str, Any], int], ...] = (
    ("bursty/0", "bursty", {}, 0),  # gamma arrivals, lognormal lengths
    ("bursty/1", "bursty", {}, 1),
    ("steady/0", "steady", {}, 0),  # poisson
    ("regime-shift/0", "regime-shift", {"max_requests": 2000}, 0),  # MMPP, lengths by state
    ("servegen-day/0", "servegen-day", {"max_requests": 2000}, 0),  # rate profile (non-homogeneous Poisson)
    ("azure-code/0", "azure-code", {"max_requests": 2000}, 0),  # trace replay with its own lengths
    ("pareto/0", "small", {"lengths": {"kind": "pareto"}, "num_requests": 2000}, 0),  # pareto lengths
)
"""(label, shipped scenario, workload overrides, seed) of the workload stage."""


def stage_workloads() -> Arrays:
    from kairos_gym.scenario import load_scenario
    from kairos_gym.workload import generate

    out: Arrays = {}
    for label, scenario, over, seed in WORKLOADS:
        sc = load_scenario(scenario)
        if over:
            sc = sc.with_overrides({"workload": dict(over)})
        wl = generate(sc.workload, np.random.default_rng(seed))  # the simulator's draw for this seed
        out[f"{label}/arrival_s"] = wl.arrival_s
        out[f"{label}/prompt_tokens"] = wl.prompt_tokens
        out[f"{label}/output_tokens"] = wl.output_tokens
    return out


# ---------------------------------------------------------------------------- stage: runs (simulator runs)
class PrefillPath:
    """Every request on the prefill path (no deflection): the plainest fixed policy."""

    name = "no-deflect"

    def decide(self, ctx: Any) -> Any:
        from kairos_gym.sim import Decision

        return Decision.prefill_path()


class DeflectFirst:
    """Deflect to the first decode node that accepts, with a fixed chunk (tokens; 0: LargestSafe); the prefill
    path when none does."""

    name = "deflect-first"

    def __init__(self, chunk: int) -> None:
        self.chunk = chunk

    def decide(self, ctx: Any) -> Any:
        from kairos_gym.sim import Decision

        for i, d in enumerate(ctx.decode):
            if d.can_deflect:
                return Decision.deflect(i, self.chunk)
        return Decision.prefill_path()


class RandomDeflect:
    """Uniform over the prefill path and every (node, chunk) deflection, LargestSafe included (a seeded numpy
    Generator; tools/fingerprint.py uses it too)."""

    name = "random"

    def __init__(self, seed: int) -> None:
        self.rng = np.random.default_rng(seed)

    def decide(self, ctx: Any) -> Any:
        from kairos_gym.sim import Decision

        opts = [Decision.prefill_path()]
        for i, d in enumerate(ctx.decode):
            if d.can_deflect:
                opts += [Decision.deflect(i, c) for c in (0, *ctx.chunk_menu)]
        return opts[int(self.rng.integers(len(opts)))]


@dataclass(frozen=True)
class RunCase:
    """One simulator run of the run stage: a shipped scenario with overrides, a policy, a seed and optionally a
    decode node's KV capacity (tokens; None: the model's)."""

    label: str
    scenario: str
    overrides: Mapping[str, Any]
    policy: str
    seed: int
    kv_capacity: int | None = None


_TIGHT = {"workload": {"max_requests": 400}, "cluster": {"memory_policy": "swap", "overlong": "reject"}}
RUNS: tuple[RunCase, ...] = (
    RunCase("bursty/no-deflect/0", "bursty", {}, "no-deflect", 0),
    RunCase("bursty/deflect-512/0", "bursty", {}, "deflect-512", 0),
    RunCase("bursty/random/1", "bursty", {}, "random", 1),
    RunCase("small/deflect-largest-safe/0", "small", {}, "deflect-0", 0),
    RunCase("decode-heavy/random/0", "decode-heavy", {"workload": {"max_requests": 1000}}, "random", 0),
    RunCase("azure-code/deflect-256/0", "azure-code", {"workload": {"max_requests": 1000}}, "deflect-256", 0),
    RunCase("kv-pressure/random/0", "kv-pressure", {"workload": {"max_requests": 600}}, "random", 0),
    RunCase("tight-swap/random/3", "small", _TIGHT, "random", 3, kv_capacity=12_000),
    RunCase("bursty-prefill-failure/random/0", "bursty-prefill-failure", {}, "random", 0),
    RunCase("fault-shift/random/0", "fault-shift", {}, "random", 0),  # random network outages
    RunCase("mix-shift/kairos/0", "mix-shift", {"workload": {"max_requests": 400},
                                                "information": {"track": "realistic"}}, "kairos", 0),
    RunCase("small/kairos-exact/0", "small", {}, "kairos-exact", 0),
)
"""The run stage's cases. ``kairos`` on the realistic track draws the model-error noise and the stale view;
``tight-swap`` makes memory the binding constraint (the swap policy preempts)."""

_STATS = ("wait_area", "tbt_violations", "tokens_out", "now", "n_preemptions", "swap_bytes")


def _policy(name: str, scenario: Any, seed: int) -> Any:
    if name == "no-deflect":
        return PrefillPath()
    if name.startswith("deflect-"):
        return DeflectFirst(int(name.split("-")[1]))
    if name == "random":
        return RandomDeflect(seed)
    from kairos_gym.agents.registry import make_policy

    return make_policy(name, scenario, seed=seed)


def stable_summary(summary: Mapping[str, Any]) -> dict[str, Any]:
    """A run summary without its machine-dependent keys (wall-clock times and rates per wall second)."""
    return {k: v for k, v in summary.items() if "wall" not in k and "per_s" not in k}


def stage_runs() -> Arrays:
    from kairos_gym.scenario import load_scenario
    from kairos_gym.sim import Simulator

    out: Arrays = {}
    for case in RUNS:
        label = case.label
        sc = load_scenario(case.scenario)
        if case.overrides:
            sc = sc.with_overrides(dict(case.overrides))
        sim = Simulator(sc, seed=case.seed, kv_capacity=case.kv_capacity)
        summary = sim.run(_policy(case.policy, sc, case.seed))
        for k, v in sim.requests_table().items():
            out[f"{label}/{k}"] = canonical(v)
        for k in ("prefill_end", "xfer_start", "xfer_end"):
            out[f"{label}/{k}"] = canonical(getattr(sim, k))
        out[f"{label}/stats"] = canonical(repr(tuple(getattr(sim, k) for k in _STATS)))
        out[f"{label}/summary"] = canonical(stable_summary(summary))
    return out


# ---------------------------------------------------------------------------- stage: decisions
DECISION_RUNS: tuple[RunCase, ...] = (
    RunCase("small/random/1", "small", {}, "random", 1),
    RunCase("bursty/deflect-512/0", "bursty", {"workload": {"max_requests": 800}}, "deflect-512", 0),
    RunCase("tight-swap/random/3", "small", _TIGHT, "random", 3, kv_capacity=12_000),
    RunCase("fault-shift/random/0", "fault-shift", {"workload": {"max_requests": 400}}, "random", 0),
)
"""The decision stage's runs: every decision context a policy sees (the priced options), in order."""


def _ctx_floats(x: Any, out: list[float]) -> None:
    """Every float of a decision context (its views and priced options), depth first in field order."""
    if isinstance(x, float):
        out.append(x)
    elif isinstance(x, tuple):  # the context, its views (named tuples) and the per-node / per-chunk tuples
        for v in x:
            _ctx_floats(v, out)


def stage_decisions() -> Arrays:
    from kairos_gym.scenario import load_scenario
    from kairos_gym.sim import Simulator

    out: Arrays = {}
    for case in DECISION_RUNS:
        sc = load_scenario(case.scenario)
        if case.overrides:
            sc = sc.with_overrides(dict(case.overrides))
        sim = Simulator(sc, seed=case.seed, kv_capacity=case.kv_capacity)
        pol = _policy(case.policy, sc, case.seed)
        texts: list[str] = []
        floats: list[float] = []
        ctx = sim.next_decision()
        while ctx is not None:
            texts.append(repr(ctx))  # every field; floats as repr (exact)
            _ctx_floats(tuple(ctx), floats)
            sim.apply(pol.decide(ctx))
            ctx = sim.next_decision()
        out[f"{case.label}/floats"] = np.array(floats, dtype=np.float64)
        out[f"{case.label}/contexts"] = canonical("\n".join(texts))
    return out


# ---------------------------------------------------------------------------- stage: env
ENV_RUNS: tuple[tuple[str, int], ...] = (("kairos_gym/KairosSmall-v0", 2000), ("kairos_gym/Kairos-v0", 2000))
"""(Gymnasium id, steps) of the env stage."""


def stage_env() -> Arrays:
    import gymnasium as gym

    import kairos_gym.env  # noqa: F401  (registers the ids)

    out: Arrays = {}
    for env_id, steps in ENV_RUNS:
        env = gym.make(env_id, reward="ttft")  # the reward the published digests were taken with
        rng = np.random.default_rng(0)
        obs_rows, rewards, actions, ends, summaries = [], [], [], [], []
        obs, info = env.reset(seed=0)
        episodes = 0
        for _ in range(steps):
            valid = np.flatnonzero(info["action_mask"])
            a = int(valid[rng.integers(valid.size)])
            obs, reward, terminated, truncated, info = env.step(a)
            obs_rows.append(np.asarray(obs, dtype=np.float64).ravel())
            rewards.append(float(reward))
            actions.append(a)
            ends.append(2 * bool(terminated) + bool(truncated))
            if terminated or truncated:
                episodes += 1
                summaries.append(stable_summary(info.get("summary", {})))
                obs, info = env.reset(seed=episodes)
        env.close()
        out[f"{env_id}/obs"] = np.stack(obs_rows)
        out[f"{env_id}/reward"] = canonical(rewards)
        out[f"{env_id}/action"] = canonical(np.array(actions, dtype=np.int64))
        out[f"{env_id}/end"] = canonical(np.array(ends, dtype=np.int64))
        out[f"{env_id}/summaries"] = canonical(summaries)
    return out


# ---------------------------------------------------------------------------- the chain
@dataclass(frozen=True)
class Stage:
    """One link of the chain: ``compute()`` returns its arrays, in a fixed order; ``available()`` is False
    when this build cannot compute it (then it is skipped, and a recorded reference for it counts as a
    difference)."""

    name: str
    what: str
    compute: Callable[[], Arrays]
    available: Callable[[], bool] = lambda: True


STAGES: tuple[Stage, ...] = (
    Stage("portable_math", "the core's portable exp/log/log1p/expm1/pow/cos on a grid", stage_portable_math,
          _portable_math_available),
    Stage("latency_model", "step times of the latency model on a grid of batches", stage_latency_model),
    Stage("pricer_tables", "the chunk pricer's compiled cost tables", stage_pricer_tables),
    Stage("workloads", "generated workloads of shipped scenarios", stage_workloads),
    Stage("decisions", "the priced options of every decision a policy sees", stage_decisions),
    Stage("runs", "per-request records of simulator runs", stage_runs),
    Stage("env", "a Gymnasium trajectory under a seeded random policy", stage_env),
)
"""Every stage, bottom of the house first. To add one: a function returning named arrays, a Stage here, then
``kairos-gym verify --record``."""


def compute_stages() -> Iterator[tuple[Stage, Arrays | None, float]]:
    """Each stage with its arrays (None when unavailable in this build) and its wall time (s, not hashed)."""
    for st in STAGES:
        t0 = time.perf_counter()
        arrays = {k: canonical(v) for k, v in st.compute().items()} if st.available() else None
        yield st, arrays, time.perf_counter() - t0


# ---------------------------------------------------------------------------- reference file
def load_reference(path: str | Path = REFERENCE) -> dict[str, Any]:
    """The recorded reference (ConfigError for a missing or malformed file, one line)."""
    from kairos_gym.json_file import read_json_file

    where = "verify reference"
    ref = read_json_file(where, "--reference", path, MAX_REFERENCE_BYTES, "file written by kairos-gym verify --record")
    if not isinstance(ref, dict) or ref.get("format") != FORMAT or not isinstance(ref.get("stages"), dict):
        raise ConfigError(where, "format", ref.get("format") if isinstance(ref, dict) else ref,
                          f"a reference of format {FORMAT} written by `kairos-gym verify --record`")
    for name, entry in ref["stages"].items():
        if not (isinstance(entry, dict) and isinstance(entry.get("sha256"), str)
                and isinstance(entry.get("arrays"), dict)):
            raise ConfigError(where, f"stages.{name}", entry, "{sha256: hex, arrays: {name: hex}}")
    return ref


def _machine() -> dict[str, Any]:
    """Where a reference was recorded (informative; never compared)."""
    import platform

    found: list[str] = []
    try:
        from numpy._core._multiarray_umath import __cpu_dispatch__, __cpu_features__

        found = [f for f in __cpu_dispatch__ if __cpu_features__.get(f)]
    except ImportError:  # another numpy layout
        pass
    return {"python": platform.python_version(), "numpy": np.__version__, "machine": platform.machine(),
            "numpy_simd_found": found}


# ---------------------------------------------------------------------------- verify / record
def run_verify(reference: str | Path = REFERENCE, dump: str | Path | None = None) -> dict[str, Any]:
    """Recompute every stage and compare it with ``reference``. Returns a dict: ``stages`` (per stage:
    ``status`` one of ``equal``, ``DIFFERS``, ``not recorded``, ``unavailable``; ``seconds``; for a difference
    the arrays that differ), ``first_difference`` (a stage name or None), ``reproduces`` (True when every
    recorded stage is equal), ``reference_commit``. ``dump``: also write every array to this ``.npz`` file
    (keys ``stage/array``), for a comparison with another machine's (compare_stages.py)."""
    ref = load_reference(reference)
    rows: list[dict[str, Any]] = []
    first: str | None = None
    dumped: dict[str, np.ndarray] = {}
    for st, arrays, secs in compute_stages():
        want = ref["stages"].get(st.name)
        row: dict[str, Any] = {"stage": st.name, "what": st.what, "seconds": round(secs, 3)}
        if arrays is None:
            row["status"] = "unavailable" if want is None else "DIFFERS"
            if want is not None:
                row["detail"] = "recorded, but this build cannot compute it"
        else:
            digest, per = stage_hash(arrays)
            dumped.update({f"{st.name}/{k}": v for k, v in arrays.items()})
            if want is None:
                row["status"] = "not recorded"
            elif digest == want["sha256"]:
                row["status"] = "equal"
            else:
                row["status"] = "DIFFERS"
                differ = [k for k in dict.fromkeys([*want["arrays"], *per]) if want["arrays"].get(k) != per.get(k)]
                row["arrays_differ"] = differ
                row["detail"] = f"{len(differ)} of {len(per)} arrays differ, first {differ[0]}" if differ else \
                    "the arrays' order differs"
        if row["status"] == "DIFFERS" and first is None:
            first = st.name
        rows.append(row)
    if dump is not None:
        from kairos_gym.output_file import open_output

        with open_output(dump, "wb", where="verify", flag="--dump") as f:
            np.savez(f, **dumped)
    compared = [r for r in rows if r["status"] in ("equal", "DIFFERS")]
    return {"reference": str(reference), "reference_commit": ref.get("commit"),
            "reference_machine": ref.get("machine"), "machine": _machine(), "stages": rows,
            "first_difference": first, "reproduces": first is None and bool(compared)}


def record(reference: str | Path = REFERENCE) -> dict[str, Any]:
    """Compute every available stage and write its hashes to ``reference`` with the commit they were computed
    at (developers; docs/reliability.md). Returns what was written."""
    from kairos_gym.version import code_version

    stages: dict[str, Any] = {}
    for st, arrays, _ in compute_stages():
        if arrays is not None:
            digest, per = stage_hash(arrays)
            stages[st.name] = {"sha256": digest, "arrays": per}
    code = code_version()
    ref = {"format": FORMAT, "version": code["version"], "commit": code["commit"], "dirty": code["dirty"],
           "machine": _machine(), "stages": stages}
    from kairos_gym.output_file import write_text

    write_text(reference, json.dumps(ref, indent=1) + "\n", where="verify", flag="--reference")
    return ref


def verdict_text(res: Mapping[str, Any]) -> str:
    """One line: whether this machine reproduces the reference, naming the first stage that differs."""
    commit = res.get("reference_commit")
    of = f"the reference results (recorded at commit {commit[:12]})" if commit else "the reference results"
    if res["reproduces"]:
        n = sum(r["status"] == "equal" for r in res["stages"])
        return f"this machine reproduces {of}: {n} of {n} stages equal"
    if res["first_difference"] is None:
        return f"nothing to compare: no stage of {of} is computable here"
    return f"this machine does NOT reproduce {of}: first difference at stage {res['first_difference']}"


@functools.lru_cache(maxsize=1)
def machine_verdict() -> dict[str, Any]:
    """The verdict of :func:`run_verify` against the shipped reference, once per process (a few seconds), for
    the reports' provenance: ``{"reproduces": bool | None, "first_difference": str | None, "text": str,
    "seconds": float}``. Never raises: a failure is reported in ``text`` with ``reproduces`` None."""
    t0 = time.perf_counter()
    try:
        res = run_verify()
    except Exception as e:
        return {"reproduces": None, "first_difference": None, "text": f"verify failed: {type(e).__name__}: {e}",
                "seconds": round(time.perf_counter() - t0, 1)}
    return {"reproduces": res["reproduces"], "first_difference": res["first_difference"],
            "text": verdict_text(res), "seconds": round(time.perf_counter() - t0, 1)}


__all__ = ["FORMAT", "REFERENCE", "STAGES", "Stage", "canonical", "load_reference", "machine_verdict", "record",
           "run_verify", "stage_hash", "verdict_text"]
