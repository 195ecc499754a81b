"""Calibration parameters of the step-latency model, loaded from ``kairos_gym/data/calibration.yaml``.

Each parameter carries its value and a provenance string. Efficiencies are fractions of the GPU's peak
FLOP/s or HBM bandwidth; times are seconds.
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace
from functools import cache
from typing import Any

import yaml

from kairos_gym.errors import ConfigError
from kairos_gym.latency.presets import DATA_DIR


@dataclass(frozen=True)
class Calibration:
    """Efficiency and overhead parameters (see calibration.yaml for the source of each)."""

    dense_compute_eff: float
    dense_memory_eff: float
    dense_overlap_p: float
    gemm_kernel_s: float
    elementwise_memory_eff: float
    elementwise_kernel_s: float
    moe_compute_eff: float
    moe_memory_eff: float
    moe_overlap_p: float
    attention_prefill_eff_mha: float
    attention_prefill_eff_mla: float
    attention_decode_compute_eff: float
    attention_decode_memory_eff: float
    allreduce_latency_s: float
    allreduce_bus_eff: float
    step_cpu_overhead_s: float
    layer_launch_overhead_s: float

    def with_overrides(self, overrides: dict[str, Any] | None, where: str = "latency.calibration") -> Calibration:
        """A copy with some parameters replaced; unknown names or non-positive values raise ConfigError."""
        if not overrides:
            return self
        names = {f.name for f in fields(self)}
        clean: dict[str, float] = {}
        for k, v in overrides.items():
            if k not in names:
                raise ConfigError(where, k, v, f"one of {sorted(names)}")
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not (v == v) or v < 0:
                raise ConfigError(where, k, v, "a finite number >= 0")
            clean[k] = float(v)
        return replace(self, **clean)


@cache
def calibration_data() -> dict[str, Any]:
    """The raw calibration file: ``{"version": int, "params": {name: {"value", "source"}}}``."""
    with open(DATA_DIR / "calibration.yaml", encoding="utf-8") as f:
        return yaml.safe_load(f)


def default_calibration() -> Calibration:
    """The shipped calibration."""
    params = calibration_data()["params"]
    return Calibration(**{k: float(v["value"]) for k, v in params.items()})
