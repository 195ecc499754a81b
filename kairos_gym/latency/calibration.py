"""Calibration parameters of the step-latency model, loaded from ``kairos_gym/data/calibration.yaml``.

Each parameter carries its value and a provenance string. Three kinds, told apart by the name:

- ``*_eff`` / ``*_eff_*``: an efficiency, the fraction of the GPU's peak FLOP/s, HBM or NVLink bandwidth the kernels
  achieve, in ``(0, 1]`` (0 would divide by zero, above 1 is faster than the hardware);
- ``*_overlap_p``: the roofline overlap exponent ``p`` of ``(t_c^p + t_m^p)^(1/p)``, in ``[1, 16]`` (1: no
  overlap; larger values tend to ``max``; the bound keeps ``t^p`` far from floating-point underflow);
- ``*_s``: a fixed time in seconds, in ``[0, 1]``.

Every way to set a value is checked against these ranges with one :class:`ConfigError`: the data file
(:func:`default_calibration`), overrides by name (:meth:`Calibration.with_overrides`: the scenario's
``cluster.calibration``, ``StepLatencyModel.from_preset(calibration=...)``) and building or replacing a
:class:`Calibration` by hand.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, fields, replace
from functools import cache
from typing import Any

from kairos_gym.errors import ConfigError, check_keys
from kairos_gym.latency.presets import DATA_DIR
from kairos_gym.yaml_io import load_yaml_file

EFFICIENCY_RANGE = (0.0, 1.0)
"""``*_eff`` parameters: a fraction of peak in ``(0, 1]`` (the lower end excluded)."""
OVERLAP_P_RANGE = (1.0, 16.0)
"""``*_overlap_p`` parameters: the roofline overlap exponent, in ``[1, 16]``."""
TIME_RANGE_S = (0.0, 1.0)
"""``*_s`` parameters: a fixed cost in seconds, in ``[0, 1]``."""


def param_kind(name: str) -> str:
    """``efficiency`` (the name has an ``eff`` part), ``overlap`` (ends in ``_overlap_p``) or ``time`` (ends in
    ``_s``): the kind that sets a calibration parameter's range."""
    if "eff" in name.split("_"):
        return "efficiency"
    if name.endswith("_overlap_p"):
        return "overlap"
    if name.endswith("_s"):
        return "time"
    raise AssertionError(f"calibration parameter {name} has no kind (an _eff_ part, or ending in _overlap_p or _s)")


def param_allowed(name: str) -> str:
    """What a calibration parameter accepts (for messages and docs)."""
    return {
        "efficiency": "an efficiency in (0, 1] (a fraction of the hardware's peak)",
        "overlap": f"an overlap exponent in [{OVERLAP_P_RANGE[0]:g}, {OVERLAP_P_RANGE[1]:g}]",
        "time": f"a time in seconds in [{TIME_RANGE_S[0]:g}, {TIME_RANGE_S[1]:g}]",
    }[param_kind(name)]


def check_param(where: str, name: str, value: Any) -> float:
    """``value`` as a float if it is in the range of parameter ``name``'s kind; ConfigError otherwise."""
    allowed = param_allowed(name)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ConfigError(where, name, value, allowed)
    v = float(value)
    kind = param_kind(name)
    if kind == "efficiency":
        ok = EFFICIENCY_RANGE[0] < v <= EFFICIENCY_RANGE[1]
    elif kind == "overlap":
        ok = OVERLAP_P_RANGE[0] <= v <= OVERLAP_P_RANGE[1]
    else:
        ok = TIME_RANGE_S[0] <= v <= TIME_RANGE_S[1]
    if not ok:
        raise ConfigError(where, name, value, allowed)
    return v


@dataclass(frozen=True)
class Calibration:
    """Efficiency and overhead parameters (see calibration.yaml for the source of each). Efficiencies are
    fractions in (0, 1], overlap exponents in [1, 16], times in seconds in [0, 1]; checked on construction."""

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

    def __post_init__(self) -> None:
        for f in fields(self):
            check_param("Calibration", f.name, getattr(self, f.name))

    def with_overrides(self, overrides: Mapping[str, Any] | None, where: str = "latency.calibration") -> Calibration:
        """A copy with some parameters replaced; an unknown name or a value out of its kind's range raises
        ConfigError naming ``where``, the parameter, the value and what is allowed."""
        if overrides is None:
            return self
        if not isinstance(overrides, Mapping):
            raise ConfigError(where, "(calibration)", overrides, "a mapping of calibration parameter: value")
        if not overrides:
            return self
        names = [f.name for f in fields(self)]
        check_keys(where, dict(overrides), names)
        clean = {k: check_param(where, k, v) for k, v in overrides.items()}
        return replace(self, **clean)


@cache
def calibration_data() -> dict[str, Any]:
    """The raw calibration file: ``{"version": int, "params": {name: {"value", "source"}}}`` (checked: every
    parameter of :class:`Calibration` once, each with a value and a source string)."""
    where = "kairos_gym/data/calibration.yaml"
    raw = load_yaml_file(DATA_DIR / "calibration.yaml", where)
    if not isinstance(raw, dict) or not isinstance(raw.get("params"), dict):
        raise ConfigError(where, "params", raw, "a mapping of calibration parameters")
    check_keys(where, raw, ["version", "params"])
    params = raw["params"]
    names = [f.name for f in fields(Calibration)]
    check_keys(f"{where} params", params, names)
    for n in names:
        entry = params.get(n)
        if not isinstance(entry, dict) or set(entry) != {"value", "source"} or not isinstance(entry["source"], str):
            raise ConfigError(f"{where} params", n, entry, "a mapping {value: number, source: string}")
        check_param(f"{where} params", n, entry["value"])
    return raw


@cache
def default_calibration() -> Calibration:
    """The shipped calibration (a frozen value, built once)."""
    params = calibration_data()["params"]
    return Calibration(**{k: float(v["value"]) for k, v in params.items()})
