"""Chunked workloads: in ``metrics.mode: streaming`` a synthetic workload is generated and handed to the
core a chunk at a time (kairos_gym/workload/chunked.py, src/core/workload.hpp), so a long run holds O(chunk)
requests, never the whole workload. The chunks are bit for bit the whole workload, the event loop never runs
past the last loaded arrival, appends are checked, and the whole-workload bound stays for exact mode."""

from __future__ import annotations

import csv
import io
import json

import numpy as np
import pytest

import kairos_gym.sim.simulator as ne
from kairos_gym.errors import ConfigError
from kairos_gym.scenario import ScenarioConfig, load_scenario
from kairos_gym.sim import Decision, Simulator
from kairos_gym.workload import MAX_REQUESTS, MAX_STREAMED_REQUESTS, WorkloadConfig, generate
from kairos_gym.workload.chunked import WorkloadStream

from .conftest import SMALL, DeflectAll, NoDeflect
from .test_overload import RandomDecisions

LOGNORMAL = SMALL["workload"]["lengths"]
WORKLOADS = {  # one per arrival kind, a duration-bounded one, and the other length kinds
    "gamma": {"arrival": {"kind": "gamma", "rate": 60.0, "cv": 3.0}, "lengths": LOGNORMAL, "num_requests": 1500},
    "poisson-pareto": {"arrival": {"kind": "poisson", "rate": 30.0}, "lengths": {"kind": "pareto", "prompt_max": 8000,
                                                                             "output_max": 1000},
                       "num_requests": 1200},
    "mmpp": {"arrival": {"kind": "mmpp", "rate_on": 80.0, "rate_off": 2.0, "mean_on_s": 3.0, "mean_off_s": 4.0},
             "lengths": LOGNORMAL, "num_requests": 1400},
    "gamma-duration": {"arrival": {"kind": "gamma", "rate": 40.0, "cv": 2.0}, "lengths": LOGNORMAL, "duration_s": 40.0,
                       "max_requests": 1500},
    "mmpp-duration": {"arrival": {"kind": "mmpp", "rate_on": 60.0, "rate_off": 0.0, "mean_on_s": 2.0,
                                  "mean_off_s": 2.0}, "lengths": {"kind": "fixed", "prompt_tokens": 900,
                                                                   "output_tokens": 60}, "duration_s": 45.0},
    "poisson-empirical": {"arrival": {"kind": "poisson", "rate": 25.0},
                          "lengths": {"kind": "empirical", "path": "sharegpt8k_lengths_only"}, "duration_s": 40.0},
    # lengths by the MMPP state at each arrival: each state's own stream, the states carried with the times
    "mmpp-by-state": {"arrival": {"kind": "mmpp", "rate_on": 80.0, "rate_off": 6.0, "mean_on_s": 1.5,
                                  "mean_off_s": 3.0},
                      "lengths": {"kind": "by_state", "on": {**LOGNORMAL, "prompt_median": 1800},
                                  "off": {"kind": "empirical", "path": "sharegpt8k_lengths_only"}},
                      "num_requests": 1300, "max_requests": 1250},
    "mmpp-by-state-duration": {"arrival": {"kind": "mmpp", "rate_on": 50.0, "rate_off": 0.0, "mean_on_s": 2.0,
                                           "mean_off_s": 2.0},
                               "lengths": {"kind": "by_state", "on": {"kind": "pareto", "prompt_max": 8000,
                                                                      "output_max": 1000},
                                           "off": {"kind": "fixed", "prompt_tokens": 10, "output_tokens": 5}},
                               "duration_s": 40.0},
}


def _streaming(workload: dict, window: int = 4096, **extra) -> ScenarioConfig:
    return ScenarioConfig.from_dict({**SMALL, "workload": workload, "cluster": {"overlong": "reject"},
                                     "metrics": {"mode": "streaming", "window": window}, **extra})


def _take_all(stream: WorkloadStream, k: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    parts: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
    while not stream.done:
        a, p, o, _ = stream.take(k)
        parts.append((a, p, o))
    return tuple(np.concatenate([x[i] for x in parts]) for i in range(3))  # type: ignore[return-value]


@pytest.mark.parametrize("seed", [0, 5])
@pytest.mark.parametrize("name", sorted(WORKLOADS))
def test_stream_is_generate_bit_for_bit(name, seed):
    """The chunks, concatenated, are generate()'s arrays byte for byte, whatever the chunk and batch sizes."""
    cfg = WorkloadConfig.from_dict(WORKLOADS[name])
    whole = generate(cfg, np.random.default_rng(seed))
    for k, batch in ((1, 3), (7, 1000), (256, 64), (100_000, 1 << 15)):
        a, p, o = _take_all(WorkloadStream(cfg, np.random.default_rng(seed), batch=batch), k)
        assert a.tobytes() == whole.arrival_s.tobytes(), (k, batch)
        assert p.tobytes() == whole.prompt_tokens.tobytes() and o.tobytes() == whole.output_tokens.tobytes()


def test_stream_consumes_the_run_generator_as_generate_does():
    cfg = WorkloadConfig.from_dict(WORKLOADS["mmpp"])
    r1, r2 = np.random.default_rng(3), np.random.default_rng(3)
    generate(cfg, r1)
    stream = WorkloadStream(cfg, r2, batch=10)
    stream.take(5)
    assert r1.integers(0, 2**62) == r2.integers(0, 2**62)  # what the run draws afterwards (noise, faults)


def test_stream_refuses_a_trace_and_bad_sizes():
    trace = WorkloadConfig.from_dict({"arrival": {"kind": "trace", "path": "azure2023_code"}, "max_requests": 10})
    with pytest.raises(ConfigError, match="a trace replay is loaded whole"):
        WorkloadStream(trace, np.random.default_rng(0))
    s = WorkloadStream(WorkloadConfig.from_dict(WORKLOADS["gamma"]), np.random.default_rng(0))
    with pytest.raises(ConfigError, match="k = 0"):
        s.take(0)
    _take_all(s, 1000)
    with pytest.raises(ConfigError, match="after the last chunk"):
        s.take(5)


def _csv_text(rows: list[list]) -> str:
    """The streamed requests CSV (rows in the order their requests settled, as ``--requests-csv`` writes them)."""
    buf = io.StringIO()
    w = csv.writer(buf)
    for r in rows:
        w.writerow(r)
    return buf.getvalue()


def _run(sc: ScenarioConfig, seed: int, policy, monkeypatch, chunk: int | None) -> tuple:
    """Run ``sc``: chunked with ``chunk`` requests a chunk, or (chunk None) whole, the chunking switched off."""
    with monkeypatch.context() as m:
        if chunk is None:
            m.setattr(ne, "is_chunked", lambda sc, fixed: False)
        m.setattr(ne, "CHUNK_OVERRIDE", chunk)
        sim = Simulator(sc, seed=seed)
        assert sim.chunked == (chunk is not None)
        rows: list[list] = []
        sim.stream_requests_csv(rows.append)
        summary = sim.run(policy)
    summary.pop("wall_time_s")
    counters = (sim.n, sim.n_arrived, sim.n_finished, sim.n_rejected, sim.n_timed_out, sim.n_decisions,
                sim.n_invalid, sim.tokens_out, sim.tbt_violations, sim._core.events_pushed, repr(sim.now),
                repr(sim.wait_area), sim.done)
    return json.dumps(summary, sort_keys=True), _csv_text(rows), counters


@pytest.mark.parametrize("name", ["gamma", "poisson-pareto", "mmpp", "gamma-duration", "mmpp-duration",
                                  "mmpp-by-state"])
def test_chunked_run_equals_the_whole_run(name, monkeypatch):
    """Summary, requests CSV and counters of a chunked run equal the same scenario's run with its workload whole,
    over several seeds, chunk sizes and arrival kinds (with admission control and timeouts on)."""
    sc = _streaming(WORKLOADS[name], overload={"admission_max_waiting": 60, "timeout_s": 4.0})
    for seed in (0, 1, 2):
        whole = _run(sc, seed, RandomDecisions(seed), monkeypatch, None)
        assert whole[2][1] == whole[2][0] > 0 and whole[2][-1]
        for chunk in (1, 7, 300):
            assert _run(sc, seed, RandomDecisions(seed), monkeypatch, chunk) == whole, (seed, chunk)


def test_chunked_run_equals_the_whole_run_on_the_realistic_track(monkeypatch):
    """The run generator feeds the noise seed after the workload: a chunked run draws it identically."""
    sc = _streaming(WORKLOADS["gamma"], information={"track": "realistic"})
    whole = _run(sc, 4, DeflectAll(256), monkeypatch, None)
    assert _run(sc, 4, DeflectAll(256), monkeypatch, 11) == whole


def test_a_chunked_run_never_holds_the_whole_workload(monkeypatch):
    monkeypatch.setattr(ne, "CHUNK_OVERRIDE", 50)
    sim = Simulator(_streaming(WORKLOADS["gamma"]), seed=0)
    assert sim.n == 50 and not sim.workload_complete  # the first chunk: n counts what is loaded
    with pytest.raises(ConfigError, match="generated in chunks and never held whole"):
        sim.workload  # noqa: B018
    assert sim.workload_source == WorkloadConfig.from_dict(WORKLOADS["gamma"]).describe()
    s = sim.run(DeflectAll(256))
    assert sim.n == 1500 and sim.workload_complete and s["n_requests"] == 1500
    assert s["source"] == sim.workload_source
    whole = Simulator(ScenarioConfig.from_dict({**SMALL, "workload": WORKLOADS["gamma"]}), seed=0)
    assert not whole.chunked and len(whole.workload) == 1500  # exact mode: whole, as before


def test_the_event_loop_stops_at_the_last_loaded_arrival(monkeypatch):
    """Withholding the next chunk: advance() stops (status 2) before any event later than the last loaded
    arrival, stays stopped until the chunk comes, and next_decision() refuses to run on."""
    monkeypatch.setattr(ne, "CHUNK_OVERRIDE", 9)
    sc = _streaming(WORKLOADS["mmpp"], overload={"timeout_s": 2.0})
    sim = Simulator(sc, seed=1, trace=True)
    core = sim._core
    cfg = sc.workload
    arrival, _, _ = _take_all(WorkloadStream(cfg, np.random.default_rng(1), batch=9), 9)
    stops = 0
    while True:
        status = core.advance()
        if status == 0:
            break
        if status == 1:
            sim.apply(Decision.prefill_path())
            continue
        stops += 1
        last_loaded = arrival[core.n - 1]
        times = [e[0] for e in sim.trace]
        assert not times or max(times) <= last_loaded  # nothing ran past the last loaded arrival
        assert core.now <= last_loaded
        assert core.advance() == 2 and len(sim.trace) == len(times)  # withheld: it stays where it is
        with pytest.raises(RuntimeError, match="next arrival is not loaded yet"):
            core.next_decision()
        sim._load_chunk()
    assert stops == -(-len(arrival) // 9) - 1 and sim.done and core.n == len(arrival)
    assert sim.n_finished + sim.n_rejected + sim.n_timed_out == len(arrival)


def test_the_core_checks_every_append(monkeypatch):
    monkeypatch.setattr(ne, "CHUNK_OVERRIDE", 4)
    sim = Simulator(_streaming(WORKLOADS["gamma"], window=64), seed=0)
    core = sim._core
    f = np.array([1e9], dtype=np.float64)
    i = np.array([10], dtype=np.int64)
    late = float(core.column("arrival")[3])
    with pytest.raises(ValueError, match="before the last loaded arrival"):  # decreasing across chunks
        core.append_workload(np.array([np.nextafter(late, 0.0)]), i, i, False)
    with pytest.raises(ValueError, match="arrival times decrease"):
        core.append_workload(np.array([late + 2.0, late + 1.0]), np.array([5, 5]), np.array([5, 5]), False)
    with pytest.raises(ValueError, match="empty chunk that is not the last"):
        core.append_workload(f[:0], i[:0], i[:0], False)
    with pytest.raises(ValueError, match="different lengths"):
        core.append_workload(f, np.array([1, 2], dtype=np.int64), i, False)
    assert core.n == 4  # every refusal left it as it was
    # the ring (2 x window = 128 slots) must not overwrite a request that has not arrived: appending ahead of
    # the run, the 125th request would overwrite request 0, which has not arrived yet
    with pytest.raises(ValueError, match="would overwrite request 0"):
        core.append_workload(np.full(125, late), np.full(125, 5, dtype=np.int64), np.full(125, 5, dtype=np.int64),
                             False)
    core.append_workload(np.full(124, late), np.full(124, 5, dtype=np.int64), np.full(124, 5, dtype=np.int64), True)
    assert core.n == 128 and core.workload_complete
    with pytest.raises(ValueError, match="after the last chunk"):
        core.append_workload(f, i, i, True)
    whole = Simulator(ScenarioConfig.from_dict({**SMALL, "workload": WORKLOADS["gamma"]}), seed=0)
    with pytest.raises(ValueError, match="without a chunked workload"):
        whole._core.append_workload(f, i, i, True)


def test_conservation_on_a_chunked_overload_run(monkeypatch):
    """overload-10x's arrivals over 60 s in streaming mode, admission by queue length (200 waiting) and 2 s
    timeouts (both fire): every arrival is accounted for."""
    monkeypatch.setattr(ne, "CHUNK_OVERRIDE", 1000)
    sc = load_scenario("overload-10x").with_overrides({
        "workload": {"num_requests": None, "duration_s": 60.0},
        "overload": {"admission_max_ttft_s": None, "admission_max_waiting": 200, "timeout_s": 2.0},
        "metrics": {"mode": "streaming", "window": 65536}})
    sim = Simulator(sc, seed=0)
    s = sim.run(NoDeflect())
    assert sim.chunked and sim.done and sim.n > 10_000  # ~13,200 requests: 14 chunks
    assert s["n_completed"] + s["n_rejected"] + s["n_timed_out"] == s["n_arrived"] == sim.n == s["n_requests"]
    assert s["n_rejected_admission"] > 0 and s["n_timed_out"] > 0


def test_snapshot_restore_of_a_chunked_run(monkeypatch):
    monkeypatch.setattr(ne, "CHUNK_OVERRIDE", 13)
    sim = Simulator(_streaming(WORKLOADS["gamma"]), seed=2)
    for _ in range(200):
        sim.apply(Decision.prefill_path()) if sim.next_decision() is not None else None
    snap = sim.snapshot()
    first = sim.run(DeflectAll(256))
    sim.restore(snap)
    assert sim.n < 1500 and not sim.workload_complete
    again = sim.run(DeflectAll(256))
    first.pop("wall_time_s")
    again.pop("wall_time_s")
    assert again == first


def test_the_whole_workload_bound_and_the_streamed_one():
    """Exact mode (a whole workload) keeps MAX_REQUESTS at config load; streaming allows MAX_STREAMED_REQUESTS."""
    day = {"arrival": {"kind": "gamma", "rate": 220.0, "cv": 3.0}, "duration_s": 86400.0}
    with pytest.raises(ConfigError, match=r"duration_s = 86400.0 .*10,000,000 requests .*MAX_REQUESTS.*now "
                                          r"19,008,000.*streaming .*1,000,000,000"):
        ScenarioConfig.from_dict({"workload": day})
    sc = ScenarioConfig.from_dict({"workload": day, "metrics": {"mode": "streaming"}})
    assert sc.workload.duration_s == 86400.0
    assert "max_streamed" not in json.dumps(sc.to_dict()).lower()  # no new key: the Oracle cache keys stay
    with pytest.raises(ConfigError, match=r"num_requests = 10000001 .*MAX_REQUESTS"):
        ScenarioConfig.from_dict({"workload": {"num_requests": MAX_REQUESTS + 1}})
    with pytest.raises(ConfigError, match=r"num_requests = 1000000001 .*MAX_STREAMED_REQUESTS"):
        ScenarioConfig.from_dict({"workload": {"num_requests": MAX_STREAMED_REQUESTS + 1},
                                  "metrics": {"mode": "streaming"}})
    with pytest.raises(ConfigError, match=r"duration_s .*1,000,000,000"):
        ScenarioConfig.from_dict({"workload": {**day, "duration_s": 1e7}, "metrics": {"mode": "streaming"}})
    with pytest.raises(ConfigError, match="generate: workload: num_requests = 20000000"):  # before any draw
        generate(sc.workload.__class__.from_dict({"num_requests": 20_000_000}), np.random.default_rng(0))
    with pytest.raises(ConfigError, match="max_requests = 20000000"):  # a trace replay is always whole
        ScenarioConfig.from_dict({"workload": {"arrival": {"kind": "trace", "path": "azure2023_code"},
                                               "max_requests": 20_000_000}, "metrics": {"mode": "streaming"}})


def test_soak_10x_24h_is_shipped_streaming_and_above_the_whole_bound():
    sc = load_scenario("soak-10x-24h")
    ov = load_scenario("overload-10x")
    assert sc.metrics.mode == "streaming" and sc.workload.duration_s == 86400.0
    assert sc.workload.arrival == ov.workload.arrival and sc.workload.lengths == ov.workload.lengths
    assert sc.overload == ov.overload
    assert sc.workload.arrival.mean_rate() * sc.workload.duration_s > MAX_REQUESTS
    with pytest.raises(ConfigError, match="MAX_REQUESTS"):
        sc.with_overrides({"metrics": {"mode": "exact"}})


def test_an_overlong_request_is_named_when_its_chunk_is_generated(monkeypatch):
    """cluster.overlong: error: the whole run refuses the workload at construction, naming the first request that
    can never fit; a chunked run raises the same error, naming the same request, when its chunk is generated."""
    monkeypatch.setattr(ne, "CHUNK_OVERRIDE", 5)
    wl = WORKLOADS["gamma"]
    sc = ScenarioConfig.from_dict({**SMALL, "workload": wl, "metrics": {"mode": "streaming", "window": 4096}})
    whole = generate(sc.workload, np.random.default_rng(0))
    total = whole.prompt_tokens + whole.output_tokens
    cap = int(total[:5].max())  # the first chunk fits, a later request does not
    bad = int(np.flatnonzero(total > cap)[0])
    assert bad >= 5
    monkeypatch.setattr(ne, "is_chunked", lambda sc, fixed: False)
    with pytest.raises(ConfigError, match=f"request {bad} prompt_tokens"):
        Simulator(sc, seed=0, kv_capacity=cap)
    monkeypatch.undo()
    monkeypatch.setattr(ne, "CHUNK_OVERRIDE", 5)
    sim = Simulator(sc, seed=0, kv_capacity=cap)
    assert sim.chunked
    with pytest.raises(ConfigError, match=f"request {bad} prompt_tokens .* in this chunk"):
        sim.run(DeflectAll(256))
    assert sim.n_arrived <= bad  # it never reached the core
