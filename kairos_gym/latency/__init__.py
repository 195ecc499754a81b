"""The physics: GPU/model presets, the step-latency model, and the KV-transfer model."""

from kairos_gym.latency.calibration import Calibration, default_calibration
from kairos_gym.latency.model import ElementwiseTerms, StepCost, StepLatencyModel
from kairos_gym.latency.presets import GpuSpec, ModelSpec, get_gpu, get_model, gpu_presets, model_presets

__all__ = [
    "Calibration",
    "ElementwiseTerms",
    "GpuSpec",
    "ModelSpec",
    "StepCost",
    "StepLatencyModel",
    "default_calibration",
    "get_gpu",
    "get_model",
    "gpu_presets",
    "model_presets",
]
