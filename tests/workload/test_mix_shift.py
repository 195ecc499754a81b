"""The ``mix-shift`` and ``kv-shift`` scenarios and ``kairos_gym/benchmark/checks/mix_shift.py`` (docs/benchmark.md,
"mix-shift").

Guards: the scenario is a two-state MMPP whose length sections are the ones its comment grounds (Azure-code fit in
the on state; Azure-conversation prompts and the decode-bound family's outputs in the off state) and each request
takes the lengths of the state it arrived in; its instances see several state changes; the tool's state-switch
reference deflects only on-state arrivals; its per-state split and single-state scenarios are what they claim;
a scenario the tool cannot split is one ConfigError (exit status 2 from the command line). ``kv-shift``: its
sections are the fits its comment names; the tool's ``--kv`` preemption counts and ``--grid``'s paired
state-switch - rule column are what they claim.
"""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from kairos_gym.cli.main import main
from kairos_gym.errors import ConfigError
from kairos_gym.scenario import ScenarioConfig, load_scenario
from kairos_gym.workload import ByStateLengths, MMPPArrival, PoissonArrival, arrival_states, generate
from tests.tool_loader import load_tool

TOOLS = Path(__file__).resolve().parents[2] / "tools"


def _tool(name: str) -> Any:
    return load_tool(name)


def _mmpp_by_state(name: str, rates: tuple[float, float, float, float], n_requests: int) -> ByStateLengths:
    """The by_state lengths of shipped scenario ``name``, checked to have MMPP arrivals of ``rates`` (rate_on and
    rate_off in requests/s, mean_on_s, mean_off_s) and ``n_requests`` requests."""
    sc = load_scenario(name)
    arrival, lengths = sc.workload.arrival, sc.workload.lengths
    assert isinstance(arrival, MMPPArrival) and isinstance(lengths, ByStateLengths)
    assert (arrival.rate_on, arrival.rate_off, arrival.mean_on_s, arrival.mean_off_s) == rates
    assert sc.workload.effective_num_requests == n_requests
    return lengths


def _side(lengths: Any, side: str) -> tuple[float, float, int]:
    """(median, sigma, max) of the ``side`` ("prompt" or "output") of lognormal lengths."""
    return (getattr(lengths, f"{side}_median"), getattr(lengths, f"{side}_sigma"), getattr(lengths, f"{side}_max"))


def test_the_scenario_grounds_its_states_in_the_sections_it_names() -> None:
    fit = _tool("fit_lengths")
    lengths = _mmpp_by_state("mix-shift", (24.0, 18.0, 15.0, 45.0), 3000)
    assert fit.fit_trace("azure2023_code")[1] == lengths.on  # Azure code, both sides
    conv = fit.fit_trace("azure2023_conv")[1]
    assert _side(lengths.off, "prompt") == _side(conv, "prompt")  # Azure conversation prompts
    bound = load_scenario("decode-bound").workload.lengths
    assert _side(lengths.off, "output") == _side(bound, "output")  # the decode-bound family's outputs


@pytest.mark.parametrize("seed", [0, 3, 9])
def test_each_request_takes_the_lengths_of_its_arrival_state(seed: int) -> None:
    sc = load_scenario("mix-shift")
    wl = generate(sc.workload, np.random.default_rng(seed))
    on = arrival_states(sc.workload, np.random.default_rng(seed))
    assert len(wl) == on.size == 3000 and 0 < on.sum() < on.size
    out, prompt = np.asarray(wl.output_tokens), np.asarray(wl.prompt_tokens)
    # on: Azure-code outputs (median 13, cap 1,899) and prompts (cap 7,437); off: long outputs (median 700)
    assert np.median(out[on]) < 30 and out[on].max() <= 1899 and prompt[on].max() <= 7437
    assert 600 < np.median(out[~on]) < 800 and out[~on].max() <= 4096 and prompt[~on].max() <= 14050


def test_every_test_and_train_instance_sees_several_state_changes() -> None:
    sc = load_scenario("mix-shift")
    changes = [int(np.count_nonzero(np.diff(arrival_states(sc.workload, np.random.default_rng(s)))))
               for s in [*range(10), 1000, 1001]]
    assert min(changes) >= 3 and np.mean(changes) > 5


def _small(lengths: dict[str, Any] | None = None) -> ScenarioConfig:
    d = load_scenario("mix-shift").to_dict()
    d["workload"]["num_requests"] = 150
    d["workload"]["arrival"].update(mean_on_s=1.0, mean_off_s=2.0)
    if lengths is not None:
        d["workload"]["lengths"] = lengths
    return ScenarioConfig.from_dict(d)


def test_state_switch_deflects_on_state_arrivals_only() -> None:
    check = importlib.import_module("kairos_gym.benchmark.checks.mix_shift")
    from kairos_gym.agents.runner import simulate

    sc = _small()
    on = arrival_states(sc.workload, np.random.default_rng(2))
    _, sim = simulate(check.StateSwitch(on), sc, 2)
    deflected = np.asarray(sim.requests_table()["path"]) == "deflect"
    assert deflected.any() and not deflected[~on].any()
    _, nd = simulate("no-deflect", sc, 2)
    assert not (np.asarray(nd.requests_table()["path"]) == "deflect").any()


def test_the_split_recombines_and_the_single_states_are_poisson_at_their_rates() -> None:
    check = importlib.import_module("kairos_gym.benchmark.checks.mix_shift")
    fixed = {"kind": "by_state", "on": {"kind": "fixed", "prompt_tokens": 5000, "output_tokens": 10},
             "off": {"kind": "fixed", "prompt_tokens": 300, "output_tokens": 200}}
    sc = _small(fixed)
    on = arrival_states(sc.workload, np.random.default_rng(4))
    overall, on_share, off_share, frac, changes = check.split(sc, "always-deflect-ls", 4)
    n_on = int(on.sum())
    assert frac == pytest.approx(n_on / 150) and changes == np.count_nonzero(np.diff(on)) > 0
    assert overall == pytest.approx((on_share * n_on + off_share * (150 - n_on)) / 150, abs=1e-12)
    for state, rate, prompt in (("on", 24.0, 5000), ("off", 18.0, 300)):
        one = check.stationary(sc, state)
        assert isinstance(one.workload.arrival, PoissonArrival) and one.workload.arrival.rate == rate
        assert set(np.asarray(generate(one.workload, np.random.default_rng(0)).prompt_tokens)) == {prompt}


def test_a_scenario_the_tool_cannot_split_is_one_error() -> None:
    check = importlib.import_module("kairos_gym.benchmark.checks.mix_shift")
    with pytest.raises(ConfigError, match=r"workload\.arrival\.kind"):
        check.make_task("bursty", 500, "default", 2)
    d = load_scenario("mix-shift").to_dict()
    d["workload"]["lengths"] = d["workload"]["lengths"]["on"]
    with pytest.raises(ConfigError, match=r"workload\.lengths\.kind"):
        check.check_scenario(ScenarioConfig.from_dict(d))
    for argv in (["--scenario", "bursty"], ["--requests", "0"], ["--seeds", "11"]):
        assert main(["check", "mix-shift", *argv]) == 2


def test_kv_shift_grounds_its_states_in_the_fits_it_names() -> None:
    """kv-shift (docs/benchmark.md, "kv-shift"): both states draw the arXiv-summarization prompt fit (a length
    threshold cannot tell them apart), the on state Azure code's outputs, the off state ShareGPT's; kv-pressure's
    cluster (the KV cut under swap); instances within the Oracle's budget (at most 1,000 requests)."""
    fit = _tool("fit_lengths")
    lengths = _mmpp_by_state("kv-shift", (16.0, 11.5, 8.0, 24.0), 1000)
    assert load_scenario("kv-shift").cluster == load_scenario("kv-pressure").cluster
    arxiv = fit.fit_trace("arxiv_summarization_lengths_only")[1]
    code, chat = fit.fit_trace("azure2023_code")[1], fit.fit_trace("sharegpt8k_lengths_only")[1]
    for state, outputs in ((lengths.on, code), (lengths.off, chat)):
        assert _side(state, "prompt") == _side(arxiv, "prompt")
        assert _side(state, "output") == _side(outputs, "output")


def test_split_kv_adds_the_runs_preemptions() -> None:
    """The sixth figure of split_kv is the run's n_preemptions (KV swaps): some when always-deflect-ls fills
    kv-shift's off-state KV, none under the reserve memory policy; its first five are split's."""
    check = importlib.import_module("kairos_gym.benchmark.checks.mix_shift")
    from kairos_gym.agents.runner import simulate

    sc = load_scenario("kv-shift")  # 1,000 requests: the off state's KV fills
    got = check.split_kv(sc, "always-deflect-ls", 0)
    assert got[:5] == check.split(sc, "always-deflect-ls", 0)
    n = simulate("always-deflect-ls", sc, 0)[0]["n_preemptions"]
    assert got[5] == n > 0
    reserve = sc.with_overrides({"cluster": {"memory_policy": "reserve"}})
    assert check.split_kv(reserve, "always-deflect-ls", 0)[5] == 0


def test_grid_rows_pair_state_switch_with_each_rule_and_kv_adds_preemptions(capsys: pytest.CaptureFixture[str]) \
        -> None:
    """--grid pairs state-switch with every static rule over the test seeds (criterion (b) of a task where the
    switch decides); --kv adds the mean preemptions per run as a last column of every table."""
    check = importlib.import_module("kairos_gym.benchmark.checks.mix_shift")
    task = check.make_task("kv-shift", 200, "default", 2)
    out = check.check_tier(task, grid=True, kv=True)
    base = task.base()
    switch = [check.split(base, "state-switch", s)[0] for s in (0, 1)]
    name, params = check.STATIC_GRID[3]  # sq queue_threshold=2048 chunk=512
    rule = [check.split_kv(base, name, s, dict(params)) for s in (0, 1)]
    row = out["grid"][3]
    assert row.startswith(f"| kv-shift/default | {check.rule_label(name, params)} |")
    assert check.paired(switch, [r[0] for r in rule]) in row
    assert row.endswith(f" {np.mean([r[5] for r in rule]):.1f} |")
    assert len(out["alone"][1].split(" / ")) == 3  # preemptions of the three policies in the off state alone
    argv = ["--scenario", "kv-shift", "--requests", "120", "--seeds", "1", "--grid", "--kv"]
    assert main(["check", "mix-shift", *argv]) == 0
    text = capsys.readouterr().out
    assert "| preemptions (no-deflect / always-deflect-ls / kairos) |" in text
    assert "| state-switch - rule (W/T/L) | preemptions |" in text
