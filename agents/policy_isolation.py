"""Running a submitted policy in a process of its own (``--isolate``), so one bad submission cannot stop or take
over the command that runs it.

:func:`run_isolated` forks a child that runs the submission on one instance under the guard of
:mod:`kairos_gym.agents.policy_guard` and, in addition, under operating-system limits set in the child before any
policy code runs: address space at most ``memory_bytes`` (``RLIMIT_AS``) and CPU time at most the run's time
limit plus a margin (``RLIMIT_CPU``). The child sends its result back as JSON text (never a pickle: the parent
does not unpickle anything the policy's process wrote). A child that crashes, is killed by a limit, outlives the
run limit or sends anything but a result is one :class:`~kairos_gym.errors.ConfigError` naming the submission.
The result equals the in-process run's (same simulator, same seed; JSON keeps every float exactly).

Linux and other POSIX systems with ``fork``; elsewhere ``--isolate`` is refused.
"""

from __future__ import annotations

import json
import math
import multiprocessing as mp
import os
import sys
from typing import Any

from kairos_gym.errors import ConfigError

DEFAULT_MEMORY_BYTES = 8 << 30
"""Default address-space limit of an isolated submission (bytes, 8 GiB: the simulator and torch fit well within)."""
MIN_MEMORY_BYTES, MAX_MEMORY_BYTES = 256 << 20, 1 << 40
"""Range of ``--isolate-memory`` (bytes): 256 MiB to 1 TiB."""
CPU_MARGIN_S = 30
"""CPU seconds an isolated run may use beyond its wall-time limit before the kernel stops it."""
MAX_RESULT_BYTES = 16 << 20
"""Largest result text a child may send (bytes)."""


def _encode(value: Any) -> Any:
    """JSON-safe copy of a summary: non-finite floats as tagged strings (JSON has none), tuples as lists."""
    if isinstance(value, float) and not math.isfinite(value):
        return {"__float__": repr(value)}
    if isinstance(value, dict):
        return {str(k): _encode(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_encode(v) for v in value]
    if hasattr(value, "item") and callable(value.item):  # numpy scalars
        return _encode(value.item())
    return value


def _decode(value: Any) -> Any:
    if isinstance(value, dict):
        if set(value) == {"__float__"} and value["__float__"] in ("nan", "inf", "-inf"):
            return float(value["__float__"])
        return {k: _decode(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_decode(v) for v in value]
    return value


def _child(conn: Any, policy: Any, scenario: Any, seed: int, memory_bytes: int) -> None:
    import dataclasses
    import resource

    from kairos_gym.agents.policy_file_loader import run_checked

    policy = dataclasses.replace(policy, isolate_memory=None)  # this child is the isolation
    resource.setrlimit(resource.RLIMIT_AS, (memory_bytes, memory_bytes))
    cpu = int(policy.limits.run_s) + CPU_MARGIN_S
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 5))
    try:
        out = {"ok": _encode(run_checked(policy, scenario, seed))}
    except ConfigError as e:
        out = {"error": {"where": e.where, "field": e.field, "allowed": e.allowed}}
    except BaseException as e:
        out = {"error": {"where": policy.where, "field": policy.flag,
                         "allowed": f"a policy that runs isolated; the child raised {type(e).__name__}: {e}"}}
    try:
        conn.send_bytes(json.dumps(out).encode("utf-8"))
    finally:
        conn.close()
        os._exit(0)


def check_isolation(where: str, memory_bytes: Any) -> int:
    """``memory_bytes`` if isolation is available here and it is within range; else a ConfigError."""
    if "fork" not in mp.get_all_start_methods() or sys.platform == "win32":
        raise ConfigError(where, "--isolate", True, "a POSIX system with fork (isolation is not available here)")
    if isinstance(memory_bytes, bool) or not isinstance(memory_bytes, int) or \
            not MIN_MEMORY_BYTES <= memory_bytes <= MAX_MEMORY_BYTES:
        raise ConfigError(where, "--isolate-memory", memory_bytes,
                          f"a whole number of bytes from {MIN_MEMORY_BYTES} to {MAX_MEMORY_BYTES}")
    return memory_bytes


def run_isolated(policy: Any, scenario: Any, seed: int, memory_bytes: int = DEFAULT_MEMORY_BYTES) -> dict[str, Any]:
    """The summary of one guarded run of ``policy`` (an :class:`~kairos_gym.agents.policy_file_loader.
    ExternalPolicy`) on ``scenario`` with ``seed``, computed in a forked child under the limits above."""
    check_isolation(policy.where, memory_bytes)
    ctx = mp.get_context("fork")
    parent, child = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=_child, args=(child, policy, scenario, seed, memory_bytes), daemon=True)
    proc.start()
    child.close()
    wait_s = policy.limits.run_s + CPU_MARGIN_S
    try:
        if not parent.poll(wait_s):
            raise ConfigError(policy.where, policy.flag, policy.spec,
                              f"a policy whose isolated run ends within {wait_s:g} s (it did not; stopped)")
        try:
            raw = parent.recv_bytes(MAX_RESULT_BYTES)
        except (EOFError, OSError) as e:
            proc.join(5)
            raise ConfigError(policy.where, policy.flag, policy.spec,
                              f"a policy whose isolated run completes; the process ended with exit code "
                              f"{proc.exitcode} ({type(e).__name__}: a crash or an operating-system limit: memory "
                              f"{memory_bytes} bytes, CPU {int(policy.limits.run_s) + CPU_MARGIN_S} s)") from None
    finally:
        parent.close()
        if proc.is_alive():
            proc.kill()
        proc.join(5)
    try:
        out = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        raise ConfigError(policy.where, policy.flag, policy.spec, "a policy whose isolated run sends a result "
                          "(the child sent something else)") from None
    if isinstance(out, dict) and isinstance(out.get("error"), dict):
        err = out["error"]
        raise ConfigError(str(err.get("where")), str(err.get("field")), policy.spec, str(err.get("allowed")))
    if not isinstance(out, dict) or not isinstance(out.get("ok"), dict):
        raise ConfigError(policy.where, policy.flag, policy.spec, "a policy whose isolated run sends a result")
    return _decode(out["ok"])


__all__ = ["DEFAULT_MEMORY_BYTES", "MAX_MEMORY_BYTES", "MIN_MEMORY_BYTES", "check_isolation", "run_isolated"]
