"""KV-transfer model: alone-time formula and fair sharing."""

from __future__ import annotations

import pytest

from kairos_gym.errors import ConfigError
from kairos_gym.latency.transfer import FairShareLink, TransferConfig


def test_time_alone():
    cfg = TransferConfig(bandwidth_bytes_per_s=10e9, setup_s=0.002)
    assert cfg.time_alone(20e9) == pytest.approx(2.002)


def test_fair_share_two_transfers():
    link = FairShareLink(1e9)
    link.add(1, 1e9, 0.0)
    link.add(2, 1e9, 0.0)
    t, tid = link.next_completion()
    assert tid == 1 and t == pytest.approx(2.0)  # each gets half the bandwidth
    link.remove(1, t)
    t2, tid2 = link.next_completion()
    assert tid2 == 2 and t2 == pytest.approx(2.0)


def test_late_joiner_slows_first():
    link = FairShareLink(1e9)
    link.add(1, 1e9, 0.0)
    link.add(2, 1e9, 0.5)  # 0.5 GB left of #1, shared from 0.5 s
    t, tid = link.next_completion()
    assert tid == 1 and t == pytest.approx(1.5)
    link.remove(1, t)
    t2, _ = link.next_completion()
    assert t2 == pytest.approx(2.0)  # conservation: 2 GB in 2 s at 1 GB/s


def test_state_roundtrip():
    link = FairShareLink(1e9)
    link.add(1, 5e8, 0.0)
    s = link.state()
    link.remove(1, 0.2)
    link.set_state(s)
    assert link.next_completion() == pytest.approx((0.5, 1))


@pytest.mark.parametrize("kw", [{"bandwidth_bytes_per_s": 0}, {"setup_s": -1.0},
                                {"bandwidth_bytes_per_s": float("nan")}])
def test_bad_transfer_config(kw):
    with pytest.raises(ConfigError):
        TransferConfig(**kw)
