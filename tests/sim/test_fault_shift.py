"""The ``fault-shift`` scenario and ``kairos_gym/benchmark/checks/fault_switch.py`` (docs/benchmark.md, "fault-shift").

Guards: the scenario is what its comment grounds (kv-shift's off-state fits at 10 req/s, kv-pressure's cluster,
random P->D network outages: every link cut at once, other times on every seed); the tool's fault windows are the
intervals with a fault active (merged, read off the run's fault events, per seed) and a scenario without faults is
one ConfigError (exit status 2 from the command line); its fault-switch reference deflects exactly the arrivals
in a window; its pending-switch rule deflects exactly when the decode nodes' pending admissions reach ``k`` and is
tuned to the best ``k`` on the train seeds; its in/out split and fault-free scenario are what they claim; its
``--grid`` rows pair both switches with every static rule.
"""

from __future__ import annotations

import importlib
from typing import Any

import numpy as np
import pytest

from kairos_gym.cli.main import main
from kairos_gym.errors import ConfigError
from kairos_gym.scenario import ScenarioConfig, load_scenario
from kairos_gym.sim.hook import ARRIVAL, DEFLECT, PREFILL, Decision, DecisionContext
from tests.tool_loader import load_tool


def _windows(sc: ScenarioConfig, seed: int = 0) -> tuple[tuple[float, float], ...]:
    """The network outages of ``sc``'s run at ``seed``, read straight off the run's fault events."""
    from kairos_gym.sim import Simulator

    ev = Simulator(sc, seed=seed).fault_events
    cuts = [t for t, k, n, _ in ev if k == "link_cut" and n == 0]
    ends = [t for t, k, n, _ in ev if k == "link_restored" and n == 0]
    return tuple(zip(cuts, ends, strict=True))


SEED = 3
"""A seed whose outages start early (the first at ~2.5 s): a 300-request run (~30 s) meets several."""


def _tool() -> Any:
    return importlib.import_module("kairos_gym.benchmark.checks.fault_switch")


def _small(n: int = 300) -> ScenarioConfig:
    return load_scenario("fault-shift").with_overrides({"workload": {"num_requests": n}})


def test_fault_shift_grounds_its_sections_in_the_fits_and_the_cluster_it_names() -> None:
    """kv-shift's off state (arXiv prompts, ShareGPT outputs, both by fit_lengths) at 10 req/s, kv-pressure's
    cluster, 1,000 requests; faults: both links cut at 10, 30, 50, 70, 90 s for 3 s, re-entries by rule."""
    fit = load_tool("fit_lengths")
    sc = load_scenario("fault-shift")
    assert sc.workload.arrival.kind == "poisson" and sc.workload.arrival.rate == 10.0
    assert sc.workload.effective_num_requests == 1000
    assert sc.cluster == load_scenario("kv-pressure").cluster
    arxiv, chat = fit.fit_trace("arxiv_summarization_lengths_only")[1], fit.fit_trace("sharegpt8k_lengths_only")[1]
    lengths = sc.workload.lengths
    assert (lengths.prompt_median, lengths.prompt_sigma, lengths.prompt_max) == (
        arxiv.prompt_median, arxiv.prompt_sigma, arxiv.prompt_max)
    assert (lengths.output_median, lengths.output_sigma, lengths.output_max) == (
        chat.output_median, chat.output_sigma, chat.output_max)
    assert lengths == load_scenario("kv-shift").workload.lengths.off
    assert sc.faults.events == () and sc.faults.reentry == "prefill"
    r = sc.faults.random
    assert (r.horizon_s, r.prefill, r.decode) == (100.0, None, None)
    assert (r.network.mtbf_s, r.network.mttr_s) == (12.0, 3.0)
    from kairos_gym.sim import Simulator

    per_seed = []
    for seed in range(6):
        ev = Simulator(sc, seed=seed).fault_events
        # every outage cuts both links at once and restores both at once
        by_time: dict[float, set[tuple[str, int]]] = {}
        for t, k, n, _ in ev:
            by_time.setdefault(t, set()).add((k, n))
        assert all(v in ({("link_cut", 0), ("link_cut", 1)}, {("link_restored", 0), ("link_restored", 1)})
                   for v in by_time.values())
        per_seed.append(_windows(sc, seed))
    assert len(set(per_seed)) == 6  # other outages on every seed
    n = [len(w) for w in per_seed]
    assert 3 <= np.mean(n) <= 11  # ~6.7 expected in the 100 s horizon


def test_fault_windows_are_the_merged_intervals_with_a_fault_active() -> None:
    tool = _tool()
    sc = load_scenario("fault-shift")
    assert tool.fault_windows(sc, 0) == _windows(sc, 0) and tool.fault_windows(sc, 3) == _windows(sc, 3)
    assert tool.fault_windows(sc, 0) != tool.fault_windows(sc, 1)
    # bursty-link-degraded: link 0 impaired [5, 30), link 1 cut [12, 16) inside it: one window, every seed
    assert tool.fault_windows(load_scenario("bursty-link-degraded"), 0) == ((5.0, 30.0),)
    timed = ScenarioConfig.from_dict({"faults": {"events": [
        {"at_s": 1.0, "kind": "prefill_down", "node": 0}, {"at_s": 2.0, "kind": "decode_slow", "node": 1,
                                                          "factor": 2.0},
        {"at_s": 3.0, "kind": "prefill_up", "node": 0}, {"at_s": 4.0, "kind": "decode_normal", "node": 1},
        {"at_s": 4.0, "kind": "link_cut", "node": 1}, {"at_s": 6.0, "kind": "link_restored", "node": 1},
        {"at_s": 8.0, "kind": "decode_down", "node": 0}, {"at_s": 9.0, "kind": "decode_up", "node": 0}]}})
    assert tool.fault_windows(timed, 0) == tool.fault_windows(timed, 5) == ((1.0, 6.0), (8.0, 9.0))
    assert tool.event_windows([(1.0, "link_cut", 0, 1.0), (1.0, "link_cut", 1, 1.0), (2.0, "link_restored", 0, 1.0),
                               (2.5, "link_restored", 1, 1.0), (2.5, "prefill_down", 0, 1.0),
                               (3.0, "prefill_up", 0, 1.0)]) == ((1.0, 3.0),)
    mask = tool.in_windows(np.array([0.5, 1.0, 5.99, 6.0, 8.5, 9.0]), ((1.0, 6.0), (8.0, 9.0)))
    assert mask.tolist() == [False, True, True, False, True, False]


def test_a_scenario_without_faults_is_one_config_error(capsys: pytest.CaptureFixture[str]) -> None:
    tool = _tool()
    with pytest.raises(ConfigError, match=r"faults"):
        tool.fault_windows(load_scenario("kv-shift"), 0)
    assert main(["check", "fault-switch", "--scenario", "kv-shift", "--seeds", "1"]) == 2
    assert "faults" in capsys.readouterr().err
    for bad in (["--tiers", "default,default"], ["--tiers", "loose"], ["--seeds", "11"], ["--requests", "0"]):
        assert main(["check", "fault-switch", *bad]) == 2


def test_fault_switch_deflects_exactly_the_arrivals_in_a_fault_window() -> None:
    """Every request arriving in a window is deflected when a decode node can take it; none outside is."""
    tool = _tool()
    from kairos_gym.agents.base import least_loaded_deflectable
    from kairos_gym.agents.runner import simulate

    seen: list[tuple[int, bool, bool]] = []
    sc = _small()
    windows = _windows(sc, SEED)
    assert len([w for w in windows if w[0] < 25.0]) >= 2

    class Spy:
        name = "spy"

        def __init__(self) -> None:
            self.inner = tool.FaultSwitch(windows)

        def decide(self, ctx: DecisionContext) -> Decision:
            d = self.inner.decide(ctx)
            inside = any(a <= ctx.now_s < b for a, b in windows)
            seen.append((ctx.request.rid, inside, least_loaded_deflectable(ctx) is not None))
            assert d.path == (DEFLECT if inside and seen[-1][2] and ctx.kind == ARRIVAL else PREFILL)
            return d

    _, sim = simulate(Spy(), sc, SEED)
    t = sim.requests_table()
    inside = tool.in_windows(t["arrival_s"], windows)
    deflected = np.asarray(t["path"]) == "deflect"
    assert not deflected[~inside].any()
    assert deflected[inside].sum() == sum(1 for _, i, ok in seen if i and ok) > 10
    assert len(seen) == sc.workload.effective_num_requests


def test_pending_switch_deflects_when_pending_admissions_reach_k_and_is_tuned_on_train() -> None:
    tool = _tool()
    from kairos_gym.agents.runner import simulate

    with pytest.raises(ConfigError, match="pending-switch"):
        tool.PendingSwitch(0)
    from kairos_gym.agents.base import least_loaded_deflectable

    counts: list[tuple[int, str, bool]] = []

    class Spy:
        name = "spy"

        def __init__(self, k: int) -> None:
            self.inner = tool.PendingSwitch(k)

        def decide(self, ctx: DecisionContext) -> Decision:
            d = self.inner.decide(ctx)
            ok = least_loaded_deflectable(ctx) is not None
            counts.append((sum(x.pending_admissions for x in ctx.decode), d.path, ok))
            return d

    simulate(Spy(2), _small(), SEED)
    assert all(kind == (DEFLECT if n >= 2 and ok else PREFILL) for n, kind, ok in counts)
    # the cuts stall transfers, so pending admissions rise (to exactly k at some decisions)
    assert sum(n == 2 and ok for n, _, ok in counts) > 0 and sum(n >= 2 for n, *_ in counts) > 10
    sc = _small(200)
    scores = [np.mean([tool.split(sc, tool.PendingSwitch(k), s)[0] for s in (1000, 1001)]) for k in tool.PENDING_GRID]
    assert tool.tune_pending(sc, [1000, 1001]) == tool.PENDING_GRID[int(np.argmax(scores))]


def test_split_and_the_fault_free_scenario_are_what_they_claim() -> None:
    tool = _tool()
    from kairos_gym.agents.runner import simulate

    sc = _small()
    all_, inside, outside, share, pre = tool.split(sc, "no-deflect", SEED)
    summary, sim = simulate("no-deflect", sc, SEED)
    t = sim.requests_table()
    mask = tool.in_windows(t["arrival_s"], _windows(sc, SEED))
    assert all_ == summary["slo_attainment"] and pre == summary["n_preemptions"]
    assert share == mask.mean() and 0 < share < 1
    assert share * inside + (1 - share) * outside == pytest.approx(all_, abs=1e-12)
    assert inside < outside  # the cuts cost no-deflect its TTFT
    free = tool.without_faults(sc)
    assert not free.faults.enabled and free.workload == sc.workload and free.cluster == sc.cluster
    assert simulate("no-deflect", free, SEED)[0]["slo_attainment"] > all_


def test_grid_rows_pair_both_switches_with_each_rule(capsys: pytest.CaptureFixture[str]) -> None:
    tool = _tool()
    task = tool.make_task("fault-shift", 200, "default", 2)
    out = tool.check_tier(task, grid=True)
    base = task.base()
    switch = [tool.split(base, "fault-switch", s)[0] for s in (0, 1)]
    pend = [tool.split(base, tool.PendingSwitch(out["k"]), s)[0] for s in (0, 1)]
    name, params = tool.STATIC_GRID[3]
    rule = [tool.split(base, name, s, dict(params))[0] for s in (0, 1)]
    row = out["grid"][3]
    assert row.startswith(f"| fault-shift/default | {tool.rule_label(name, params)} |")
    assert f"| {tool.paired(switch, rule)} | {tool.paired(pend, rule)} |" in row
    assert len(out["grid"]) == len(tool.STATIC_GRID)
    assert main(["check", "fault-switch", "--requests", "200", "--seeds", "2", "--tiers", "default"]) == 0
    text = capsys.readouterr().out
    first = ", ".join(f"[{a:.4g}, {b:.4g})" for a, b in _windows(base, 0))
    assert f"seed 0: {first};" in text and "pending-switch - best-static" in text


def test_oracle_rows_are_fresh_oracle_runs_beside_the_switches(capsys: pytest.CaptureFixture[str]) -> None:
    from kairos_gym.benchmark.oracle_cache import run_oracle, task_bases

    tool = _tool()
    task = tool.make_task("fault-shift", 120, "default", 2)
    out = tool.check_tier(task, oracle=1)
    assert len(out["oracle"]) == 1 and tool.check_tier(task)["oracle"] == []
    base = task.base()
    chosen = tool.tune_static(task, base, tool.or_silent(None))["chosen"]
    bases = task_bases(chosen, (("pending-switch", {"k": out["k"]}),))
    assert bases[-2:-1] == [["pending-switch", {"k": out["k"]}]] or bases[-1] == ["pending-switch", {"k": out["k"]}]
    o = run_oracle(base, 0, bases)["summary"]["slo_attainment"]
    switch = tool.split(base, "fault-switch", 0)[0]
    bs = tool.split(base, chosen["policy"], 0, dict(chosen["params"]))[0]
    pend = tool.split(base, tool.PendingSwitch(out["k"]), 0)[0]
    assert o >= max(bs, pend)  # a bound on both: pending-switch is one of its bases
    assert out["oracle"][0].startswith(f"| fault-shift/default | 0 | {o:.3f} | {switch:.3f} |")
    assert out["oracle"][0].endswith(f"| {o - switch:+.3f} | {o - bs:+.3f} |")
    assert main(["check", "fault-switch", "--requests", "120", "--seeds", "2", "--oracle", "3"]) == 2
    assert "--oracle = '3' is not valid" in capsys.readouterr().err
