"""Progress bars of the long commands (``evaluate``, ``demo``, ``sweep``, ``leaderboard``, ``results``).

A :class:`RunProgress` counts runs (one policy on one seed); it draws a tqdm bar on stderr only when
stderr is a terminal and ``--no-progress`` is not given, so stdout stays clean for piping tables. It is
updated once per run, not per event, so it costs nothing measurable; a run of a slow policy (the Oracle,
which rolls every option forward) gets a second bar counting its decisions.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import IO, Any

SLOW_POLICIES = frozenset({"oracle"})
"""Policies whose runs get a per-decision bar (each decision costs many simulated decisions)."""


class RunProgress:
    """Counts runs; ``start(total)`` once the number of runs is known, ``run(label)`` around each run."""

    def __init__(self, desc: str, enabled: bool = True, stream: IO[str] | None = None) -> None:
        self.stream = stream if stream is not None else sys.stderr
        self.enabled = bool(enabled)
        self.desc = desc
        self.done = 0
        self.total: int | None = None
        self._bar: Any = None

    def start(self, total: int) -> None:
        """Announce ``total`` runs (may be called again to add to it)."""
        self.total = total if self.total is None else self.total + total
        if not self.enabled:
            return
        if self._bar is None:
            from tqdm import tqdm

            self._bar = tqdm(total=self.total, desc=self.desc, unit="run", file=self.stream, dynamic_ncols=True)
        else:
            self._bar.total = self.total
            self._bar.refresh()

    @contextmanager
    def run(self, label: str, policy: str = "", decisions: int | None = None) -> Iterator[Callable[[], Any] | None]:
        """Around one run: yields a per-decision callback for a slow policy (else None); counts the run."""
        tick = None
        inner = None
        if self._bar is not None:
            self._bar.set_postfix_str(label, refresh=True)
            if policy in SLOW_POLICIES:
                from tqdm import tqdm

                inner = tqdm(total=decisions, desc=f"  {label}", unit="decision", file=self.stream, leave=False,
                             position=1, mininterval=0.5, dynamic_ncols=True)
                tick = inner.update
        try:
            yield tick
        finally:
            if inner is not None:
                inner.close()
        self.done += 1
        if self._bar is not None:
            self._bar.update(1)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
            self._bar = None

    def __enter__(self) -> RunProgress:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def progress_enabled(no_progress: bool, stream: IO[str] | None = None) -> bool:
    """Bars only on a terminal, and not with ``--no-progress``."""
    s = stream if stream is not None else sys.stderr
    return not no_progress and bool(getattr(s, "isatty", lambda: False)())


def or_silent(progress: RunProgress | None) -> RunProgress:
    """``progress``, or a counter that draws nothing (the library functions' default)."""
    return progress if progress is not None else RunProgress("", enabled=False)
