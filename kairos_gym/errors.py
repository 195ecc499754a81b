"""One error type for every kind of bad input (config, trace file, action, CLI flag).

Every message names where the bad value came from (file or config section), the field, the value,
and what is allowed, so a user can fix it without reading a traceback.
"""

from __future__ import annotations

import reprlib
from typing import Any

MAX_VALUE_REPR = 200
"""Longest rendering of a bad value in a message (characters): a huge or deeply nested value is abbreviated."""

_repr = reprlib.Repr()
_repr.maxlevel = 3
_repr.maxstring = 120
_repr.maxother = 120
_repr.maxlong = 60
for _attr in ("maxdict", "maxlist", "maxtuple", "maxset", "maxfrozenset", "maxdeque", "maxarray"):
    setattr(_repr, _attr, 8)


def bounded_repr(value: Any) -> str:
    """``repr(value)`` cut to at most MAX_VALUE_REPR characters (nested containers abbreviated with ...)."""
    try:
        text = _repr.repr(value)
    except Exception:  # a broken __repr__ must not hide the real error
        text = f"<{type(value).__name__}>"
    return text if len(text) <= MAX_VALUE_REPR else text[: MAX_VALUE_REPR - 3] + "..."


class ConfigError(ValueError):
    """Bad user input. A ``ValueError`` so generic callers can catch it. The message quotes the value through
    :func:`bounded_repr`, so it stays short whatever the value."""

    def __init__(self, where: str, field: str, value: Any, allowed: str) -> None:
        self.where = where
        self.field = field
        self.value = value
        self.allowed = allowed
        super().__init__(f"{where}: {field} = {bounded_repr(value)} is not valid; allowed: {allowed}")

    def __reduce__(self) -> tuple[Any, ...]:
        """Pickled with its four fields (not the message), so it crosses a process or Ray boundary intact
        (a worker's ConfigError is raised again in the driver, not turned into a deserialization error)."""
        return (type(self), (self.where, self.field, self.value, self.allowed))


def check_keys(where: str, given: dict[str, Any], allowed: set[str] | list[str]) -> None:
    """Raise :class:`ConfigError` naming the first unknown key of ``given``."""
    allowed_set = set(allowed)
    for key in given:
        if key not in allowed_set:
            raise ConfigError(where, str(key), given[key], f"one of the keys {sorted(allowed_set)}")
