"""Field rules shared by the workload config sections: type and range checks with clear errors.

Every config section is a frozen dataclass whose fields each carry one :class:`Rule`. The same rule
checks a value read from a user's dict (``from_dict``, with the user's ``where``) and a value given
directly to the constructor (``__post_init__``), so a config object is valid however it was built.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from dataclasses import dataclass
from numbers import Integral, Real
from typing import Any, ClassVar, TypeVar

from kairos_gym.errors import ConfigError, check_keys

S = TypeVar("S", bound="Section")


@dataclass(frozen=True)
class Number:
    """A finite number (``integer=True``: a whole number) with an optional lower and upper bound.

    ``None`` is accepted only when ``optional``. Integral floats such as ``4096.0`` are accepted for
    integer fields (JSON writes them); ``12.5``, booleans and strings are not. ``high`` (inclusive) is
    the documented upper bound of a size field, checked before anything is allocated from it.
    """

    integer: bool = False
    low: float | None = None
    low_open: bool = False  # True: value > low; False: value >= low
    optional: bool = False
    high: float | None = None  # value <= high

    def allowed(self) -> str:
        what = "a whole number" if self.integer else "a finite number"
        if self.low is not None:
            what += f" {'>' if self.low_open else '>='} {self.low:g}"
        if self.high is not None:
            high = f"{self.high:,.0f}" if self.integer else f"{self.high:g}"
            what += f"{' and' if self.low is not None else ''} <= {high}"
        return what + (", or null" if self.optional else "")

    def check(self, where: str, name: str, value: Any) -> int | float | None:
        if value is None and self.optional:
            return None
        if isinstance(value, bool) or not isinstance(value, Real):
            raise ConfigError(where, name, value, self.allowed())
        try:
            num = float(value)
        except OverflowError:  # an int beyond float range (a 400-digit YAML integer)
            raise ConfigError(where, name, value, self.allowed()) from None
        if not math.isfinite(num):
            raise ConfigError(where, name, value, self.allowed())
        if self.integer:
            if not isinstance(value, Integral) and not num.is_integer():
                raise ConfigError(where, name, value, self.allowed())
            out: int | float = int(value)
        else:
            out = num
        if self.low is not None and (num <= self.low if self.low_open else num < self.low):
            raise ConfigError(where, name, value, self.allowed())
        if self.high is not None and (out if self.integer else num) > self.high:
            raise ConfigError(where, name, value, self.allowed())
        return out


@dataclass(frozen=True)
class Text:
    """A non-empty string."""

    def allowed(self) -> str:
        return "a non-empty string"

    def check(self, where: str, name: str, value: Any) -> str:
        if not isinstance(value, str) or not value.strip():
            raise ConfigError(where, name, value, self.allowed())
        return value


# Physical ranges: every quantity with a physical meaning has an upper bound (and a lower one where zero or a
# denormal would make a time infinite), so that no result can hold ``inf`` or a time beyond any real run.
MIN_BANDWIDTH_BYTES_PER_S, MAX_BANDWIDTH_BYTES_PER_S = 1e6, 1e13
"""Link and swap bandwidth range (bytes/s): 1 MB/s to 10 TB/s (NVLink 4 is 0.9 TB/s, 100 GbE 12.5 GB/s)."""
MAX_SETUP_S = 10.0
"""Largest per-transfer setup latency (seconds); RDMA connection setup is microseconds to milliseconds."""
MAX_TTFT_SLO_S, MAX_TBT_SLO_S = 3600.0, 60.0
"""Largest TTFT SLO (one hour) and TBT SLO (one minute), seconds."""
MAX_TIME_S = 1e7
"""Largest time-out, admission TTFT bound or arrival period (seconds, about 116 days)."""
MIN_RATE, MAX_RATE = 1e-6, 1e6
"""Range of a positive arrival rate (requests/s): one a ~12 days to a million per second."""
MAX_BETA = 100.0
"""Largest LargestSafe factor beta (a step may take beta x the TBT SLO)."""

BANDWIDTH = Number(low=MIN_BANDWIDTH_BYTES_PER_S, high=MAX_BANDWIDTH_BYTES_PER_S)
RATE = Number(low=MIN_RATE, high=MAX_RATE)
RATE_OR_ZERO = Number(low=0.0, high=MAX_RATE)  # below MIN_RATE and not 0 is checked by the arrival's cross check
PERIOD_S = Number(low=0.0, low_open=True, high=MAX_TIME_S)
OPTIONAL_PERIOD_S = Number(low=0.0, low_open=True, high=MAX_TIME_S, optional=True)

POSITIVE = Number(low=0.0, low_open=True)
NON_NEGATIVE = Number(low=0.0)
OPTIONAL_NON_NEGATIVE = Number(low=0.0, optional=True)
POSITIVE_INT = Number(integer=True, low=1)
OPTIONAL_POSITIVE = Number(low=0.0, low_open=True, optional=True)
OPTIONAL_POSITIVE_INT = Number(integer=True, low=1, optional=True)
TEXT = Text()


def require_mapping(where: str, field: str, value: Any) -> Mapping[str, Any]:
    """Return ``value`` if it is a mapping (a YAML section), else raise :class:`ConfigError`."""
    if not isinstance(value, Mapping):
        raise ConfigError(where, field, value, "a mapping (a section of key: value lines)")
    return value


class Section:
    """Base of the config sections: a frozen dataclass with a ``kind`` and one rule per field.

    Subclasses set ``kind`` (the value of the ``kind`` key), ``RULES`` (field name -> rule) and may
    override :meth:`cross_check` for checks that involve several fields.
    """

    kind: ClassVar[str]
    RULES: ClassVar[dict[str, Number | Text]]
    WHERE: ClassVar[str]  # the ``where`` used when the object is built directly in Python

    def __post_init__(self) -> None:
        values = {name: rule.check(self.WHERE, name, getattr(self, name))
                  for name, rule in self.RULES.items()}
        for name, value in values.items():
            object.__setattr__(self, name, value)
        self.cross_check(self.WHERE, values)

    @classmethod
    def cross_check(cls, where: str, values: dict[str, Any]) -> None:
        """Checks that involve more than one field; raise :class:`ConfigError`."""

    @classmethod
    def from_dict(cls: type[S], d: Mapping[str, Any], where: str) -> S:
        """Build the section from a parsed dict (``kind`` included or not), checking every field."""
        check_keys(where, dict(d), {"kind", *cls.RULES})
        if d.get("kind", cls.kind) != cls.kind:
            raise ConfigError(where, "kind", d["kind"], repr(cls.kind))
        values: dict[str, Any] = {}
        for f in dataclasses.fields(cls):  # type: ignore[arg-type]
            if f.name in d:
                raw = d[f.name]
            elif f.default is not dataclasses.MISSING:
                raw = f.default
            else:
                raise ConfigError(where, f.name, "<missing>", f"a required field of kind {cls.kind!r}: "
                                  + cls.RULES[f.name].allowed())
            values[f.name] = cls.RULES[f.name].check(where, f.name, raw)
        cls.cross_check(where, values)
        return cls(**values)

    def to_dict(self) -> dict[str, Any]:
        """Plain-Python dict (``kind`` first) that :meth:`from_dict` turns back into an equal object."""
        out: dict[str, Any] = {"kind": self.kind}
        out.update({name: getattr(self, name) for name in self.RULES})
        return out

    def describe(self) -> str:
        """Short provenance text, e.g. ``gamma(rate=8,cv=4)``."""
        args = ",".join(f"{name}={fmt_value(getattr(self, name))}" for name in self.RULES)
        return f"{self.kind}({args})"


def fmt_value(value: Any) -> str:
    """Exact, compact text for a value in provenance strings (``8.0`` -> ``8``, ``0.25`` -> ``0.25``)."""
    if isinstance(value, float):
        if value.is_integer() and abs(value) < 1e15:
            return str(int(value))
        return repr(value)
    return str(value)


def build_section(
    where: str, field: str, raw: Any, kinds: dict[str, type[Section]], default_kind: str
) -> Section:
    """Build section ``field`` of ``where`` from ``raw`` (``None``: all defaults).

    The class is picked by ``raw['kind']`` (``default_kind`` if absent).
    """
    d = require_mapping(where, field, {} if raw is None else raw)
    where = f"{where}.{field}"
    kind = d.get("kind", default_kind)
    if not isinstance(kind, str) or kind not in kinds:
        raise ConfigError(where, "kind", kind, "one of " + ", ".join(kinds))
    return kinds[kind].from_dict(d, where)
