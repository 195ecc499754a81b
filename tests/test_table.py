"""kairos_gym/table.py renders tables without the ``tabulate`` package, in its ``simple`` layout: compared with
``tabulate`` itself (a dev dependency only) on random tables and on the shapes the commands print."""

from __future__ import annotations

import random

import pytest

from kairos_gym.table import Cell, _render, format_summary

tabulate = pytest.importorskip("tabulate")

ALIGNS = ("left", "right", "center")
WORDS = ("", "a", "bb", "TTFT P95 (s)", "0.123", "n/a", "kairos", "  padded  ", "x\ny", "two\nlines here", "±",
         "requests (completed / rejected)", " 1", "3 ", "\nlead", "trail\n")


def _reference(headers: list[str], rows: list[list[Cell]], align: list[str], two_line: bool) -> str:
    def cell(c: Cell) -> str:
        if isinstance(c, tuple):
            return f"{c[0]}\n± {c[1]}" if two_line else f"{c[0]} ± {c[1]}"
        return c

    saved = tabulate.MIN_PADDING
    tabulate.MIN_PADDING = 0
    try:
        return tabulate.tabulate([[cell(c) for c in r] for r in rows], headers=headers, tablefmt="simple",
                                 disable_numparse=True, colalign=tuple(align))
    finally:
        tabulate.MIN_PADDING = saved


def _random_table(rng: random.Random) -> tuple[list[str], list[list[Cell]], list[str]]:
    ncol = rng.randint(1, 5)
    headers = [rng.choice(WORDS[1:]) + rng.choice(("", "\n(s)", " (req/s)")) for _ in range(ncol)]
    rows: list[list[Cell]] = []
    for _ in range(rng.randint(0, 6)):
        rows.append([(f"{rng.random():.3g}", rng.choice(("0.01", "n/a", "12")))
                     if rng.random() < 0.3 else rng.choice(WORDS) for _ in range(ncol)])
    return headers, rows, [rng.choice(ALIGNS) for _ in range(ncol)]


@pytest.mark.parametrize("seed", range(300))
def test_render_matches_tabulate_simple(seed):
    rng = random.Random(seed)
    headers, rows, align = _random_table(rng)
    two_line = rng.random() < 0.5
    assert _render(headers, rows, align, two_line) == _reference(headers, rows, align, two_line)


def test_summary_table_matches_tabulate():
    s = {"scenario": "bursty", "source": "synthetic", "policy": "kairos", "seed": 0, "n_requests": 10,
         "n_completed": 9, "n_rejected": 1, "slo_ttft_s": 1.0, "slo_tbt_s": 0.1, "ttft_p50": 0.25, "ttft_p95": None}
    text = format_summary(s)
    body = [line for line in text.splitlines()[1:] if not line.startswith("(SM-util")]
    assert body[0].startswith("figure") and set(body[1]) <= {"-", " "}
    assert "requests (completed / rejected)  10 (9 / 1)" in text and "n/a" in text
