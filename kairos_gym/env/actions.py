"""Actions: the ``Discrete`` index <-> :class:`~kairos_gym.sim.hook.Decision` mapping, and the mask.

Layout with ``D`` decode nodes, chunk menu ``c_0 < ... < c_{K-1}`` and ``L = 1`` when
``deflection.largest_safe_action`` is on (else 0); ``W = K + L`` actions per decode node::

    0                      prefill path (join the prefill node with the fewest queued tokens)
    1 + j*W + i, i < K     deflect to decode node j in fixed chunks of c_i tokens
    1 + j*W + K            deflect to decode node j with the LargestSafe schedule (only when L = 1)

An action is valid (mask 1) when it is the prefill path or its decode node accepts a deflection now
(``DecisionContext.decode[j].can_deflect``: no deflection in flight, batch not full, KV fits).
"""

from __future__ import annotations

import sys
import warnings

import numpy as np

from kairos_gym.errors import ConfigError
from kairos_gym.scenario import ScenarioConfig
from kairos_gym.sim.hook import LARGEST_SAFE, Decision, DecisionContext


class MaskedActionWarning(UserWarning):
    """An env was stepped with an action its mask forbids (a client that does not read the mask, e.g. plain PPO or
    CleanRL's ppo.py): the request goes down the prefill path and the step counts in ``n_invalid_actions``.
    Warned once per env; silence it with ``warnings.filterwarnings("ignore", category=MaskedActionWarning)``."""


def warn_masked_action(where: str, action: int, what: str) -> None:
    """Issue the :class:`MaskedActionWarning` for ``action`` (``what``: its description), attributed to the first
    caller outside kairos_gym and gymnasium (the client's own step call, not a wrapper's)."""
    frame, level = sys._getframe(1), 2
    while frame is not None and frame.f_globals.get("__name__", "").partition(".")[0] in ("kairos_gym", "gymnasium"):
        frame, level = frame.f_back, level + 1
    warnings.warn(f"{where}: action {action} ({what}) is masked out at this decision; the request goes down the "
                  "prefill path instead and the step counts in info['n_invalid_actions'] (info['invalid_action'] is "
                  "True). Sample with env.action_space.sample(mask=info['action_mask']) or use a masking algorithm "
                  "(MaskablePPO). Warned once per env (docs/env.md, Actions).", MaskedActionWarning, stacklevel=level)


MAX_CACHED_MASKS = 4096
"""Mask rows kept per layout (one per pattern of deflectable nodes; with many decode nodes the patterns are
too many to keep them all: at most 4096 x (1 + D x W) bytes)."""


class ActionLayout:
    """The action table of one scenario."""

    def __init__(self, scenario: ScenarioConfig) -> None:
        self.D = scenario.cluster.decode_nodes
        self.menu = tuple(scenario.deflection.chunk_menu)
        self.K = len(self.menu)
        self.largest_safe = bool(scenario.deflection.largest_safe_action)
        self.W = self.K + (1 if self.largest_safe else 0)
        self.n = 1 + self.D * self.W
        decisions = [Decision.prefill_path()]
        node = [-1]
        chunk = [0]
        for j in range(self.D):
            for c in self.menu:
                decisions.append(Decision.deflect(j, c))
                node.append(j)
                chunk.append(c)
            if self.largest_safe:
                decisions.append(Decision.deflect(j, LARGEST_SAFE))
                node.append(j)
                chunk.append(LARGEST_SAFE)
        self.decisions: tuple[Decision, ...] = tuple(decisions)
        self.node = np.array(node, dtype=np.intp)  # decode node of each action (-1: prefill path)
        self.chunk = tuple(chunk)  # chunk of each action (0: prefill path or LargestSafe)
        self._rows: dict[tuple[bool, ...] | None, np.ndarray] = {}

    def index(self, action: object) -> int:
        """The action as an int: an int, a numpy integer or a one-element integer array, in ``[0, n)``;
        anything else raises :class:`ConfigError`."""
        if type(action) is int or isinstance(action, np.integer):
            a = int(action)  # type: ignore[arg-type]
            if 0 <= a < self.n:
                return a
        elif isinstance(action, np.ndarray) and action.size == 1 and np.issubdtype(action.dtype, np.integer):
            a = int(action.reshape(-1)[0])
            if 0 <= a < self.n:
                return a
        raise ConfigError("KairosEnv.step", "action", action, f"an integer from 0 to {self.n - 1}")

    def decision(self, action: object) -> Decision:
        """The Decision of an action (validated as in :meth:`index`)."""
        return self.decisions[self.index(action)]

    def action_of(self, decision: Decision, ctx: DecisionContext) -> int:
        """The action that takes ``decision`` at ``ctx`` (a policy's decision played through the env): the prefill
        path to the shortest queue (no node, or the node the simulator's shortest queue picks: the lowest index
        of the up nodes with the fewest queued tokens) is action 0, a deflection is its (node, chunk) action.
        ConfigError for a decision no action takes: another prefill node, a chunk off the menu, LargestSafe
        without the scenario's ``deflection.largest_safe_action``."""
        if decision.path == "prefill":
            if decision.prefill_node is None:
                return 0
            up = [(p.queued_tokens, i) for i, p in enumerate(ctx.prefill) if p.up]
            if up and decision.prefill_node == min(up)[1]:
                return 0
        else:
            for a in range(1, self.n):
                if int(self.node[a]) == decision.decode_node and self.chunk[a] == decision.chunk:
                    return a
        raise ConfigError("KairosEnv", "decision", decision, "a decision one of the env's actions takes: the "
                          "prefill path to the shortest queue, or a deflection with a menu chunk (LargestSafe only "
                          "with deflection.largest_safe_action)")

    def mask(self, ctx: DecisionContext | None, out: np.ndarray | None = None) -> np.ndarray:
        """The int8 mask of valid actions for ``ctx`` (only action 0 when ``ctx`` is None). Without ``out``
        the returned array is shared by every call with the same pattern of deflectable nodes: copy it
        before changing it. With ``out``, the mask is written there and ``out`` is returned."""
        key = None if ctx is None else tuple([dv.can_deflect for dv in ctx.decode])
        row = self._rows.get(key)
        if row is None:  # one row per pattern of deflectable nodes (at most 2**D + 1), built once
            row = np.zeros(self.n, dtype=np.int8)
            row[0] = 1
            for j, ok in enumerate(key or ()):
                row[1 + j * self.W:1 + (j + 1) * self.W] = ok
            row.flags.writeable = False
            if len(self._rows) < MAX_CACHED_MASKS:  # many decode nodes: patterns are not all kept
                self._rows[key] = row
        if out is None:
            return row
        out[:] = row
        return out

    def describe(self, action: int) -> str:
        """Human-readable action, e.g. ``"deflect d1 chunk 512"``."""
        if action == 0:
            return "prefill (shortest queue)"
        j = int(self.node[action])
        c = self.chunk[action]
        return f"deflect d{j} " + ("LargestSafe" if c == LARGEST_SAFE else f"chunk {c}")

    def rows(self) -> list[tuple[int, str]]:
        """The table as ``(index, meaning)``."""
        return [(a, self.describe(a)) for a in range(self.n)]
