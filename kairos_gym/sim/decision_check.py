"""The check of a policy's return value before ``Simulator.apply`` acts on it (one rule, one set of messages)."""

from __future__ import annotations

from typing import Any

import numpy as np

from kairos_gym.errors import ConfigError
from kairos_gym.sim.hook import DEFLECT, LARGEST_SAFE, PREFILL, Decision


def index_ok(x: Any, n: int) -> bool:
    """Is ``x`` an integer index in [0, n)? (int or numpy integer, not a bool; cheap: exact int first)."""
    if type(x) is int:
        return 0 <= x < n
    return isinstance(x, np.integer) and 0 <= x < n


def check_decision(decision: Any, label: str, rid: int, n_prefill: int, n_decode: int, menu: tuple[int, ...],
                   menu_set: frozenset[int]) -> bool:
    """True for a well-formed deflection, False for a well-formed prefill-path decision of request ``rid``;
    anything else (not a :class:`Decision`, an unknown path, a node index outside the cluster, a chunk off the
    menu and not ``LARGEST_SAFE``) raises :class:`ConfigError` naming ``label`` (the policy), the request and the
    value. On the hot path of every decision: exact-type checks first, messages built only when raised."""
    if type(decision) is not Decision and not isinstance(decision, Decision):
        raise _bad(label, rid, "decision", decision, "a kairos_gym.sim.Decision: "
                   "Decision.prefill_path(node=None) or Decision.deflect(node, chunk)")
    path = decision.path
    if type(path) is str and path == DEFLECT:
        if not index_ok(decision.decode_node, n_decode):
            raise _bad(label, rid, "decode_node", decision, f"a decode node index from 0 to {n_decode - 1}")
        chunk = decision.chunk
        if not ((type(chunk) is int or isinstance(chunk, np.integer))
                and (chunk == LARGEST_SAFE or chunk in menu_set)):
            raise _bad(label, rid, "chunk", decision, f"a size of the chunk menu {list(menu)} "
                       f"or LARGEST_SAFE ({LARGEST_SAFE})")
        return True
    if type(path) is str and path == PREFILL:
        pn = decision.prefill_node
        if pn is not None and not index_ok(pn, n_prefill):
            raise _bad(label, rid, "prefill_node", decision, f"None or a prefill node index from 0 to {n_prefill - 1}")
        return False
    raise _bad(label, rid, "path", decision, f"path {PREFILL!r} or {DEFLECT!r}")


def _bad(label: str, rid: int, field: str, decision: Any, allowed: str) -> ConfigError:
    return ConfigError(f"{label} decision for request {rid}", field if field == "decision" else f"decision.{field}",
                       decision, allowed)
