"""One error type for every kind of bad input (config, trace file, action, CLI flag).

Every message names where the bad value came from (file or config section), the field, the value,
and what is allowed, so a user can fix it without reading a traceback.
"""

from __future__ import annotations

from typing import Any


class ConfigError(ValueError):
    """Bad user input. A ``ValueError`` so generic callers can catch it."""

    def __init__(self, where: str, field: str, value: Any, allowed: str) -> None:
        self.where = where
        self.field = field
        self.value = value
        self.allowed = allowed
        super().__init__(f"{where}: {field} = {value!r} is not valid; allowed: {allowed}")


def check_keys(where: str, given: dict[str, Any], allowed: set[str] | list[str]) -> None:
    """Raise :class:`ConfigError` naming the first unknown key of ``given``."""
    allowed_set = set(allowed)
    for key in given:
        if key not in allowed_set:
            raise ConfigError(where, str(key), given[key], f"one of the keys {sorted(allowed_set)}")
