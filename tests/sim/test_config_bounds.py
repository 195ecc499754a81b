"""Every size field of a scenario has a documented upper bound, checked when the config is built (before the
simulator allocates anything from it); bigger values are one ConfigError naming the field and the bound."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

import kairos_gym.env.actions as actions
import kairos_gym.workload.traces as traces
from kairos_gym.errors import ConfigError
from kairos_gym.scenario import (
    MAX_DECODE_BATCH,
    MAX_KV_BLOCK_TOKENS,
    MAX_NODES,
    MAX_PREFILL_TOKEN_BUDGET,
    ClusterConfig,
    ScenarioConfig,
)
from kairos_gym.workload import WorkloadConfig, load_trace
from kairos_gym.workload.config import MAX_REQUEST_TOKENS, MAX_REQUESTS, MAX_STREAMED_REQUESTS

DOCS = Path(__file__).resolve().parents[2] / "docs"

CLUSTER_BOUNDS = {
    "prefill_nodes": MAX_NODES, "decode_nodes": MAX_NODES, "prefill_token_budget": MAX_PREFILL_TOKEN_BUDGET,
    "decode_max_batch": MAX_DECODE_BATCH, "kv_block_tokens": MAX_KV_BLOCK_TOKENS,
}


@pytest.mark.parametrize("field", sorted(CLUSTER_BOUNDS))
def test_cluster_size_fields_bounded(field):
    bound = CLUSTER_BOUNDS[field]
    assert getattr(ScenarioConfig.from_dict({"cluster": {field: bound}}).cluster, field) == bound
    for bad in (bound + 1, 10**11, float(bound) * 1000):
        with pytest.raises(ConfigError) as e:
            ScenarioConfig.from_dict({"cluster": {field: bad}}, "s.yaml")
        assert f"s.yaml: cluster: {field} = " in str(e.value) and f"<= {bound:,}" in str(e.value)
    with pytest.raises(ConfigError, match=field):  # built directly in Python: the same rule
        ClusterConfig(**{field: bound + 1})


@pytest.mark.parametrize(("field", "value"), [
    ("prefill_nodes", 100_000_000_000), ("prefill_token_budget", 1e9), ("prefill_token_budget", 1e7),
])
def test_issue_examples_refused_by_the_config(field, value):
    """The issue's examples (24 GB of nodes, a numpy failure, 2.7 GB of pricing tables): refused by validation."""
    with pytest.raises(ConfigError, match=f"{field} = "):
        ScenarioConfig.from_dict({"cluster": {field: value}})


def test_integer_beyond_float_range_is_a_config_error():
    with pytest.raises(ConfigError, match="decode_nodes"):  # was OverflowError in float()
        ScenarioConfig.from_dict({"cluster": {"decode_nodes": 10**400}})


def test_tp_checked_with_the_config_not_later():
    with pytest.raises(ConfigError, match=r"s\.yaml: cluster: tp = 3"):
        ScenarioConfig.from_dict({"cluster": {"tp": 3}}, "s.yaml")
    with pytest.raises(ConfigError, match="tp = 10000000000"):
        ScenarioConfig.from_dict({"cluster": {"tp": 10**10}})
    assert ScenarioConfig.from_dict({"cluster": {"tp": 2}}).cluster.tp == 2


def test_bounds_are_documented():
    text = (DOCS / "scenarios.md").read_text(encoding="utf-8")
    for bound in (MAX_NODES, MAX_PREFILL_TOKEN_BUDGET, MAX_DECODE_BATCH, MAX_KV_BLOCK_TOKENS):
        assert f"{bound:,}" in text, bound
    wl = (DOCS / "workloads.md").read_text(encoding="utf-8")
    for bound in (MAX_REQUESTS, MAX_STREAMED_REQUESTS, MAX_REQUEST_TOKENS, traces.MAX_TRACE_BYTES):
        assert f"{bound:,}" in wl, bound


@pytest.mark.parametrize("lengths", [
    {"kind": "fixed", "prompt_tokens": 10**30}, {"kind": "fixed", "output_tokens": MAX_REQUEST_TOKENS + 1},
    {"kind": "lognormal", "prompt_max": 10**30, "prompt_median": 1e29},
    {"kind": "pareto", "output_max": MAX_REQUEST_TOKENS + 1},
])
def test_length_fields_bounded(lengths):
    """A length that would overflow the int64 arrays (OverflowError, or silently negative tokens) is refused."""
    with pytest.raises(ConfigError, match="MAX_REQUEST_TOKENS"):
        WorkloadConfig.from_dict({"lengths": lengths, "num_requests": 10})


def test_max_requests_bounded():
    """A whole workload (exact metrics) keeps MAX_REQUESTS; a chunked one (streaming) MAX_STREAMED_REQUESTS."""
    assert WorkloadConfig.from_dict({"max_requests": MAX_REQUESTS}).max_requests == MAX_REQUESTS
    assert ScenarioConfig.from_dict({"workload": {"max_requests": MAX_REQUESTS}}).workload.max_requests == MAX_REQUESTS
    with pytest.raises(ConfigError, match=r"max_requests = 10000001 .*MAX_REQUESTS.*streaming"):
        ScenarioConfig.from_dict({"workload": {"max_requests": MAX_REQUESTS + 1}})
    streaming = {"metrics": {"mode": "streaming"}, "workload": {"max_requests": MAX_REQUESTS + 1}}
    assert ScenarioConfig.from_dict(streaming).workload.max_requests == MAX_REQUESTS + 1
    with pytest.raises(ConfigError, match="max_requests"):
        WorkloadConfig.from_dict({"max_requests": MAX_STREAMED_REQUESTS + 1})


def test_trace_file_size_bounded_before_reading(tmp_path, monkeypatch):
    p = tmp_path / "t.csv"
    p.write_text("arrival_time_s,prompt_tokens,output_tokens\n" + "0.5,100,10\n" * 20)
    monkeypatch.setattr(traces, "MAX_TRACE_BYTES", 100)
    with pytest.raises(ConfigError, match="at most 100 bytes"):
        load_trace(p)
    monkeypatch.setattr(traces, "MAX_TRACE_BYTES", 10_000)
    assert len(load_trace(p)) == 20


def test_mask_cache_stays_bounded_with_many_decode_nodes(monkeypatch):
    """One cached mask row per pattern of deflectable nodes: with many nodes the patterns are not all kept."""
    monkeypatch.setattr(actions, "MAX_CACHED_MASKS", 8)
    lay = actions.ActionLayout(ScenarioConfig.from_dict({"cluster": {"decode_nodes": 12}}))
    rng = np.random.default_rng(0)
    for _ in range(100):
        ok = rng.random(12) < 0.5
        ctx = SimpleNamespace(decode=[SimpleNamespace(can_deflect=bool(b)) for b in ok])
        row = lay.mask(ctx)  # type: ignore[arg-type]
        assert row[0] == 1 and row[1:].reshape(12, lay.W).tolist() == [[int(b)] * lay.W for b in ok]
    assert len(lay._rows) <= 8


def test_kairos_chunk_menu_bounded_like_the_scenario_menu():
    """A Kairos menu of 10**9 tokens grew the pricer's per-token table to 8 GB at the first decision."""
    from kairos_gym.agents.registry import make_policy

    with pytest.raises(ConfigError, match=r"policy kairos: chunk_menu = 1000000000 .*16,384"):
        make_policy("kairos", "small", 0, chunk_menu=[512, 10**9])
    assert make_policy("kairos", "small", 0, chunk_menu=[300, 16384]).chunk_menu == (300, 16384)
