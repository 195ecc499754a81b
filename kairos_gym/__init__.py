"""kairos-gym: prefill deflection in disaggregated LLM serving, as a Gymnasium environment."""
__version__ = "0.1.0"
