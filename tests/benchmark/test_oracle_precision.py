"""The Oracle's two-phase precision protocol (kairos_gym/benchmark/oracle_precision.py): the runs are the ones asked for
(phase 1 on the precision list's prefix, the Oracle on a shorter prefix, the cache used where valid), the
estimates are the two-phase ones, the improvement property is checked, and bad settings fail before any run."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

import kairos_gym.benchmark.oracle_precision as op
from kairos_gym.benchmark import oracle_cache
from kairos_gym.benchmark.entries import rule_label, tune_static
from kairos_gym.benchmark.oracle_precision import (
    BASE_LABELS,
    check_policy_names,
    check_settings,
    oracle_precision_md,
    run_oracle_precision,
    task_estimates,
)
from kairos_gym.benchmark.precision import precision_instances
from kairos_gym.benchmark.suite import on_track, seeds, select_tasks
from kairos_gym.benchmark.two_phase import allocation, ratio_estimate, sum_estimate
from kairos_gym.cli.main import main
from kairos_gym.errors import ConfigError
from kairos_gym.evaluation.evaluate import run_one
from kairos_gym.progress import or_silent

POLICIES = [*BASE_LABELS, "kairos"]
TINY_BASES = [lb for lb in BASE_LABELS if lb != "pending-switch"]
"""The tiny task's bases: it rolls out no family base (pending-switch is fault-shift's)."""


def _tiny():
    """bursty/strict cut to 40-request instances: a fresh Oracle run takes well under a second."""
    t = select_tasks("bursty/strict")[0]
    return dataclasses.replace(t, name="tiny", family="tiny", test=seeds(*range(10)),
                               overrides={**t.overrides, "workload": {"num_requests": 40}})


def test_a_familys_own_oracle_base_is_in_m_and_the_oracles_bases():
    """A task with ``oracle_bases`` (fault-shift's pending-switch): its Oracle rolls it out and M includes its
    phase-1 column; on the realistic track its exact-track column runs too."""
    fs = select_tasks("fault-shift")[0]
    task = dataclasses.replace(fs, name="tiny-fs", family="tiny-fs", test=seeds(3, 5, 8, 9, 10, 11),
                               overrides={"workload": {"num_requests": 60}})
    assert task.oracle_bases == ("pending-switch",)
    for track in ("exact", "realistic"):
        res = run_oracle_precision(POLICIES, suite=[task], half_width=0.2, pilot=3, max_instances=6, max_oracle=4,
                                   rounds=2, track=track)
        v = res["tasks"]["tiny-fs"]
        assert v["bases"][:6] == [*TINY_BASES[:5], "pending-switch"]  # then best-static, unless a default rule
        col = "pending-switch" if track == "exact" else "pending-switch" + op.EXACT_SUFFIX
        assert col in v["base_columns"]
        m = np.max([v["scores"][c] for c in v["base_columns"]], axis=0)
        assert all(o >= mm for o, mm in zip(v["scores"]["oracle"], m, strict=False))


def test_small_run_end_to_end():
    task = _tiny()
    res = run_oracle_precision(POLICIES, suite=[task], half_width=0.05, pilot=3, max_instances=12, max_oracle=6,
                               rounds=2)
    v = res["tasks"]["tiny"]
    n1, n2 = v["n1"], v["n2"]
    assert 4 <= n2 <= 6 and n2 <= n1 <= 12
    # the sizes are the allocation of the pilot's variances
    want = allocation(v["pilot_a"], v["pilot_s"], 0.05, op.t_quantile_975(2), op.COST_RATIO, 4, 12, 6)
    assert (n1, n2, v["capped"]) == want
    base = on_track(task.base(), "exact")
    inst = precision_instances(task, n1)
    chosen = tune_static(task, base, or_silent(None))["chosen"]
    assert v["best_static"] == rule_label(chosen["policy"], chosen["params"])
    for lb in POLICIES:
        name, params = (chosen["policy"], chosen["params"]) if lb == "best-static" else (lb, None)
        want = [run_one(i.scenario(base), name, i.seed, params=params)[0]["slo_attainment"] for i in inst]
        assert v["scores"][lb] == want
    # the Oracle ran with the task's bases (its best-static rule included) on the first n2 instances
    oracle = v["scores"]["oracle"]
    bases = oracle_cache.task_bases(chosen)
    assert oracle == [run_one(i.scenario(base), "oracle", i.seed, params={"bases": bases})[0]["slo_attainment"]
                      for i in inst[:n2]]
    assert res["oracle_sources"] == {"cache": 0, "run": n2, "resumed": 0}
    m = np.max([v["scores"][b] for b in v["bases"]], axis=0)
    assert all(o >= mm for o, mm in zip(oracle, m, strict=False))
    g = np.asarray(oracle) - m[:n2]
    e = sum_estimate(m, g)
    assert v["oracle"]["mean"] == pytest.approx(e.value) and v["oracle"]["half"] == pytest.approx(e.half)
    assert v["oracle"]["mean"] == pytest.approx(np.mean(m) + np.mean(g))
    nd = np.asarray(v["scores"]["no-deflect"])
    if v["normalized"]:
        r = ratio_estimate(np.asarray(v["scores"]["kairos"]) - nd, m - nd, g)
        assert v["normalized"]["kairos"]["mean"] == pytest.approx(r.value)
    assert res["phase1_runs"] == n1 * len(POLICIES)
    md = oracle_precision_md(res)
    assert "| tiny |" in md and "two-phase" in md and "Normalised scores" in md


def test_the_oracle_ran_is_the_leaderboard_oracle_and_the_cache_is_used():
    # bursty/strict's first precision instances are the leaderboard's test seeds: every Oracle score comes
    # from the committed cache, and equals a fresh run of the task's Oracle
    task = select_tasks("bursty/strict")[0]
    res = run_oracle_precision(POLICIES, suite=[task], half_width=0.5, pilot=3, max_instances=4, max_oracle=4)
    v = res["tasks"][task.name]
    assert res["oracle_sources"] == {"cache": v["n2"], "run": 0, "resumed": 0}
    sc = on_track(task.base(), "exact")
    chosen = tune_static(task, sc, or_silent(None))["chosen"]
    fresh = run_one(sc, "oracle", 0, params={"bases": oracle_cache.task_bases(chosen)})[0]["slo_attainment"]
    assert v["scores"]["oracle"][0] == fresh


def test_an_oracle_below_its_bases_stops_the_run():
    x = {lb: [0.5, 0.6, 0.7] for lb in BASE_LABELS}
    with pytest.raises(RuntimeError, match="improvement property"):
        task_estimates(x, [0.5, 0.59], list(BASE_LABELS), list(BASE_LABELS))


def test_task_estimates_by_hand():
    x = {lb: [0.2, 0.3, 0.4, 0.5] for lb in BASE_LABELS}
    x["always-deflect-ls"] = [0.4, 0.5, 0.45, 0.6]
    x["no-deflect"] = [0.1, 0.1, 0.2, 0.2]
    oracle = [0.45, 0.52, 0.5]
    v = task_estimates(x, oracle, list(BASE_LABELS), list(BASE_LABELS))
    m = np.array([0.4, 0.5, 0.45, 0.6])
    g = np.array(oracle) - m[:3]
    assert v["oracle"]["mean"] == pytest.approx(m.mean() + g.mean())
    assert v["best"] == "always-deflect-ls" and v["headroom"]["mean"] == pytest.approx(g.mean())
    assert v["g_mean"] == pytest.approx(g.mean()) and v["gap_zero"] == 0
    # no-deflect's normalised score is not listed (it is the 0); always-deflect-ls: mean(P - B) / mean(O - B)
    assert "no-deflect" not in v["normalized"]
    want = np.mean(m - np.array(x["no-deflect"])) / (np.mean(m - np.array(x["no-deflect"])) + g.mean())
    assert v["normalized"]["always-deflect-ls"]["mean"] == pytest.approx(want)


def test_no_normalised_scores_without_room():
    x = {lb: [1.0, 1.0, 1.0] for lb in BASE_LABELS}
    v = task_estimates(x, [1.0, 1.0], list(BASE_LABELS), list(BASE_LABELS))
    assert v["normalized"] == {} and v["oracle"]["half"] == 0.0


@pytest.mark.parametrize("kw,field", [
    ({"half_width": 0.0}, "--half-width"), ({"half_width": math.inf}, "--half-width"), ({"pilot": 2}, "--pilot"),
    ({"pilot": True}, "--pilot"), ({"cost_ratio": 0.5}, "--cost-ratio"), ({"cost_ratio": math.nan}, "--cost-ratio"),
    ({"max_oracle": 10}, "--max-oracle"), ({"max_oracle": 2001, "max_instances": 5000}, "--max-oracle"),
    ({"max_instances": 100}, "--max-instances"), ({"max_instances": 5001}, "--max-instances"),
    ({"rounds": 1}, "--rounds"), ({"rounds": 11}, "--rounds"),
])
def test_bad_settings_are_refused(kw, field):
    args = {"half_width": 0.01, "pilot": 10, "cost_ratio": 40.0, "max_instances": 1000, "max_oracle": 200, **kw}
    with pytest.raises(ConfigError, match=field):
        check_settings(**args)


@pytest.mark.parametrize("policies,why", [
    (["oracle", *BASE_LABELS], "phase 2"), (["no-deflect"], "the Oracle's bases"),
    ([*BASE_LABELS, "nope"], "names from"), ([*BASE_LABELS, "kairos", "kairos"], "each policy once"),
])
def test_bad_policies_are_refused(policies, why):
    with pytest.raises(ConfigError, match=why):
        check_policy_names(policies)


def test_everything_is_checked_before_a_run(monkeypatch):
    def boom(*a, **k):
        raise AssertionError("a run started")

    monkeypatch.setattr(op, "tune_static", boom)
    monkeypatch.setattr(op, "run_task", boom)
    monkeypatch.setattr(op, "entry_task", boom)
    for kw in ({"suite": ()}, {"half_width": 0.0}, {"policies": ["no-deflect"]}, {"max_oracle": 5000}):
        with pytest.raises(ConfigError):
            run_oracle_precision(**{"policies": POLICIES, "suite": [_tiny()], **kw})


def test_cli_refuses_a_bad_flag_with_one_line(capsys):
    assert main(["oracle-precision", "--max-oracle", "3", "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert "--max-oracle" in err and err.count("\n") == 1


def test_cli_writes_the_report(tmp_path):
    out, js = tmp_path / "op.md", tmp_path / "op.json"
    assert main(["oracle-precision", "--tasks", "bursty/strict", "--pilot", "3", "--max-oracle", "4",
                 "--max-instances", "4", "--half-width", "0.5", "--no-progress", "--out", str(out),
                 "--json", str(js)]) == 0
    text = out.read_text()
    assert "kairos-gym oracle-precision --tasks bursty/strict" in text and "| bursty/strict |" in text


def test_a_process_pool_gives_the_serial_result():
    from kairos_gym.evaluation.backends import ProcessBackend

    kw = {"suite": [_tiny()], "half_width": 0.05, "pilot": 3, "max_instances": 8, "max_oracle": 5}
    serial = run_oracle_precision(POLICIES, **kw)
    with ProcessBackend(2, 0) as pool:
        pooled = run_oracle_precision(POLICIES, backend=pool, **kw)
    assert pooled["tasks"] == serial["tasks"]


def test_an_empty_trace_window_is_refused_before_any_run(monkeypatch):
    from kairos_gym.benchmark.suite import SUITE, windows

    def boom(*a, **k):
        raise AssertionError("a run started")

    monkeypatch.setattr(op, "tune_static", boom)
    az = next(t for t in SUITE if t.name == "azure-code")
    # the trace ends at 3,436 s: windows drawn in [3500, 3700) hold no request
    past = dataclasses.replace(az, name="azure-past", family="azure-past", test=windows([3500.0, 3600.0, 3700.0]))
    with pytest.raises(ConfigError, match="at least one request"):
        run_oracle_precision(POLICIES, suite=[past], half_width=0.05, max_instances=20, max_oracle=12)


def test_a_third_round_grows_the_sizes_where_the_target_is_missed(monkeypatch):
    # stage 2 deliberately undersized (the pilot's sizes replaced by the minimum): round 3 re-sizes from all the
    # data, its sizes only grow, and the earlier instances stay the same runs
    kw = {"suite": [_tiny()], "half_width": 0.05, "pilot": 3, "max_instances": 400, "max_oracle": 100}
    calls = []
    real = op.allocation

    def small_first(a, s, half_width, q, cost_ratio, n_min, cap1, cap2):
        calls.append(n_min)
        return (n_min, n_min, False) if len(calls) == 1 else real(a, s, half_width, q, cost_ratio, n_min, cap1, cap2)

    monkeypatch.setattr(op, "allocation", small_first)
    two = run_oracle_precision(POLICIES, rounds=2, **kw)["tasks"]["tiny"]
    assert two["sizes"] == [[4, 4]] and two["oracle"]["half"] > 0.05
    calls.clear()
    three = run_oracle_precision(POLICIES, rounds=3, **kw)["tasks"]["tiny"]
    assert three["sizes"][0] == [4, 4] and len(three["sizes"]) == 2 and calls == [4, 4]
    n1, n2 = three["sizes"][1]
    assert (n1, n2) == (three["n1"], three["n2"]) and n1 >= 4 and n2 >= 4 and (n1, n2) != (4, 4)
    for lb, xs in two["scores"].items():
        assert three["scores"][lb][:len(xs)] == xs


def test_resume_gives_the_fresh_result(tmp_path):
    import json

    kw = {"suite": [_tiny()], "half_width": 0.02, "pilot": 3, "max_instances": 60, "max_oracle": 30}
    fresh = run_oracle_precision(POLICIES, rounds=3, **kw)
    earlier = run_oracle_precision(POLICIES, rounds=2, **kw)
    path = tmp_path / "earlier.json"
    path.write_text(json.dumps(earlier))
    resumed = run_oracle_precision(POLICIES, rounds=3, resume=op.load_resume(path), **kw)
    assert resumed["tasks"] == fresh["tasks"]
    assert resumed["oracle_sources"]["resumed"] == earlier["tasks"]["tiny"]["n2"] - 1  # instance 0 re-run


def test_resume_refuses_scores_that_do_not_reproduce(tmp_path):
    import json

    kw = {"suite": [_tiny()], "half_width": 0.05, "pilot": 3, "max_instances": 12, "max_oracle": 6, "rounds": 2}
    earlier = run_oracle_precision(POLICIES, **kw)
    earlier["tasks"]["tiny"]["scores"]["kairos"][0] += 0.001
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(earlier))
    with pytest.raises(ConfigError, match="reproduces"):
        run_oracle_precision(POLICIES, resume=op.load_resume(path), **kw)
    earlier["tasks"]["tiny"]["scores"]["kairos"][0] -= 0.001
    earlier["tasks"]["tiny"]["best_static"] = "sq-ls queue_threshold=1"
    path.write_text(json.dumps(earlier))
    with pytest.raises(ConfigError, match="same best-static rule"):
        run_oracle_precision(POLICIES, resume=op.load_resume(path), **kw)


@pytest.mark.parametrize("text,why", [
    ("not json", "JSON file"), ("[]", "tasks"), ('{"tasks": {"t": {"scores": {"x": [2.0]}, "bases": [], '
                                                 '"best_static": "r"}}}', "SLO attainments"),
    ('{"tasks": {"t": {"scores": {"x": [0.5]}}}}', "bases and best_static"),
])
def test_load_resume_refuses_bad_files(tmp_path, text, why):
    path = tmp_path / "r.json"
    path.write_text(text)
    with pytest.raises(ConfigError, match=why):
        op.load_resume(path)
    with pytest.raises(ConfigError, match="existing file"):
        op.load_resume(tmp_path / "missing.json")


# ---------------------------------------------------------------------------------------------- realistic track
def _tiny_kw(**kw):
    return {"suite": [_tiny()], "half_width": 0.05, "pilot": 3, "max_instances": 12, "max_oracle": 6, "rounds": 2,
            **kw}


def test_realistic_track_runs_the_policies_there_and_the_oracles_bases_on_the_exact_track():
    task = _tiny()
    res = run_oracle_precision(POLICIES, **_tiny_kw(track="realistic"))
    assert res["track"] == "realistic"
    v = res["tasks"]["tiny"]
    n1, n2 = v["n1"], v["n2"]
    real, exact = on_track(task.base(), "realistic"), on_track(task.base(), "exact")
    chosen = tune_static(task, real, or_silent(None))["chosen"]  # tuned on the realistic track
    assert v["best_static"] == rule_label(chosen["policy"], chosen["params"])
    inst = precision_instances(task, n1)

    def scores(sc, lb):
        name, params = (chosen["policy"], chosen["params"]) if lb == "best-static" else (lb, None)
        return [run_one(i.scenario(sc), name, i.seed, params=params)[0]["slo_attainment"] for i in inst]

    for lb in POLICIES:  # kairos-exact is pinned to the exact track
        assert v["scores"][lb] == scores(exact if lb == "kairos-exact" else real, lb), lb
    cols = ["kairos-exact" if lb == "kairos-exact" else lb + op.EXACT_SUFFIX for lb in TINY_BASES]
    assert v["base_columns"] == cols and v["bases"] == TINY_BASES
    assert "pending-switch" + op.EXACT_SUFFIX not in v["scores"]  # no task of this run rolls it out
    for lb, col in zip(TINY_BASES, cols, strict=True):
        assert v["scores"][col] == scores(exact, lb), col
    # the track is real: some base scores differently with stale state and noisy predictions
    assert any(v["scores"][lb] != v["scores"][lb + op.EXACT_SUFFIX] for lb in ("always-deflect-ls", "sq-ls", "sl-ls"))
    # the Oracle: exact track, the realistic rule among its bases; M from the exact-track columns
    oracle = v["scores"]["oracle"]
    assert oracle == [run_one(i.scenario(exact), "oracle", i.seed,
                              params={"bases": oracle_cache.task_bases(chosen)})[0]["slo_attainment"]
                      for i in inst[:n2]]
    m = np.max([v["scores"][c] for c in cols], axis=0)
    assert v["m_mean"] == pytest.approx(m.mean())
    e = sum_estimate(m, np.asarray(oracle) - m[:n2])
    assert v["oracle"]["mean"] == pytest.approx(e.value) and v["oracle"]["half"] == pytest.approx(e.half)
    # the headroom's heuristic and the normalised scores are the realistic runs (no @exact column)
    assert op.EXACT_SUFFIX not in v["best"] and all(op.EXACT_SUFFIX not in k for k in v["normalized"])
    assert res["phase1_runs"] == n1 * (len(POLICIES) + len(cols) - 1) and res["phase1_resumed"] == 0
    md = oracle_precision_md(res)
    assert "(realistic track)" in md and "sq-ls@exact" in md


def test_resume_from_an_exact_file_reuses_the_same_runs_only(tmp_path):
    import json

    fresh = run_oracle_precision(POLICIES, **_tiny_kw(track="realistic"))
    exact = run_oracle_precision(POLICIES, **_tiny_kw())
    # tiny's two tracks tune different rules: the exact file's best-static and Oracle are other runs
    assert exact["tasks"]["tiny"]["best_static"] != fresh["tasks"]["tiny"]["best_static"]
    path = tmp_path / "exact.json"
    path.write_text(json.dumps(exact))
    resumed = run_oracle_precision(POLICIES, resume=op.load_resume(path), **_tiny_kw(track="realistic"))
    assert resumed["tasks"] == fresh["tasks"]
    assert resumed["oracle_sources"]["resumed"] == 0
    # reused: the rule-free bases on the exact track (4 @exact columns and kairos-exact), instance 0 re-run
    n1 = min(exact["tasks"]["tiny"]["n1"], fresh["tasks"]["tiny"]["n1"])
    assert resumed["phase1_resumed"] == 5 * (n1 - 1)


def test_resume_from_an_exact_file_reuses_its_oracle_when_the_rule_is_the_same(monkeypatch, tmp_path):
    import json

    real = op.tune_static

    def exact_rule(task, base, bar, backend=None):  # both tracks choose the exact track's rule
        return real(task, on_track(base, "exact"), bar, backend)

    monkeypatch.setattr(op, "tune_static", exact_rule)
    fresh = run_oracle_precision(POLICIES, **_tiny_kw(track="realistic"))
    exact = run_oracle_precision(POLICIES, **_tiny_kw())
    path = tmp_path / "exact.json"
    path.write_text(json.dumps(exact))
    resumed = run_oracle_precision(POLICIES, resume=op.load_resume(path), **_tiny_kw(track="realistic"))
    assert resumed["tasks"] == fresh["tasks"]
    v = exact["tasks"]["tiny"]
    n1, n2 = min(v["n1"], fresh["tasks"]["tiny"]["n1"]), min(v["n2"], fresh["tasks"]["tiny"]["n2"])
    assert resumed["oracle_sources"]["resumed"] == n2 - 1
    assert resumed["phase1_resumed"] == 6 * (n1 - 1)  # best-static@exact too


@pytest.mark.parametrize("label,file_track,track,want", [
    ("sq-ls", "exact", "exact", "sq-ls"), ("sq-ls", "exact", "realistic", "sq-ls@exact"),
    ("sq-ls", "realistic", "realistic", "sq-ls"), ("sq-ls", "realistic", "exact", None),
    ("sq-ls@exact", "realistic", "exact", "sq-ls"), ("sq-ls@exact", "realistic", "realistic", "sq-ls@exact"),
    ("kairos-exact", "realistic", "exact", "kairos-exact"), ("oracle", "exact", "realistic", "oracle"),
    ("best-static", "exact", "realistic", "best-static@exact"),
])
def test_resume_key(label, file_track, track, want):
    assert op.resume_key(label, file_track, track) == want


def test_load_resume_reads_the_track(tmp_path):
    path = tmp_path / "r.json"
    body = {"t": {"scores": {"x": [0.5]}, "bases": [], "best_static": "r"}}
    path.write_text('{"tasks": ' + __import__("json").dumps(body) + "}")
    assert op.load_resume(path)["track"] == "exact"  # files written before --track
    path.write_text('{"track": "noisy", "tasks": {}}')
    with pytest.raises(ConfigError, match="track 'noisy'"):
        op.load_resume(path)


def test_a_bad_track_is_refused_before_any_run(monkeypatch, capsys):
    def boom(*a, **k):
        raise AssertionError("a run started")

    monkeypatch.setattr(op, "tune_static", boom)
    with pytest.raises(ConfigError, match="--track"):
        run_oracle_precision(POLICIES, **_tiny_kw(track="noisy"))
    assert main(["oracle-precision", "--track", "noisy", "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert "--track" in err and "noisy" in err and err.count("\n") == 1


def test_cli_realistic_track_writes_its_own_report(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(["oracle-precision", "--track", "realistic", "--tasks", "bursty/strict", "--pilot", "3",
                 "--max-oracle", "4", "--max-instances", "4", "--half-width", "0.5", "--no-progress"]) == 0
    text = (tmp_path / "results" / "oracle-precision-realistic.md").read_text()
    assert "(realistic track)" in text and "--track realistic" in text and "| bursty/strict |" in text
    assert not (tmp_path / "results" / "oracle-precision.md").exists()
