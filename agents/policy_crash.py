"""What a crash of a user's policy says: the exception, as the policy's author knows the objects, and the line of
the user's file it came from.

A ``decide`` that raises is reported (:func:`kairos_gym.agents.policy_file_loader.run_external`) as one line:
``AttributeError: DecisionContext has no attribute 'queue' (its fields: now_s, request, ...) at my_policy.py:14 in
decide: return ctx.queue``. The file and line are those of the deepest frame of the traceback inside the user's
file (the line that raised, or the user's call into the library that raised); the simulator's own context class
(``LazyDecisionContext``, an implementation detail) is named ``DecisionContext``, the type policies are written
against (docs/policies.md).
"""

from __future__ import annotations

import os
import traceback
from pathlib import Path

from kairos_gym.sim.hook import DecisionContext

INTERNAL_NAMES = {"LazyDecisionContext": "DecisionContext"}
"""Class names of the simulator's internals a policy sees under their public name."""


def user_frame(exc: BaseException, source: str | os.PathLike[str] | None) -> traceback.FrameSummary | None:
    """The deepest frame of ``exc``'s traceback in the file ``source`` (None: no such frame, or no file)."""
    if source is None:
        return None
    target = Path(source).resolve()
    found = None
    for frame in traceback.extract_tb(exc.__traceback__):
        try:
            if Path(frame.filename).resolve() == target:
                found = frame
        except OSError:
            continue
    return found


def describe_exception(exc: BaseException) -> str:
    """``"Type: message"``, with the context's internal class named as policies know it; a missing attribute of
    the context lists the fields it has."""
    name = getattr(exc, "name", None)
    if isinstance(exc, AttributeError) and isinstance(getattr(exc, "obj", None), DecisionContext) and name:
        text = (f"DecisionContext has no attribute {name!r} (its fields: {', '.join(DecisionContext._fields)}; "
                "docs/policies.md)")
    else:
        text = str(exc)
        for internal, public in INTERNAL_NAMES.items():
            text = text.replace(internal, public)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def shown_path(path: str) -> str:
    """``path`` relative to the working folder when it lies inside it, else as it is."""
    try:
        rel = os.path.relpath(path)
    except ValueError:  # another drive (Windows)
        return path
    return path if rel.startswith("..") else rel


def crash_report(exc: BaseException, source: str | os.PathLike[str] | None) -> str:
    """:func:`describe_exception`, then ``at FILE:LINE in FUNCTION: SOURCE LINE`` of the user's frame (when the
    traceback passes through ``source``)."""
    text = describe_exception(exc)
    frame = user_frame(exc, source)
    if frame is None:
        return text
    line = (frame.line or "").strip()
    return f"{text} at {shown_path(frame.filename)}:{frame.lineno} in {frame.name}" + (f": {line}" if line else "")


__all__ = ["INTERNAL_NAMES", "crash_report", "describe_exception", "shown_path", "user_frame"]
