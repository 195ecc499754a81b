"""The docs' generated figures: a block of a page of docs/ between the markers

    <!-- figure NAME: <the command> -->
    ...
    <!-- end figure NAME -->

is what that command prints (or writes) now, rendered by this script, never typed by hand. The markers are HTML
comments: invisible on GitHub and on the docs site.

    python tools/doc_figures.py                 # list the figures, their docs and commands
    python tools/doc_figures.py sq-sl-sweep     # print one figure as the command gives it now
    python tools/doc_figures.py --check         # exit 1, with a diff, where a doc's block is not what its command gives
    python tools/doc_figures.py --write         # rewrite the docs' blocks from their commands

``tests/test_doc_figures.py`` checks the fast figures (:attr:`Figure.fast`) on every ``make test``: a change that
moves a figure fails until the doc is rewritten (``--write NAME``) and the text around it still reads true. The
results are the same on every machine (docs/architecture.md, "Same results on every machine"), so only a change of
the code moves them; figures of wall-clock time cannot be checked so and stay out of these blocks.
"""

from __future__ import annotations

import argparse
import difflib
import json
import re
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

ROOT = Path(__file__).resolve().parents[1]


class Figure(NamedTuple):
    """One generated block: its ``name`` (in the markers), the ``doc`` holding it (a repository path), the
    ``command`` (``kairos-gym`` arguments; ``{out}`` stands for a temporary output file), ``render`` (the output
    file's text -> the block's lines) and ``fast`` (a few seconds: checked by the tests). (A NamedTuple, not a
    dataclass: the tests load this script without registering it as a module, which dataclasses need.)"""

    name: str
    doc: str
    command: tuple[str, ...]
    render: Callable[[str], str]
    fast: bool = True

    def shown_command(self) -> str:
        """The command as the marker shows it."""
        return "kairos-gym " + " ".join(self.command).replace("{out}", "OUT.json")


_SWEEP_LABEL = re.compile(r"^(sq|sl)\((q>|L<)(\d+)(?: tok)?, chunk (\d+)\)$")


def _sq_sl_sweep(text: str) -> str:
    """``measure --sweep --json``'s rows as one Markdown row per rule, one column per chunk size: P95 TTFT (s), TBT
    violation rate, SLO attainment (``measure``'s own precisions; a violation rate of 0 as ``0``)."""
    cells: dict[str, dict[int, str]] = {}
    for row in json.loads(text):
        m = _SWEEP_LABEL.match(row["label"])
        if m is None:  # the policies' own rows: their decision times are wall clock, not reproducible
            continue
        rule = f"{m.group(1)} {m.group(2)[0]} {m.group(2)[1]} {m.group(3)}"
        viol = row["tbt_violation_rate"]
        cells.setdefault(rule, {})[int(m.group(4))] = (
            f"{row['ttft_p95']:.3f} / {'0' if viol == 0 else format(viol, '.4f')} / {row['slo_attainment']:.3f}")
    chunks = sorted({c for by_chunk in cells.values() for c in by_chunk})
    lines = ["| rule | " + " | ".join(f"chunk {c}: P95 TTFT / TBT viol. / SLO att." for c in chunks) + " |",
             "|---|" + "---|" * len(chunks)]
    lines += [f"| {rule} | " + " | ".join(by_chunk[c] for c in chunks) + " |" for rule, by_chunk in cells.items()]
    return "\n".join(lines) + "\n"


def _reward_order(text: str) -> str:
    """``reward-order --json``'s discordant pairs per reward, as the command prints them (in a code block)."""
    res = json.loads(text)
    order = ("misses", "ttft", "slo", "goodput")  # the command's order (the JSON's keys are sorted)
    rows = [f"  {r:<8} {v['discordant']:>4} of {v['pairs']} pairs discordant ({100 * v['share']:.1f}%)"
            for r, v in sorted(res["rewards"].items(), key=lambda kv: order.index(kv[0]))]
    return "```\n" + "\n".join(rows) + "\n```\n"


def _empty_arrivals(text: str) -> str:
    """``perf-oracle --empty --json``'s rows as a Markdown table: per task the arrivals finding the cluster empty."""
    lines = ["| task | arrivals | finding the cluster empty | mean busy period (arrivals) |", "|---|---|---|---|"]
    lines += [f"| {r['task']} | {r['arrivals']:,} | {r['empty']:,} ({100 * r['share']:.1f}%) | {r['busy_period']:.1f} |"
              for r in json.loads(text)]
    return "\n".join(lines) + "\n"


FIGURES = {f.name: f for f in (
    Figure("sq-sl-sweep", "docs/policies.md", ("measure", "--sweep", "--json", "{out}"), _sq_sl_sweep),
    Figure("oracle-empty-arrivals", "docs/policies.md", ("perf-oracle", "--empty", "--instances", "3", "--json",
                                                           "{out}"), _empty_arrivals),
    Figure("reward-order", "docs/env.md", ("reward-order", "--json", "{out}"), _reward_order),
)}
"""Every generated block of the docs, by name."""


def run(figure: Figure) -> str:
    """The block's lines as ``figure``'s command gives them now (it runs with this Python, in the repository)."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "out.json"
        args = [a.replace("{out}", str(out)) for a in figure.command]
        subprocess.run([sys.executable, "-m", "kairos_gym.cli", *args], cwd=ROOT, check=True,
                       stdout=subprocess.DEVNULL)
        return figure.render(out.read_text(encoding="utf-8"))


def _block(name: str) -> re.Pattern[str]:
    return re.compile(rf"(<!-- figure {re.escape(name)}: [^\n]*-->\n)(.*?)(<!-- end figure {re.escape(name)} -->)",
                      flags=re.DOTALL)


def marked_names(text: str) -> list[str]:
    """The names of the figure markers in a doc's ``text``, in order."""
    return re.findall(r"<!-- figure ([\w-]+): ", text)


def block_of(text: str, name: str) -> str:
    """The lines between the markers of figure ``name`` in ``text`` (ValueError when they are missing)."""
    m = _block(name).search(text)
    if m is None:
        raise ValueError(f"no '<!-- figure {name}: ... -->' ... '<!-- end figure {name} -->' block")
    return m.group(2)


def with_block(text: str, figure: Figure, body: str) -> str:
    """``text`` with figure's block replaced by ``body`` (and its opening marker naming the command)."""
    block_of(text, figure.name)  # present, else ValueError
    head = f"<!-- figure {figure.name}: {figure.shown_command()} -->\n"
    return _block(figure.name).sub(lambda m: head + body + m.group(3), text, count=1)


def check(figures: list[Figure]) -> list[str]:
    """A unified diff (doc -> command) per figure whose block differs; empty when every block is current."""
    diffs = []
    for fig in figures:
        doc = ROOT / fig.doc
        old, new = block_of(doc.read_text(encoding="utf-8"), fig.name), run(fig)
        if old != new:
            diffs.append("".join(difflib.unified_diff(old.splitlines(True), new.splitlines(True),
                                                      f"{fig.doc} ({fig.name})", f"{fig.shown_command()} (now)")))
    return diffs


def main(argv: list[str] | None = None) -> int:
    """List, print, check or write the figures."""
    p = argparse.ArgumentParser(description="the docs' generated figures (see the module docstring)")
    p.add_argument("names", nargs="*", help="figures (default: every one); names: " + ", ".join(FIGURES))
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--check", action="store_true", help="exit 1 with a diff where a doc's block differs")
    mode.add_argument("--write", action="store_true", help="rewrite the docs' blocks")
    args = p.parse_args(argv)
    unknown = [n for n in args.names if n not in FIGURES]
    if unknown:
        p.error(f"unknown figure {', '.join(unknown)}; figures: {', '.join(FIGURES)}")
    figures = [FIGURES[n] for n in args.names] or list(FIGURES.values())
    if args.check:
        diffs = check(figures)
        print("".join(diffs) or f"{len(figures)} figure(s) current")
        return 1 if diffs else 0
    if args.write:
        for fig in figures:
            doc = ROOT / fig.doc
            doc.write_text(with_block(doc.read_text(encoding="utf-8"), fig, run(fig)), encoding="utf-8")
            print(f"wrote {fig.doc} ({fig.name})")
        return 0
    if not args.names:
        for fig in figures:
            print(f"{fig.name}: {fig.doc}, {fig.shown_command()}{'' if fig.fast else ' (slow: not in make test)'}")
        return 0
    for fig in figures:
        print(run(fig), end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
