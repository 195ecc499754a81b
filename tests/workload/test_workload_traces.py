"""Trace files: packaged traces, path resolution, replay options and strict CSV validation."""

from __future__ import annotations

import os
import time
from pathlib import Path

import numpy as np
import pytest

from kairos_gym.errors import ConfigError
from kairos_gym.workload import (
    PACKAGED_TRACES,
    TRACE_DIR,
    WorkloadConfig,
    generate,
    load_trace,
    resolve_trace_path,
)
from kairos_gym.workload.traces import HEADER, _load_cached

ROWS = {  # from kairos_gym/data/traces/README.md
    "azure2023_code.csv": 8819,
    "azure2023_conv.csv": 19366,
    "mooncake_fast25_conversation.csv": 12031,
    "mooncake_fast25_synthetic.csv": 3993,
    "sharegpt8k_lengths_only.csv": 30731,
    "arxiv_summarization_lengths_only.csv": 28257,
}


def test_packaged_traces_are_the_per_request_csvs_in_the_package() -> None:
    on_disk = {p.name for p in TRACE_DIR.glob("*.csv")} - {"servegen_rate_profiles.csv"}
    assert set(PACKAGED_TRACES) == on_disk == set(ROWS)


@pytest.mark.parametrize("name", PACKAGED_TRACES)
def test_every_packaged_trace_loads_with_readme_row_count(name: str) -> None:
    w = load_trace(name)
    assert len(w) == ROWS[name]
    assert w.source == f"trace:{name}"
    assert w.arrival_s[0] == 0.0 and np.all(np.diff(w.arrival_s) >= 0)
    assert w.prompt_tokens.min() >= 1 and w.output_tokens.min() >= 1


@pytest.mark.parametrize(("name", "rate", "iat_cv", "prompt_p50", "output_mean"), [
    ("azure2023_code.csv", 2.566, 13.15, 1469, 27.9),
    ("azure2023_conv.csv", 5.530, 1.09, 1020, 211),
    ("mooncake_fast25_synthetic.csv", 3.906, 1.01, 11587, 149),
])
def test_summary_reproduces_readme_statistics(name: str, rate: float, iat_cv: float, prompt_p50: float,
                                              output_mean: float) -> None:
    s = load_trace(name).summary()
    assert s["rate"] == pytest.approx(rate, abs=0.001)
    assert s["iat_cv"] == pytest.approx(iat_cv, abs=0.01)
    assert s["prompt_p50"] == prompt_p50
    assert s["output_mean"] == pytest.approx(output_mean, abs=0.5)  # README rounds
    assert s["prompt_tokens_per_s"] == pytest.approx(s["prompt_mean"] * s["rate"])


def test_azure_conv_loads_fast() -> None:
    best = float("inf")
    for _ in range(3):
        _load_cached.cache_clear()
        t0 = time.perf_counter()
        load_trace("azure2023_conv")
        best = min(best, time.perf_counter() - t0)
    assert best < 0.2, f"azure2023_conv took {best:.3f} s"


def test_loads_are_cached_until_the_file_changes(tmp_path: Path) -> None:
    f = tmp_path / "t.csv"
    f.write_text(f"{HEADER}\n0,1,2\n")
    a = load_trace(f)
    assert load_trace(f) is a
    f.write_text(f"{HEADER}\n0,1,2\n1.5,3,4\n")
    os.utime(f, ns=(time.time_ns(), time.time_ns() + 10**9))
    b = load_trace(f)
    assert len(b) == 2 and b.arrival_s[1] == 1.5


def test_resolve_bare_names_to_package_and_paths_to_filesystem(tmp_path: Path) -> None:
    packaged = TRACE_DIR / "azure2023_code.csv"
    assert resolve_trace_path("azure2023_code") == packaged
    assert resolve_trace_path("azure2023_code.csv") == packaged
    own = tmp_path / "mine.csv"
    own.write_text(f"{HEADER}\n0,1,2\n")
    assert resolve_trace_path(str(own)) == own.resolve()
    assert load_trace(str(own)).source == f"trace:{own}"


def test_missing_trace_names_path_and_lists_packaged_traces() -> None:
    with pytest.raises(ConfigError) as exc:
        resolve_trace_path("no/such/trace.csv")
    msg = str(exc.value)
    assert "no/such/trace.csv" in msg and "path" in msg
    assert all(name in msg for name in PACKAGED_TRACES)


def test_missing_trace_in_config_is_reported_at_from_dict() -> None:
    with pytest.raises(ConfigError) as exc:
        WorkloadConfig.from_dict({"arrival": {"kind": "trace", "path": "azure2099.csv"}},
                                 where="run.yaml: workload")
    msg = str(exc.value)
    assert msg.startswith("run.yaml: workload.arrival: path = 'azure2099.csv'")
    assert "azure2023_code.csv" in msg
    with pytest.raises(ConfigError, match=r"missing\.csv"):
        WorkloadConfig.from_dict({"lengths": {"kind": "empirical", "path": "./missing.csv"}})


def _trace(d: dict) -> WorkloadConfig:
    arrival = {"kind": "trace", "path": "azure2023_code", **d.pop("arrival", {})}
    return WorkloadConfig.from_dict({"arrival": arrival, **d})


def test_rate_scale_two_halves_the_span_and_doubles_the_rate() -> None:
    rng = np.random.default_rng(0)
    base = generate(_trace({}), rng)
    fast = generate(_trace({"arrival": {"rate_scale": 2.0}}), rng)
    assert len(fast) == len(base)
    assert np.allclose(fast.arrival_s, base.arrival_s / 2)
    assert fast.summary()["span_s"] == pytest.approx(base.summary()["span_s"] / 2)
    assert fast.summary()["rate"] == pytest.approx(2 * base.summary()["rate"])
    assert "rate_scale=2" in fast.source


def test_window_is_in_original_seconds_then_scaled_then_capped() -> None:
    full = load_trace("azure2023_code")
    cfg = _trace({"arrival": {"start_s": 600, "end_s": 1200, "rate_scale": 4}, "max_requests": 50})
    w = generate(cfg, np.random.default_rng(0))
    lo = int(np.searchsorted(full.arrival_s, 600.0))
    assert len(w) == 50
    assert np.allclose(w.arrival_s, (full.arrival_s[lo:lo + 50] - 600.0) / 4)
    assert np.array_equal(w.prompt_tokens, full.prompt_tokens[lo:lo + 50])
    assert w.source == "trace:azure2023_code.csv rate_scale=4 window=[600,1200) max_requests=50"
    uncapped = generate(_trace({"arrival": {"start_s": 600, "end_s": 1200}}), np.random.default_rng(0))
    inside = (full.arrival_s >= 600) & (full.arrival_s < 1200)
    assert len(uncapped) == int(inside.sum()) and uncapped.arrival_s[-1] < 600


def test_trace_duration_cuts_in_scaled_seconds() -> None:
    w = generate(_trace({"arrival": {"rate_scale": 2}, "duration_s": 100}), np.random.default_rng(0))
    full = load_trace("azure2023_code")
    assert len(w) == int(np.sum(full.arrival_s / 2 < 100)) and w.arrival_s[-1] < 100


def test_empty_trace_window_is_a_config_error() -> None:
    cfg = _trace({"arrival": {"start_s": 100000}})
    with pytest.raises(ConfigError, match="start_s"):
        generate(cfg, np.random.default_rng(0))


# --- strict CSV validation -------------------------------------------------------------------------

@pytest.mark.parametrize(("body", "line", "column", "value"), [
    ("0,1,2\n5,3,4\n4.5,1,1\n", 4, "arrival_time_s", "4.5"),  # unsorted
    ("0,1,2\n-1.5,3,4\n", 3, "arrival_time_s", "-1.5"),  # negative time
    ("nan,1,2\n", 2, "arrival_time_s", "nan"),
    ("0,1,2\n1e999,1,2\n", 3, "arrival_time_s", "1e999"),
    ("0,12.5,2\n", 2, "prompt_tokens", "12.5"),  # non-integer tokens
    ("0,1,2\n1,abc,2\n", 3, "prompt_tokens", "abc"),
    ("0,1,12.0\n", 2, "output_tokens", "12.0"),
    ("0,1,2\n1,0,2\n", 3, "prompt_tokens", "0"),  # zero tokens
    ("0,1,2\n1,2,0\n", 3, "output_tokens", "0"),
    ("0,1,-4\n", 2, "output_tokens", "-4"),  # negative tokens
    ("0,1,2\n1,2\n", 3, "row", "1,2"),  # missing value
    ("0,1,2,3\n", 2, "row", "0,1,2,3"),
    ("0,1,2\n\n1,2,3\n", 3, "row", ""),  # blank line inside
    ("0, 1,2\n", 2, "prompt_tokens", " 1"),
])
def test_bad_rows_name_file_line_column_and_value(tmp_path: Path, body: str, line: int, column: str,
                                                  value: str) -> None:
    f = tmp_path / "bad.csv"
    f.write_text(f"{HEADER}\n{body}")
    with pytest.raises(ConfigError) as exc:
        load_trace(f)
    msg = str(exc.value)
    assert str(f.resolve()) in msg and f"line {line}:" in msg
    assert f"{column} = {value!r}" in msg


@pytest.mark.parametrize(("header", "hint"), [
    ("arrival_time_s,prompt_tokens", "missing column output_tokens"),
    ("time,prompt_tokens,output_tokens", "missing column arrival_time_s"),
    ("prompt_tokens,arrival_time_s,output_tokens", "in this order"),
    ("arrival_time_s,prompt_tokens,output_tokens,extra", "extra columns"),
    ("0.0,1,2", "missing column"),  # no header at all
])
def test_wrong_or_missing_header_is_reported(tmp_path: Path, header: str, hint: str) -> None:
    f = tmp_path / "h.csv"
    f.write_text(f"{header}\n0,1,2\n")
    with pytest.raises(ConfigError) as exc:
        load_trace(f)
    msg = str(exc.value)
    assert "line 1" in msg and f"header = {header!r}" in msg and hint in msg
    assert str(f.resolve()) in msg


@pytest.mark.parametrize(("content", "value"), [("", "<empty>"), ("\n\n", "<empty>"),
                                                (f"{HEADER}\n", "<header only, no data rows>")])
def test_empty_file_is_reported(tmp_path: Path, content: str, value: str) -> None:
    f = tmp_path / "empty.csv"
    f.write_text(content)
    with pytest.raises(ConfigError) as exc:
        load_trace(f)
    assert str(f.resolve()) in str(exc.value) and value in str(exc.value)


def test_where_prefixes_csv_errors_and_crlf_and_bom_are_accepted(tmp_path: Path) -> None:
    ok = tmp_path / "crlf.csv"
    ok.write_bytes(("\ufeff" + HEADER + "\r\n0,1,2\r\n.5,3,4\r\n").encode())
    w = load_trace(ok)
    assert np.array_equal(w.arrival_s, [0.0, 0.5]) and np.array_equal(w.output_tokens, [2, 4])
    bad = tmp_path / "bad.csv"
    bad.write_text(f"{HEADER}\n0,1,x\n")
    with pytest.raises(ConfigError) as exc:
        load_trace(bad, where="s.yaml: workload.arrival.path")
    assert str(exc.value).startswith("s.yaml: workload.arrival.path: ")
