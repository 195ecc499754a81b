"""Every physical quantity of a scenario has a documented range (kairos_gym/workload/rules.py), so no run can
report a time of ``inf`` or beyond any real run: a value outside it is one ConfigError naming the field."""

from __future__ import annotations

import pytest

from kairos_gym.errors import ConfigError
from kairos_gym.scenario import load_scenario

CASES = [
    ({"transfer": {"bandwidth_bytes_per_s": 1e-300}}, "bandwidth_bytes_per_s", ">= 1e+06 and <= 1e+13"),
    ({"transfer": {"bandwidth_bytes_per_s": 1e15}}, "bandwidth_bytes_per_s", "<= 1e+13"),
    ({"transfer": {"setup_s": 1e308}}, "setup_s", "<= 10"),
    ({"cluster": {"swap_bandwidth_bytes_per_s": 0.5}}, "swap_bandwidth_bytes_per_s", ">= 1e+06"),
    ({"slo": {"ttft_s": 1e9}}, "ttft_s", "<= 3600"),
    ({"slo": {"tbt_s": 1e9}}, "tbt_s", "<= 60"),
    ({"deflection": {"beta": 1e9}}, "beta", "<= 100"),
    ({"overload": {"timeout_s": 1e300}}, "timeout_s", "<= 1e+07"),
    ({"overload": {"admission_max_ttft_s": 1e300}}, "admission_max_ttft_s", "<= 1e+07"),
    ({"workload": {"arrival": {"kind": "poisson", "rate": 1e-300}}}, "rate", ">= 1e-06"),
    ({"workload": {"arrival": {"kind": "gamma", "rate": 1e9, "cv": 2}}}, "rate", "<= 1e+06"),
    ({"workload": {"arrival": {"kind": "mmpp", "rate_on": 5, "rate_off": 1e-300}}}, "rate_off", "0 or a rate from"),
    ({"workload": {"arrival": {"kind": "mmpp", "mean_on_s": 1e300}}}, "mean_on_s", "<= 1e+07"),
]


@pytest.mark.parametrize("section, field, allowed", CASES, ids=[c[1] + "-" + str(i) for i, c in enumerate(CASES)])
def test_a_value_outside_its_physical_range_is_refused(section, field, allowed):
    with pytest.raises(ConfigError) as e:
        load_scenario(section)
    assert e.value.field == field and allowed in str(e.value)


def test_the_edges_of_each_range_are_accepted():
    sc = load_scenario({"transfer": {"bandwidth_bytes_per_s": 1e6, "setup_s": 10.0},
                        "slo": {"ttft_s": 3600.0, "tbt_s": 60.0}, "deflection": {"beta": 100.0},
                        "overload": {"timeout_s": 1e7},
                        "workload": {"arrival": {"kind": "poisson", "rate": 1e6}}})
    assert sc.transfer.bandwidth_bytes_per_s == 1e6 and sc.slo.tbt_s == 60.0
