"""The closing summary ``kairos-gym leaderboard`` prints on stdout when it ranked submitted entries (``--policy``,
``--checkpoint``): per entry and track its rank by the board's headline aggregate with its interval, and per task
its wins / ties / losses against the comparison policy (Kairos) on the same instances.

Nothing is computed anew: the rank is :func:`~kairos_gym.benchmark.scoring.ranking`'s (the IQM of the normalised
score over the tasks with headroom, the order of the board's "Ranking" table), the interval the stratified
bootstrap's (:mod:`kairos_gym.benchmark.aggregate`), and the per-task comparison the board's "Paired against
kairos" figures (:func:`~kairos_gym.benchmark.scoring.score`: the mean SLO-attainment difference on the same
instances with its 95% Student-t half-width, and the wins / ties / losses). The suite has no seen / unseen split
of its tasks (every entry is scored on the test instances of every task), so the headline is the IQM over all the
tasks with headroom.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from kairos_gym.benchmark.scoring import ranking

SUBMITTED_KINDS = ("file", "checkpoint")
"""Entry kinds of submissions (``--policy``, ``--checkpoint``)."""
HEADLINE = "IQM of the normalised score"
"""The board's headline aggregate (its "Ranking" table's order)."""


def submitted_labels(res: Mapping[str, Any]) -> list[str]:
    """Labels of the submitted entries of one track's result, in entry order."""
    return [e["label"] for e in res["entries"] if e["kind"] in SUBMITTED_KINDS]


def _iv(a: Sequence[float]) -> str:
    return f"{a[0]:.3f} [{a[1]:.3f}, {a[2]:.3f}]"


def rank_line(res: Mapping[str, Any], label: str) -> str:
    """``"rank R of N by <headline>, <track> track: x [lo, hi] (kairos x)"`` on one track's result (the interval:
    95% stratified bootstrap); without a task with headroom there is no aggregate and no rank."""
    track = res.get("track", "exact")
    if not res["scored_tasks"] or label not in res["aggregates"]:
        return f"no rank on the {track} track: no task of this run has headroom (nothing to normalise)"
    agg = res["aggregates"]
    order = ranking(res)
    comp = res["comparison"]
    line = f"rank {order.index(label) + 1} of {len(order)} by {HEADLINE}, {track} track: {_iv(agg[label]['iqm'])}"
    if comp in agg and comp != label:
        line += f" ({comp} {agg[comp]['iqm'][0]:.3f})"
    return line


def _cell(p: Mapping[str, Any]) -> str:
    mean = "n/a" if p["mean"] is None else f"{p['mean']:+.3f}"
    half = "" if p["ci95"] is None else f" ± {p['ci95']:.3f}"
    return f"{p['wins']}/{p['ties']}/{p['losses']} {mean}{half}"


def _verdict(p: Mapping[str, Any]) -> int:
    """+1: the paired interval lies above 0; -1: below; 0: it holds 0 (or there is none)."""
    if p["mean"] is None or p["ci95"] is None:
        return 0
    return 1 if p["mean"] - p["ci95"] > 0 else -1 if p["mean"] + p["ci95"] < 0 else 0


def _row(cells: Sequence[str], widths: Sequence[int]) -> str:
    return ("  " + "  ".join(f"{c:<{w}}" for c, w in zip(cells, widths, strict=True))).rstrip()


def submission_summary(tracks: Mapping[str, Mapping[str, Any]], board: str | None = None) -> str:
    """The summary text of every submitted entry of a run (``tracks``: track name -> :func:`~kairos_gym.benchmark.
    leaderboard.run_suite` result, as :func:`~kairos_gym.benchmark.leaderboard.run_tracks` returns them); ``board``:
    the markdown file written, named at the end. Empty when no entry was submitted."""
    first = next(iter(tracks.values()))
    labels = submitted_labels(first)
    if not labels:
        return ""
    comp = first["comparison"]
    tasks = [s["task"] for s in first["suite"]]
    lines: list[str] = []
    for label in labels:
        lines += [f"your entry {label}: {rank_line(res, label)}" for res in tracks.values()]
        k = {len(res["scored_tasks"]) for res in tracks.values()}
        over = f"the {k.pop()}" if len(k) == 1 else "the"
        lines.append(f"  the board's headline: IQM over {over} tasks with headroom, 95% stratified-bootstrap interval;")
        lines.append("  no seen/unseen split (every entry runs on every task's test instances)")
        lines.append(f"  against {comp} on the same instances, per task: wins/ties/losses, mean SLO-attainment "
                     "difference ± 95% half-width")
        paired = {tr: [res["paired"][label][t] for t in tasks] for tr, res in tracks.items()}
        table = [["task", *tracks]]
        table += [[t, *(_cell(paired[tr][i]) for tr in tracks)] for i, t in enumerate(tasks)]
        table.append(["all tasks", *(f"{sum(p['wins'] for p in ps)}/{sum(p['ties'] for p in ps)}/"
                                     f"{sum(p['losses'] for p in ps)}" for ps in paired.values())])
        widths = [max(len(r[k]) for r in table) for k in range(len(table[0]))]
        lines += [_row(r, widths) for r in table]
        counts = []
        for tr, ps in paired.items():
            v = [_verdict(p) for p in ps]
            counts.append(f"{tr} on {v.count(1)} / {v.count(-1)} / {v.count(0)} tasks")
        lines.append("  paired interval above / below / holding 0: " + ", ".join(counts))
    if board is not None:
        lines.append(f"the whole board: {board}")
    return "\n".join(lines)


__all__ = ["HEADLINE", "SUBMITTED_KINDS", "rank_line", "submission_summary", "submitted_labels"]
