"""Progress of the long commands (``evaluate``, ``demo``, ``sweep``, ``leaderboard``, ``results``).

A :class:`RunProgress` counts runs (one policy on one seed) and reports them on stderr, so stdout stays clean for
piping tables. It draws a tqdm bar when stderr is a terminal; with ``lines=True`` it writes plain lines instead
(stderr is a log file or a pipe: a bar would be nothing or escape codes), one each time another
:data:`LINE_EVERY_FRACTION` of the runs has finished or, between those, when a run has finished and
:data:`LINE_EVERY_S` have passed since the last line, each with the runs done, the time elapsed and an estimate of
the time left. ``--no-progress`` silences both. It is updated once per run, not per event, so it costs nothing
measurable; on a terminal a run of a slow policy (the Oracle, which rolls every option forward) gets a second bar
counting its decisions. :func:`command_progress` picks the kind for a command.
"""

from __future__ import annotations

import math
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import IO, Any

SLOW_POLICIES = frozenset({"oracle"})
"""Policies whose runs get a per-decision bar (each decision costs many simulated decisions)."""
LINE_EVERY_FRACTION = 0.05
"""Lines mode: a line each time this fraction of the announced runs has finished (5%)."""
LINE_EVERY_S = 30.0
"""Lines mode: also a line when a run has finished and this many seconds have passed since the last line."""


def duration_text(seconds: float) -> str:
    """``seconds`` (>= 0) as people read a duration: ``"45 s"``, ``"3 min 05 s"``, ``"1 h 02 min"``."""
    s = max(0, round(seconds))
    if s < 60:
        return f"{s} s"
    if s < 3600:
        return f"{s // 60} min {s % 60:02d} s"
    return f"{s // 3600} h {s % 3600 // 60:02d} min"


class RunProgress:
    """Counts runs; ``start(total)`` once the number of runs is known, ``run(label)`` around each run.

    ``enabled``: report at all; ``lines``: as plain lines (see the module docstring) rather than a tqdm bar;
    ``clock``: the time source of the lines' elapsed time and estimate (seconds; a test passes its own)."""

    def __init__(self, desc: str, enabled: bool = True, stream: IO[str] | None = None, *, lines: bool = False,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.stream = stream if stream is not None else sys.stderr
        self.enabled = bool(enabled)
        self.lines = bool(lines)
        self.desc = desc
        self.done = 0
        self.total: int | None = None
        self._bar: Any = None
        self._clock = clock
        self._t0: float | None = None  # clock at the first start()
        self._last_line: tuple[int, float] = (0, 0.0)  # (runs done, clock) at the last line written

    def start(self, total: int) -> None:
        """Announce ``total`` runs (may be called again to add to it)."""
        self.total = total if self.total is None else self.total + total
        if not self.enabled:
            return
        if self.lines:
            if self._t0 is None:
                self._t0 = self._clock()
                self._last_line = (0, self._t0)
                print(f"{self.desc}: {self.total} runs to do (a line every {LINE_EVERY_FRACTION:.0%} of them or "
                      f"{LINE_EVERY_S:g} s)", file=self.stream, flush=True)
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
        elif self.enabled and self.lines:
            self._maybe_line()

    def _maybe_line(self) -> None:
        """Lines mode: write a line if another :data:`LINE_EVERY_FRACTION` of the runs is done, the last run is
        done, or :data:`LINE_EVERY_S` have passed since the last line."""
        now = self._clock()
        t0 = self._t0 if self._t0 is not None else now
        total = self.total or 0
        last_done, last_t = self._last_line
        step = max(1, math.ceil(total * LINE_EVERY_FRACTION))
        if not (self.done - last_done >= step or self.done == total or now - last_t >= LINE_EVERY_S):
            return
        self._last_line = (self.done, now)
        elapsed = now - t0
        text = f"{self.desc}: {self.done}/{total} runs ({100 * self.done // total if total else 100}%), " \
               f"{duration_text(elapsed)} elapsed"
        if 0 < self.done < total:
            text += f", about {duration_text(elapsed / self.done * (total - self.done))} left"
        elif self.done >= total:
            text += ", done"
        print(text, file=self.stream, flush=True)

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


def command_progress(desc: str, no_progress: bool, stream: IO[str] | None = None) -> RunProgress:
    """The progress of a command that reports either way: a bar when ``stream`` (default stderr) is a terminal,
    else lines; nothing with ``--no-progress``."""
    s = stream if stream is not None else sys.stderr
    return RunProgress(desc, enabled=not no_progress, stream=s, lines=not progress_enabled(no_progress, s))


def or_silent(progress: RunProgress | None) -> RunProgress:
    """``progress``, or a counter that draws nothing (the library functions' default)."""
    return progress if progress is not None else RunProgress("", enabled=False)
