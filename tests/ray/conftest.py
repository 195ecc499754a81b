"""Fixtures of the scale-out tests."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="module")
def ray_session():
    """One local 2-CPU Ray instance per test module (a backend finds it and leaves it running); skips the test
    when Ray is not installed."""
    ray = pytest.importorskip("ray", reason="Ray is not installed (pip install 'kairos-gym[ray]')")
    if not ray.is_initialized():
        ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield ray
    ray.shutdown()
