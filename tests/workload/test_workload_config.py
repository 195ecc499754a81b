"""WorkloadConfig: defaults, round trip through dicts, and every validation error."""

from __future__ import annotations

import copy
import json
import math

import pytest

from kairos_gym.errors import ConfigError
from kairos_gym.workload import (
    DEFAULT_NUM_REQUESTS,
    EmpiricalLengths,
    FixedLengths,
    GammaArrival,
    LognormalLengths,
    MMPPArrival,
    ParetoLengths,
    PoissonArrival,
    TraceArrival,
    TraceLengths,
    WorkloadConfig,
)


def test_defaults() -> None:
    cfg = WorkloadConfig.from_dict({})
    assert cfg == WorkloadConfig()
    assert cfg.arrival == PoissonArrival(rate=8.0)
    assert cfg.lengths is None and cfg.effective_lengths == LognormalLengths()
    assert cfg.num_requests is None and cfg.effective_num_requests == DEFAULT_NUM_REQUESTS
    assert cfg.duration_s is None and cfg.max_requests is None
    trace = WorkloadConfig.from_dict({"arrival": {"kind": "trace", "path": "azure2023_conv"}})
    assert isinstance(trace.effective_lengths, TraceLengths) and trace.effective_num_requests is None
    assert trace.arrival == TraceArrival(path="azure2023_conv", rate_scale=1.0)
    timed = WorkloadConfig.from_dict({"duration_s": 60})
    assert timed.effective_num_requests is None and timed.duration_s == 60.0


def test_defaults_stay_null_in_to_dict_so_merged_overrides_behave_like_fresh_configs() -> None:
    base = WorkloadConfig.from_dict({"arrival": {"kind": "gamma"}}).to_dict()
    assert base["lengths"] is None and base["num_requests"] is None
    as_trace = WorkloadConfig.from_dict({**base, "arrival": {"kind": "trace", "path": "azure2023_code"}})
    assert isinstance(as_trace.effective_lengths, TraceLengths)  # not the gamma run's lognormal
    timed = WorkloadConfig.from_dict({**base, "duration_s": 30})  # no "give one of the two" error
    assert timed.effective_num_requests is None


ROUND_TRIP = [
    {},
    {"arrival": {"kind": "gamma", "rate": 3, "cv": 2.5}, "lengths": {"kind": "pareto", "prompt_alpha": 1.1},
     "duration_s": 120, "max_requests": 100},
    {"arrival": {"kind": "mmpp", "rate_on": 30, "rate_off": 1, "mean_on_s": 2, "mean_off_s": 10},
     "lengths": {"kind": "fixed", "prompt_tokens": 4096.0, "output_tokens": 1}, "num_requests": 10},
    {"arrival": {"kind": "poisson", "rate": 0.5},
     "lengths": {"kind": "empirical", "path": "sharegpt8k_lengths_only.csv"}},
    {"arrival": {"kind": "trace", "path": "mooncake_fast25_conversation", "rate_scale": 0.5, "start_s": 10,
                 "end_s": 900.5}, "max_requests": 5, "duration_s": 1000},
    {"arrival": {"kind": "trace", "path": "azure2023_code"},
     "lengths": {"kind": "lognormal", "prompt_sigma": 0}},
]


@pytest.mark.parametrize("d", ROUND_TRIP)
def test_to_dict_round_trips_through_from_dict_and_is_json_safe(d: dict) -> None:
    original = copy.deepcopy(d)
    cfg = WorkloadConfig.from_dict(d)
    assert d == original  # input not mutated
    out = cfg.to_dict()
    assert json.loads(json.dumps(out)) == out
    assert WorkloadConfig.from_dict(out) == cfg
    assert WorkloadConfig.from_dict(out).to_dict() == out
    assert set(out) == {"arrival", "lengths", "num_requests", "duration_s", "max_requests"}


def test_integral_floats_accepted_for_whole_number_fields_and_ints_for_floats() -> None:
    cfg = WorkloadConfig.from_dict({"arrival": {"rate": 8}, "num_requests": 100.0,
                                    "lengths": {"kind": "fixed", "prompt_tokens": 4096.0}})
    assert cfg.num_requests == 100 and isinstance(cfg.num_requests, int)
    assert isinstance(cfg.lengths, FixedLengths) and cfg.lengths.prompt_tokens == 4096
    assert isinstance(cfg.lengths.prompt_tokens, int) and isinstance(cfg.arrival.rate, float)


def test_direct_construction_is_validated_too() -> None:
    with pytest.raises(ConfigError, match="cv"):
        GammaArrival(cv=-1)
    with pytest.raises(ConfigError, match="rate_on"):
        MMPPArrival(rate_on=0.0, rate_off=0.0)
    with pytest.raises(ConfigError, match="kind"):
        WorkloadConfig(arrival=PoissonArrival(), lengths=TraceLengths())
    with pytest.raises(ConfigError, match="arrival"):
        WorkloadConfig(arrival={"kind": "poisson"})  # type: ignore[arg-type]
    cfg = WorkloadConfig(arrival=TraceArrival("azure2023_code"), lengths=ParetoLengths())
    assert cfg.num_requests is None


@pytest.mark.parametrize(("d", "field", "value"), [
    ({"arival": {"kind": "poisson"}}, "arival", "{'kind': 'poisson'}"),  # unknown top-level key
    ({"arrival": {"kind": "poisson", "rte": 8}}, "rte", "8"),  # unknown nested key
    ({"arrival": {"kind": "gamma", "rate": 8, "shape": 2}}, "shape", "2"),
    ({"lengths": {"kind": "fixed", "prompt_median": 10}}, "prompt_median", "10"),
    ({"arrival": {"kind": "poisson", "rate": "fast"}}, "rate", "'fast'"),  # wrong type
    ({"arrival": {"kind": "poisson", "rate": True}}, "rate", "True"),
    ({"arrival": {"kind": "poisson", "rate": [8]}}, "rate", "[8]"),
    ({"arrival": {"kind": "poisson", "rate": math.nan}}, "rate", "nan"),
    ({"arrival": {"kind": "poisson", "rate": math.inf}}, "rate", "inf"),
    ({"arrival": {"kind": "gamma", "rate": -8}}, "rate", "-8"),
    ({"arrival": {"kind": "poisson", "rate": 0}}, "rate", "0"),
    ({"arrival": {"kind": "mmpp", "rate_on": -1}}, "rate_on", "-1"),
    ({"arrival": {"kind": "mmpp", "mean_off_s": 0}}, "mean_off_s", "0"),
    ({"arrival": {"kind": "gamma", "cv": 0}}, "cv", "0"),
    ({"arrival": {"kind": "gamma", "cv": -2}}, "cv", "-2"),
    ({"arrival": {"kind": "mmpp", "rate_on": 0, "rate_off": 0}}, "rate_on", "0"),
    ({"lengths": {"kind": "trace"}}, "kind", "'trace'"),  # trace lengths without a trace
    ({"arrival": {"kind": "gamma"}, "lengths": {"kind": "trace"}}, "kind", "'trace'"),
    ({"arrival": {"kind": "weibull"}}, "kind", "'weibull'"),
    ({"lengths": {"kind": "zipf"}}, "kind", "'zipf'"),
    ({"arrival": "poisson"}, "arrival", "'poisson'"),
    ({"lengths": [1, 2]}, "lengths", "[1, 2]"),
    ({"arrival": {"kind": "trace"}}, "path", "'<missing>'"),
    ({"arrival": {"kind": "trace", "path": ""}}, "path", "''"),
    ({"arrival": {"kind": "trace", "path": "nope.csv"}}, "path", "'nope.csv'"),  # trace file missing
    ({"arrival": {"kind": "trace", "path": "azure2023_code", "rate_scale": 0}}, "rate_scale", "0"),
    ({"arrival": {"kind": "trace", "path": "azure2023_code", "start_s": -5}}, "start_s", "-5"),
    ({"arrival": {"kind": "trace", "path": "azure2023_code", "start_s": 50, "end_s": 20}}, "end_s", "20"),
    ({"arrival": {"kind": "trace", "path": "azure2023_code"}, "num_requests": 10}, "num_requests", "10"),
    ({"num_requests": 0}, "num_requests", "0"),
    ({"num_requests": 12.5}, "num_requests", "12.5"),
    ({"num_requests": "2000"}, "num_requests", "'2000'"),
    ({"num_requests": 100, "duration_s": 10.0}, "duration_s", "10.0"),
    ({"duration_s": -1}, "duration_s", "-1"),
    ({"duration_s": 1e12}, "duration_s", "1000000000000.0"),
    ({"max_requests": 0}, "max_requests", "0"),
    ({"lengths": {"kind": "lognormal", "prompt_sigma": -0.5}}, "prompt_sigma", "-0.5"),
    ({"lengths": {"kind": "lognormal", "output_max": 0}}, "output_max", "0"),
    ({"lengths": {"kind": "pareto", "output_alpha": 0}}, "output_alpha", "0"),
    ({"lengths": {"kind": "pareto", "prompt_min": 50000, "prompt_max": 100}}, "prompt_max", "100"),
    ({"lengths": {"kind": "fixed", "output_tokens": 0}}, "output_tokens", "0"),
    ({"lengths": {"kind": "fixed", "prompt_tokens": 1.5}}, "prompt_tokens", "1.5"),
    ({"lengths": {"kind": "empirical"}}, "path", "'<missing>'"),
    ({"arrival": {"kind": "mmpp", "mean_on_s": 1e-9, "mean_off_s": 1e-9}, "duration_s": 10},
     "mean_on_s, mean_off_s", "[1e-09, 1e-09]"),
    ({"arrival": {"kind": "mmpp", "rate_on": 1e-6, "mean_on_s": 1e-3}}, "mean_on_s, mean_off_s", "[0.001, 5.0]"),
])
def test_validation_errors_name_field_and_value(d: dict, field: str, value: str) -> None:
    with pytest.raises(ConfigError) as exc:
        WorkloadConfig.from_dict(d, where="scenario.yaml: workload")
    msg = str(exc.value)
    assert msg.startswith("scenario.yaml: workload")
    assert f"{field} = {value}" in msg, msg
    assert "allowed:" in msg


def test_mmpp_both_rates_zero_message_mentions_both_rates() -> None:
    with pytest.raises(ConfigError) as exc:
        WorkloadConfig.from_dict({"arrival": {"kind": "mmpp", "rate_on": 0, "rate_off": 0}})
    assert "rate_on" in str(exc.value) and "rate_off" in str(exc.value)


def test_trace_lengths_error_names_arrival_kind() -> None:
    with pytest.raises(ConfigError) as exc:
        WorkloadConfig.from_dict({"arrival": {"kind": "gamma"}, "lengths": {"kind": "trace"}})
    assert exc.value.where == "workload.lengths" and "'gamma'" in str(exc.value)
    assert "arrival.kind: trace" in str(exc.value)


def test_top_level_must_be_a_mapping() -> None:
    with pytest.raises(ConfigError, match="mapping"):
        WorkloadConfig.from_dict([("arrival", {})])  # type: ignore[arg-type]


def test_section_classes_round_trip_individually() -> None:
    for section in (PoissonArrival(3.0), GammaArrival(2.0, 0.5), MMPPArrival(1.0, 2.0, 3.0, 4.0),
                    TraceArrival("azure2023_code", 2.0, 0.0, 10.0), LognormalLengths(), ParetoLengths(),
                    EmpiricalLengths("sharegpt8k_lengths_only"), FixedLengths(5, 6), TraceLengths()):
        d = section.to_dict()
        assert d["kind"] == section.kind
        assert type(section).from_dict(d, "x") == section
