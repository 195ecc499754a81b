"""The cases of the engine reference dataset ``tests/golden/engine_traces.json`` (BLIS-style, beside
``fingerprints.json``).

The dataset guards the simulator's internals bit for bit: every decision context, every per-request column, the
event trace (every popped event with the waiting area after it), the token-gap records, the counters, the node
states and pending events, the error messages, the env trajectories on both env step paths, snapshots and the
Oracle's decisions. Each case here computes those outputs of one run as short digests (sha256 of their repr or
bytes, 16 hex digits) or, for messages, as the strings themselves. ``tools/record_engine_traces.py`` records
them (with the commit, ``recorded_with``); ``tests/golden/test_engine_traces.py`` recomputes them and fails on any
difference.

A case is ``(key, params, run)``: ``run(params, make_sim, make_env) -> dict`` where ``make_sim(scenario, **kw)``
builds a simulator and ``make_env(**kw)`` a :class:`~kairos_gym.env.core.KairosEnv` of the engine under record
or test. ``params`` are JSON (the random scenarios are drawn once, at record time, and stored in the dataset, so
the cases do not depend on a generator's version). Times in seconds, sizes in tokens.
"""

from __future__ import annotations

import functools
import hashlib
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from kairos_gym.scenario import ScenarioConfig
from kairos_gym.sim import Decision
from kairos_gym.sim.hook import DecodeNodeView, PrefillNodeView
from kairos_gym.verify import DeflectFirst, PrefillPath
from tests.fixtures import SMALL, TINY

MakeSim = Callable[..., Any]
MakeEnv = Callable[..., Any]
Case = tuple[str, Any, Callable[[Any, MakeSim, MakeEnv], dict[str, Any]]]

COLUMNS = ("arrival", "path", "first_token", "finish", "prefill_start", "prefill_end", "exec_s", "xfer_start",
           "xfer_end", "p_node", "d_node", "max_gap", "kv_moved", "last_tok", "ctx_base", "end_step", "gap_own",
           "from_rec")
"""Per-request columns digested (as float64 / int64 arrays: the dtypes both engines gave)."""
COUNTERS = ("wait_area", "tbt_violations", "tokens_out", "now", "n_preemptions", "swap_bytes", "n_decisions",
            "n_invalid", "n_finished", "n_rejected", "waiting", "done", "_seq")
"""Run counters recorded as their repr (``_seq``: events pushed)."""
STATS = (("s_t0", np.float64), ("s_dt", np.float64), ("s_n", np.int64), ("s_w", np.int64), ("gap_v", np.float64),
         ("gap_w", np.int64))
"""Token-gap records of :class:`~kairos_gym.sim.metrics.RunStats` (stretches and single gaps)."""

TRACE_SCENARIO = {**SMALL, "transfer": {"bandwidth_bytes_per_s": 2e9}, "slo": {"tbt_s": 0.03}}
"""SMALL with a slow link (up to 4 transfers share a link) and a tight TBT SLO (violations happen): the run whose
event queue, link and metrics-recorder operations the component tests check."""

DATASET = Path(__file__).resolve().parent / "engine_traces.json"


@functools.cache
def dataset() -> dict[str, Any]:
    """The recorded dataset: ``{"recorded_with": ..., "cases": {key: {"params": ..., "out": ...}}}``."""
    return json.loads(DATASET.read_text(encoding="utf-8"))


def recorded(key: str) -> dict[str, Any]:
    """The recorded outputs of case ``key``."""
    return dataset()["cases"][key]["out"]


N_RANDOM = 60
"""Random small scenarios (the former hypothesis test's max_examples)."""


def digest(data: bytes | str) -> str:
    """First 16 hex digits of the sha256 of ``data`` (a str as UTF-8)."""
    return hashlib.sha256(data.encode() if isinstance(data, str) else data).hexdigest()[:16]


def canon(x: Any, h: Any) -> None:
    """Feed a canonical, bit-exact serialization of a nested obs/info value into the hash ``h``: arrays by dtype,
    shape and bytes, floats by repr (-0.0 and 0.0 differ), dicts by sorted key, every leaf with its type name."""
    if isinstance(x, np.ndarray):
        h.update(f"nd{x.dtype.str}{x.shape}".encode())
        h.update(np.ascontiguousarray(x).tobytes())
    elif isinstance(x, dict):
        h.update(b"{")
        for k in sorted(x, key=str):
            h.update(repr(k).encode())
            canon(x[k], h)
        h.update(b"}")
    elif isinstance(x, (list, tuple)):
        h.update(f"{type(x).__name__}[{len(x)}".encode())
        for v in x:
            canon(v, h)
        h.update(b"]")
    else:
        h.update(f"{type(x).__name__}:{x!r};".encode())


def canon_digest(x: Any) -> str:
    h = hashlib.sha256()
    canon(x, h)
    return h.hexdigest()[:16]


def stable_summary(summary: dict[str, Any]) -> str:
    """The summary without wall-clock keys, as sorted JSON."""
    return json.dumps({k: v for k, v in summary.items() if "wall" not in k and "per_s" not in k}, sort_keys=True,
                      default=str)


class RandomDecisions:
    """Every kind of decision at random: a prefill node or the shortest queue, a deflection with any chunk of
    the menu or LargestSafe, and deflections the node refuses (the fallback path)."""

    def __init__(self, seed: int) -> None:
        self.rng = np.random.default_rng(seed)

    def decide(self, ctx: Any) -> Decision:
        u = self.rng.random()
        menu = (0, *ctx.chunk_menu)
        if u < 0.5:
            d = int(self.rng.integers(len(ctx.decode)))
            return Decision.deflect(d, menu[int(self.rng.integers(len(menu)))])
        k = int(self.rng.integers(len(ctx.prefill) + 1))
        return Decision.prefill_path(None if k == len(ctx.prefill) else k)


TRACE_POLICIES: dict[str, Callable[[], Any]] = {
    "nodeflect": PrefillPath, "deflect512": lambda: DeflectFirst(512), "largest_safe": lambda: DeflectFirst(0)}


RECORDED_CONTEXT_FIELDS = ("now_s", "request", "prefill", "decode", "chunk_menu", "step_s", "ttft_deflect_s",
                           "ttft_prefill_s", "largest_safe_feasible", "largest_safe_ttft_s",
                           "largest_safe_first_chunk", "ttft_slo_s", "tbt_slo_s", "beta")
"""The DecisionContext fields the digests cover. The others (``kind``, ``pull_node``: pull decisions;
``emitted_tokens``: re-entry decisions) are checked to hold their arrival-only defaults (every case decides at
arrivals only) and left out of the digests."""


_RECORDED_VIEWS = {name: NamedTuple(name, [(f, Any) for f in cls._fields if f != "up"])  # type: ignore[misc]
                   for name, cls in (("PrefillNodeView", PrefillNodeView), ("DecodeNodeView", DecodeNodeView))}
"""The node views as recorded: without ``up`` (faults, added since; checked True and left out of the digests)."""


def recorded_field(ctx: Any, f: str) -> Any:
    """Context field ``f`` as recorded: the node views without their ``up`` field (asserted True)."""
    v = getattr(ctx, f)
    if f in ("prefill", "decode"):
        assert all(x.up is True for x in v), v
        view = _RECORDED_VIEWS["PrefillNodeView" if f == "prefill" else "DecodeNodeView"]
        return tuple(view(*x[:-1]) for x in v)
    return v


def context_repr(ctx: Any) -> str:
    """``repr(ctx)`` as the recorded DecisionContext printed it (its recorded fields, in order)."""
    assert ctx.kind == "arrival" and ctx.pull_node is None and ctx.emitted_tokens == 0, (ctx.kind, ctx.pull_node)
    return "DecisionContext(" + ", ".join(f"{f}={recorded_field(ctx, f)!r}" for f in RECORDED_CONTEXT_FIELDS) + ")"


def context_asdict(ctx: Any) -> dict[str, Any]:
    """``ctx._asdict()`` over the recorded fields."""
    return {f: recorded_field(ctx, f) for f in RECORDED_CONTEXT_FIELDS}


# ---------------------------------------------------------------------------------------------- whole runs
def run_digests(sim: Any, policy: Any) -> dict[str, Any]:
    """Drive ``sim`` to the end under ``policy`` and digest everything the differential tests compared: the repr
    of every decision context, every per-request column, the event trace, the token-gap records, the chunks, the
    counters (as reprs) and the summary."""
    ctxs = []
    ctx = sim.next_decision()
    while ctx is not None:
        ctxs.append(context_repr(ctx))
        sim.apply(policy.decide(ctx))
        ctx = sim.next_decision()
    h = hashlib.sha256()
    for k in COLUMNS:
        a = np.asarray(getattr(sim, k))
        a = a.astype(np.float64) if k == "arrival" else a
        h.update(f"{k}:{a.dtype.str}{a.shape}".encode())
        h.update(a.tobytes())
    st = sim.stats
    hs = hashlib.sha256()
    for name, dtype in STATS:
        hs.update(np.asarray(getattr(st, name), dtype=dtype).tobytes())
    trace = sim.trace
    return {
        "decisions": len(ctxs), "contexts": digest("\n".join(ctxs)), "columns": h.hexdigest()[:16],
        "events": None if trace is None else len(trace), "trace": digest(repr(trace)), "stats": hs.hexdigest()[:16],
        "chunks": digest(repr(sim.chunks)), "counters": {k: repr(getattr(sim, k)) for k in COUNTERS},
        "summary": digest(stable_summary(sim.summary())),
    }


def draw_random_scenario(rng: np.random.Generator) -> dict[str, Any]:
    """One small random scenario as JSON params (the former hypothesis strategy, drawn with numpy): node counts,
    batch and budget limits, transfer set-ups, TTFT accounting, chunk menus, LargestSafe budgets, deflections
    allowed or not, and reserve or swap memory that binds (a small KV capacity: requests wait for memory, and
    the swap policy preempts and swaps in)."""
    def pick(xs: list[Any]) -> Any:
        return xs[int(rng.integers(len(xs)))]

    cluster: dict[str, Any] = {
        "prefill_nodes": int(rng.integers(1, 4)), "decode_nodes": int(rng.integers(1, 4)),
        "decode_max_batch": pick([1, 2, 5, 32, 256]), "prefill_token_budget": pick([64, 512, 2048, 8192]),
        "ttft_includes_transfer": bool(rng.integers(2)), "overlong": "reject",
        "max_deflections_per_node": pick([0, 1, 1]),
    }
    transfer = {"setup_s": pick([0.0, 0.005, 0.05]), "enabled": bool(rng.integers(2)),
                "bandwidth_bytes_per_s": pick([1e9, 17.5e9])}
    workload = {
        "arrival": {"kind": "gamma", "rate": pick([5, 22, 80]), "cv": pick([1, 3])},
        "num_requests": int(rng.integers(1, 121)),
        "lengths": {"kind": "lognormal", "prompt_median": pick([50, 600, 1500]), "prompt_sigma": 0.8,
                    "prompt_max": 8000, "output_median": pick([1, 3, 60, 150]), "output_sigma": 0.9,
                    "output_max": 1000},
    }
    deflection = {"chunk_menu": pick([[16], [128, 512], [128, 256, 512, 1024, 2048], [4096]]),
                  "beta": pick([0.1, 0.5, 1.0, 3.0])}
    if rng.integers(2):
        cluster |= {"memory_policy": "swap", "kv_block_tokens": pick([1, 16, 100]),
                    "swap_bandwidth_bytes_per_s": pick([1e8, 20e9])}
    sc = {"name": "random", "cluster": cluster, "transfer": transfer, "workload": workload, "deflection": deflection,
          "slo": {"tbt_s": pick([0.005, 0.02, 0.1])}}
    return {"scenario": sc, "kv_capacity": pick([None, 3000, 12_000, 40_000]), "seed": int(rng.integers(2**31))}


def as_recorded(scenario: dict[str, Any]) -> dict[str, Any]:
    """A recorded scenario as the dataset runs it: a swap scenario with ``cluster.swap_order: lifo`` (swapped requests
    come back last-in first-out); the stored parameters, which name no swap order, stay as recorded."""
    cluster = scenario.get("cluster", {})
    if cluster.get("memory_policy") != "swap":
        return scenario
    return {**scenario, "cluster": {**cluster, "swap_order": "lifo"}}


def _random_run(p: dict[str, Any], make_sim: MakeSim, make_env: MakeEnv) -> dict[str, Any]:
    sim = make_sim(ScenarioConfig.from_dict(as_recorded(p["scenario"])), seed=p["seed"], kv_capacity=p["kv_capacity"],
                   trace=True)
    return run_digests(sim, RandomDecisions(p["seed"]))


def _bursty_run(p: dict[str, Any], make_sim: MakeSim, make_env: MakeEnv) -> dict[str, Any]:
    return run_digests(make_sim("bursty", seed=4, oracle=p["oracle"], trace=True), RandomDecisions(4))


def _plain_run(p: dict[str, Any], make_sim: MakeSim, make_env: MakeEnv) -> dict[str, Any]:
    sc = p["scenario"]
    sim = make_sim(sc if isinstance(sc, str) else ScenarioConfig.from_dict(sc), seed=p["seed"], trace=p["trace"])
    pol = TRACE_POLICIES[p["policy"]]() if p["policy"] in TRACE_POLICIES else RandomDecisions(p["seed"])
    return run_digests(sim, pol)


def _apply_returns(p: Any, make_sim: MakeSim, make_env: MakeEnv) -> dict[str, Any]:
    """60 deflections to node 0 with 256-token chunks: apply's return value against can_deflect, the refusals
    counted, the chunks."""
    sim = make_sim("small", seed=0)
    out = []
    ctx = sim.next_decision()
    for _ in range(60):
        out.append((sim.apply(Decision.deflect(0, 256)), ctx.decode[0].can_deflect))
        ctx = sim.next_decision()
    return {"returns": digest(repr(out)), "accepted": sum(a for a, _ in out), "n_invalid": sim.n_invalid,
            "chunks": digest(repr(sim.chunks[:60]))}


def node_states(sim: Any) -> str:
    """The introspection the env's renderer and the invariant tests read: the
    timeline, every node's state copy and the pending events (heapq's layout)."""
    from kairos_gym.sim.simulator import DecodeNodeState, PrefillNodeState

    def norm(f: str, v: Any) -> Any:
        if v is None:
            return None
        if f in ("queue", "step"):
            return tuple(tuple(x) for x in v)
        if f in ("batch", "fresh", "smax_idx", "smax_val", "pending", "swapped", "defl", "heap"):
            return tuple(v)
        return v

    dn = [tuple(norm(f, getattr(d, f)) for f in DecodeNodeState._fields) for d in sim.dnodes]
    pn = [tuple(norm(f, getattr(q, f)) for f in PrefillNodeState._fields) for q in sim.pnodes]
    return repr((sim.timeline, sim._events, dn, pn))


def _introspection(p: Any, make_sim: MakeSim, make_env: MakeEnv) -> dict[str, Any]:
    """Every 7th decision of a RandomDecisions run of ``small`` (seed 3, timeline on): node states and events."""
    sim = make_sim("small", seed=3, record_timeline=True)
    pol = RandomDecisions(3)
    ctx = sim.next_decision()
    checks, k = [], 0
    while ctx is not None:
        if k % 7 == 0:
            checks.append(digest(node_states(sim)))
        k += 1
        sim.apply(pol.decide(ctx))
        ctx = sim.next_decision()
    return {"checks": checks, "timeline": digest(repr(sim.timeline)), "timeline_len": len(sim.timeline)}


BAD_DECISIONS: tuple[Callable[[], Any], ...] = (
    lambda: None, lambda: "prefill", lambda: Decision("sideways"), lambda: Decision.prefill_path(7),
    lambda: Decision.deflect(9, 512), lambda: Decision.deflect(0, 100), lambda: Decision.prefill_path(True))
"""Bad policy return values (apply raises ConfigError and leaves the decision pending)."""


def _bad_decisions(p: Any, make_sim: MakeSim, make_env: MakeEnv) -> dict[str, Any]:
    from kairos_gym.errors import ConfigError

    msgs = []
    for bad in BAD_DECISIONS:
        sim = make_sim("small", seed=0)
        sim.next_decision()
        try:
            sim.apply(bad())
        except ConfigError as e:
            msgs.append(str(e))
        else:
            msgs.append("accepted")
    return {"messages": msgs}


def _overlong_swap(p: Any, make_sim: MakeSim, make_env: MakeEnv) -> dict[str, Any]:
    """overlong: error rounds a request's tokens up to whole KV blocks under swap (110 tokens: 2 blocks of 64)."""
    from kairos_gym.errors import ConfigError

    wl = {"arrival": {"kind": "poisson", "rate": 5}, "num_requests": 4,
          "lengths": {"kind": "fixed", "prompt_tokens": 100, "output_tokens": 10}}
    sc = ScenarioConfig.from_dict({"name": "t", "workload": wl,
                                   "cluster": {"memory_policy": "swap", "kv_block_tokens": 64}})
    try:
        make_sim(sc, seed=0, kv_capacity=120)
    except ConfigError as e:
        return {"message": str(e)}
    return {"message": "accepted"}


def _mixed_policy(i: int, ctx: Any) -> Decision:
    """A fixed mix of prefill paths and deflections (some refused), driven only by the step number."""
    k = i % 5
    if k < 2:
        return Decision.prefill_path(None if k == 0 else i % 2)
    return Decision.deflect(i % 2, ctx.chunk_menu[i % len(ctx.chunk_menu)] if k < 4 else 0)


def _context_fields(p: Any, make_sim: MakeSim, make_env: MakeEnv) -> dict[str, Any]:
    """150 decisions of ``small`` (seed 3) under the mixed policy: every context field's repr and type, apply's
    return values."""

    sim = make_sim("small", seed=3)
    rows = []
    for i in range(150):
        ctx = sim.next_decision()
        if ctx is None:
            rows.append("end")
            break
        rows.append(repr([(f, repr(recorded_field(ctx, f)), type(getattr(ctx, f)).__name__)
                          for f in RECORDED_CONTEXT_FIELDS]))
        rows.append(repr(sim.apply(_mixed_policy(i, ctx))))
    first = make_sim("small", seed=1).next_decision()
    return {"fields": digest("\n".join(rows)), "first_small_seed1": digest(context_repr(first)),
            "first_small_seed1_asdict": digest(repr(context_asdict(first)))}


def _run_mixed(p: Any, make_sim: MakeSim, make_env: MakeEnv) -> dict[str, Any]:
    """run(policy) after a next_decision() already made a decision pending: the summary and the policy's calls."""
    class Mixed:
        def __init__(self) -> None:
            self.calls = 0

        def decide(self, ctx: Any) -> Decision:
            d = _mixed_policy(self.calls, ctx)
            self.calls += 1
            return d

    sim = make_sim("small", seed=4)
    sim.next_decision()
    pol = Mixed()
    s = sim.run(pol)
    return {"summary": digest(stable_summary(s)), "calls": pol.calls, "n_decisions": sim.n_decisions}


ENV_KWARGS: tuple[dict[str, Any], ...] = (
    {"scenario": "small", "reward": "ttft"},  # the reward these cases were recorded with (the default then)
    {"scenario": "bursty", "workload": {"max_requests": 300}, "reward": "ttft"},
    {"scenario": "small", "oracle": True, "obs_mode": "dict", "reward": "slo"},
    {"scenario": "small", "reward": "goodput", "max_decisions": 40, "deflection": {"largest_safe_action": True}},
    {"scenario": "kv-pressure", "workload": {"max_requests": 200}, "tbt_penalty": 0.3, "reward": "ttft"},
)
"""Env set-ups of the env-step cases (observation modes, rewards, truncation, the LargestSafe action)."""


def _env_episodes(p: dict[str, Any], make_sim: MakeSim, make_env: MakeEnv) -> dict[str, Any]:
    """Two whole episodes with random actions (every third unmasked: refused deflections included): the reset
    and every step's (obs, reward, terminated, truncated, info) and action mask."""
    env = make_env(**ENV_KWARGS[p["kwargs"]])
    rng = np.random.default_rng(7)
    steps, episodes = [], []
    for ep in range(2):
        a = env.reset(seed=ep)
        h = hashlib.sha256()
        canon(a, h)
        done, n = False, 0
        while not done:
            mask = a[-1]["action_mask"]
            act = int(rng.integers(env.action_space.n)) if n % 3 == 0 else int(rng.choice(np.flatnonzero(mask)))
            a = env.step(act)
            canon(a, h)
            canon(env.action_masks(), h)
            done = a[2] or a[3]
            n += 1
        steps.append(n)
        episodes.append(h.hexdigest()[:16])
    return {"steps": steps, "episodes": episodes}


def _env_contexts(p: Any, make_sim: MakeSim, make_env: MakeEnv) -> dict[str, Any]:
    """25 steps of ``small`` (seed 1): the decision context after each, and each returned obs and mask."""
    env = make_env(scenario="small", reward="ttft")
    env.reset(seed=1)
    ctxs, kept = [], []
    for i in range(25):
        out = env.step(1 if i % 4 == 0 else 0)
        kept.append((out[0], out[4]["action_mask"]))
        ctxs.append(context_repr(env.decision_context))
    return {"contexts": digest("\n".join(ctxs)), "returned": canon_digest(kept)}


def _env_refusals(p: Any, make_sim: MakeSim, make_env: MakeEnv) -> dict[str, Any]:
    """Bad actions (ConfigError before anything moves) and the number of steps to the end of a 5-request run."""
    from kairos_gym.errors import ConfigError

    env = make_env(scenario="small", workload={"max_requests": 5}, reward="ttft")
    env.reset(seed=0)
    msgs = []
    for bad in (-1, env.action_space.n, 1.5, "0"):
        try:
            env.step(bad)
        except ConfigError as e:
            msgs.append(str(e))
        else:
            msgs.append("accepted")
    n = 1
    while not env.step(0)[2]:
        n += 1
    return {"messages": msgs, "steps": n, "now": repr(env.sim.now)}


def env_steps(env: Any, mask: np.ndarray, act: Callable[[np.ndarray], int], n: int) -> tuple[list, np.ndarray]:
    """Up to ``n`` steps of ``env`` with ``act(mask)`` actions (stopping at the episode's end): the steps'
    (obs, reward, terminated, truncated, info) and the last action mask."""
    out = []
    for _ in range(n):
        obs, r, term, trunc, info = env.step(act(mask))
        out.append((obs, r, term, trunc, info))
        mask = info["action_mask"]
        if term or trunc:
            break
    return out, mask


def _env_snapshot(p: dict[str, Any], make_sim: MakeSim, make_env: MakeEnv) -> dict[str, Any]:
    """25 random masked steps of TINY, then a snapshot (another future, restored) or a pickle, then 60 more."""
    import pickle

    def random_actions(seed: int) -> Callable[[np.ndarray], int]:
        rng = np.random.default_rng(seed)
        return lambda mask: int(np.flatnonzero(mask)[rng.integers(np.flatnonzero(mask).size)])

    env = make_env(scenario=TINY, reward="ttft")
    _, info = env.reset(seed=3)
    head, mask = env_steps(env, info["action_mask"], random_actions(1), 25)
    if p["how"] == "restore":
        snap = env.snapshot()
        env_steps(env, mask, random_actions(2), 30)
        _, info = env.restore(snap)
        twin = env
    else:
        twin = pickle.loads(pickle.dumps(env))
    tail, _ = env_steps(twin, mask, random_actions(5), 60)
    return {"steps": len(head) + len(tail), "run": canon_digest(head + tail)}


def _result(sim: Any) -> str:
    s = dict(sim.summary())
    s.pop("wall_time_s")
    h = hashlib.sha256()
    for k in COLUMNS[1:]:
        h.update(np.asarray(getattr(sim, k)).tobytes())
    h.update(repr((sorted(s.items()), sim.chunks, sim.n_preemptions, sim.swap_bytes)).encode())
    return h.hexdigest()[:16]


def _kv_capacity(p: Any, make_sim: MakeSim, make_env: MakeEnv) -> dict[str, Any]:
    """SMALL (reserve memory, overlong rejected) with 12,000 KV tokens per decode node (the ``kv_capacity=`` seam)
    under DeflectFirst(256)."""
    sc = ScenarioConfig.from_dict({**SMALL, "cluster": {"memory_policy": "reserve", "overlong": "reject"}})
    sim = make_sim(sc, seed=0, kv_capacity=12_000)
    return run_digests(sim, DeflectFirst(256))


def cases(rng_seed: int = 20261201) -> list[Case]:
    """Every case with its params (the random scenarios drawn from ``rng_seed``: used at record time only; the
    tests read the params from the dataset)."""
    rng = np.random.default_rng(rng_seed)
    out: list[Case] = [(f"random/{i:02d}", draw_random_scenario(rng), _random_run) for i in range(N_RANDOM)]
    out += [(f"bursty/seed4/oracle-{o}", {"oracle": o}, _bursty_run) for o in (False, True)]
    out.append(("small/seed1/nodeflect", {"scenario": "small", "seed": 1, "trace": False, "policy": "nodeflect"},
                _plain_run))
    out.append(("small/seed2/random-traced", {"scenario": "small", "seed": 2, "trace": True, "policy": "random"},
                _plain_run))
    out += [(f"trace-scenario/{name}", {"scenario": TRACE_SCENARIO, "seed": 0, "trace": True, "policy": name},
             _plain_run) for name in sorted(TRACE_POLICIES)]
    out += [("small/apply-returns", None, _apply_returns), ("small/introspection", None, _introspection),
            ("small/bad-decisions", None, _bad_decisions), ("swap/overlong-error", None, _overlong_swap),
            ("small/context-fields", None, _context_fields), ("small/run-mixed", None, _run_mixed),
            ("small/kv-capacity-12000", None, _kv_capacity)]
    out += [(f"env/episodes/{i}", {"kwargs": i}, _env_episodes) for i in range(len(ENV_KWARGS))]
    out += [("env/contexts", None, _env_contexts), ("env/refusals", None, _env_refusals)]
    out += [(f"env/snapshot/{how}", {"how": how}, _env_snapshot) for how in ("restore", "pickle")]
    return out


RUNNERS: dict[str, Callable[[Any, MakeSim, MakeEnv], dict[str, Any]]] = {key: run for key, _, run in cases()}
"""Case key -> its run function."""
