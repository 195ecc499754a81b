"""``arrival.kind: profile``: a non-homogeneous Poisson process following a rate profile (ServeGen's windows),
sampled by thinning; prefix-stable, streamed in chunks bit for bit, and every bad value refused naming it."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from kairos_gym.errors import ConfigError
from kairos_gym.scenario import ScenarioConfig, load_scenario
from kairos_gym.sim import Simulator
from kairos_gym.workload import WorkloadConfig, generate
from kairos_gym.workload.arrivals import MAX_PEAK_RATIO, ProfileArrival
from kairos_gym.workload.chunked import WorkloadStream
from kairos_gym.workload.rate_profile import load_profile

DAY = {"kind": "profile", "model": "m-large", "rate": 20.0, "window_s": 2.0, "first_window": 0,
       "num_windows": 144}


def test_the_packaged_profile_loads_per_model() -> None:
    p = load_profile("servegen_rate_profiles", "m-large", where="t")
    assert p.rates.size == 2016 and p.window_s == 600.0 and p.start_s == 0.0
    assert p.rates[0] == pytest.approx(212.78)  # the file's first row
    assert load_profile("servegen_rate_profiles", "deepseek-r1", where="t").rates.size == 144


def test_window_rates_are_the_profile_scaled_to_the_mean_rate() -> None:
    a = ProfileArrival(**{k: v for k, v in DAY.items() if k != "kind"})
    raw = load_profile("servegen_rate_profiles", "m-large", where="t").rates[:144]
    r = a.window_rates()
    assert r.size == 144 and r.mean() == pytest.approx(20.0)
    assert np.allclose(r / r[0], raw / raw[0])
    with pytest.raises(ValueError):
        r[0] = 1.0  # read-only


def test_the_arrival_rate_follows_the_profile() -> None:
    # one day of m-large (144 windows of 1 s) repeated 200 times: the mean count per window tracks its rate
    wl_cfg = WorkloadConfig.from_dict({"arrival": {**DAY, "window_s": 1.0}, "duration_s": 144.0 * 200})
    times = generate(wl_cfg, np.random.default_rng(0)).arrival_s
    counts = np.bincount(np.floor(times).astype(int) % 144, minlength=144) / 200.0
    expected = ProfileArrival(**{k: v for k, v in {**DAY, "window_s": 1.0}.items() if k != "kind"}).window_rates()
    assert np.corrcoef(counts, expected)[0, 1] > 0.98
    assert abs(counts.mean() - 20.0) < 0.2  # 576,000 expected arrivals: sd of the mean ~0.03


@pytest.mark.parametrize("seed", [0, 3])
def test_prefix_stable_and_duration_consistent(seed: int) -> None:
    a = ProfileArrival(**{k: v for k, v in DAY.items() if k != "kind"})
    long = a.sample(np.random.default_rng(seed), num_requests=6000)
    short = a.sample(np.random.default_rng(seed), num_requests=37)
    assert np.array_equal(short, long[:37])
    by_time = a.sample(np.random.default_rng(seed), duration_s=100.0)
    assert by_time.size > 0 and np.array_equal(by_time, long[: by_time.size]) and by_time[-1] < 100.0
    assert long[by_time.size] >= 100.0
    assert np.all(np.diff(long) >= 0) and long[0] > 0


@pytest.mark.parametrize("workload", [{"arrival": DAY, "num_requests": 3000},
                                      {"arrival": DAY, "duration_s": 120.0, "max_requests": 2000}])
def test_the_chunked_stream_is_generate_bit_for_bit(workload: dict) -> None:
    cfg = WorkloadConfig.from_dict(workload)
    whole = generate(cfg, np.random.default_rng(4))
    for k, batch in ((1, 3), (64, 1000), (5000, 1 << 15)):
        s = WorkloadStream(cfg, np.random.default_rng(4), batch=batch)
        parts = []
        while not s.done:
            parts.append(s.take(k)[0])
        assert np.concatenate(parts).tobytes() == whole.arrival_s.tobytes(), (k, batch)


def test_the_shipped_scenario_runs_and_round_trips() -> None:
    sc = load_scenario("servegen-day")
    assert sc.workload.arrival.kind == "profile"
    assert ScenarioConfig.from_dict(sc.to_dict()).to_dict() == sc.to_dict()
    small = sc.with_overrides({"workload": {"max_requests": 300}})
    s = Simulator(small, seed=0).run(_Prefill())
    assert s["n_completed"] + s["n_rejected"] + s.get("n_timed_out", 0) == 300


class _Prefill:
    def decide(self, ctx):
        from kairos_gym.sim import Decision

        return Decision.prefill_path()


@pytest.mark.parametrize(("over", "field", "allowed"), [
    ({"model": "gpt-9"}, "model", "a model of the profile file: deepseek-r1, m-large, m-mid, m-small, mm-image"),
    ({"path": "no_such_profile"}, "path", "servegen_rate_profiles"),
    ({"first_window": 2016}, "first_window", "0 to 2015"),
    ({"first_window": 2000, "num_windows": 17}, "num_windows", "at most 16"),
    ({"num_windows": 0}, "num_windows", ">= 1"),
    ({"rate": 0}, "rate", ">= 1e-06"),
    ({"window_s": -1}, "window_s", "> 0"),
    ({"first_window": 1.5}, "first_window", "whole number"),
    ({"model": "m-mid", "first_window": 522, "num_windows": 11}, "model", "rate > 0 somewhere"),  # idle windows
])
def test_bad_values_are_refused_naming_the_field(over: dict, field: str, allowed: str) -> None:
    with pytest.raises(ConfigError) as e:
        WorkloadConfig.from_dict({"arrival": {**DAY, **over}}, where="s.yaml: workload")
    assert e.value.field == field and allowed in str(e.value)


def test_a_spiky_window_range_is_refused_before_sampling(tmp_path: Path) -> None:
    # 99 idle windows and one busy one: the peak is 100x the mean, the thinning sampler would draw 100 candidates
    # per request
    spiky = tmp_path / "spiky.csv"
    spiky.write_text("model,window_start_s,total_rate\n" + "".join(f"x,{10 * k},{int(k == 50)}\n" for k in range(100)),
                     encoding="utf-8")
    with pytest.raises(ConfigError, match=f"at most {MAX_PEAK_RATIO:g}x their mean .now 100x"):
        WorkloadConfig.from_dict({"arrival": {**DAY, "path": str(spiky), "model": "x", "num_windows": None}})
    ok = WorkloadConfig.from_dict({"arrival": {**DAY, "path": str(spiky), "model": "x", "first_window": 49,
                                               "num_windows": 3}})  # 0, 1, 0: peak 3x the mean
    assert ok.arrival.window_rates().max() == pytest.approx(3 * DAY["rate"])


@pytest.mark.parametrize(("text", "match"), [
    ("model,window_start_s,total_rate\nx,0,1.0\nx,10,-2\n", r"line 3: total_rate"),
    ("model,window_start_s,total_rate\nx,0,1\nx,10,1\nx,30,1\n", r"consecutive windows 10 s apart"),
    ("model,start,rate\nx,0,1\n", r"header"),
    ("model,window_start_s,total_rate\nx,0.5,1\nx,10,1\n", r"line 2: window_start_s"),
    ("model,window_start_s,total_rate\nx,0,1\n", r"at least two windows"),
])
def test_bad_profile_files_are_refused_naming_line_and_column(tmp_path: Path, text: str, match: str) -> None:
    bad = tmp_path / "p.csv"
    bad.write_text(text, encoding="utf-8")
    with pytest.raises(ConfigError, match=match):
        load_profile(str(bad), "x", where="t")


def test_a_profile_file_of_ones_own(tmp_path: Path) -> None:
    ok = tmp_path / "p4.csv"
    ok.write_text("model,window_start_s,total_rate\nx,0,1\nx,10,3\n", encoding="utf-8")
    a = ProfileArrival(path=str(ok), model="x", rate=2.0, window_s=1.0)
    assert list(a.window_rates()) == [1.0, 3.0]
    with pytest.raises(ConfigError, match="packaged rate profile name: servegen_rate_profiles"):
        ProfileArrival(path=str(tmp_path / "missing.csv"))
