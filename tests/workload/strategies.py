"""Hypothesis strategies for workload configs, shared by the generation and prefix property tests."""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from kairos_gym.workload.rules import MIN_RATE


def arrival_configs(max_rate: float = 200.0) -> st.SearchStrategy[dict[str, Any]]:
    """Synthetic arrival sections: poisson, gamma and mmpp with rates up to ``max_rate`` requests/s."""
    return st.one_of(
        st.builds(lambda r: {"kind": "poisson", "rate": r}, st.floats(0.1, max_rate)),
        st.builds(lambda r, cv: {"kind": "gamma", "rate": r, "cv": cv}, st.floats(0.1, max_rate),
                  st.floats(0.05, 8)),
        st.builds(lambda on, off, a, b: {"kind": "mmpp", "rate_on": on, "rate_off": off, "mean_on_s": a,
                                         "mean_off_s": b},
                  st.floats(0.5, max_rate / 2), st.just(0.0) | st.floats(MIN_RATE, max_rate / 20), st.floats(0.01, 20),
                  st.floats(0.01, 20)),
    )


def length_configs(*extra: dict[str, Any]) -> st.SearchStrategy[dict[str, Any]]:
    """Length sections: lognormal, pareto and fixed (tokens), plus any ``extra`` sections as given."""
    return st.one_of(
        st.builds(lambda pm, ps, px, om, os_, ox: {"kind": "lognormal", "prompt_median": pm, "prompt_sigma": ps,
                                                   "prompt_max": px, "output_median": om, "output_sigma": os_,
                                                   "output_max": ox},
                  st.floats(1, 5000), st.floats(0, 3), st.integers(1, 40000),
                  st.floats(1, 1000), st.floats(0, 3), st.integers(1, 5000)),
        st.builds(lambda pm, pa, px, om, oa, ox: {"kind": "pareto", "prompt_min": pm, "prompt_alpha": pa,
                                                  "prompt_max": px, "output_min": om, "output_alpha": oa,
                                                  "output_max": ox},
                  st.floats(0.5, 2000), st.floats(0.3, 5), st.integers(1, 40000),
                  st.floats(0.5, 500), st.floats(0.3, 5), st.integers(1, 5000)),
        st.builds(lambda p, o: {"kind": "fixed", "prompt_tokens": p, "output_tokens": o},
                  st.integers(1, 10**6), st.integers(1, 10**5)),
        *(st.just(e) for e in extra),
    )
