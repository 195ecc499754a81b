"""The guard a submitted policy runs under (``--policy FILE.py:Class``, ``--checkpoint``): time limits per decision
and per run, and the policy's own exits reported as its error.

A policy handed to the leaderboard or the precision protocol is code from outside the project. :class:`GuardedPolicy`
wraps its ``decide`` so that

- one decision takes at most ``limits.decision_s`` seconds of wall time, and one run at most ``limits.run_s``;
  past either, the run stops with :class:`PolicyTimeout`. In the main thread of a POSIX process (the serial
  driver, every worker of the process pool) a timer interrupts a ``decide`` that loops; elsewhere the limit is
  checked when ``decide`` returns;
- ``SystemExit``, ``KeyboardInterrupt`` and ``GeneratorExit`` raised inside ``decide`` (``sys.exit(3)`` in a
  policy) become :class:`PolicyFailure`, so a submission cannot end the whole command with its own exit code.

Both are ordinary exceptions that :func:`kairos_gym.agents.policy_file_loader.run_checked` reports as one error
naming the flag and the submission.
"""

from __future__ import annotations

import signal
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from kairos_gym.errors import ConfigError
from kairos_gym.sim.hook import Decision, DecisionContext

DEFAULT_DECISION_S = 1.0
"""Default wall-time limit of one ``decide`` call (seconds); the built-in policies take microseconds, the Oracle
(not a submission) seconds."""
DEFAULT_RUN_S = 900.0
"""Default wall-time limit of one run of a submission on one instance (seconds)."""
MAX_LIMIT_S = 86_400.0
"""Largest limit either flag accepts (one day)."""

_EXITS = (SystemExit, KeyboardInterrupt, GeneratorExit)


class PolicyTimeout(Exception):
    """A submitted policy went past a time limit."""


class PolicyFailure(Exception):
    """A submitted policy tried to end the process (``sys.exit``, ``KeyboardInterrupt``) from ``decide``."""


class _Alarm(Exception):
    pass


@dataclass(frozen=True)
class Limits:
    """Wall-time limits of a submission (seconds, > 0 and <= :data:`MAX_LIMIT_S`)."""

    decision_s: float = DEFAULT_DECISION_S
    run_s: float = DEFAULT_RUN_S

    def __post_init__(self) -> None:
        for name, flag in (("decision_s", "--decision-time-limit"), ("run_s", "--run-time-limit")):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 < v <= MAX_LIMIT_S:
                raise ConfigError("policy limits", flag, v, f"a number of seconds > 0 and <= {MAX_LIMIT_S:g}")


def _can_interrupt() -> bool:
    return hasattr(signal, "setitimer") and threading.current_thread() is threading.main_thread()


@contextmanager
def _interrupt_after(seconds: float) -> Iterator[None]:
    """Raise :class:`_Alarm` in this (main) thread after ``seconds`` of wall time; restores the old handler."""
    def ring(_signum: int, _frame: Any) -> None:
        raise _Alarm

    old = signal.signal(signal.SIGALRM, ring)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0.0)
        signal.signal(signal.SIGALRM, old)


class GuardedDecide:
    """A policy's bound ``decide`` under :class:`Limits`; the run's clock starts at construction."""

    def __init__(self, decide: Callable[[DecisionContext], Decision], limits: Limits) -> None:
        self.inner = decide
        self.limits = limits
        self.start = time.perf_counter()
        self.interrupt = _can_interrupt()

    def __call__(self, ctx: DecisionContext) -> Decision:
        t0 = time.perf_counter()
        left = self.limits.run_s - (t0 - self.start)
        if left <= 0:
            raise PolicyTimeout(f"the run took more than {self.limits.run_s:g} s (--run-time-limit)")
        budget = min(self.limits.decision_s, left)
        try:
            if self.interrupt:
                with _interrupt_after(budget):
                    d = self.inner(ctx)
            else:
                d = self.inner(ctx)
        except _Alarm:
            raise self._timeout(budget) from None
        except _EXITS as e:
            raise PolicyFailure(f"decide(ctx) raised {type(e).__name__}({e}) (a policy may not end the process)") \
                from None
        if time.perf_counter() - t0 > budget:
            raise self._timeout(budget)
        return d

    def _timeout(self, budget: float) -> PolicyTimeout:
        if budget < self.limits.decision_s:
            return PolicyTimeout(f"the run took more than {self.limits.run_s:g} s (--run-time-limit)")
        return PolicyTimeout(f"one decide(ctx) call took more than {self.limits.decision_s:g} s "
                             "(--decision-time-limit)")


class GuardedProxy:
    """A policy whose instance takes no attribute (a class with ``__slots__`` and no ``decide`` slot): ``decide``
    is the guarded one, every other attribute the policy's own."""

    def __init__(self, policy: Any, decide: GuardedDecide) -> None:
        object.__setattr__(self, "_policy", policy)
        object.__setattr__(self, "decide", decide)

    def __getattr__(self, name: str) -> Any:
        return getattr(object.__getattribute__(self, "_policy"), name)

    def __setattr__(self, name: str, value: Any) -> None:
        setattr(object.__getattribute__(self, "_policy"), name, value)


def guard(policy: Any, limits: Limits) -> Any:
    """``policy`` with its ``decide`` under ``limits``: set on the instance, so the policy keeps its class (a
    BasePolicy is still reset and timed as one); a policy whose instance takes no such attribute (``__slots__``)
    comes back wrapped in a :class:`GuardedProxy`."""
    decide = GuardedDecide(policy.decide, limits)
    try:
        policy.decide = decide
    except AttributeError:
        return GuardedProxy(policy, decide)
    return policy


__all__ = ["DEFAULT_DECISION_S", "DEFAULT_RUN_S", "MAX_LIMIT_S", "GuardedDecide", "GuardedProxy", "Limits",
           "PolicyFailure", "PolicyTimeout", "guard"]
