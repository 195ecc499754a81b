"""Statistics of trace files and rate profiles (``kairos-gym traces``; the tables of docs/workloads.md).

Per-request traces (:data:`~kairos_gym.workload.traces.PACKAGED_TRACES` or any trace CSV): requests, span, rate,
inter-arrival CV, empty minutes, and the prompt and output lengths' mean, percentiles and maximum. Rate profiles
(``servegen_rate_profiles``): per model, the windows and the spread of the rates. The definitions are those of
``kairos_gym/data/traces/README.md``: rate = (n - 1) / span, IAT CV = std / mean of the inter-arrival times,
percentiles by linear interpolation between the closest ranks (numpy's default).

Same results on every machine: sums of floats are ``math.fsum`` (correctly rounded), sums of token counts are
exact integers, the rest are single IEEE operations (docs/architecture.md, "Same results on every machine").
"""

from __future__ import annotations

import csv
import io
import math
import os
from pathlib import Path
from typing import Any

import numpy as np

from kairos_gym.errors import ConfigError
from kairos_gym.workload.rate_profile import MAX_PROFILE_BYTES, PACKAGED_PROFILES, load_profile, resolve_profile_path
from kairos_gym.workload.traces import PACKAGED_TRACES, load_trace
from kairos_gym.workload.workload import Workload

PERCENTILES: tuple[int, ...] = (50, 95, 99)
"""The length percentiles reported (``prompt_p50``, ...)."""
DAY_S = 86_400.0
"""Seconds in a day: a profile's first-day statistics cover its first ``DAY_S / window_s`` windows."""


def percentile(sorted_x: np.ndarray, q: float) -> float:
    """The ``q``-th percentile (0..100) of the ascending array ``sorted_x`` by linear interpolation between the
    closest ranks (numpy's ``linear`` method); ``nan`` for an empty array."""
    n = int(sorted_x.size)
    if n == 0:
        return math.nan
    h = (n - 1) * q / 100.0
    lo = math.floor(h)
    a = float(sorted_x[lo])
    if lo + 1 >= n:
        return a
    return a + (h - lo) * (float(sorted_x[lo + 1]) - a)


def _lengths(prefix: str, x: np.ndarray) -> dict[str, Any]:
    """Mean, percentiles and maximum of one token column (exact integer sum)."""
    s = np.sort(x)
    out: dict[str, Any] = {f"{prefix}_mean": int(x.sum(dtype=np.int64)) / x.size if x.size else math.nan}
    out.update({f"{prefix}_p{q}": percentile(s, q) for q in PERCENTILES})
    out[f"{prefix}_max"] = int(s[-1]) if s.size else 0
    return out


def workload_stats(wl: Workload) -> dict[str, Any]:
    """The statistics of a workload's arrivals and lengths, as plain values (``None`` where undefined: the rate,
    span and IAT CV of a lengths-only trace whose arrivals are all at one time).

    Keys: ``requests``; ``span_s`` (last minus first arrival, s); ``rate`` ((requests - 1) / span, req/s);
    ``iat_cv`` (std / mean of the inter-arrival times); ``minutes`` (one-minute bins from the first arrival) and
    ``empty_minutes`` (of them, the bins with no arrival); ``prompt_mean``, ``prompt_p50/p95/p99``,
    ``prompt_max``, the same for ``output``; ``prompt_tokens_per_s`` (prompt_mean x rate: the offered prefill
    load, tokens/s).
    """
    t = wl.arrival_s
    n = len(wl)
    out: dict[str, Any] = {"requests": n, "span_s": None, "rate": None, "iat_cv": None, "minutes": None,
                           "empty_minutes": None}
    span = float(t[-1] - t[0]) if n else 0.0
    if n >= 2 and span > 0:
        iat = np.diff(t)
        mean = math.fsum(iat) / iat.size
        dev = iat - mean
        std = math.sqrt(math.fsum(dev * dev) / iat.size)
        bins = np.floor((t - t[0]) / 60.0).astype(np.int64)
        counts = np.bincount(bins)
        out.update(span_s=span, rate=(n - 1) / span, iat_cv=std / mean, minutes=int(counts.size),
                   empty_minutes=int((counts == 0).sum()))
    out.update(_lengths("prompt", wl.prompt_tokens))
    out.update(_lengths("output", wl.output_tokens))
    out["prompt_tokens_per_s"] = None if out["rate"] is None else out["prompt_mean"] * out["rate"]
    return out


def trace_stats(name_or_path: str | os.PathLike[str]) -> dict[str, Any]:
    """:func:`workload_stats` of one trace file (a packaged name or a path), with its ``name`` (the packaged name
    without ``.csv``, else the path as given)."""
    wl = load_trace(name_or_path, where="traces")
    label = str(name_or_path)
    if label.endswith(".csv") and label in PACKAGED_TRACES:
        label = label[:-4]
    return {"name": label, **workload_stats(wl)}


def profile_models(name_or_path: str) -> list[str]:
    """The models of a rate-profile file (a packaged name or a path), in the order of their first row."""
    p = resolve_profile_path(name_or_path, where="traces")
    if p.stat().st_size > MAX_PROFILE_BYTES:
        raise ConfigError("traces", "path", name_or_path, f"a rate-profile file of at most {MAX_PROFILE_BYTES:,} "
                          "bytes")
    rows = csv.reader(io.StringIO(p.read_text(encoding="utf-8")))
    header = next(rows, None) or []
    if "model" not in header:
        raise ConfigError(f"traces: {p.name}", "header", header, "a CSV header with a model column")
    i = header.index("model")
    return list(dict.fromkeys(row[i] for row in rows if len(row) > i))


def _spread(rates: np.ndarray) -> dict[str, Any]:
    """Mean rate and the peak, trough, 90th/10th-percentile and max/min ratios of a profile's windows (a ratio
    over 0 is ``None``)."""
    mean = math.fsum(rates) / rates.size
    s = np.sort(rates)
    p10, p90 = percentile(s, 10), percentile(s, 90)
    return {"windows": int(rates.size), "mean_rate": mean, "peak_over_mean": float(s[-1]) / mean,
            "min_over_mean": float(s[0]) / mean, "p90_over_p10": p90 / p10 if p10 > 0 else None,
            "max_over_min": float(s[-1]) / float(s[0]) if s[0] > 0 else None}


def profile_stats(name_or_path: str = "servegen_rate_profiles") -> list[dict[str, Any]]:
    """Per model of a rate-profile file: ``model``, ``window_s``, ``days`` (windows x window_s / 1 day), the
    whole profile's ``windows``, ``mean_rate`` (its units: req/s), ``peak_over_mean``, ``min_over_mean``,
    ``p90_over_p10`` (``None`` when the 10th percentile is 0), ``max_over_min`` (``None`` when a window is
    empty), and the same over its first day under ``day1`` (``None`` when the profile is shorter than a day or
    a day is not a whole number of windows)."""
    out = []
    for model in profile_models(name_or_path):
        prof = load_profile(name_or_path, model, where="traces")
        per_day = DAY_S / prof.window_s
        day1 = None
        if per_day.is_integer() and prof.rates.size >= per_day:
            day1 = _spread(prof.rates[: int(per_day)])
        out.append({"model": model, "window_s": prof.window_s, "days": prof.rates.size * prof.window_s / DAY_S,
                    **_spread(prof.rates), "day1": day1})
    return out


def packaged_stats() -> dict[str, Any]:
    """The statistics of every packaged trace (``traces``) and rate profile (``profiles``: ``{file: [per
    model]}``)."""
    return {"traces": [trace_stats(Path(name).stem) for name in PACKAGED_TRACES],
            "profiles": {Path(name).stem: profile_stats(Path(name).stem) for name in PACKAGED_PROFILES}}
