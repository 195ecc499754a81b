"""The closing summary of a leaderboard run with submitted entries (kairos_gym/benchmark/submission_summary.py): the
rank by the board's headline with its interval, and per task the wins / ties / losses against Kairos on the same
instances, all read from the board's own figures."""

from __future__ import annotations

from kairos_gym.benchmark.scoring import ranking, score
from kairos_gym.benchmark.submission_summary import rank_line, submission_summary

SUITE = [{"task": t, "test": "seeds 0-3", "train": "seeds 9", "instances": [f"seed {i}" for i in range(4)],
          "windows": False} for t in ("a", "b", "flat")]


def _fig(values):
    n = len(values)
    return {"slo_attainment": list(values), "ttft_p95": [1.0] * n, "tbt_violation_rate": [0.0] * n,
            "deflection_rate": [0.1] * n, "n_requests": [10.0] * n}


def _result(track: str, mine: dict[str, list[float]]) -> dict:
    figures = {
        "no-deflect": {"a": _fig([0.1, 0.2, 0.3, 0.4]), "b": _fig([0.5, 0.5, 0.5, 0.5]), "flat": _fig([1, 1, 1, 1])},
        "oracle": {"a": _fig([0.9, 0.9, 0.9, 0.9]), "b": _fig([0.9, 0.9, 0.9, 0.9]), "flat": _fig([1, 1, 1, 1])},
        "kairos": {"a": _fig([0.5, 0.5, 0.5, 0.5]), "b": _fig([0.6, 0.7, 0.6, 0.7]), "flat": _fig([1, 1, 1, 1])},
        "my.py:Mine": {t: _fig(v) for t, v in mine.items()},
    }
    res = {"track": track, "suite": SUITE, "best_static": {},
           "entries": [{"label": k, "kind": "file" if k == "my.py:Mine" else "built-in"} for k in figures]}
    res.update(score(figures, ["a", "b", "flat"], reps=300))
    return res


MINE = {"a": [0.6, 0.7, 0.6, 0.7], "b": [0.5, 0.6, 0.5, 0.6], "flat": [1, 1, 1, 1]}
"""Against kairos: on a 4 wins (+0.15, interval above 0), on b 4 losses (-0.1 on every instance: below 0), on flat 4
ties (no headroom there: in the paired table, not in the rank)."""


def test_the_summary_gives_the_rank_the_interval_and_the_paired_wins_ties_losses_per_task():
    exact = _result("exact", MINE)
    realistic = _result("realistic", {**MINE, "a": [0.4, 0.5, 0.5, 0.5]})
    text = submission_summary({"exact": exact, "realistic": realistic}, "out/leaderboard.md")
    lines = text.splitlines()
    rank = ranking(exact).index("my.py:Mine") + 1
    iqm = exact["aggregates"]["my.py:Mine"]["iqm"]
    k = exact["aggregates"]["kairos"]["iqm"]
    assert lines[0] == (f"your entry my.py:Mine: rank {rank} of 4 by IQM of the normalised score, exact track: "
                        f"{iqm[0]:.3f} [{iqm[1]:.3f}, {iqm[2]:.3f}] (kairos {k[0]:.3f})")
    assert ranking(exact)[:3] == ["oracle", "my.py:Mine", "kairos"] and rank == 2
    assert lines[1].startswith(f"your entry my.py:Mine: rank {ranking(realistic).index('my.py:Mine') + 1} of 4 by "
                               "IQM of the normalised score, realistic track: ")
    assert "IQM over the 2 tasks with headroom" in lines[2] and "no seen/unseen split" in lines[3]
    rows = {ln.split()[0]: ln.split()[1:] for ln in lines[5:10]}
    assert rows["task"] == ["exact", "realistic"]
    assert rows["a"][:2] == ["4/0/0", "+0.150"] and rows["a"][4:6] == ["0/3/1", "-0.025"]
    assert rows["b"][:4] == ["0/0/4", "-0.100", "±", "0.000"]
    assert rows["flat"][:2] == ["0/4/0", "+0.000"]
    assert lines[9].split() == ["all", "tasks", "4/4/4", "0/7/5"]
    # exact: a above 0, b below, flat holds 0 (every difference 0); realistic: a holds 0 (one loss, three ties)
    assert lines[10] == ("  paired interval above / below / holding 0: exact on 1 / 1 / 1 tasks, realistic on "
                         "0 / 1 / 2 tasks")
    assert lines[-1] == "the whole board: out/leaderboard.md"


def test_no_summary_without_a_submitted_entry_and_no_rank_without_headroom():
    res = _result("exact", MINE)
    res["entries"] = [{**e, "kind": "built-in"} for e in res["entries"]]
    assert submission_summary({"exact": res}) == ""
    flat = _result("exact", MINE)
    flat.update({"scored_tasks": [], "aggregates": {}})
    assert rank_line(flat, "my.py:Mine").startswith("no rank on the exact track: no task of this run has headroom")
