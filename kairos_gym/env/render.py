"""Rendering: ``"ansi"`` (a text dashboard; ``"human"`` prints it to stdout at every reset and step) and
``"rgb_array"`` (a timeline of node steps).

The timeline shows the last :data:`TIMELINE_WINDOW_S` simulated seconds, one row per node (prefill
nodes on top, then decode nodes): prefill steps in blue, decode-only stretches in grey, decode steps
carrying a deflected chunk coloured by chunk size (yellow = smallest menu size ... red = largest),
idle time white; the right edge is "now". Pure numpy (no plotting library).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np

from kairos_gym.sim.hook import DecisionContext

if TYPE_CHECKING:
    from kairos_gym.sim import Simulator

TIMELINE_WINDOW_S = 5.0
"""Simulated seconds shown by the ``rgb_array`` timeline."""
WIDTH = 640
ROW_H = 28
GAP = 6
MARGIN = 8
_PREFILL = np.array([60, 110, 200], dtype=np.uint8)
_PREFILL_ALT = np.array([95, 145, 225], dtype=np.uint8)
_DECODE = np.array([150, 150, 150], dtype=np.uint8)
_BG = np.array([255, 255, 255], dtype=np.uint8)
_AXIS = np.array([0, 0, 0], dtype=np.uint8)
_ROW_BG = np.array([235, 235, 235], dtype=np.uint8)


def chunk_colour(chunk: int, menu: tuple[int, ...]) -> np.ndarray:
    """Yellow (smallest menu chunk) to red (largest), by log2 position; remainders take the nearest size."""
    lo, hi = math.log2(min(menu)), math.log2(max(menu))
    x = 0.0 if hi == lo else min(1.0, max(0.0, (math.log2(max(chunk, 1)) - lo) / (hi - lo)))
    return np.array([235, int(215 * (1 - x)), 30], dtype=np.uint8)


def render_rgb(sim: Simulator) -> np.ndarray:
    """The timeline image (uint8, H x W x 3). Needs a simulator built with ``record_timeline=True``."""
    P, D = len(sim.pnodes), len(sim.dnodes)
    rows = P + D
    H = 2 * MARGIN + rows * ROW_H + (rows - 1) * GAP
    img = np.empty((H, WIDTH, 3), dtype=np.uint8)
    img[:] = _BG
    now = sim.now
    t0 = now - TIMELINE_WINDOW_S
    inner = WIDTH - 2 * MARGIN
    menu = tuple(sim.menu)

    def x_of(t: float) -> int:
        return MARGIN + round((t - t0) / TIMELINE_WINDOW_S * inner)

    def row_y(kind: str, idx: int) -> int:
        r = idx if kind == "P" else P + idx
        return MARGIN + r * (ROW_H + GAP)

    for r in range(rows):
        y = MARGIN + r * (ROW_H + GAP)
        img[y:y + ROW_H, MARGIN:WIDTH - MARGIN] = _ROW_BG

    def draw(kind: str, idx: int, start: float, end: float, colour: np.ndarray) -> None:
        if end < t0 or start > now:
            return
        xa = max(MARGIN, x_of(max(start, t0)))
        xb = min(WIDTH - MARGIN, max(xa + 1, x_of(min(end, now))))
        y = row_y(kind, idx)
        img[y + 2:y + ROW_H - 2, xa:xb] = colour

    flip = {}
    # scan recent timeline entries (appended in completion/start order; stretches can start long before)
    tl = sim.timeline
    for kind, idx, start, end, label in tl[-20000:]:
        if kind == "P":
            k = (kind, idx)
            flip[k] = not flip.get(k, False)
            draw(kind, idx, start, end, _PREFILL if flip[k] else _PREFILL_ALT)
        elif label == "decode":
            draw(kind, idx, start, end, _DECODE)
        else:
            c = int(label[5:]) if label.startswith("chunk") else min(menu)
            draw(kind, idx, start, end, chunk_colour(c, menu))
    # decode stretches still in progress are recorded only when they end: draw them up to now
    for d in sim.dnodes:
        if d.mode == 1:
            draw("D", d.idx, d.start, now, _DECODE)
    img[MARGIN:H - MARGIN, WIDTH - MARGIN - 1] = _AXIS  # "now"
    return img


def render_ansi(sim: Simulator, ctx: DecisionContext | None, *, decisions: int, last: dict[str, Any]) -> str:
    """A text dashboard of the current decision: queues, nodes and priced options."""
    lines = [f"t = {sim.now:10.3f} s   decisions {decisions}   finished {sim.n_finished}/{sim.n}   "
             f"waiting {sim.waiting}   invalid {sim.n_invalid}"]
    if last:
        lines.append(f"last: {last.get('action', '-')}   reward {last.get('reward', 0.0):+.4f}")
    if ctx is None:
        lines.append("(episode over: no pending decision)")
        return "\n".join(lines) + "\n"
    r = ctx.request
    lines.append(f"request #{r.rid}: prompt {r.prompt_tokens} tok"
                 + (f", output {r.output_tokens} tok" if r.output_tokens is not None else ""))
    lines.append("PREFILL  queued_tok  queued_req   wait_s   util   TTFT_s")
    for i, (p, t) in enumerate(zip(ctx.prefill, ctx.ttft_prefill_s, strict=True)):
        lines.append(f"  P{i:<4} {p.queued_tokens:>11} {p.queued_requests:>11} {p.predicted_wait_s:>8.3f} "
                     f"{p.utilization:>6.2f} {t:>8.3f}")
    lines.append("DECODE   batch   context  free_kv  deflect(rem)   util  step_ms  can")
    for i, d in enumerate(ctx.decode):
        defl = f"yes({d.deflection_remaining_tokens})" if d.deflection_in_flight else "no"
        lines.append(f"  D{i:<4} {d.batch_size:>6} {d.total_context:>9} {d.free_kv_fraction:>8.2f} {defl:>13} "
                     f"{d.utilization:>6.2f} {d.decode_step_s * 1e3:>8.1f} {'Y' if d.can_deflect else 'n':>4}")
    head = "".join(f"{c:>13}" for c in ctx.chunk_menu)
    lines.append(f"OPTIONS  TTFT_s/step_ms{head}    LargestSafe")
    for i in range(len(ctx.decode)):
        cells = "".join(f"{ctx.ttft_deflect_s[i][k]:>7.3f}/{ctx.step_s[i][k] * 1e3:<5.0f}"
                        for k in range(len(ctx.chunk_menu)))
        ls = (f"{ctx.largest_safe_ttft_s[i]:.3f} (first {ctx.largest_safe_first_chunk[i]})"
              if ctx.largest_safe_feasible[i] else "infeasible")
        lines.append(f"  D{i:<4}{'':>15}{cells}    {ls}")
    lines.append(f"prefill path best TTFT {min(ctx.ttft_prefill_s):.3f} s   SLO TTFT {ctx.ttft_slo_s} s, "
                 f"TBT {ctx.tbt_slo_s} s")
    return "\n".join(lines) + "\n"
