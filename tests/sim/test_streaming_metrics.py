"""Bounded memory for long runs: ``metrics: {mode: streaming}`` folds every
settled request into running sums and sketches and reuses its per-request slot. Counts equal the exact mode's,
means equal up to float rounding, percentiles within ``relative_accuracy``; per-request storage is bounded by
``metrics.window``, not by the run's length."""

from __future__ import annotations

import csv
import math
import pickle

import numpy as np
import pytest

from kairos_gym.cli.main import main as cli_main
from kairos_gym.errors import ConfigError
from kairos_gym.perf.soak import parse_checkpoints, soak
from kairos_gym.scenario import ScenarioConfig
from kairos_gym.sim import Simulator
from kairos_gym.sim.metrics import APPROXIMATE_KEYS

from .conftest import SMALL, DeflectAll, NoDeflect
from .test_overload import RandomDecisions

MEANS = ("ttft_mean", "tpot_mean")


def _scenario(mode: str, window: int = 1 << 16, alpha: float = 0.01, n: int = 2000, **extra) -> ScenarioConfig:
    return ScenarioConfig.from_dict({
        **SMALL, "workload": {**SMALL["workload"], "num_requests": n}, **extra,
        "metrics": {"mode": mode, "window": window, "relative_accuracy": alpha}})


CASES = {
    "small-d256": ({}, lambda: DeflectAll(256)),
    "small-rand": ({}, lambda: RandomDecisions(1)),
    "swap-timeouts": ({"cluster": {"memory_policy": "swap", "overlong": "reject"}, "overload": {"timeout_s": 1.0}},
                      lambda: RandomDecisions(2)),
    "incl-false-admission": ({"cluster": {"ttft_includes_transfer": False},
                              "overload": {"admission_max_ttft_s": 1.0}}, NoDeflect),
}


def _close(a, b, rel):
    if a is None or b is None:
        return a is b
    return math.isclose(a, b, rel_tol=rel, abs_tol=1e-12)


@pytest.mark.parametrize("alpha", [0.01, 0.001])
@pytest.mark.parametrize("case", sorted(CASES))
def test_streaming_summary_matches_the_exact_one_within_its_bounds(case, alpha):
    extra, policy = CASES[case]
    kv = 20_000 if "swap" in case else None
    exact = Simulator(_scenario("exact", **extra), seed=3, kv_capacity=kv).run(policy())
    stream = Simulator(_scenario("streaming", alpha=alpha, **extra), seed=3,
                       kv_capacity=kv).run(policy())
    assert stream.pop("metrics_mode") == "streaming"
    assert stream.pop("approximate") == {"keys": list(APPROXIMATE_KEYS), "relative_accuracy": alpha}
    assert set(stream) == set(exact)
    for k, v in exact.items():
        w = stream[k]
        if k == "wall_time_s":
            continue
        if k in APPROXIMATE_KEYS:  # sketch percentiles: relative error <= alpha (the share: a ratio of two)
            bound = 2.05 * alpha if k == "prefill_exec_share_of_p95_ttft" else alpha
            if isinstance(v, dict):
                assert all(_close(v[x], w[x], bound) for x in v), (k, v, w)
            else:
                assert _close(v, w, bound), (k, v, w)
        elif k in MEANS or k == "ttft_breakdown_mean":  # compensated sums against numpy's pairwise means
            if isinstance(v, dict):
                assert all(_close(v[x], w[x], 1e-12) for x in v), (k, v, w)
            else:
                assert _close(v, w, 1e-12), (k, v, w)
        else:  # counts, token sums, rates, utilizations: exact
            assert v == w, (k, v, w)


def test_streaming_memory_is_bounded_by_the_window_not_the_run():
    """A 6,000- and an 18,000-request run both hold 2,048 request slots, no token-gap record and no decision log,
    and give the exact mode's counts (which holds one slot per request and a record per decode stretch)."""
    for n in (6000, 18000):
        sim = Simulator(_scenario("streaming", window=2048, n=n), seed=0)
        s = sim.run(NoDeflect())
        core = sim._core
        assert core.request_slots == 2048 and core.gap_records == 0 and core.decision_log().size == 0
        exact = Simulator(_scenario("exact", n=n), seed=0)
        e = exact.run(NoDeflect())
        assert exact._core.request_slots == n and exact._core.gap_records > n  # what streaming saves
        assert (s["n_completed"], s["tbt_gaps"], s["goodput_rps"]) == (e["n_completed"], e["tbt_gaps"],
                                                                         e["goodput_rps"])


def test_a_window_too_small_for_the_requests_in_flight_is_an_error():
    sim = Simulator(_scenario("streaming", window=64, n=2000), seed=0)
    with pytest.raises(ConfigError, match=r"metrics\.window too small") as e:
        sim.run(NoDeflect())
    assert e.value.field == "window" and e.value.value == 64 and "try 128" in str(e.value)


def test_a_window_too_small_is_one_clean_error_of_the_command(tmp_path, capsys):
    from kairos_gym.cli.main import main

    (tmp_path / "s.yaml").write_text("name: w\nmetrics: {mode: streaming, window: 64}\n"
                                     "workload: {arrival: {kind: gamma, rate: 22, cv: 3}, num_requests: 2000}\n")
    assert main(["simulate", "--scenario", str(tmp_path / "s.yaml"), "--no-progress"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("kairos-gym simulate: error:") and "window = 64" in err[0]


def test_streamed_requests_csv_has_the_exact_rows(tmp_path, monkeypatch):
    """--requests-csv in streaming mode writes the rows as requests settle: sorted by rid they are the exact
    mode's CSV, byte for byte."""
    paths = {}
    for mode in ("exact", "streaming"):
        sc = tmp_path / f"{mode}.yaml"
        sc.write_text(f"name: s\nmetrics: {{mode: {mode}, window: 1024}}\noverload: {{timeout_s: 2.0}}\n"
                      "workload:\n  arrival: {kind: gamma, rate: 30, cv: 3}\n  num_requests: 400\n")
        paths[mode] = tmp_path / f"{mode}.csv"
        assert cli_main(["simulate", "--scenario", str(sc), "--policy", "kairos", "--requests-csv",
                         str(paths[mode]), "--no-progress"]) == 0
    exact = list(csv.reader(paths["exact"].open()))
    streamed = list(csv.reader(paths["streaming"].open()))
    assert streamed[0] == exact[0] and "timed_out_s" in exact[0]
    assert [streamed[0], *sorted(streamed[1:], key=lambda r: int(r[0]))] == exact
    assert [r[0] for r in streamed[1:]] != [r[0] for r in exact[1:]]  # really in settling order


def test_streaming_is_conserved_and_deterministic():
    sc = _scenario("streaming", n=3000, overload={"timeout_s": 0.8, "admission_max_waiting": 40})
    runs = []
    for _ in range(2):
        sim = Simulator(sc, seed=5)
        s = sim.run(RandomDecisions(4))
        s.pop("wall_time_s")
        assert s["n_completed"] + s["n_rejected"] + s["n_timed_out"] == s["n_arrived"] == sim.n
        assert all(d.kv_reserved == 0 for d in sim.dnodes)
        runs.append(s)
    assert runs[0] == runs[1]


def test_streaming_refuses_per_request_tables_and_pickling():
    sim = Simulator(_scenario("streaming", n=300), seed=0)
    sim.run(NoDeflect())
    with pytest.raises(ConfigError, match="streaming"):
        sim.requests_table()
    with pytest.raises(ConfigError, match="decision log"):
        pickle.dumps(sim)
    for bad in ({"window": 1000}, {"window": 32}, {"relative_accuracy": 0.5}, {"mode": "approx"}):
        with pytest.raises(ConfigError, match=next(iter(bad))):
            ScenarioConfig.from_dict({**SMALL, "metrics": bad})


def test_partial_streaming_summary_accounts_for_every_arrival():
    sim = Simulator(_scenario("streaming", n=1000), seed=0)
    for _ in range(400):
        ctx = sim.next_decision()
        sim.apply(NoDeflect().decide(ctx))
    s = sim.summary()
    assert s["n_pending"] + s["n_in_flight"] + s["n_completed"] + s["n_rejected"] == sim.n
    assert s["n_in_flight"] > 0


def test_soak_command_reports_checkpoints_and_conservation(tmp_path, capsys):
    """The soak benchmark's plumbing on a short run (its figures are in docs/reliability.md, not asserted)."""
    sc = _scenario("streaming", n=800, overload={"timeout_s": 5.0})
    s = soak(sc, [10.0, 20.0])
    assert s["conserved"] and [r["sim_time_s"] for r in s["checkpoints"]] == [10.0, 20.0]
    assert all(r["peak_rss_mb"] > 0 for r in s["checkpoints"])
    assert "conserved" in capsys.readouterr().out
    assert parse_checkpoints("30m,1h,24h") == [1800.0, 3600.0, 86400.0]
    for bad in ("", "1h,30m", "5", "1d", "x h", "-1h", ",".join(["1h"] * 101)):
        with pytest.raises(ConfigError, match="checkpoints"):
            parse_checkpoints(bad)
    assert np.isfinite(s["ttft_p99"])


def test_streaming_snapshot_restore_reproduces_the_summary():
    """The folded accumulators and the ring are part of the snapshot: restoring mid-run and finishing again
    gives the same summary."""
    sim = Simulator(_scenario("streaming", n=1500, overload={"timeout_s": 1.0}), seed=2)
    for _ in range(500):
        sim.apply(NoDeflect().decide(sim.next_decision()))
    snap = sim.snapshot()
    a = sim.run(NoDeflect())
    sim.restore(snap)
    b = sim.run(NoDeflect())
    a.pop("wall_time_s")
    b.pop("wall_time_s")
    assert a == b and a["n_completed"] > 0


@pytest.mark.parametrize("seed", [0, 1])
def test_faults_in_a_streaming_run_past_its_window_match_the_exact_run(seed):
    """Faults scan the requests in flight (transfers to or from a failed node, swap-ins). In streaming mode the
    per-request columns are a ring: once the run is past ``metrics.window`` requests a slot holds a later
    request's data, so a scan over every request id would read (and act on) the wrong request. Failures late in
    a 3,000-request run with a 1,024-slot window: every count, the fault counters and the token sums equal the
    exact run's."""
    faults = {"faults": {"events": [
        {"at_s": 60.0, "kind": "decode_down", "node": 0}, {"at_s": 64.0, "kind": "decode_up", "node": 0},
        {"at_s": 95.0, "kind": "link_cut", "node": 0}, {"at_s": 95.0, "kind": "link_cut", "node": 1},
        {"at_s": 96.0, "kind": "decode_down", "node": 1}, {"at_s": 96.5, "kind": "prefill_down", "node": 0},
        {"at_s": 97.0, "kind": "link_restored", "node": 0}, {"at_s": 97.0, "kind": "link_restored", "node": 1},
        {"at_s": 99.0, "kind": "decode_up", "node": 1}, {"at_s": 99.0, "kind": "prefill_up", "node": 0}]}}
    exact = Simulator(_scenario("exact", n=3000, **faults), seed=seed).run(RandomDecisions(seed))
    stream = Simulator(_scenario("streaming", window=1024, n=3000, **faults), seed=seed).run(RandomDecisions(seed))
    f = exact["faults"]
    assert f["decode_reentries"] > 0 and f["transfers_lost"] + f["rerouted"] > 0  # they hit requests in flight
    assert stream["faults"] == exact["faults"]
    for k in ("n_completed", "n_rejected", "tbt_gaps", "kv_bytes_transferred", "chunk_histogram", "goodput_rps",
              "output_tokens_per_s", "sim_time_s", "deflection_rate"):
        assert stream[k] == exact[k], k
