"""The markdown of results/leaderboard.md (``kairos-gym leaderboard``): :func:`leaderboard_md` writes one track's result
of :func:`kairos_gym.benchmark.leaderboard.run_suite`, :func:`tracks_md` a
:func:`~kairos_gym.benchmark.leaderboard.run_tracks` result (one section per track)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from kairos_gym.benchmark.entries import STATIC_GRID
from kairos_gym.benchmark.provenance import verify_note
from kairos_gym.benchmark.scoring import MIN_HEADROOM, NOT_HEURISTICS, ranking
from kairos_gym.benchmark.suite import TIER_NAMES

TRACK_TEXT = {"exact": "the simulator serves the true, fresh node state and exact predictions",
              "realistic": "the simulator serves the central dispatcher's stale view, refreshed every "
                           "`information.staleness_s`, and predictions with `information.model_error` MAPE noise "
                           "from the run's generator"}
"""One line per track for the protocol paragraph (docs/env.md, "Information tracks")."""


def _num(v: float | None, spec: str = ".3f") -> str:
    return "n/a" if v is None or (isinstance(v, float) and math.isnan(v)) else format(v, spec)


def _pm(c: Mapping[str, Any] | None, spec: str = ".3f", half_spec: str = ".3f") -> str:
    if c is None or c["mean"] is None:
        return "n/a"
    return f"{c['mean']:{spec}} ± {_num(c['ci95'], half_spec)}"


def _iv(a: Sequence[float]) -> str:
    return f"{a[0]:.3f} [{a[1]:.3f}, {a[2]:.3f}]"


def _family_tables(res: Mapping[str, Any], order: Sequence[str]) -> list[str]:
    """Per family and tier SLO attainment; per task the per-request vs per-gap TBT figures and the TTFT
    breakdown of the anchors and the comparison; the precision of the per-task means."""
    suite = res["suite"]
    fams = list(dict.fromkeys(s.get("family", s["task"]) for s in suite))
    by = {(s.get("family", s["task"]), s.get("tier", "default")): s["task"] for s in suite}
    tiers = [t for t in TIER_NAMES if any((f, t) in by for f in fams)]
    pt = res["per_task"]
    lines = ["", "## SLO attainment per family and tier", "",
             "Mean over the test instances, " + " / ".join(tiers) + " (docs/benchmark.md, \"SLO tiers\"); "
             "-: the task was not run.", "",
             "| policy | " + " | ".join(fams) + " |", "|---|" + "---|" * len(fams)]
    for lb in order:
        cells = [" / ".join(_num(pt[lb][by[(f, t)]]["raw"]["mean"]) if (f, t) in by else "-" for t in tiers)
                 for f in fams]
        lines.append(f"| {lb} | " + " | ".join(cells) + " |")
    show = [lb for lb in (res["baseline"], res["comparison"], res["reference"]) if lb in pt]
    lines += ["", "## TBT per request and per gap, TTFT breakdown", "",
              "Means over the test instances. TBT req: `tbt_request_attainment` (share of completed requests whose "
              "every gap is within the TBT SLO); TBT gaps: `tbt_violation_rate` (share of gaps over it). TTFT "
              "breakdown of the prefill-path requests (docs/metrics.md): mean queue / execution / transfer, and "
              "P95 queue, in seconds (n/a: no request took the prefill path).", "",
              "| task | policy | SLO attainment | TBT req | TBT gaps | queue | execution | transfer | P95 queue |",
              "|---|---|---:|---:|---:|---:|---:|---:|---:|"]
    for s in suite:
        t = s["task"]
        for lb in show:
            c = pt[lb][t]

            def m(k: str, spec: str = ".3f", c: Mapping[str, Any] = c) -> str:
                return _num(c[k]["mean"], spec) if k in c else "n/a"

            lines.append(f"| {t} | {lb} | {_num(c['raw']['mean'])} | {m('tbt_request_attainment')} | "
                         f"{m('tbt_violation_rate', '.4f')} | {m('ttft_breakdown_mean.queue', '.3f')} | "
                         f"{m('ttft_breakdown_mean.execution', '.3f')} | {m('ttft_breakdown_mean.transfer', '.4f')} | "
                         f"{m('ttft_breakdown_p95.queue', '.3f')} |")
    lines += ["", "## Precision of the per-task means", "",
              "Half-width of the 95% Student-t interval of the mean SLO attainment over the test instances (the "
              "target is < 0.02, two SLO-attainment points).", "",
              "| policy | " + " | ".join(s["task"] for s in suite) + " | max |", "|---|" + "---|" * (len(suite) + 1)]
    for lb in show:
        hs = [pt[lb][s["task"]]["raw"]["ci95"] for s in suite]
        finite = [h for h in hs if h is not None]
        lines.append(f"| {lb} | " + " | ".join(_num(h) for h in hs) + f" | {_num(max(finite) if finite else None)} |")
    return lines


def _headroom_table(res: Mapping[str, Any]) -> list[str]:
    """The Oracle minus the best shipped heuristic per task (:func:`headroom`)."""
    head = res.get("headroom") or {}
    if not head:
        return []
    src = res.get("oracle_sources") or {}
    lines = [
        "## Headroom: the Oracle minus the best shipped heuristic",
        "",
        "Per task, the shipped heuristic with the best mean SLO attainment over the test instances (every built-in "
        f"entry but {', '.join(NOT_HEURISTICS)}; best-static included), and the Oracle's SLO attainment minus its on "
        "the same instance: mean ± half-width of the 95% Student-t interval, then the Oracle's wins / ties / "
        f"losses. none: the mean difference is below {MIN_HEADROOM:g}; headroom: otherwise, when the interval lies "
        "above 0; unclear: neither."
        + (f" Oracle figures: {src.get('cache', 0)} instances from the cache "
           "(kairos_gym/benchmark/oracle_cache.json, checked "
           f"against fresh no-deflect and always-deflect-ls runs), {src.get('run', 0)} run now." if src else ""),
        "",
        "| task | best heuristic | its SLO attainment | Oracle | Oracle - best | W/T/L | headroom |",
        "|---|---|---:|---:|---|---|---|",
    ]
    for s in res["suite"]:
        h = head.get(s["task"])
        if h is None:
            continue
        lines.append(f"| {s['task']} | {h['best']} | {h['best_mean']:.3f} | {h['oracle_mean']:.3f} | "
                     f"{_pm(h, '+.3f')} | {h['wins']}/{h['ties']}/{h['losses']} | {h['where']} |")
    lines.append("")
    return lines


def leaderboard_md(res: Mapping[str, Any]) -> str:
    """The markdown text of results/leaderboard.md."""
    tasks = [s["task"] for s in res["suite"]]
    scored, saturated = res["scored_tasks"], res["saturated_tasks"]
    commit = res["commit"]
    where = (f"commit `{commit}`" + (" with uncommitted changes to tracked files" if res["dirty"] else "")
             if commit else "outside a git checkout") + verify_note(res)
    boot = res["bootstrap"]
    lines = [
        "# Leaderboard",
        "",
        f"Command: `{res['command']}`  ",
        f"Code: kairos-gym {res['version']}, {where}  ",
        f"Run: {res['date']}, wall time {res['elapsed_s']:.0f} s (Python {res['python']}, numpy {res['numpy']})",
        "",
        f"Protocol (docs/benchmark.md): information track **{res.get('track', 'exact')}** ("
        + TRACK_TEXT[res.get("track", "exact")] + "; a policy sees the `DecisionContext`, no output lengths"
        + "".join(f"; {lb} always runs on the {tr} track" for lb, tr in res.get("pinned_track", {}).items()
                  if tr != res.get("track", "exact"))
        + "). Every policy runs on the same fixed instances of every task. Score per instance: SLO "
        "attainment (fraction of requests whose TTFT and every token gap are within the scenario's SLOs, "
        "docs/metrics.md). Normalised score per task: (x - no-deflect) / (reference - no-deflect), the anchors "
        f"being means over the task's instances; reference: {res['reference_label']}. The Oracle is an upper bound "
        "on its base policies, not the optimum: a score above 1 would mean a policy beat it. Tasks where the "
        f"reference beats no-deflect by less than {res['min_headroom']:g} have no "
        "headroom: they are shown raw and left out of the aggregates.",
        "",
        "## Suite",
        "",
        "| task | SLO TTFT / TBT (s) | instances (test) | n | train instances (best-static only) | what differs "
        "between instances |",
        "|---|---|---|---:|---|---|",
    ]
    for s in res["suite"]:
        what = ("the trace window (a trace workload does not depend on the seed: every window runs with seed 0, "
                "which seeds only the policies' own randomness); original trace seconds" if s["windows"]
                else "the workload seed")
        slo = f"{s['slo']['ttft_s']:g} / {s['slo']['tbt_s']:g}" if "slo" in s else "-"
        lines.append(f"| {s['task']} | {slo} | {s['test']} | {len(s['instances'])} | {s['train']} | {what} |")
    lines.append("")
    if scored:
        lines += [
            f"## Ranking: aggregates over the {len(scored)} tasks with headroom ({', '.join(scored)})",
            "",
            "Point estimate [95% stratified-bootstrap percentile interval]: "
            f"{boot['reps']:,} resamples of the instances within each task (numpy Generator seed {boot['seed']}; "
            "the same resamples for every policy). IQM, median and mean of the normalised score (higher is "
            "better); optimality gap = 1 - mean(min(score, 1)) (lower is better); P(> kairos): probability that "
            "the policy's SLO attainment beats kairos's on the same instance (ties 1/2), averaged over tasks. "
            "With this few tasks and instances the intervals are wide: policies whose intervals overlap are not "
            "separated by this suite, whatever their rank."
            + (" With two tasks the median of the task means is their mean." if len(scored) == 2 else ""),
            "",
            "| rank | policy | IQM | median | mean | optimality gap | P(> kairos) |",
            "|---:|---|---|---|---|---|---|",
        ]
        for i, lb in enumerate(ranking(res), 1):
            a = res["aggregates"][lb]
            lines.append(f"| {i} | {lb} | {_iv(a['iqm'])} | {_iv(a['median'])} | {_iv(a['mean'])} | "
                         f"{_iv(a['optimality_gap'])} | {_iv(a['poi_vs_comparison'])} |")
        lines.append("")
    else:
        lines += ["## Ranking", "", "No task has headroom: nothing to aggregate.", ""]
    if saturated:
        lines += ["Tasks without headroom (left out of the aggregates): "
                  + ", ".join(f"{t} (no-deflect {res['anchors'][t]['no_deflect']:.3f}, reference "
                              f"{res['anchors'][t]['reference']:.3f})" for t in saturated) + ".", ""]
    order = ranking(res)
    if scored:
        lines += [
            "## Normalised score per task",
            "",
            "Mean ± half-width of the 95% Student-t interval over the task's instances (n/a: one instance). "
            "Anchors (SLO attainment, means): "
            + "; ".join(f"{t}: no-deflect {res['anchors'][t]['no_deflect']:.3f}, reference "
                        f"{res['anchors'][t]['reference']:.3f}" for t in scored) + ".",
            "",
            "| policy | " + " | ".join(scored) + " |",
            "|---|" + "---|" * len(scored),
        ]
        for lb in order:
            lines.append(f"| {lb} | " + " | ".join(_pm(res["per_task"][lb][t]["normalized"]) for t in scored) + " |")
        lines.append("")
    lines += _headroom_table(res)
    lines += [
        "## Raw figures per task",
        "",
        "SLO attainment (mean ± 95% t-interval) / P95 TTFT (s, mean) / TBT violation rate (mean), over the "
        "instances.",
        "",
        "| policy | " + " | ".join(tasks) + " |",
        "|---|" + "---|" * len(tasks),
    ]
    for lb in order:
        cells = []
        for t in tasks:
            c = res["per_task"][lb][t]
            cells.append(f"{_pm(c['raw'])} / {_num(c['ttft_p95']['mean'], '.2f')} / "
                         f"{_num(c['tbt_violation_rate']['mean'], '.4f')}")
        lines.append(f"| {lb} | " + " | ".join(cells) + " |")
    lines += _family_tables(res, order)
    lines += [
        "",
        f"## Paired against {res['comparison']}",
        "",
        f"SLO attainment minus {res['comparison']}'s on the same instance: mean ± 95% t-interval, then wins / ties "
        "/ losses over the instances.",
        "",
        "| policy | " + " | ".join(tasks) + " |",
        "|---|" + "---|" * len(tasks),
    ]
    for lb in order:
        if lb == res["comparison"]:
            continue
        cells = [f"{_pm(res['paired'][lb][t], '+.3f')} ({res['paired'][lb][t]['wins']}/{res['paired'][lb][t]['ties']}"
                 f"/{res['paired'][lb][t]['losses']})" for t in tasks]
        lines.append(f"| {lb} | " + " | ".join(cells) + " |")
    lines.append("")
    if res["best_static"]:
        lines += [
            "## best-static: the static rule tuned on the train instances",
            "",
            f"Per task, the rule of {len(STATIC_GRID)} (always-deflect, SQ and SL, thresholds in tokens, 512-token or "
            "LargestSafe chunks; `STATIC_GRID` in kairos_gym/benchmark/entries.py) with the best mean SLO attainment "
            "on the "
            "task's train instances (first in grid order on ties); its test scores are the best-static rows above.",
            "",
            "| task | chosen rule | train SLO attainment | train instances |",
            "|---|---|---:|---|",
        ]
        for s in res["suite"]:
            b = res["best_static"][s["task"]]["chosen"]
            lines.append(f"| {s['task']} | `{b['rule']}` | {_num(b['train_score'])} | {s['train']} |")
        lines.append("")
    lines += [
        "## Submit a policy",
        "",
        "No edit of the package is needed:",
        "",
        "1. Write a class with `decide(ctx: DecisionContext) -> Decision` in a file (docs/policies.md, \"Writing a",
        "   policy\"); its `__init__` may take `scenario` and `seed` keywords.",
        "2. Run `kairos-gym leaderboard --policy path/to/file.py:ClassName --out results/leaderboard.md`",
        "   (a trained agent: `--checkpoint DIR`, a safe-format checkpoint). `--policy` executes the file as",
        "   `python file.py` would: only pass code you trust. The instances are fixed, so every policy sees the",
        "   same workloads, and runs are deterministic.",
        "3. Open a pull request with the file (and checkpoint), the regenerated results/leaderboard.md and, for",
        "   a learned policy, the training command and time.",
        "",
        "Rules: a policy sees only the `DecisionContext` (no output lengths, no simulator internals).",
        "",
    ]
    return "\n".join(lines)


def tracks_md(results: Mapping[str, Any]) -> str:
    """results/leaderboard.md of a :func:`kairos_gym.benchmark.leaderboard.run_tracks` result: one track as
    :func:`leaderboard_md` writes it; several as one section per track (``## Track: <name>``, each with its own
    protocol line, tables one heading level down)."""
    tracks = results["tracks"]
    if len(tracks) == 1:
        return leaderboard_md(next(iter(tracks.values())))
    first = next(iter(tracks.values()))
    head = leaderboard_md(first).split("\n")[:5]  # title, command, code, run (the same for every track)
    head[4] = (f"Run: {first['date']}, wall time {results['elapsed_s']:.0f} s for {len(tracks)} tracks "
               f"(Python {first['python']}, numpy {first['numpy']})")
    lines = [*head, "", "Tracks: " + ", ".join(tracks) + " (docs/benchmark.md, \"Information tracks\"): the same "
             "policies, tasks and instances on each; scores are comparable within a track.", ""]
    for tr, res in tracks.items():
        body = leaderboard_md(res).split("\n")[6:]  # past the header lines
        lines += [f"## Track: {tr}", ""]
        lines += ["#" + ln if ln.startswith("## ") else ln for ln in body]
    return "\n".join(lines)


__all__ = ["TRACK_TEXT", "leaderboard_md", "tracks_md"]
