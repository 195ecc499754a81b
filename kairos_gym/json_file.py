"""Bounded reading of a JSON data file a user hands a command (``--resume`` files): one ConfigError for a missing
file, one larger than the bound, or one that is not JSON. Only data is read (``json.loads``: no code runs)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from kairos_gym.errors import ConfigError


def read_json_file(where: str, field: str, path: Path | str, max_bytes: int, what: str) -> Any:
    """The parsed content of ``path`` (at most ``max_bytes`` bytes); ``what`` names the expected file in errors
    (e.g. ``"file written by kairos-gym precision --json"``: "an existing ...", "a JSON ...")."""
    p = Path(path)
    if not p.is_file():
        raise ConfigError(where, field, str(p), f"an existing {what}")
    if p.stat().st_size > max_bytes:
        raise ConfigError(where, field, str(p), f"at most {max_bytes} bytes")
    try:
        return json.loads(p.read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        raise ConfigError(where, field, str(p), f"a JSON {what} ({e})") from None


__all__ = ["read_json_file"]
