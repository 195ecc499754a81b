"""Formatting of results: every table the command line prints (:func:`render_table`), the run summary and
per-request CSV files."""

from __future__ import annotations

import math
import re
import textwrap
from collections.abc import Sequence
from typing import Any

SUMMARY_ROWS = (
    ("requests (completed / rejected)", None),
    ("TTFT P50 / P95 / P99 (s)", ("ttft_p50", "ttft_p95", "ttft_p99")),
    ("TBT P50 / P95 / P99 (s)", ("tbt_p50", "tbt_p95", "tbt_p99")),
    ("TBT violation rate", ("tbt_violation_rate",)),
    ("SLO attainment", ("slo_attainment",)),
    ("goodput (req/s)", ("goodput_rps",)),
    ("deflection rate", ("deflection_rate",)),
    ("prefill / decode SM-util proxy", ("prefill_utilization", "decode_utilization")),
    ("prefill / decode busy fraction", ("prefill_busy_fraction", "decode_busy_fraction")),
    ("prefill / decode MFU", ("prefill_mfu", "decode_mfu")),
    ("simulated / wall time (s)", ("sim_time_s", "wall_time_s")),
)


TABLE_WIDTH = 120
"""Widest line of a table the command line prints (characters)."""

Cell = str | tuple[str, str]
"""A table cell: text, or ``(mean, half-width)`` of an interval, shown as ``mean ± half``."""


def _lines_width(text: str) -> int:
    return max((len(line) for line in text.splitlines()), default=0)


COLUMN_GAP = "  "
"""Between two columns (the ``simple`` layout of the ``tabulate`` package, which these tables reproduce)."""


def _pad(text: str, width: int, how: str) -> str:
    """``text`` padded to ``width`` characters: ``left`` (text on the left), ``right`` or ``center`` (a spare
    blank goes to the right)."""
    if how == "right":
        return text.rjust(width)
    if how == "center":
        return format(text, f"^{width}")
    return text.ljust(width)


def _block(cells: Sequence[list[str]], widths: Sequence[int], align: Sequence[str]) -> list[str]:
    """The text lines of one row of cells given as lines (the row is as tall as its tallest cell; the others get
    blank lines below), each without trailing blanks."""
    height = max((len(c) for c in cells), default=0)
    cols = list(zip(cells, widths, align, strict=True))
    return [COLUMN_GAP.join(_pad(c[k] if k < len(c) else "", w, a) for c, w, a in cols).rstrip() for k in range(height)]


def _render(headers: Sequence[str], rows: Sequence[Sequence[Cell]], align: Sequence[str], two_line: bool) -> str:
    """The ``simple`` layout of the ``tabulate`` package with no minimum padding and no number parsing, byte for
    byte (tests/test_table.py compares them): the headers (not stripped), a line of dashes per column, the rows
    (cells stripped of surrounding blanks); every column as wide as its widest line; lines without trailing
    blanks. As in tabulate, when any text has a line break a cell splits into its lines (an empty cell into none,
    so a row of empty cells prints no line) and a header at every line break; an empty table's headers are
    left-aligned."""
    def cell(c: Cell) -> str:
        if isinstance(c, tuple):
            return f"{c[0]}\n± {c[1]}" if two_line else f"{c[0]} ± {c[1]}"
        return c

    raw = [[cell(c) for c in r] for r in rows]
    multiline = any("\n" in t or "\r" in t for t in (*headers, *(t for r in raw for t in r)))  # before stripping
    body = [[t.strip() for t in r] for r in raw]
    head = [re.split(r"[\r\n]", h) if multiline else [h] for h in headers]
    lines = [[t.splitlines() if multiline else [t] for t in r] for r in body]
    widths = [max(len(line) for c in (head[j], *(r[j] for r in lines)) for line in c) for j in range(len(headers))]
    if not body:
        align = ["left"] * len(headers)
    out = _block(head, widths, align)
    out.append(COLUMN_GAP.join("-" * w for w in widths))
    for r in lines:
        out += _block(r, widths, align)
    return "\n".join(out)


def render_table(headers: Sequence[str], rows: Sequence[Sequence[Cell]], *, title: str | None = None,
                 notes: Sequence[str] = (), keep: int = 1, align: Sequence[str] | None = None,
                 max_width: int = TABLE_WIDTH) -> str:
    """The one renderer of command-line tables (the ``simple`` layout of ``tabulate``; first column left-aligned,
    the others right-aligned, unless ``align`` names left/right/center per column). Headers carry their
    units, e.g. ``"TTFT P95 (s)"`` (``\\n`` splits a header over two lines).

    Fits ``max_width`` columns: interval cells ``(mean, half)`` print as ``mean ± half`` on one line if the
    table fits, else on two lines (the half-width under the mean); if it still does not fit, the rightmost
    columns (beyond the first ``keep``) are left out and a note names them. ``title`` and ``notes`` are
    printed above and below the table.
    """
    headers = list(headers)
    rows = [list(r) for r in rows]
    for r in rows:
        if len(r) != len(headers):
            raise ValueError(f"render_table: a row has {len(r)} cells for {len(headers)} headers")
    dropped: list[str] = []
    while True:
        cols = list(align[: len(headers)]) if align is not None else ["left"] + ["right"] * (len(headers) - 1)
        text = _render(headers, rows, cols, two_line=False)
        if _lines_width(text) > max_width:
            text = _render(headers, rows, cols, two_line=True)
        if _lines_width(text) <= max_width or len(headers) <= keep:
            break
        dropped.insert(0, headers.pop().replace("\n", " "))
        rows = [r[:-1] for r in rows]
    out = textwrap.wrap(title, max_width, subsequent_indent="  ") if title else []
    out.append(text)
    if dropped:
        notes = [*notes, f"(left out to fit {max_width} columns: {', '.join(dropped)})"]
    for note in notes:
        out += textwrap.wrap(note, max_width, subsequent_indent="  ")
    return "\n".join(out)


def ci_cell(mean: float, half: float, mean_spec: str = ".3g", half_spec: str = ".2g") -> Cell:
    """The cell of a mean and the half-width of its 95% t-interval (:func:`kairos_gym.evaluation.stats.mean_ci`):
    ``"n/a"`` without a mean, ``(mean, "n/a")`` without an interval (one seed)."""
    if math.isnan(mean):
        return "n/a"
    return (format(mean, mean_spec), "n/a" if math.isnan(half) else format(half, half_spec))


def _fmt(v: Any) -> str:
    if v is None:
        return "n/a"
    if isinstance(v, float):
        return f"{v:.4g}"
    return str(v)


def format_summary(s: dict[str, Any]) -> str:
    """A two-column text table of the main summary figures (one run: no interval)."""
    rows: list[list[Cell]] = []
    for label, keys in SUMMARY_ROWS:
        if keys is None:
            val = f"{s['n_requests']} ({s['n_completed']} / {s['n_rejected']})"
        else:
            val = " / ".join(_fmt(s.get(k)) for k in keys)
        rows.append([label, val])
    rows.append(["SLOs", f"TTFT <= {s['slo_ttft_s']} s, max TBT <= {s['slo_tbt_s']} s"])
    return render_table(["figure", "value"], rows, align=("left", "left"),
                        title=f"scenario {s['scenario']} ({s['source']}), policy {s['policy']}, seed {s['seed']}",
                        notes=["(SM-util proxy: compute time at achievable kernel efficiency / wall time; see "
                               "docs/metrics.md)"])
