"""Strict parsing of command-line values, checked before any work starts.

Every parser raises :class:`~kairos_gym.errors.ConfigError` naming the command (``where``), the flag, the value
and what is allowed; nothing is clipped, rounded or dropped (``512.7`` is not an integer, ``0,0`` holds a
duplicate, ``3-1`` is an empty range). Every count and size has an upper bound, checked before anything is
allocated or run:

- seeds: at most :data:`MAX_SEEDS` per flag, each below :data:`SEED_LIMIT`;
- lists of numbers (``--loads``, ``--chunks``, ``--batches``, ...): at most :data:`MAX_LIST` values;
- durations (``bench --env-seconds``): finite, at most :data:`MAX_BENCH_SECONDS` seconds.

Output paths (``--json``, ``--plots``, ``--out``, ...) are checked with :func:`check_outputs` before a run.
"""

from __future__ import annotations

import contextlib
import itertools
import math
import os
import re
import tempfile
from collections.abc import Iterable, Mapping
from pathlib import Path

from kairos_gym.errors import ConfigError

MAX_SEEDS = 1000
"""Most seeds one flag may list (``--seeds 0-999``): each seed is a whole simulation per policy."""

SEED_LIMIT = 2**32
"""Seeds are whole numbers in ``[0, SEED_LIMIT)``."""

MAX_LIST = 64
"""Most values a list flag (``--loads``, ``--chunks``, ``--sq-thresholds``, ``--batches``, ...) may hold."""

MAX_BENCH_SECONDS = 600.0
"""Longest ``bench --env-seconds`` (seconds per timing run)."""

MAX_BENCH_REPEATS = 100
"""Most ``bench --env-repeats``."""

MAX_FLAG_CHARS = 10_000
"""Longest text a list flag may hold (characters), checked before it is split."""

_UINT = re.compile(r"[0-9]{1,20}")
_RANGE = re.compile(r"([0-9]{1,20})-([0-9]{1,20})")
_SEEDS_ALLOWED = (f"distinct whole numbers in [0, {SEED_LIMIT}) as a comma list and/or ranges a-b with a <= b, "
                  f"at most {MAX_SEEDS} seeds in all, e.g. 0-4 or 0,3,7")


def parse_seeds(text: str, flag: str = "--seeds", where: str = "evaluate") -> list[int]:
    """``"0-4"`` -> [0, 1, 2, 3, 4]; ``"0,3,7"`` -> [0, 3, 7]; ``"0-2,9"`` -> [0, 1, 2, 9] (order as given).

    Refused, with a :class:`ConfigError` naming ``where``, ``flag`` and the value: an empty list or element,
    anything but whole numbers >= 0 and ranges ``a-b`` with ``a <= b``, a seed listed twice (``0,0``,
    ``0-3,2``), a seed >= :data:`SEED_LIMIT`, more than :data:`MAX_SEEDS` seeds (checked before a range is
    expanded).
    """
    if not isinstance(text, str):
        raise ConfigError(where, flag, text, _SEEDS_ALLOWED)
    if len(text) > MAX_FLAG_CHARS:
        raise ConfigError(where, flag, text, f"at most {MAX_FLAG_CHARS} characters; " + _SEEDS_ALLOWED)
    parts = text.split(",")
    if len(parts) > MAX_SEEDS:
        raise ConfigError(where, flag, text, _SEEDS_ALLOWED)
    spans: list[tuple[int, int]] = []
    total = 0
    for raw in parts:
        part = raw.strip()
        if _UINT.fullmatch(part):
            a = b = int(part)
        elif m := _RANGE.fullmatch(part):
            a, b = int(m.group(1)), int(m.group(2))
            if a > b:
                raise ConfigError(where, flag, text, f"ranges a-b with a <= b ({part!r} is empty); " + _SEEDS_ALLOWED)
        else:
            what = "an empty element" if not part else f"{part!r}"
            raise ConfigError(where, flag, text, f"{_SEEDS_ALLOWED} ({what} is neither)")
        if b >= SEED_LIMIT:
            raise ConfigError(where, flag, text, f"seeds below {SEED_LIMIT} ({b} is not); " + _SEEDS_ALLOWED)
        total += b - a + 1
        if total > MAX_SEEDS:
            raise ConfigError(where, flag, text, f"at most {MAX_SEEDS} seeds in all; " + _SEEDS_ALLOWED)
        spans.append((a, b))
    ordered = sorted(spans)
    for (_, b0), (a1, _) in itertools.pairwise(ordered):
        if a1 <= b0:
            raise ConfigError(where, flag, text, f"each seed once (seed {a1} is listed twice); " + _SEEDS_ALLOWED)
    out: list[int] = []
    for a, b in spans:
        out.extend(range(a, b + 1))
    return out


def check_seed_list(seeds: object, flag: str = "seeds", where: str = "evaluate") -> list[int]:
    """A list of seeds given as numbers (e.g. a YAML list): the same rules as :func:`parse_seeds` (whole
    numbers in [0, SEED_LIMIT), each once, at most MAX_SEEDS, at least one)."""
    if (not isinstance(seeds, (list, tuple)) or not seeds or len(seeds) > MAX_SEEDS
            or not all(isinstance(s, int) and not isinstance(s, bool) and 0 <= s < SEED_LIMIT for s in seeds)):
        raise ConfigError(where, flag, seeds, _SEEDS_ALLOWED + " (or a list of such whole numbers)")
    if len(set(seeds)) != len(seeds):
        dup = next(s for i, s in enumerate(seeds) if s in seeds[:i])
        raise ConfigError(where, flag, seeds, f"each seed once (seed {dup} is listed twice)")
    return list(seeds)


def format_seeds(seeds: Iterable[int]) -> str:
    """The seeds as a researcher typed them: runs of three or more consecutive seeds as ``a-b``, the rest
    comma-separated (``[0, 7]`` -> ``"0,7"``, ``[0, 1, 2, 3, 4]`` -> ``"0-4"``; order kept)."""
    seq = list(seeds)
    out: list[str] = []
    i = 0
    while i < len(seq):
        j = i
        while j + 1 < len(seq) and seq[j + 1] == seq[j] + 1:
            j += 1
        if j - i >= 2:
            out.append(f"{seq[i]}-{seq[j]}")
        else:
            out.extend(str(s) for s in seq[i:j + 1])
        i = j + 1
    return ",".join(out)


def _split(where: str, flag: str, text: str, allowed: str, *, empty_ok: bool) -> list[str]:
    if not isinstance(text, str) or len(text) > MAX_FLAG_CHARS:
        raise ConfigError(where, flag, text, allowed)
    if not text.strip():
        if empty_ok:
            return []
        raise ConfigError(where, flag, text, allowed)
    parts = [p.strip() for p in text.split(",")]
    if len(parts) > MAX_LIST:
        raise ConfigError(where, flag, text, f"at most {MAX_LIST} values; " + allowed)
    if any(not p for p in parts):
        raise ConfigError(where, flag, text, allowed + " (no empty element)")
    if len(set(parts)) != len(parts):
        raise ConfigError(where, flag, text, allowed + " (each value once)")
    return parts


def parse_strings(where: str, flag: str, text: str, allowed: str) -> list[str]:
    """Distinct, non-empty comma-separated values (at most :data:`MAX_LIST`), stripped; ``allowed`` says what
    they are in the error."""
    return _split(where, flag, text, allowed, empty_ok=False)


def parse_int(where: str, flag: str, text: str | int, lo: int, hi: int) -> int:
    """A whole number in ``[lo, hi]`` written as digits (``512``, not ``512.7`` or ``5e2``)."""
    allowed = f"a whole number in [{lo}, {hi}]"
    if isinstance(text, bool):
        raise ConfigError(where, flag, text, allowed)
    if isinstance(text, int):
        v = text
    else:
        s = str(text).strip()
        if not re.fullmatch(r"-?[0-9]{1,20}", s):
            raise ConfigError(where, flag, text, allowed)
        v = int(s)
    if not lo <= v <= hi:
        raise ConfigError(where, flag, text, allowed)
    return v


def parse_int_list(where: str, flag: str, text: str, lo: int, hi: int, *, empty_ok: bool = False) -> tuple[int, ...]:
    """Distinct comma-separated whole numbers in ``[lo, hi]``, at most :data:`MAX_LIST`."""
    allowed = f"distinct comma-separated whole numbers in [{lo}, {hi}], at most {MAX_LIST}"
    vals = []
    for p in _split(where, flag, text, allowed, empty_ok=empty_ok):
        if not _UINT.fullmatch(p) or not lo <= int(p) <= hi:
            raise ConfigError(where, flag, text, f"{allowed} ({p!r} is not)")
        vals.append(int(p))
    if len(set(vals)) != len(vals):
        raise ConfigError(where, flag, text, allowed + " (each value once)")
    return tuple(vals)


def parse_float(where: str, flag: str, text: str | float, lo: float, hi: float, *, lo_open: bool = True) -> float:
    """A finite number in ``(lo, hi]`` (``[lo, hi]`` if not ``lo_open``)."""
    allowed = f"a finite number {'>' if lo_open else '>='} {lo:g} and <= {hi:g}"
    try:
        v = float(text)
    except (TypeError, ValueError):
        raise ConfigError(where, flag, text, allowed) from None
    if isinstance(text, bool) or not math.isfinite(v) or v > hi or v < lo or (lo_open and v == lo):
        raise ConfigError(where, flag, text, allowed)
    return v


def parse_float_list(where: str, flag: str, text: str, lo: float, hi: float, *, lo_open: bool = True,
                     empty_ok: bool = True) -> tuple[float, ...]:
    """Distinct comma-separated finite numbers in ``(lo, hi]`` (``[lo, hi]`` if not ``lo_open``), at most
    :data:`MAX_LIST`; ``''`` is the empty list when ``empty_ok``."""
    allowed = (f"distinct comma-separated finite numbers {'>' if lo_open else '>='} {lo:g} and <= {hi:g}, at most "
               f"{MAX_LIST}" + (" ('' for none)" if empty_ok else ""))
    vals = []
    for p in _split(where, flag, text, allowed, empty_ok=empty_ok):
        try:
            v = float(p)
        except ValueError:
            raise ConfigError(where, flag, text, f"{allowed} ({p!r} is not)") from None
        if not math.isfinite(v) or v > hi or v < lo or (lo_open and v == lo):
            raise ConfigError(where, flag, text, f"{allowed} ({p!r} is not)")
        vals.append(v)
    if len(set(vals)) != len(vals):
        raise ConfigError(where, flag, text, allowed + " (each value once)")
    return tuple(vals)


def parse_names(where: str, flag: str, text: str, allowed_names: Iterable[str], *, empty_ok: bool = False,
                ) -> list[str]:
    """Distinct comma-separated names, each one of ``allowed_names``."""
    names = list(allowed_names)
    allowed = "distinct comma-separated names from " + ", ".join(names)
    parts = _split(where, flag, text, allowed, empty_ok=empty_ok)
    for p in parts:
        if p not in names:
            raise ConfigError(where, flag, text, f"{allowed} ({p!r} is not one)")
    return parts


# ---------------------------------------------------------------------------- output paths
def _nearest_existing(p: Path) -> Path:
    q = p.parent
    while not q.exists() and q != q.parent:
        q = q.parent
    return q


def _probe(where: str, flag: str, shown: object, folder: Path, kind: str) -> None:
    """Create and remove a file in ``folder``: the permission bits do not tell (root passes them) whether the file
    system takes new files (``/proc``, ``/sys``, a read-only mount do not). Outputs are written as a temporary
    file in the target's folder and renamed (kairos_gym/output_file.py), so this is the operation they need."""
    try:
        fd, tmp = tempfile.mkstemp(prefix=".kairos-gym-probe.", dir=folder)
    except OSError as e:
        raise ConfigError(where, flag, shown, f"{kind} in a folder that takes new files ({str(folder)!r}: "
                          f"{e.strerror or e})") from None
    os.close(fd)
    with contextlib.suppress(OSError):
        os.unlink(tmp)


def _check_path(where: str, flag: str, path: str, *, folder: bool) -> Path:
    kind = "a folder" if folder else "a file"
    if not isinstance(path, (str, os.PathLike)) or not str(path).strip():
        raise ConfigError(where, flag, path, f"the path of {kind} to write")
    text = str(path)
    if "\0" in text:
        raise ConfigError(where, flag, path, f"the path of {kind} to write (no NUL character)")
    if not folder and text.endswith(("/", os.sep)):
        raise ConfigError(where, flag, path, "the path of a file to write, not of a folder (drop the trailing /)")
    p = Path(text)
    try:
        exists = p.exists()
        if exists:
            if folder and not p.is_dir():
                raise ConfigError(where, flag, path, "a folder to write into, not an existing file")
            if not folder and p.is_dir():
                raise ConfigError(where, flag, path, "the path of a file to write, not an existing folder")
            if not folder and not p.is_file() and os.path.abspath(p) != os.path.abspath(os.devnull):
                raise ConfigError(where, flag, path, "the path of a regular file to write (this is a device, FIFO "
                                  "or socket; '-' writes to standard output where a flag allows it)")
            if not os.access(p, os.W_OK | (os.X_OK if folder else 0)):
                raise ConfigError(where, flag, path, f"{kind} this user may write (permission denied)")
            _probe(where, flag, path, p if folder else p.parent, kind)
            return p
        base = _nearest_existing(p)
        if not base.is_dir():
            raise ConfigError(where, flag, path, f"a path whose parent folders can be created ({str(base)!r} is a "
                              "file, not a folder)")
        if not os.access(base, os.W_OK | os.X_OK):
            raise ConfigError(where, flag, path, f"a path under a folder this user may write ({str(base)!r}: "
                              "permission denied)")
        _probe(where, flag, path, base, kind)
    except OSError as e:  # e.g. a name too long for the file system
        raise ConfigError(where, flag, path, f"the path of {kind} to write ({e.strerror or e})") from None
    return p


def check_outputs(where: str, files: Mapping[str, str | os.PathLike | None] | None = None,
                  folders: Mapping[str, tuple[str | os.PathLike | None, Iterable[str]]] | None = None,
                  *, stdout_ok: Iterable[str] = ()) -> None:
    """Check, before a run, that every output can be written: for each ``flag: path`` of ``files`` (None: not
    asked for; ``'-'`` allowed for the flags in ``stdout_ok``), the path is not a folder and its parent exists or
    can be created, writable; for each ``flag: (path, names)`` of ``folders``, the path is not a file, can be
    created or written, and none of the ``names`` the run writes inside it is an existing folder. Two outputs
    may not share one path. Raises :class:`ConfigError` naming the flag and the path."""
    seen: dict[str, str] = {}
    stdout = set(stdout_ok)

    def claim(flag: str, p: Path, shown: object) -> None:
        key = os.path.abspath(p)
        if key in seen:
            raise ConfigError(where, flag, shown, f"a path no other output uses ({seen[key]} writes it too)")
        seen[key] = flag

    for flag, path in (files or {}).items():
        if path is None:
            continue
        if str(path) == "-" and flag in stdout:
            continue
        claim(flag, _check_path(where, flag, str(path), folder=False), path)
    for flag, (path, names) in (folders or {}).items():
        if path is None:
            continue
        d = _check_path(where, flag, str(path), folder=True)
        claim(flag, d, path)
        for name in names:
            child = d / name
            if child.is_dir():
                raise ConfigError(where, flag, path, f"a folder where {name} can be written ({str(child)!r} is a "
                                  "folder)")
            claim(flag, child, path)
