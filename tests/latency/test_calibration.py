"""Calibration parameters: every way to set one is range-checked with one ConfigError."""

from __future__ import annotations

import dataclasses
import math

import pytest

from kairos_gym.cli.main import main
from kairos_gym.errors import ConfigError
from kairos_gym.latency import StepLatencyModel, default_calibration
from kairos_gym.latency import calibration as calmod
from kairos_gym.scenario import load_scenario

EFFS = [f.name for f in dataclasses.fields(calmod.Calibration) if "eff" in f.name.split("_")]
OVERLAPS = ["dense_overlap_p", "moe_overlap_p"]
TIMES = [f.name for f in dataclasses.fields(calmod.Calibration) if f.name.endswith("_s")]


def test_every_parameter_has_a_kind():
    names = [f.name for f in dataclasses.fields(calmod.Calibration)]
    assert sorted(EFFS + OVERLAPS + TIMES) == sorted(names)
    assert len(EFFS) == 10


@pytest.mark.parametrize("name", EFFS)
@pytest.mark.parametrize("bad", [0, 0.0, -0.1, 1.0000001, 1.5, 2, float("nan"), float("inf"), True, "0.5", None])
def test_efficiency_outside_0_1_refused(name, bad):
    with pytest.raises(ConfigError) as e:
        StepLatencyModel.from_preset(calibration={name: bad})
    assert e.value.field == name and "(0, 1]" in e.value.allowed


@pytest.mark.parametrize("name", EFFS)
def test_efficiency_of_one_accepted(name):
    m = StepLatencyModel.from_preset(calibration={name: 1})
    assert getattr(m.cal, name) == 1.0
    assert math.isfinite(m.step_time([1000] * 4, [(512, 0)]))


@pytest.mark.parametrize("name", OVERLAPS)
@pytest.mark.parametrize("bad", [0, 0.5, 16.5, float("inf")])
def test_overlap_exponent_range(name, bad):
    with pytest.raises(ConfigError, match=name):
        StepLatencyModel.from_preset(calibration={name: bad})
    assert StepLatencyModel.from_preset(calibration={name: 1}).step_time([100]) > 0


@pytest.mark.parametrize("name", TIMES)
@pytest.mark.parametrize("bad", [-1e-9, 1.5, float("nan"), float("inf")])
def test_time_range(name, bad):
    with pytest.raises(ConfigError, match=name) as e:
        StepLatencyModel.from_preset(calibration={name: bad})
    assert "seconds" in e.value.allowed
    assert StepLatencyModel.from_preset(calibration={name: 0}).step_time([100]) > 0


def test_dense_compute_eff_zero_in_a_scenario_is_a_config_error():
    # was: ZeroDivisionError when the simulator built its latency model
    with pytest.raises(ConfigError) as e:
        load_scenario("small").with_overrides({"cluster": {"calibration": {"dense_compute_eff": 0}}})
    assert "cluster" in e.value.where and "calibration" in e.value.where
    assert e.value.field == "dense_compute_eff" and e.value.value == 0


def test_calibration_error_in_a_scenario_file_exits_2(tmp_path, capsys):
    path = tmp_path / "bad.yaml"
    path.write_text("name: bad\ncluster:\n  calibration:\n    moe_memory_eff: 1.2\n", encoding="utf-8")
    assert main(["simulate", "--scenario", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("kairos-gym simulate: error:") and "moe_memory_eff" in err and "(0, 1]" in err


def test_hand_built_or_replaced_calibration_checked():
    with pytest.raises(ConfigError, match="dense_memory_eff"):
        dataclasses.replace(default_calibration(), dense_memory_eff=1.2)
    with pytest.raises(ConfigError, match="allreduce_bus_eff"):
        dataclasses.replace(default_calibration(), allreduce_bus_eff=0.0)


def test_overrides_must_be_a_mapping_of_known_names():
    with pytest.raises(ConfigError, match="mapping"):
        StepLatencyModel.from_preset(calibration=[("dense_compute_eff", 0.5)])
    with pytest.raises(ConfigError, match="nonsense"):
        default_calibration().with_overrides({"nonsense": 0.5}, where="cluster.calibration")


def test_data_file_checked(tmp_path, monkeypatch):
    good = (calmod.DATA_DIR / "calibration.yaml").read_text(encoding="utf-8")
    assert "value: 0.7266" in good
    (tmp_path / "calibration.yaml").write_text(good.replace("value: 0.7266", "value: 1.7266"), encoding="utf-8")
    monkeypatch.setattr(calmod, "DATA_DIR", tmp_path)
    calmod.calibration_data.cache_clear()
    try:
        with pytest.raises(ConfigError) as e:
            calmod.calibration_data()
        assert e.value.field == "dense_compute_eff" and "calibration.yaml" in e.value.where
    finally:
        calmod.calibration_data.cache_clear()


def test_shipped_calibration_in_range():
    cal = default_calibration()
    for f in dataclasses.fields(cal):
        assert calmod.check_param("test", f.name, getattr(cal, f.name)) == getattr(cal, f.name)
