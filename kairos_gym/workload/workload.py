"""The :class:`Workload` value: a list of requests as three aligned arrays plus provenance."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from kairos_gym.errors import ConfigError
from kairos_gym.workload.rules import fmt_value


@dataclass(frozen=True, eq=False)
class Workload:
    """Requests sorted by arrival time.

    Attributes:
        arrival_s: float64 arrival times in seconds; non-decreasing, first >= 0.
        prompt_tokens: int64 prompt (prefill) lengths in tokens, each >= 1.
        output_tokens: int64 generated tokens per request, each >= 1, counting the first token.
        source: human-readable provenance, e.g. ``"trace:azure2023_code.csv rate_scale=4"``.

    The constructor copies the arrays, checks the invariants above (:class:`ConfigError` if one
    fails) and makes the copies read-only, so a ``Workload`` can be shared and cached safely.
    Equality is identity (``eq=False``): compare arrays with ``np.array_equal``.
    """

    arrival_s: np.ndarray
    prompt_tokens: np.ndarray
    output_tokens: np.ndarray
    source: str

    def __post_init__(self) -> None:
        where = f"Workload({self.source})"
        arrays = {
            "arrival_s": _as_array(where, "arrival_s", self.arrival_s, np.float64),
            "prompt_tokens": _as_array(where, "prompt_tokens", self.prompt_tokens, np.int64),
            "output_tokens": _as_array(where, "output_tokens", self.output_tokens, np.int64),
        }
        n = arrays["arrival_s"].shape[0]
        for name, arr in arrays.items():
            if arr.shape != (n,):
                raise ConfigError(where, f"{name}.shape", arr.shape, f"({n},), the length of arrival_s")
        t = arrays["arrival_s"]
        if n:
            bad = np.flatnonzero(~np.isfinite(t))
            if bad.size:
                raise ConfigError(where, f"arrival_s[{bad[0]}]", float(t[bad[0]]), "a finite time in seconds")
            if t[0] < 0:
                raise ConfigError(where, "arrival_s[0]", float(t[0]), ">= 0 seconds")
            down = np.flatnonzero(np.diff(t) < 0)
            if down.size:
                i = int(down[0]) + 1
                raise ConfigError(where, f"arrival_s[{i}]", float(t[i]), f">= arrival_s[{i - 1}] = "
                                  f"{float(t[i - 1])!r} (times must be non-decreasing)")
            for name in ("prompt_tokens", "output_tokens"):
                low = np.flatnonzero(arrays[name] < 1)
                if low.size:
                    i = int(low[0])
                    raise ConfigError(where, f"{name}[{i}]", int(arrays[name][i]),
                                      "a whole number of tokens >= 1")
        for name, arr in arrays.items():
            arr.setflags(write=False)
            object.__setattr__(self, name, arr)
        if not isinstance(self.source, str):
            raise ConfigError(where, "source", self.source, "a string")

    def __len__(self) -> int:
        """Number of requests."""
        return int(self.arrival_s.shape[0])

    def __repr__(self) -> str:
        return f"Workload(n={len(self)}, source={self.source!r})"

    def window(self, start_s: float, end_s: float) -> Workload:
        """Requests with ``start_s <= arrival_s < end_s``, times shifted by ``-start_s`` (seconds).

        ``end_s`` may be ``math.inf``. The result may be empty.
        """
        where = f"Workload({self.source}).window"
        start = float(start_s)
        end = float(end_s)
        if not math.isfinite(start) or start < 0:
            raise ConfigError(where, "start_s", start_s, "a finite time in seconds >= 0")
        if math.isnan(end) or end <= start:
            raise ConfigError(where, "end_s", end_s, f"a time in seconds > start_s = {start:g} (inf allowed)")
        lo = int(np.searchsorted(self.arrival_s, start, side="left"))
        hi = int(np.searchsorted(self.arrival_s, end, side="left"))
        return Workload(
            arrival_s=self.arrival_s[lo:hi] - start,
            prompt_tokens=self.prompt_tokens[lo:hi],
            output_tokens=self.output_tokens[lo:hi],
            source=f"{self.source} window=[{fmt_value(start)},{fmt_value(end)})",
        )

    def head(self, n: int) -> Workload:
        """The first ``n`` requests (all of them if there are fewer)."""
        if isinstance(n, bool) or not isinstance(n, int) or n < 0:
            raise ConfigError(f"Workload({self.source}).head", "n", n, "a whole number >= 0")
        return Workload(self.arrival_s[:n], self.prompt_tokens[:n], self.output_tokens[:n],
                        f"{self.source} max_requests={n}")

    def summary(self) -> dict[str, Any]:
        """Statistics as plain Python values (``nan`` where undefined, e.g. an empty workload).

        Keys: ``source``; ``n``; ``span_s`` (last minus first arrival, seconds); ``rate``
        ((n-1)/span_s, requests per second); ``iat_cv`` (std/mean of inter-arrival times);
        ``prompt_mean``, ``prompt_p50``, ``prompt_p99``, ``output_mean``, ``output_p50``,
        ``output_p99`` (tokens; numpy linear-interpolation percentiles); ``prompt_tokens_per_s``
        (prompt_mean * rate, the offered prefill load); ``output_tokens_per_s`` (output_mean * rate).
        """
        n = len(self)
        nan = float("nan")
        t = self.arrival_s
        span = float(t[-1] - t[0]) if n else nan
        rate = (n - 1) / span if n >= 2 and span > 0 else nan
        iat = np.diff(t)
        iat_mean = float(iat.mean()) if iat.size else nan
        iat_cv = float(iat.std()) / iat_mean if iat.size and iat_mean > 0 else nan

        def stats(x: np.ndarray) -> tuple[float, float, float]:
            if not x.size:
                return nan, nan, nan
            p50, p99 = np.percentile(x, [50, 99])
            return float(x.mean()), float(p50), float(p99)

        pm, p50, p99 = stats(self.prompt_tokens)
        om, o50, o99 = stats(self.output_tokens)
        return {
            "source": self.source,
            "n": n,
            "span_s": span,
            "rate": rate,
            "iat_cv": iat_cv,
            "prompt_mean": pm,
            "prompt_p50": p50,
            "prompt_p99": p99,
            "output_mean": om,
            "output_p50": o50,
            "output_p99": o99,
            "prompt_tokens_per_s": pm * rate,
            "output_tokens_per_s": om * rate,
        }


def _as_array(where: str, name: str, value: Any, dtype: type) -> np.ndarray:
    arr = np.asarray(value)
    if arr.ndim != 1:
        raise ConfigError(where, f"{name}.ndim", arr.ndim, "1 (a flat array)")
    if dtype is np.int64 and arr.size and not np.issubdtype(arr.dtype, np.integer):
        if not np.issubdtype(arr.dtype, np.floating) or not np.all(np.isfinite(arr) & (arr == np.rint(arr))):
            raise ConfigError(where, f"{name}.dtype", str(arr.dtype), "whole numbers of tokens")
    return np.array(arr, dtype=dtype, copy=True)
