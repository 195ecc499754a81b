"""The leaderboard (kairos_gym.benchmark.leaderboard and its suite, entries, scoring and leaderboard_md modules): fixed
instances, normalised scores, paired statistics, policies from files and checkpoints, the header; on a tiny suite
so it runs in seconds."""

from __future__ import annotations

import itertools
import json
import re

import numpy as np
import pytest
from kairos_gym.agents.ppo import DEFAULT_CHECKPOINT
from kairos_gym.agents.runner import run_policy

import kairos_gym.benchmark.entries as entries_mod
import kairos_gym.benchmark.suite as suite_mod
from kairos_gym.benchmark.entries import REQUIRED, STATIC_GRID
from kairos_gym.benchmark.leaderboard_report import leaderboard_md
from kairos_gym.benchmark.scoring import ranking, score
from kairos_gym.benchmark.suite import N_TEST, SUITE, TIER_NAMES, Instance
from kairos_gym.cli.main import main
from kairos_gym.scenario import load_scenario
from kairos_gym.sim import Simulator
from tests.fixtures import TINY_BENCH, TINY_SUITE, TINY_TRACE

POLICY_FILE = '''
from kairos_gym.sim.hook import Decision


class Prefill:
    """Never deflects: must score exactly as no-deflect."""

    name = "prefill-only"

    def decide(self, ctx):
        return Decision.prefill_path()
'''


@pytest.fixture
def tiny_suite(monkeypatch):
    monkeypatch.setattr(suite_mod, "SUITE", TINY_SUITE)
    return TINY_SUITE


def _fig(values):
    return {"slo_attainment": list(values), "ttft_p95": [1.0] * len(values), "tbt_violation_rate": [0.0] * len(values),
            "deflection_rate": [0.1] * len(values), "n_requests": [10.0] * len(values)}


# ---------------------------------------------------------------------------------------------- the suite
def test_the_standard_suite_has_fixed_disjoint_instances():
    for t in SUITE:
        assert len(t.test) == N_TEST and t.train, t.name
        assert not set(t.test) & set(t.train), t.name  # tuning never sees a test instance
        if t.windows:  # trace: disjoint windows, all with one seed (it does not change the workload)
            spans = sorted(i.window_s for i in (*t.test, *t.train))
            assert all(a[1] <= b[0] for a, b in itertools.pairwise(spans)), t.name
            assert {i.seed for i in t.test} == {0}
        else:
            assert all(i.window_s is None for i in t.test) and len({i.seed for i in t.test}) == N_TEST
    assert {t.family for t in SUITE if t.windows} == {"azure-code", "long-tail"}
    # every family at every tier, on the family's instances (tiers change the SLOs only)
    fams = {t.family for t in SUITE}
    assert len(SUITE) == len(fams) * len(TIER_NAMES) == len({t.name for t in SUITE})
    for f in fams:
        ts = [t for t in SUITE if t.family == f]
        assert sorted(t.tier for t in ts) == sorted(TIER_NAMES)
        assert len({(t.test, t.train, t.scenario) for t in ts}) == 1, f


def test_trace_windows_lie_inside_their_trace():
    """A window past the trace's end would be an empty (or short) instance: every window holds requests."""
    for t in SUITE:
        if t.windows and t.tier == "default":
            base = t.base()
            last = max((*t.test, *t.train), key=lambda i: i.window_s[1])
            sim = Simulator(last.scenario(base), seed=0)
            assert sim.n > 100, (t.name, last.label, sim.n)


def test_a_trace_workload_does_not_depend_on_the_seed_but_on_the_window():
    """Why trace instances are windows, not seeds: the seed does not change a trace workload."""
    base = load_scenario(TINY_TRACE)
    win = Instance(0, (240.0, 300.0)).scenario(base)
    a, b = run_policy("no-deflect", win, 0), run_policy("no-deflect", win, 1)
    for key in ("n_requests", "ttft_p95", "slo_attainment"):
        assert a[key] == b[key], key
    other = run_policy("no-deflect", Instance(0, (300.0, 360.0)).scenario(base), 0)
    assert other["n_requests"] != a["n_requests"]


# ---------------------------------------------------------------------------------------------- statistics
def test_score_normalises_per_task_and_leaves_saturated_tasks_out():
    figures = {
        "no-deflect": {"a": _fig([0.1, 0.3]), "flat": _fig([1.0, 1.0])},
        "oracle": {"a": _fig([0.5, 0.7]), "flat": _fig([1.0, 1.0])},
        "kairos": {"a": _fig([0.3, 0.5]), "flat": _fig([1.0, 1.0])},
        "x": {"a": _fig([0.6, 0.5]), "flat": _fig([1.0, 0.99])},
    }
    res = score(figures, ["a", "flat"], reps=2000)
    assert res["scored_tasks"] == ["a"] and res["saturated_tasks"] == ["flat"]
    assert res["anchors"]["a"] == pytest.approx({"no_deflect": 0.2, "reference": 0.6, "headroom": 0.4})
    # (x - 0.2) / 0.4 with the anchors' task means
    assert res["normalized"]["x"]["a"] == pytest.approx([1.0, 0.75])
    assert res["normalized"]["no-deflect"]["a"] == pytest.approx([-0.25, 0.25])
    assert "flat" not in res["normalized"]["x"]
    assert res["per_task"]["x"]["flat"]["normalized"] is None
    assert res["per_task"]["oracle"]["a"]["normalized"]["mean"] == pytest.approx(1.0)
    # headroom: the Oracle minus the best heuristic by mean (x: 0.55), instance by instance: -0.1, +0.2
    h = res["headroom"]["a"]
    assert h["best"] == "x" and h["mean"] == pytest.approx(0.05) and (h["wins"], h["ties"], h["losses"]) == (1, 0, 1)
    assert h["where"] == "unclear" and h["ci95"] > 0.05
    assert res["headroom"]["flat"]["best"] == "no-deflect"  # first in entry order on ties (1.0)
    assert res["headroom"]["flat"]["mean"] == 0.0 and res["headroom"]["flat"]["where"] == "none"
    assert score(figures, ["a"], reps=10, heuristics=["kairos"])["headroom"]["a"]["best"] == "kairos"
    # a gap below one point is "none" even when its interval lies above 0 (0.002 on every instance)
    tiny = {"no-deflect": {"a": _fig([0.1, 0.3])}, "oracle": {"a": _fig([0.502, 0.702])},
            "kairos": {"a": _fig([0.5, 0.7])}}
    assert score(tiny, ["a"], reps=10)["headroom"]["a"]["where"] == "none"
    # paired with kairos, instance by instance: x wins on the first (0.6 > 0.3), ties the second (0.5 = 0.5)
    p = res["paired"]["x"]["a"]
    assert (p["wins"], p["ties"], p["losses"]) == (1, 1, 0) and p["mean"] == pytest.approx(0.15)
    assert res["paired"]["x"]["flat"]["losses"] == 1
    agg = res["aggregates"]["x"]
    assert agg["poi_vs_comparison"][0] == 0.75  # (1 + 1/2) / 2, on the scored task only
    assert agg["mean"][0] == pytest.approx(0.875)
    assert agg["optimality_gap"][0] == pytest.approx(1 - (1.0 + 0.75) / 2)
    for name in ("iqm", "median", "mean", "optimality_gap", "poi_vs_comparison"):
        point, lo, hi = agg[name]
        assert lo <= point <= hi, name
    # every policy is resampled with the same instance indices: identical runs get identical intervals
    figures["y"] = figures["x"]
    again = score(figures, ["a", "flat"], reps=2000)
    assert again["aggregates"]["y"] == again["aggregates"]["x"] == agg


def test_score_without_headroom_anywhere_has_no_aggregates():
    same = {p: {"t": _fig([1.0, 1.0])} for p in REQUIRED}
    res = score(same, ["t"], reps=100)
    assert res["scored_tasks"] == [] and res["aggregates"] == {}


# ---------------------------------------------------------------------------------------------- end to end
def test_leaderboard_end_to_end_with_a_policy_file_and_a_checkpoint(tiny_suite, tmp_path, capsys):
    pol = tmp_path / "my_policy.py"
    pol.write_text(POLICY_FILE)
    out, js = tmp_path / "LB.md", tmp_path / "lb.json"
    argv = ["leaderboard", "--policies", "no-deflect,kairos,oracle,best-static", "--policy", f"{pol}:Prefill",
            "--checkpoint", str(DEFAULT_CHECKPOINT.parent), "--out", str(out), "--json", str(js), "--no-progress",
            "--track", "exact", "--oracle-cache", str(tmp_path / "none.json")]
    assert main(argv) == 0
    res = json.loads(js.read_text())
    labels = [e["label"] for e in res["entries"]]
    ckpt = f"checkpoint:{DEFAULT_CHECKPOINT.parent}"
    assert labels == ["no-deflect", "kairos", "oracle", "best-static", "file:my_policy.py:Prefill", ckpt]
    figs = res["figures"]
    # every entry ran on the same instances: the same workloads, instance by instance
    for t in ("tiny", "tiny-trace"):
        assert len({tuple(figs[lb_][t]["n_requests"]) for lb_ in labels}) == 1
        assert len(figs["kairos"][t]["slo_attainment"]) == 3
    # the Oracle (bases: the defaults and the task's best-static rule) is never below them on an instance
    for t in ("tiny", "tiny-trace"):
        for lb_ in ("no-deflect", "best-static"):
            assert all(o >= x for o, x in zip(figs["oracle"][t]["slo_attainment"], figs[lb_][t]["slo_attainment"],
                                              strict=True)), (t, lb_)
    assert res["oracle_sources"] == {"cache": 0, "run": 6}  # no cache file: every instance ran
    assert set(res["headroom"]) == {"tiny", "tiny-trace"}
    assert res["headroom"]["tiny"]["best"] in ("no-deflect", "kairos", "best-static")  # not ppo, not the Oracle
    # the file's policy went through the same runner: never deflecting, it scores exactly as no-deflect
    assert figs["file:my_policy.py:Prefill"] == figs["no-deflect"]
    # the checkpoint is the shipped agent: the same figures as a direct run of ppo on the first instance
    first = run_policy("ppo", TINY_BENCH, 0)
    assert figs[ckpt]["tiny"]["slo_attainment"][0] == first["slo_attainment"]
    # best-static: the best rule of the grid on the train instances
    grid = res["best_static"]["tiny"]["grid"]
    assert len(grid) == len(STATIC_GRID)
    assert res["best_static"]["tiny"]["chosen"]["train_score"] == max(g["train_score"] for g in grid)
    md = out.read_text()
    assert f"Command: `kairos-gym {' '.join(argv)}`" in md
    assert "commit `" in md or "outside a git checkout" in md
    assert "wall time" in md and "## Headroom: the Oracle minus the best shipped heuristic" in md
    assert "file:my_policy.py:Prefill" in md and ckpt in md
    assert "the trace window (a trace workload does not depend on the seed" in md
    stdout = capsys.readouterr().out
    assert stdout.startswith(f"wrote {out}")
    # the closing summary: each submitted entry's rank on the board, then its paired figures against kairos
    for lb_ in labels[-2:]:
        rank = ranking(res).index(lb_) + 1
        assert f"your entry {lb_}: rank {rank} of {len(labels)} by IQM of the normalised score, exact track: " \
            in stdout
    p = res["paired"][labels[-2]]["tiny"]
    assert re.search(rf"^  tiny +{p['wins']}/{p['ties']}/{p['losses']} {p['mean']:+.3f} ", stdout, re.M)
    assert stdout.rstrip().endswith(f"the whole board: {out}")


def test_leaderboard_runs_every_policy_on_each_track_in_its_own_section(tiny_suite, tmp_path):
    """--track both: one section per track, every policy run on each; the physics is the same (no-deflect scores
    alike on both), the Oracle (the reference) and kairos-exact run on the exact track in both sections, and on
    the exact track kairos is kairos-exact while on the realistic track it sees the served stale, noisy view."""
    out, js = tmp_path / "LB.md", tmp_path / "lb.json"
    argv = ["leaderboard", "--policies", "no-deflect,kairos,kairos-exact,oracle", "--tasks", "tiny", "--out", str(out),
            "--json", str(js), "--no-progress", "--oracle-cache", str(tmp_path / "none.json")]
    assert main(argv) == 0
    res = json.loads(js.read_text())
    assert list(res["tracks"]) == ["exact", "realistic"]
    ex, re_ = res["tracks"]["exact"], res["tracks"]["realistic"]
    assert (ex["track"], re_["track"]) == ("exact", "realistic")
    assert ex["figures"]["no-deflect"] == re_["figures"]["no-deflect"]
    assert ex["figures"]["kairos-exact"] == re_["figures"]["kairos-exact"] == ex["figures"]["kairos"]
    assert ex["figures"]["oracle"] == re_["figures"]["oracle"]
    assert re_["figures"]["kairos"] != ex["figures"]["kairos"]
    md = out.read_text()
    assert md.index("## Track: exact") < md.index("## Track: realistic")
    assert md.count("### Raw figures per task") == 2 and md.count("# Leaderboard") == 1
    assert "information track **realistic**" in md and "kairos-exact always runs on the exact track" in md


@pytest.fixture
def no_runs(monkeypatch, tiny_suite):
    """A leaderboard run that reaches a real (tuning or test) run fails the test."""
    def fail(*a, **k):
        raise AssertionError("a suite run started before the bad input was reported")

    monkeypatch.setattr(entries_mod, "run_one", fail)
    monkeypatch.setattr(entries_mod, "run_task", fail)


BAD_ARGS = [
    (["--policy", "nocolon"], "--policy"),
    (["--policy", "{dir}/missing.py:X"], "no file"),
    (["--policy", "{file}:Missing"], "classes there with a decide method: Prefill"),
    (["--policy", "{bad}:NoDecide"], "has none"),
    (["--policy", "{bad}:ReturnsNone"], "decision = None"),
    (["--policy", "{bad}:NeedsArgs"], "also requires width"),
    (["--policy", "{file}:Prefill", "--policy", "{file}:Prefill"], "given twice"),
    (["--checkpoint", "{dir}"], "--checkpoint"),
    (["--policies", "no-deflect,kairos"], "missing: oracle"),
    (["--oracle-cache", "{bad}"], "oracle cache"),
    (["--oracle-cache", "/dev/urandom"], "a regular file"),
    (["--oracle-cache", "{deep}"], "nested at most 64 levels"),
    (["--oracle-cache", "{dup}"], "each key once per object"),
    (["--policies", "no-deflect,kairos,kairos-exact,best-static,nope"], "'nope' is not one"),
    (["--tasks", "nope"], "family names"),
    (["--tasks", "tiny,tiny"], "each name once"),
    (["--tasks", "tiny,"], "comma-separated"),
    (["--track", "stale"], "--track"),
]


@pytest.mark.parametrize("args,needle", BAD_ARGS)
def test_bad_leaderboard_input_exits_2_before_any_run(args, needle, no_runs, tmp_path, capsys):
    (tmp_path / "good.py").write_text(POLICY_FILE)
    (tmp_path / "bad.py").write_text(
        "class NoDecide:\n    pass\n\n\nclass ReturnsNone:\n    def decide(self, ctx):\n        return None\n\n\n"
        "class NeedsArgs:\n    def __init__(self, width):\n        pass\n\n    def decide(self, ctx):\n"
        "        return None\n")
    (tmp_path / "deep.json").write_text("[" * 100_000 + "]" * 100_000)
    (tmp_path / "dup.json").write_text('{"version": 1, "version": 2}')
    fmt = {"dir": tmp_path, "file": tmp_path / "good.py", "bad": tmp_path / "bad.py", "deep": tmp_path / "deep.json",
           "dup": tmp_path / "dup.json"}
    argv = ["leaderboard", *[a.format(**fmt) for a in args], "--out", str(tmp_path / "o.md"), "--no-progress"]
    assert main(argv) == 2
    out, err = capsys.readouterr()
    lines = err.strip().splitlines()
    assert out == "" and len(lines) == 1, err
    assert lines[0].startswith("kairos-gym leaderboard: error: ") and needle in lines[0] and "allowed" in lines[0]
    assert not (tmp_path / "o.md").exists()


def test_markdown_ranks_by_iqm_and_records_the_header():
    figures = {"no-deflect": {"a": _fig([0.1, 0.3])}, "oracle": {"a": _fig([0.5, 0.7])},
               "kairos": {"a": _fig([0.3, 0.5])}, "better": {"a": _fig([0.8, 0.9])}}
    res = {"command": "kairos-gym leaderboard --out X.md", "version": "9.9", "commit": "abc123", "dirty": True,
           "date": "2030-01-01 00:00 UTC", "python": "3.x", "numpy": "2.x", "elapsed_s": 12.3,
           "suite": [{"task": "a", "test": "seeds 0,1", "train": "seeds 9", "instances": ["seed 0", "seed 1"],
                      "windows": False}],
           "entries": [{"label": k, "kind": "built-in"} for k in figures], "best_static": {}}
    res.update(score(figures, ["a"], reps=500))
    assert ranking(res) == ["better", "oracle", "kairos", "no-deflect"]
    md = leaderboard_md(res)
    assert "Command: `kairos-gym leaderboard --out X.md`" in md
    assert "commit `abc123` with uncommitted changes" in md and "wall time 12 s" in md
    assert md.index("| 1 | better |") < md.index("| 2 | oracle |") < md.index("| 4 | no-deflect |")
    assert "| a | better | 0.850 | 0.600 | -0.250 ± " in md  # the headroom row: "better" beats the Oracle here


def test_select_tasks_by_task_family_and_tier():
    by = {t.name: t for t in SUITE}
    assert suite_mod.select_tasks("bursty/strict") == (by["bursty/strict"],)
    picked = suite_mod.select_tasks("decode-bound,strict")
    assert {t.name for t in picked} == {t.name for t in SUITE if t.family == "decode-bound" or t.tier == "strict"}
    assert [t.name for t in picked] == [t.name for t in SUITE if t in picked]  # suite order
    assert len(picked) == 3 + len({t.family for t in SUITE}) - 1
    # a family's default tier alone: <family>/default (the bare name is the whole family)
    assert suite_mod.select_tasks("fault-shift/default") == (by["fault-shift"],)
    assert [t.name for t in suite_mod.select_tasks("fault-shift")] == ["fault-shift/strict", "fault-shift",
                                                                       "fault-shift/relaxed"]
    assert suite_mod.select_tasks("bursty/default,bursty/strict") == (by["bursty/strict"], by["bursty"])
    with pytest.raises(suite_mod.ConfigError, match="default tier alone"):
        suite_mod.select_tasks("nope/default")


def test_tier_slos_are_5x_and_25x_the_unloaded_decode_step_and_ttft():
    """docs/benchmark.md, "SLO tiers": brute force from the latency model for bursty (one prefill step, as its
    median prompt fits the token budget)."""
    from kairos_gym.latency.model import StepLatencyModel

    task = next(t for t in SUITE if t.name == "bursty/strict")
    sc = load_scenario("bursty").with_overrides(task.overrides)
    sim = Simulator(task.train[0].scenario(sc), seed=task.train[0].seed)
    p = int(np.median(sim.workload.prompt_tokens))
    o = int(np.median(sim.workload.output_tokens))
    assert p < sc.cluster.prefill_token_budget
    m = StepLatencyModel.from_preset()
    step = m.step_time([p + o // 2])
    xfer = sc.transfer.setup_s + p * m.kv_bytes_per_token / sc.transfer.bandwidth_bytes_per_s
    ttft = m.step_time([], [(p, 0)]) + xfer + m.step_time([p])  # prefill step, KV transfer, first decode step
    u = suite_mod.unloaded(sc, task.train[0])
    assert u["decode_step_s"] == step and abs(u["ttft_s"] - ttft) < 1e-12
    tiers = suite_mod.tier_slos(sc, task.train[0])
    assert tiers["strict"] == {"ttft_s": round(5 * u["ttft_s"], 4), "tbt_s": round(5 * step, 4)}
    assert tiers["relaxed"] == {"ttft_s": round(25 * u["ttft_s"], 4), "tbt_s": round(25 * step, 4)}
    assert tiers["default"] == {"ttft_s": 1.0, "tbt_s": 0.1}
    assert task.base().slo.tbt_s == tiers["strict"]["tbt_s"] == 0.0432  # the figure docs/benchmark.md gives
