"""Trace files: the packaged traces, path resolution and strict CSV loading.

A trace file is UTF-8 CSV with exactly this header and one request per line::

    arrival_time_s,prompt_tokens,output_tokens
    0.000000,374,44

``arrival_time_s`` is a plain decimal number of seconds (``1.5``, ``2``, ``3e-2``; no sign, no
``nan``/``inf``), rows sorted by it; the token columns are digit strings (``12``, not ``12.0``)
with value >= 1. Any other content is a :class:`ConfigError` naming file, line, column and value.
"""

from __future__ import annotations

import functools
import io
import os
import re
from pathlib import Path

import numpy as np

from kairos_gym.errors import ConfigError
from kairos_gym.workload.workload import Workload

TRACE_DIR: Path = Path(__file__).resolve().parent.parent / "data" / "traces"
"""Directory of the traces shipped in the package (``kairos_gym/data/traces``)."""

PACKAGED_TRACES: tuple[str, ...] = (
    "azure2023_code.csv",
    "azure2023_conv.csv",
    "mooncake_fast25_conversation.csv",
    "mooncake_fast25_synthetic.csv",
    "sharegpt8k_lengths_only.csv",
    "arxiv_summarization_lengths_only.csv",
)
"""File names of the packaged per-request traces (``servegen_rate_profiles.csv`` is an aggregate
rate table with another schema, so it is not one of them)."""

COLUMNS: tuple[str, str, str] = ("arrival_time_s", "prompt_tokens", "output_tokens")
HEADER = ",".join(COLUMNS)

MAX_TRACE_BYTES = 64 << 20
"""Largest trace file read (64 MiB, about 2.5 million requests; the packaged traces are at most 0.5 MB),
checked before the file is read: parsing takes a few times the file's size in memory."""

_MAX_TOKEN_DIGITS = 15  # far above any context length; exact in float64 and int64
_TIME = r"(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?"
_TIME_RE = re.compile(_TIME)
_BODY_RE = re.compile(rf"(?:{_TIME},[0-9]{{1,{_MAX_TOKEN_DIGITS}}},[0-9]{{1,{_MAX_TOKEN_DIGITS}}}\n)*")
_TOKENS_ALLOWED = "a whole number of tokens >= 1 written as digits (e.g. 12)"
_TIME_ALLOWED = "a finite number of seconds >= 0 (e.g. 4.314579)"


def resolve_trace_path(name_or_path: str | os.PathLike[str], *, where: str = "trace") -> Path:
    """Find a trace file.

    A bare packaged name, with or without ``.csv`` (``"azure2023_code"``), resolves to the copy in
    the package, even if a file of that name exists in the current directory (write
    ``"./azure2023_code.csv"`` for that). Anything else is a filesystem path; a relative path is
    resolved against the current directory. Raises :class:`ConfigError` (field ``path``) naming the
    path and listing the packaged traces when nothing is found.
    """
    return resolve_data_file(name_or_path, PACKAGED_TRACES, where=where, what="trace")


def resolve_data_file(name_or_path: str | os.PathLike[str], packaged: tuple[str, ...], *, where: str,
                      what: str) -> Path:
    """:func:`resolve_trace_path` for any packaged CSV files of :data:`TRACE_DIR` (``packaged``: their file names;
    ``what``: what the error calls them, e.g. ``"trace"``, ``"rate profile"``)."""
    names = ", ".join(packaged)
    if not isinstance(name_or_path, (str, os.PathLike)) or not str(name_or_path).strip():
        raise ConfigError(where, "path", name_or_path, f"a {what} file path or one of {names}")
    text = os.fspath(name_or_path)
    if isinstance(name_or_path, str) and "/" not in text and os.sep not in text:
        name = text if text.endswith(".csv") else text + ".csv"
        if name in packaged:
            return TRACE_DIR / name
    path = Path(text).expanduser()
    if path.is_file():
        return path.resolve()
    raise ConfigError(
        where,
        "path",
        text,
        f"an existing CSV file (no file at {path.absolute()}) or a packaged {what} name: {names}",
    )


def load_trace(path: str | os.PathLike[str], *, where: str | None = None) -> Workload:
    """Load and strictly validate a trace CSV (see the module docstring for the format).

    ``path`` may also be a packaged trace name (see :func:`resolve_trace_path`). ``where`` names
    the config field that asked for the file; messages always name the file and line. Times are
    kept as written (not shifted). Loads are cached by (file, modification time, size); the
    returned :class:`Workload` is immutable, so sharing it is safe.
    """
    resolved = resolve_trace_path(path, where=where or "trace")
    label = resolved.name if resolved.parent == TRACE_DIR else str(path)
    st = resolved.stat()
    if st.st_size > MAX_TRACE_BYTES:
        raise ConfigError(f"{where}: {resolved}" if where else str(resolved), "file", f"{st.st_size} bytes",
                          f"a trace CSV of at most {MAX_TRACE_BYTES} bytes (MAX_TRACE_BYTES)")
    return _load_cached(str(resolved), st.st_mtime_ns, st.st_size, label, where or "")


@functools.lru_cache(maxsize=32)
def _load_cached(resolved: str, mtime_ns: int, size: int, label: str, where: str) -> Workload:
    del mtime_ns, size  # cache key only
    prefix = f"{where}: {resolved}" if where else resolved
    try:
        with open(resolved, encoding="utf-8-sig", newline="") as fh:
            text = fh.read(MAX_TRACE_BYTES + 1)  # characters: at least as many bytes
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(prefix, "file", resolved, f"a readable UTF-8 CSV file ({exc})") from exc
    if len(text) > MAX_TRACE_BYTES:  # grew since it was checked
        raise ConfigError(prefix, "file", f"more than {MAX_TRACE_BYTES} bytes",
                          f"a trace CSV of at most {MAX_TRACE_BYTES} bytes (MAX_TRACE_BYTES)")
    t, p, o = parse_trace_text(text, prefix)
    return Workload(arrival_s=t, prompt_tokens=p, output_tokens=o, source=f"trace:{label}")


def parse_trace_text(text: str, where: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Parse trace CSV text; ``where`` (usually the file path) prefixes every error message.

    Returns (arrival_s float64, prompt_tokens int64, output_tokens int64). The whole body is checked
    against the row grammar with one regular expression and parsed with ``np.loadtxt``; only when
    that check fails are rows scanned one by one to name the first bad line.
    """
    text = text.replace("\r\n", "\n")
    header, _, body = text.partition("\n")
    body = body.rstrip("\n")
    if not header.strip() and not body.strip():
        raise ConfigError(where, "file", "<empty>", f"a CSV file starting with the header {HEADER!r}")
    if header.strip() != HEADER:
        cols = [c.strip() for c in header.split(",")]
        missing = [c for c in COLUMNS if c not in cols]
        detail = (f" (missing column {', '.join(missing)})" if missing
                  else " (these names in this order, without spaces or extra columns)")
        raise ConfigError(f"{where} line 1", "header", header, f"exactly {HEADER!r}{detail}")
    if not body:
        raise ConfigError(where, "file", "<header only, no data rows>", "at least one request row")
    body += "\n"
    if _BODY_RE.fullmatch(body) is None:
        _raise_first_bad_row(where, body.split("\n")[:-1])
    table = np.loadtxt(io.StringIO(body), delimiter=",", dtype=np.float64, ndmin=2, comments=None)
    times = np.ascontiguousarray(table[:, 0])
    prompt = table[:, 1].astype(np.int64)
    output = table[:, 2].astype(np.int64)

    def raw(i: int, col: int) -> str:  # the text of one cell, for messages
        return body.split("\n", i + 1)[i].split(",")[col]

    for col, name, arr in ((1, "prompt_tokens", prompt), (2, "output_tokens", output)):
        low = np.flatnonzero(arr < 1)
        if low.size:
            i = int(low[0])
            raise ConfigError(f"{where} line {i + 2}", name, raw(i, col), _TOKENS_ALLOWED)
    bad = np.flatnonzero(~np.isfinite(times))
    if bad.size:
        i = int(bad[0])
        raise ConfigError(f"{where} line {i + 2}", "arrival_time_s", raw(i, 0), _TIME_ALLOWED)
    down = np.flatnonzero(np.diff(times) < 0)
    if down.size:
        i = int(down[0]) + 1
        raise ConfigError(f"{where} line {i + 2}", "arrival_time_s", raw(i, 0),
                          f">= {raw(i - 1, 0)} on the line before (rows must be sorted by arrival_time_s)")
    return times, prompt, output


def _raise_first_bad_row(where: str, rows: list[str]) -> None:
    """Raise :class:`ConfigError` for the first row that does not fit the grammar."""
    for i, line in enumerate(rows):
        at = f"{where} line {i + 2}"
        cells = line.split(",")
        if len(cells) != 3:
            raise ConfigError(at, "row", line, f"3 comma-separated values: {HEADER}")
        t, p, o = cells
        if _TIME_RE.fullmatch(t) is None:
            negative = t.startswith("-") and _TIME_RE.fullmatch(t[1:]) is not None
            raise ConfigError(at, "arrival_time_s", t,
                              "a time in seconds >= 0 (negative times are not allowed)" if negative
                              else _TIME_ALLOWED)
        for name, v in (("prompt_tokens", p), ("output_tokens", o)):
            if not (v.isascii() and v.isdigit()) or len(v) > _MAX_TOKEN_DIGITS:
                raise ConfigError(at, name, v, _TOKENS_ALLOWED)
    raise ConfigError(where, "file", "<unparseable>", f"rows of {HEADER}")  # not reached
