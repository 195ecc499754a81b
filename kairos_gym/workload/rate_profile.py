"""Rate-profile files: per-window aggregate arrival rates (``arrival.kind: profile``, docs/workloads.md).

A profile file is UTF-8 CSV whose header holds at least the columns ``model``, ``window_start_s`` and
``total_rate`` (other columns are ignored), one row per (model, window)::

    model,window_start_s,total_rate,...
    m-large,0,212.780000,...
    m-large,600,179.698333,...

``window_start_s`` is a whole number of seconds; a model's windows are consecutive, equally spaced and start
at its first row's start; ``total_rate`` (requests per second) is a finite number >= 0. The packaged
``servegen_rate_profiles.csv`` (ServeGen, Alibaba Bailian: 10-minute windows of five models; README in
``kairos_gym/data/traces``) is found by its bare name ``servegen_rate_profiles``. Anything else is a
:class:`ConfigError` naming the file, the line, the column and the value.
"""

from __future__ import annotations

import csv
import functools
import io
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from kairos_gym.errors import ConfigError
from kairos_gym.workload.traces import resolve_data_file

PACKAGED_PROFILES: tuple[str, ...] = ("servegen_rate_profiles.csv",)
"""File names of the packaged rate profiles."""
REQUIRED_COLUMNS: tuple[str, str, str] = ("model", "window_start_s", "total_rate")
MAX_PROFILE_BYTES = 16 << 20
"""Largest profile file read (16 MiB; the packaged one is 0.3 MB), checked before the file is read."""
MAX_WINDOWS = 1_000_000
"""Most windows of one model's profile."""


@dataclass(frozen=True)
class RateProfile:
    """One model's profile: ``rates[j]`` requests per second in window ``j`` of ``window_s`` seconds
    (original time) starting at ``start_s``."""

    model: str
    start_s: float
    window_s: float
    rates: np.ndarray


def resolve_profile_path(name_or_path: str, *, where: str) -> Path:
    """The file of a packaged profile name (``servegen_rate_profiles``, with or without ``.csv``) or of a path
    (relative to the current directory); a ConfigError (field ``path``) when nothing is found."""
    return resolve_data_file(name_or_path, PACKAGED_PROFILES, where=where, what="rate profile")


def load_profile(path: str, model: str, *, where: str) -> RateProfile:
    """The profile of ``model`` in the file ``path`` (see the module docstring); cached per file version."""
    p = resolve_profile_path(path, where=where)
    st = p.stat()
    if st.st_size > MAX_PROFILE_BYTES:
        raise ConfigError(where, "path", path, f"a rate-profile file of at most {MAX_PROFILE_BYTES:,} bytes "
                          f"(this one: {st.st_size:,})")
    return _load_cached(str(p), st.st_mtime_ns, st.st_size, model, where)


@functools.lru_cache(maxsize=16)
def _load_cached(resolved: str, mtime_ns: int, size: int, model: str, where: str) -> RateProfile:
    label = f"{where}.path ({Path(resolved).name})"
    try:
        text = Path(resolved).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise ConfigError(label, "file", resolved, f"a readable UTF-8 CSV file ({e})") from None
    rows = csv.reader(io.StringIO(text))
    header = next(rows, None)
    if header is None or any(c not in header for c in REQUIRED_COLUMNS):
        raise ConfigError(label, "header", header, "a CSV header with the columns " + ", ".join(REQUIRED_COLUMNS))
    i_model, i_start, i_rate = (header.index(c) for c in REQUIRED_COLUMNS)
    starts: list[int] = []
    rates: list[float] = []
    models: set[str] = set()
    for line, row in enumerate(rows, start=2):
        if len(row) != len(header):
            raise ConfigError(label, f"line {line}", row, f"{len(header)} columns, as the header")
        models.add(row[i_model])
        if row[i_model] != model:
            continue
        if len(starts) >= MAX_WINDOWS:
            raise ConfigError(label, "windows", f"more than {MAX_WINDOWS:,}", f"at most {MAX_WINDOWS:,} per model")
        s, r = row[i_start], row[i_rate]
        if not s.isdigit():
            raise ConfigError(label, f"line {line}: window_start_s", s, "a whole number of seconds >= 0")
        try:
            rate = float(r)
        except ValueError:
            rate = math.nan
        if not math.isfinite(rate) or rate < 0:
            raise ConfigError(label, f"line {line}: total_rate", r, "a finite number of requests per second >= 0")
        starts.append(int(s))
        rates.append(rate)
    if not starts:
        raise ConfigError(where, "model", model, "a model of the profile file: " + ", ".join(sorted(models)))
    if len(starts) == 1:
        raise ConfigError(where, "model", model, "a model with at least two windows (the window length is the "
                          "spacing of its window_start_s)")
    step = starts[1] - starts[0]
    for k in range(1, len(starts)):
        if starts[k] - starts[k - 1] != step or step <= 0:
            raise ConfigError(label, f"{model}: window_start_s", starts[k], f"consecutive windows "
                              f"{step} s apart after {starts[0]} (window {k}; the previous one starts at "
                              f"{starts[k - 1]})")
    out = np.asarray(rates, dtype=np.float64)
    out.setflags(write=False)
    return RateProfile(model, float(starts[0]), float(step), out)
