"""Bounded, iterative reading of every JSON file a user hands the project (``--resume`` files, ``--oracle-cache``,
``--reference``, a checkpoint's ``policy.json``): one :class:`~kairos_gym.errors.ConfigError` for a missing file,
a special file, one larger than its bound, one nested deeper than :data:`MAX_DEPTH`, one with a key written twice in
one object, or one that is not JSON. Only data is read (``json.loads``: no code runs).

The bounds, checked before anything is parsed:

- size: at most the caller's ``max_bytes`` (each reader documents its own); a regular file only (``/dev/urandom``,
  a FIFO or a folder is refused before one byte is read), and never more than ``max_bytes + 1`` bytes are read;
- nesting: at most :data:`MAX_DEPTH` levels of objects and arrays, counted by one iterative pass over the text
  (Python's parser is recursive: a 100,000-deep file would otherwise raise RecursionError);
- duplicate keys in one object are refused (``json.loads`` would keep the last one silently);
- ``NaN``/``Infinity`` are refused where the caller asks for finite numbers (``finite=True``).
"""

from __future__ import annotations

import json
import stat
from pathlib import Path
from typing import Any

from kairos_gym.errors import ConfigError

MAX_DEPTH = 64
"""Deepest nesting of JSON objects and arrays accepted (the project's own files use at most 8)."""


def json_depth(text: str) -> int:
    """The deepest nesting of objects and arrays in ``text``, in one iterative pass (brackets inside strings,
    escaped quotes included, do not count). Stops counting past :data:`MAX_DEPTH` + 1."""
    depth = deepest = 0
    in_string = escaped = False
    for ch in text:
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch in "[{":
            depth += 1
            if depth > deepest:
                deepest = depth
                if deepest > MAX_DEPTH:
                    return deepest
        elif ch in "]}":
            depth -= 1
    return deepest


class _DuplicateKey(ValueError):
    pass


def _object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in pairs:
        if k in out:
            raise _DuplicateKey(k)
        out[k] = v
    return out


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a finite number")


def parse_json_text(where: str, field: str, text: str, what: str, *, finite: bool = False) -> Any:
    """Parse ``text`` under the module's bounds (nesting, duplicate keys; NaN/Infinity refused with ``finite``);
    ``what`` names the expected content in errors (e.g. ``"file written by kairos-gym precision --json"``)."""
    if json_depth(text) > MAX_DEPTH:
        raise ConfigError(where, field, f"JSON nested deeper than {MAX_DEPTH} levels",
                          f"a JSON {what} nested at most {MAX_DEPTH} levels")
    try:
        return json.loads(text, object_pairs_hook=_object, parse_constant=_no_constant if finite else None)
    except _DuplicateKey as e:
        raise ConfigError(where, field, f"the key {e.args[0]!r} twice in one object",
                          f"a JSON {what} with each key once per object") from None
    except (ValueError, RecursionError) as e:
        raise ConfigError(where, field, str(e)[:160], f"a JSON {what}") from None


def read_json_file(where: str, field: str, path: Path | str, max_bytes: int, what: str, *,
                   finite: bool = False) -> Any:
    """The parsed content of the regular file ``path`` (at most ``max_bytes`` bytes, UTF-8; see the module doc);
    ``what`` names the expected file in errors ("an existing ...", "a JSON ...")."""
    p = Path(path)
    try:
        st = p.stat()
    except OSError:
        raise ConfigError(where, field, str(p), f"an existing {what}") from None
    if not stat.S_ISREG(st.st_mode):
        raise ConfigError(where, field, str(p), f"an existing {what} (a regular file, not a folder or device)")
    if st.st_size > max_bytes:
        raise ConfigError(where, field, f"{p} ({st.st_size} bytes)", f"a {what} of at most {max_bytes} bytes")
    try:
        with open(p, "rb") as f:
            raw = f.read(max_bytes + 1)
    except OSError as e:
        raise ConfigError(where, field, str(p), f"a readable {what} ({e.strerror})") from None
    if len(raw) > max_bytes:  # grew since stat
        raise ConfigError(where, field, str(p), f"a {what} of at most {max_bytes} bytes")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise ConfigError(where, field, f"{p}: byte 0x{raw[e.start]:02x} at offset {e.start}",
                          f"a UTF-8 JSON {what}") from None
    return parse_json_text(where, field, text, what, finite=finite)


__all__ = ["MAX_DEPTH", "json_depth", "parse_json_text", "read_json_file"]
