"""Suite v2 (kairos_gym/benchmark/suite_v2.py, board_v2*.py, ``leaderboard --suite v2``): the suites by name, v2's
tasks and split, best-rule's tuning on the train split only, the statistics and the report of a small run."""

from __future__ import annotations

import dataclasses
import subprocess
import sys
from typing import Any

import numpy as np
import pytest

from kairos_gym.benchmark import suite_v2
from kairos_gym.benchmark.board_v2 import BEST_RULE, RULE_GRID, check_v2_entries, run_v2
from kairos_gym.benchmark.board_v2_report import leaderboard_v2_md
from kairos_gym.benchmark.board_v2_stats import all_stats, check_scores
from kairos_gym.benchmark.suite import SUITE as V1
from kairos_gym.benchmark.suite import TRAIN_SEED_MIN, seeds
from kairos_gym.benchmark.suites import SUITES, suite_named
from kairos_gym.errors import ConfigError


def test_the_suites_by_name() -> None:
    assert suite_named("v1") is V1 and len(V1) == 21
    assert suite_named("v2") is suite_v2.SUITE
    assert set(SUITES) == {"v1", "v2"}
    with pytest.raises(ConfigError, match="--suite"):
        suite_named("v3")


def test_v2_tasks_instances_and_split() -> None:
    assert suite_v2.families("seen") == ("bursty", "regime-shift", "decode-bound", "kv-pressure", "fault-shift")
    assert suite_v2.families("unseen") == ("servegen-sharegpt", "arxiv-summ", "mooncake-synthetic")
    for t in suite_v2.SUITE:
        sc = t.base()
        assert len(t.test) == 30 and [i.seed for i in t.test] == list(range(30))
        assert {i.seed for i in t.train}.isdisjoint(i.seed for i in t.test)
        assert all(i.seed < TRAIN_SEED_MIN for i in (*t.test, *t.train))
        assert sc.slo.burn_in_requests == suite_v2.BURN_IN
        assert sc.workload.num_requests == suite_v2.BURN_IN + suite_v2.SCORED


def test_the_unseen_families_use_data_no_seen_family_uses() -> None:
    def data(sc: Any) -> set[str]:
        a, lengths = sc.workload.arrival, sc.workload.effective_lengths
        return {f"arrival:{a.kind}:{getattr(a, 'path', '')}:{getattr(a, 'model', '')}",
                f"lengths:{lengths.kind}:{getattr(lengths, 'path', '')}"}

    seen = set().union(*(data(t.base()) for t in suite_v2.SUITE if t.split == "seen"))
    for t in suite_v2.SUITE:
        if t.split == "unseen":
            own = data(t.base())
            assert not any(d.startswith("lengths:") and d in seen for d in own), t.name
            assert not any(d.startswith("arrival:profile") and d in seen for d in own), t.name


def test_fault_shift_outages_go_on_through_the_scored_requests() -> None:
    sc = next(t for t in suite_v2.SUITE if t.name == "fault-shift").base()
    assert sc.faults.random.horizon_s >= 3000 / sc.workload.arrival.rate


def _small() -> tuple[Any, ...]:
    out = []
    for t in suite_v2.SUITE:
        if t.name in ("bursty", "decode-bound", "arxiv-summ"):
            over = {**t.overrides, "workload": {**t.overrides.get("workload", {}), "num_requests": 160},
                    "slo": {"burn_in_requests": 60}}
            out.append(dataclasses.replace(t, test=seeds(0, 1, 2), train=seeds(1000), overrides=over))
    return tuple(out)


@pytest.fixture(scope="module")
def small_run() -> dict[str, Any]:
    return run_v2(["no-deflect", "always-deflect-ls", "slo-guard", BEST_RULE, "kairos"], suite=_small())


def test_best_rule_is_tuned_on_the_train_split_only(small_run: dict[str, Any]) -> None:
    best = small_run["best_rule"]
    assert best["bursty"]["from"] == "its own train instances"
    assert best["arxiv-summ"]["from"].startswith("every seen task's train instances")
    pooled = [np.mean([best[t]["grid"][k]["train_score"] for t in ("bursty", "decode-bound")])
              for k in range(len(RULE_GRID))]
    assert best["arxiv-summ"]["chosen"]["train_score"] == pytest.approx(max(pooled), abs=1e-12)
    assert best["arxiv-summ"]["chosen"]["rule"] == best["arxiv-summ"]["grid"][int(np.argmax(pooled))]["rule"]


def test_the_statistics_and_the_report(small_run: dict[str, Any]) -> None:
    check_scores(small_run)
    st = all_stats(small_run, reps=500)
    cols = st["columns"]
    assert [c["unseen"]["mean"] for c in cols] == sorted((c["unseen"]["mean"] for c in cols), reverse=True)
    k = next(c for c in cols if c["label"] == "kairos")
    assert k["vs_kairos"]["mean"] == 0.0 and k["p_above_kairos"] == 0.5
    unseen = np.mean(small_run["scores"]["slo-guard"]["arxiv-summ"]) * 100
    assert next(c for c in cols if c["label"] == "slo-guard")["unseen"]["mean"] == pytest.approx(unseen)
    assert set(st["robustness"]["orders"]) == {"mean", "iqm", "median", "p_above_kairos"}
    assert [s["task"] for s in st["separation"]] == ["bursty", "decode-bound", "arxiv-summ"]
    md = leaderboard_v2_md(small_run, reps=500)
    for part in ("# Leaderboard, suite v2", "**unseen (headline)**", "## Robustness of the order",
                 "## Separation per task", "## best-rule's choices", "60 warm-up requests"):
        assert part in md


@pytest.mark.parametrize(("policies", "msg"), [(["oracle", "kairos"], "Oracle is not a v2 entry"),
                                               (["kairos-exact", "kairos"], "one row"),
                                               (["best-static", "kairos"], "best-rule"),
                                               (["no-deflect"], "kairos")])
def test_refused_entries(policies: list[str], msg: str) -> None:
    with pytest.raises(ConfigError, match=msg):
        check_v2_entries(policies, [])


@pytest.mark.parametrize("args", [["--suite", "v3"], ["--suite", "v2", "--oracle-cache", "x.json"],
                                  ["--suite", "v2", "--tasks", "azure-code"]])
def test_bad_suite_flags_exit_2_before_any_run(args: list[str]) -> None:
    r = subprocess.run([sys.executable, "-m", "kairos_gym.cli", "leaderboard", *args], capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 2, r.stderr
    assert args[-2] in r.stderr


def test_a_submitted_entry_gets_its_rank_and_per_task_record(tmp_path: Any) -> None:
    from kairos_gym.agents.policy_file_loader import policy_from_file

    from kairos_gym.benchmark.board_v2_report import submission_summary_v2

    (tmp_path / "mine.py").write_text("from kairos_gym.sim.hook import Decision\n\n\nclass Mine:\n"
                                      "    def decide(self, ctx):\n        return Decision.prefill_path()\n")
    ext = policy_from_file(f"{tmp_path / 'mine.py'}:Mine")
    suite = tuple(t for t in _small() if t.name != "decode-bound")
    res = run_v2(["kairos"], [ext], suite=suite)
    text = submission_summary_v2({"exact": res}, "out/x.md", reps=200)
    assert f"your entry {ext.label}: rank 2 of 2 by the unseen headline, exact track" in text
    assert "bursty (seen) " in text and "arxiv-summ (unseen) 0/0/3" in text and text.endswith("out/x.md")
    assert submission_summary_v2({"exact": {**res, "entries": res["entries"][:1]}}, "o") == ""


def test_a_saved_run_renders_the_same_report_again(small_run: dict[str, Any], tmp_path: Any) -> None:
    import json

    saved = tmp_path / "exact.json"
    saved.write_text(json.dumps(small_run))
    out = tmp_path / "board.md"
    r = subprocess.run([sys.executable, "-m", "kairos_gym.cli", "leaderboard", "--suite", "v2", "--from-json",
                        str(saved), "--out", str(out)], capture_output=True, text=True, timeout=300, check=True)
    assert "from 1 saved run(s)" in r.stdout
    assert out.read_text() == leaderboard_v2_md(small_run)
    broken = tmp_path / "broken.json"
    broken.write_text(json.dumps({**small_run, "scores": {"kairos": {}}}))
    for bad in (broken, tmp_path / "missing.json"):
        r = subprocess.run([sys.executable, "-m", "kairos_gym.cli", "leaderboard", "--suite", "v2", "--from-json",
                            str(bad), "--out", str(out)], capture_output=True, text=True, timeout=300)
        assert r.returncode == 2 and "--from-json" in r.stderr


def test_the_committed_v2_board_is_what_its_saved_runs_render() -> None:
    """results/leaderboard-v2.md cannot drift from results/leaderboard-v2-{exact,realistic}.json (a change of the
    report's code shows here: re-render with the command in docs/benchmark.md)."""
    from pathlib import Path

    from kairos_gym.cli.benchmark import read_v2_json

    root = Path(__file__).resolve().parents[2] / "results"
    runs = [read_v2_json(str(root / f"leaderboard-v2-{track}.json"))[0] for track in ("exact", "realistic")]
    assert (root / "leaderboard-v2.md").read_text() == "\n".join(leaderboard_v2_md(r) for r in runs)


def test_a_both_tracks_json_reads_as_its_two_tracks_and_learnt_entries_are_paired(tmp_path) -> None:
    import json
    from pathlib import Path

    from kairos_gym.benchmark.board_v2_stats import columns, learnt, learnt_pairs
    from kairos_gym.cli.benchmark import read_v2_json

    root = Path(__file__).resolve().parents[2] / "results"
    both = {"tracks": {t: json.loads((root / f"leaderboard-v2-{t}.json").read_text()) for t in ("exact", "realistic")}}
    path = tmp_path / "both.json"
    path.write_text(json.dumps(both))
    runs = read_v2_json(str(path))
    assert [r["track"] for r in runs] == ["exact", "realistic"]
    exact = runs[0]
    assert learnt(exact) == ["ppo", "distilled-oracle"]
    (pair,) = learnt_pairs(exact, reps=2000)
    cols = {c["label"]: c for c in columns(exact, reps=2000)}
    want = cols["ppo"]["unseen"]["mean"] - cols["distilled-oracle"]["unseen"]["mean"]
    assert pair["a"] == "ppo" and abs(pair["unseen"]["mean"] - want) < 1e-9
    assert pair["unseen"]["low"] < pair["unseen"]["mean"] < pair["unseen"]["high"]


def test_saved_runs_of_one_track_merge_their_entries_and_refuse_what_does_not_match(tmp_path) -> None:
    import copy
    import json
    from pathlib import Path

    import pytest

    from kairos_gym.benchmark.board_v2 import merge_runs
    from kairos_gym.cli.benchmark import read_v2_json
    from kairos_gym.errors import ConfigError

    root = Path(__file__).resolve().parents[2] / "results"
    a = read_v2_json(str(root / "training" / "v2-seen-exact.json"))[0]
    b = read_v2_json(str(root / "training" / "v2-seen-seed1-exact.json"))[0]
    m = merge_runs(a, b, "b.json")
    labels = [e["label"] for e in m["entries"]]
    assert labels == [*[e["label"] for e in a["entries"]], "checkpoint:runs/ppo/v2-seen/export-seed1"]
    assert m["scores"]["kairos"] == a["scores"]["kairos"] == b["scores"]["kairos"]  # runs at two commits agree
    bad = copy.deepcopy(b)
    first = bad["tasks"][0]["task"]
    bad["scores"]["kairos"][first][0] += 0.001
    with pytest.raises(ConfigError, match="same scores"):
        merge_runs(a, bad, "bad.json")
    other = copy.deepcopy(b)
    other["tasks"] = other["tasks"][1:]
    with pytest.raises(ConfigError, match="same tasks"):
        merge_runs(a, other, "other.json")
    path = tmp_path / "a.json"
    path.write_text(json.dumps(a))
    assert read_v2_json(str(path))[0]["entries"] == a["entries"]
