"""The precision protocol (kairos_gym/benchmark/precision.py): its instance lists, Stein's sample size, the cap, the
nested
pairing, a small end-to-end run, and every bad setting refused before any run."""

from __future__ import annotations

import math

import numpy as np
import pytest
from kairos_gym.train.domain import training_instance
from kairos_gym.train.envs import TRAIN_SEED_MIN

import kairos_gym.benchmark.precision as precision
from kairos_gym.benchmark.precision import (
    MAX_INSTANCES,
    cell_stats,
    check_policy_names,
    check_settings,
    paired,
    precision_instances,
    precision_md,
    run_precision,
    stein_n,
    window_length,
)
from kairos_gym.benchmark.precision import test_span as span
from kairos_gym.benchmark.suite import N_TEST, SUITE, on_track, select_tasks, windows
from kairos_gym.errors import ConfigError
from kairos_gym.evaluation.backends import SerialBackend
from kairos_gym.evaluation.evaluate import run_one
from kairos_gym.evaluation.stats import t_quantile_975

SYNTHETIC = [t for t in SUITE if not t.windows]
TRACES = [t for t in SUITE if t.windows]


# ---------------------------------------------------------------------------------------------- instances
@pytest.mark.parametrize("task", SYNTHETIC, ids=lambda t: t.name)
def test_synthetic_instances_are_held_out_seeds_starting_with_the_test_seeds(task):
    inst = precision_instances(task, MAX_INSTANCES)
    seeds = [i.seed for i in inst]
    assert [i.seed for i in inst[:N_TEST]] == [i.seed for i in task.test]
    assert len(set(seeds)) == MAX_INSTANCES and all(i.window_s is None for i in inst)
    assert max(seeds) < TRAIN_SEED_MIN  # training draws seeds >= TRAIN_SEED_MIN
    assert not {i.seed for i in task.train} & set(seeds)  # 1000, 1001 skipped
    assert seeds[999:1001] == [999, 1002]


@pytest.mark.parametrize("task", TRACES, ids=lambda t: t.name)
def test_trace_windows_lie_in_the_test_span_and_miss_every_train_window(task):
    lo, hi = span(task)
    length = window_length(task)
    inst = precision_instances(task, MAX_INSTANCES)
    assert [i.seed for i in inst] == list(range(MAX_INSTANCES))  # instance i runs with seed i
    for i in inst:
        a, b = i.window_s
        assert lo <= a and b <= hi + 1e-9 and b - a == pytest.approx(length)
        assert a == round(a, 3)  # the millisecond grid
        for tr in task.train:
            ta, tb = tr.window_s
            assert b <= ta or a >= tb, (i, tr)
    starts = np.array([i.window_s[0] for i in inst])
    # uniform on [lo, hi - length]: the mean and the spread of 5,000 draws are close to the uniform's
    assert abs(starts.mean() - (lo + hi - length) / 2) < 0.02 * (hi - lo)
    assert starts.min() < lo + 0.01 * (hi - lo) and starts.max() > hi - length - 0.01 * (hi - lo)


@pytest.mark.parametrize("task", TRACES + SYNTHETIC[:1], ids=lambda t: t.name)
def test_instance_lists_are_deterministic_and_nested(task):
    precision._window_starts.cache_clear()
    long = precision_instances(task, 500)
    precision._window_starts.cache_clear()
    assert precision_instances(task, 37) == long[:37]
    assert precision_instances(task, 500) == long
    same_family = [t for t in SUITE if t.family == task.family]
    assert len(same_family) == 3 and all(precision_instances(t, 50) == long[:50] for t in same_family)


def test_two_trace_families_draw_different_offsets():
    a, b = (precision_instances(t, 5) for t in TRACES if t.tier == "default")
    assert [i.window_s[0] for i in a] != [i.window_s[0] for i in b]


@pytest.mark.parametrize("task", [t for t in SUITE if t.tier == "default"], ids=lambda t: t.name)
def test_training_draws_never_hit_a_precision_instance(task):
    rng = np.random.default_rng(3)
    inst = precision_instances(task, MAX_INSTANCES)
    seeds = {i.seed for i in inst}
    for _ in range(300):
        d = training_instance(task, rng)
        if not task.windows:
            assert d.seed not in seeds
        else:
            a, b = d.window_s
            assert all(b <= i.window_s[0] or a >= i.window_s[1] for i in inst)


@pytest.mark.parametrize("n", [0, -1, MAX_INSTANCES + 1, 2.0, True])
def test_instance_count_is_bounded(n):
    with pytest.raises(ConfigError, match="instances"):
        precision_instances(SUITE[0], n)


# ---------------------------------------------------------------------------------------------- Stein
def test_stein_n_on_hand_computed_cases():
    # n0 = 10, s0 = sqrt(0.025 / 9) = 0.0527046; t_{0.975, 9} = 2.2621572
    x = [0.0, 0.1] * 5
    assert t_quantile_975(9) == pytest.approx(2.2621572, abs=1e-6)
    assert stein_n(x, 0.01, 5000) == (143, 143)  # (2.2621572 * 0.0527046 / 0.01)^2 = 142.15
    assert stein_n(x, 0.02, 5000) == (36, 36)  # 35.54
    # n0 = 2: s0 = sqrt(0.5), t_{0.975, 1} = 12.7062047: (12.7062047 * 0.7071068 / 0.5)^2 = 322.90
    assert stein_n([0.0, 1.0], 0.5, 5000) == (323, 323)
    # a small spread needs fewer than n0 + 1: still n0 + 1 (stage 2 runs at least one instance)
    assert stein_n([0.5, 0.51] * 5, 0.02, 5000) == (11, 11)
    # saturated (s0 = 0): n0 + 1
    assert stein_n([1.0] * 10, 0.01, 5000) == (11, 11)


def test_stein_n_cap():
    x = [0.0, 0.1] * 5
    assert stein_n(x, 0.01, 100) == (100, 143)
    c = cell_stats(x * 10, 10, 0.01, 143)  # N = 100 instances, capped
    assert c["capped"] and c["n"] == 100 and not c["met"]
    assert c["stein_half"] == pytest.approx(2.2621572 * 0.0527046 / 10, rel=1e-5)
    assert c["stein_half"] > 0.01
    ok = cell_stats((x * 15)[:143], 10, 0.01, 143)
    assert not ok["capped"] and ok["met"] and ok["stein_half"] <= 0.01
    sat = cell_stats([1.0] * 11, 10, 0.01, 11)
    assert sat["saturated"] and sat["stein_half"] == 0.0 and sat["t_half"] == 0.0


def test_stein_n_needs_two_pilot_scores():
    with pytest.raises(ConfigError, match="at least 2"):
        stein_n([0.5], 0.01, 100)


def test_paired_on_the_common_prefix():
    p = paired([1.0, 2.0, 3.0, 4.0], [0.0, 0.0])
    assert p["n"] == 2 and p["mean"] == 1.5
    assert p["t_half"] == pytest.approx(t_quantile_975(1) * math.sqrt(0.5) / math.sqrt(2))


# ---------------------------------------------------------------------------------------------- end to end
def test_small_run_end_to_end():
    suite = select_tasks("bursty/strict")
    res = run_precision(["no-deflect", "kairos", "best-static"], suite=suite, tracks=("exact",), half_width=0.05,
                        pilot=3, max_instances=7)
    task = suite[0]
    base = on_track(task.base(), "exact")
    inst = precision_instances(task, 7)
    cells = res["cells"]["exact"][task.name]
    chosen = res["best_static"][f"exact {task.name}"]
    for lb, c in cells.items():
        n, required = stein_n(c["scores"][:3], 0.05, 7)
        assert c["n"] == n and c["required"] == required and 4 <= n <= 7
        # nested: a cell's scores are the runs on the first n instances of the one list
        name, params = (chosen["policy"], chosen["params"]) if lb == "best-static" else (lb, None)
        want = [run_one(i.scenario(base), name, i.seed, params=params)[0]["slo_attainment"] for i in inst[:n]]
        assert c["scores"] == want
        assert c["mean"] == pytest.approx(np.mean(want))
    for lb in ("no-deflect", "best-static"):
        p = res["paired"]["exact"][task.name][lb]
        assert p["n"] == min(cells[lb]["n"], cells["kairos"]["n"])
    assert res["runs"] == sum(c["n"] for c in cells.values())
    md = precision_md(res)
    assert "kairos-gym precision" in md and "| bursty/strict |" in md and "Stein" in md


class RecordingBackend(SerialBackend):
    """The serial backend, recording every task it is given and every result it returns."""

    def __init__(self) -> None:
        super().__init__(retries=0)
        self.labels: list[str] = []
        self.results: list[object] = []

    def map(self, tasks, progress=None):
        tasks = list(tasks)
        self.labels += [t.label for t in tasks]
        out = super().map(tasks, progress)
        self.results += out
        return out


def test_a_pinned_policy_runs_once_with_both_tracks():
    """kairos-exact always runs on the exact track: with both tracks its runs are made once (the exact
    section's) and reported in both sections, marked as exact-track runs; the other policies run per track."""
    suite = select_tasks("bursty/strict")
    be = RecordingBackend()
    res = run_precision(["no-deflect", "kairos-exact", "kairos"], suite=suite, tracks=("exact", "realistic"),
                        half_width=0.5, pilot=3, max_instances=4, backend=be)
    name = suite[0].name
    runs = [lb for lb in be.labels if not lb.startswith("tune ")]
    pinned = [lb for lb in runs if " kairos-exact " in lb]
    ex, re_ = res["cells"]["exact"][name], res["cells"]["realistic"][name]
    assert len(pinned) == ex["kairos-exact"]["n"] == 4 and all(lb.startswith("exact ") for lb in pinned)
    assert len([lb for lb in runs if " kairos " in lb]) == ex["kairos"]["n"] + re_["kairos"]["n"]
    assert re_["kairos-exact"]["scores"] == ex["kairos-exact"]["scores"]
    assert re_["kairos-exact"]["ran_on"] == "exact" and re_["kairos-exact"]["runs_of"] == "exact"
    assert "runs_of" not in ex["kairos-exact"] and re_["kairos"]["ran_on"] == "realistic"
    # the exact-track runs indeed: the same as running kairos-exact on the exact scenario
    base = on_track(suite[0].base(), "exact")
    want = [run_one(i.scenario(base), "kairos-exact", i.seed)[0]["slo_attainment"]
            for i in precision_instances(suite[0], 4)]
    assert re_["kairos-exact"]["scores"] == want
    assert res["runs"] == len(runs) == sum(precision.summary(res, tr)["runs"] for tr in ("exact", "realistic"))
    md = precision_md(res)
    assert md.count("(4, exact-track runs)") == 1
    assert md.count("; exact-track runs: kairos-exact always runs on the exact track") == 1


def test_a_backend_returns_scores_not_run_summaries():
    """run_precision keeps one float per run: each task a backend runs returns the run's SLO attainment only."""
    be = RecordingBackend()
    res = run_precision(["no-deflect", "kairos"], suite=select_tasks("bursty/strict"), tracks=("exact",),
                        half_width=0.5, pilot=2, max_instances=3, backend=be)
    assert len(be.results) == res["runs"] > 0
    assert all(type(r) is float for r in be.results)
    cells = res["cells"]["exact"]["bursty/strict"]
    assert sorted(be.results) == sorted(v for c in cells.values() for v in c["scores"])


def test_trace_task_runs_window_i_with_seed_i_on_the_realistic_track():
    suite = select_tasks("long-tail/strict")
    res = run_precision(["kairos"], suite=suite, tracks=("realistic",), half_width=0.5, pilot=2, max_instances=3)
    c = res["cells"]["realistic"]["long-tail/strict"]["kairos"]
    base = on_track(suite[0].base(), "realistic")
    inst = precision_instances(suite[0], 3)
    want = [run_one(i.scenario(base), "kairos", i.seed)[0]["slo_attainment"] for i in inst[:c["n"]]]
    assert c["scores"] == want
    lo, hi = res["suite"][0]["requests"]
    assert 0 < lo <= hi


# ---------------------------------------------------------------------------------------------- bad input
@pytest.mark.parametrize("kw,field", [
    ({"half_width": 0.0}, "--half-width"), ({"half_width": -0.01}, "--half-width"),
    ({"half_width": math.nan}, "--half-width"), ({"half_width": 0.6}, "--half-width"),
    ({"half_width": True}, "--half-width"), ({"pilot": 1}, "--pilot"), ({"pilot": 201}, "--pilot"),
    ({"pilot": 2.5}, "--pilot"), ({"max_instances": 10}, "--max-instances"),
    ({"max_instances": MAX_INSTANCES + 1}, "--max-instances"),
])
def test_bad_settings_are_refused(kw, field):
    args = {"half_width": 0.01, "pilot": 10, "max_instances": 100, **kw}
    with pytest.raises(ConfigError, match=field):
        check_settings(**args)


@pytest.mark.parametrize("policies,why", [
    (["oracle"], "2-60 s per instance"), (["nope"], "names from"), (["kairos", "kairos"], "each policy once"),
    ([], "at least one policy"),
])
def test_bad_policies_are_refused(policies, why):
    with pytest.raises(ConfigError, match=why):
        check_policy_names(policies, [])


def test_run_precision_checks_everything_before_running(monkeypatch):
    import kairos_gym.benchmark.entries as entries_mod

    def boom(*a, **k):
        raise AssertionError("a run started")

    monkeypatch.setattr(entries_mod, "run_task", boom)
    monkeypatch.setattr(precision, "entry_task", boom)
    for kw in ({"tracks": ("nope",)}, {"tracks": ("exact", "exact")}, {"suite": ()}, {"half_width": 0.0},
               {"max_instances": 10}):
        with pytest.raises(ConfigError):
            run_precision(["kairos"], **{"suite": select_tasks("bursty/strict"), **kw})


def test_an_empty_trace_window_is_refused_before_any_run(monkeypatch):
    import dataclasses

    import kairos_gym.benchmark.entries as entries_mod

    def boom(*a, **k):
        raise AssertionError("a run started")

    monkeypatch.setattr(entries_mod, "run_task", boom)
    monkeypatch.setattr(precision, "entry_task", boom)
    az = next(t for t in SUITE if t.name == "azure-code")
    # the trace ends at 3,436 s: windows drawn in [3500, 3700) hold no request
    past = dataclasses.replace(az, name="azure-past", family="azure-past", test=windows([3500.0, 3600.0, 3700.0]))
    with pytest.raises(ConfigError, match="at least one request"):
        run_precision(["kairos"], suite=[past], tracks=("exact",), half_width=0.05, max_instances=20)


def test_a_process_pool_gives_the_serial_result():
    from kairos_gym.evaluation.backends import ProcessBackend

    kw = {"suite": select_tasks("long-tail/relaxed"), "tracks": ("realistic",), "half_width": 0.05, "pilot": 3,
          "max_instances": 6}
    serial = run_precision(["no-deflect", "kairos", "best-static"], **kw)
    with ProcessBackend(2, 0) as pool:
        pooled = run_precision(["no-deflect", "kairos", "best-static"], backend=pool, **kw)
    assert pooled["cells"] == serial["cells"] and pooled["best_static"] == serial["best_static"]


# ---------------------------------------------------------------------------------------------- --resume
def _resume_kw(**kw):
    base = {"suite": select_tasks("bursty/strict"), "tracks": ("exact", "realistic"), "half_width": 0.05, "pilot": 3,
            "max_instances": 7}
    return {**base, **kw}


def _write(tmp_path, res, name="prev.json"):
    import json

    path = tmp_path / name
    path.write_text(json.dumps(res))
    return path


def test_resume_gives_a_fresh_runs_result_and_runs_only_what_the_file_lacks(tmp_path):
    """A file of a smaller run (fewer policies, one task, a looser target): the resumed run equals a fresh run of
    the larger one; it runs instance 0 of every reused cell, the cells the file lacks and the instances past the
    file's, and reuses the rest."""
    from kairos_gym.benchmark.precision_resume import load_precision_resume

    policies = ["no-deflect", "kairos", "kairos-exact", "best-static"]
    small = run_precision(["no-deflect", "kairos", "kairos-exact"], **_resume_kw(half_width=0.08))
    suite = select_tasks("bursty/strict,decode-bound/strict")
    fresh = run_precision(policies, **_resume_kw(suite=suite))
    rec = RecordingBackend()
    resume = load_precision_resume(_write(tmp_path, small), "precision", MAX_INSTANCES)
    resumed = run_precision(policies, **_resume_kw(suite=suite), backend=rec, resume=resume)
    assert resumed["cells"] == fresh["cells"] and resumed["paired"] == fresh["paired"]
    assert resumed["best_static"] == fresh["best_static"]
    old = small["cells"]
    reused = sum(min(len(old[tr]["bursty/strict"][lb]["scores"]), fresh["cells"][tr]["bursty/strict"][lb]["n"]) - 1
                 for tr in ("exact", "realistic") for lb in ("no-deflect", "kairos")) \
        + min(len(old["exact"]["bursty/strict"]["kairos-exact"]["scores"]),
              fresh["cells"]["exact"]["bursty/strict"]["kairos-exact"]["n"]) - 1  # pinned: one set of runs
    assert resumed["resumed"] == reused > 0
    assert resumed["runs"] == fresh["runs"] - reused == len([lb for lb in rec.labels if not lb.startswith("tune ")])
    assert resumed["resumed_from"] == str(tmp_path / "prev.json")
    assert "scores from" in precision_md(resumed) and "scores from" not in precision_md(fresh)
    # instance 0 of a reused cell ran again; instance 1 of it did not
    inst = precision_instances(suite[0], 7)
    assert f"exact bursty/strict kairos {inst[0].label}" in rec.labels
    assert f"exact bursty/strict kairos {inst[1].label}" not in rec.labels


def test_resume_reuses_best_static_only_with_the_same_rule(tmp_path):
    from kairos_gym.benchmark.precision_resume import load_precision_resume

    kw = _resume_kw(tracks=("exact",))
    prev = run_precision(["no-deflect", "kairos", "best-static"], **kw)
    chosen = prev["best_static"]["exact bursty/strict"]
    other = {"policy": "sl", "params": {"length_threshold": 8192, "chunk": 512}}
    assert other != chosen
    prev["best_static"]["exact bursty/strict"] = other
    rec = RecordingBackend()
    resume = load_precision_resume(_write(tmp_path, prev), "precision", MAX_INSTANCES)
    again = run_precision(["no-deflect", "kairos", "best-static"], **kw, backend=rec, resume=resume)
    assert again["cells"] == run_precision(["no-deflect", "kairos", "best-static"], **kw)["cells"]
    n = again["cells"]["exact"]["bursty/strict"]["best-static"]["n"]
    assert sum("best-static" in lb for lb in rec.labels) == n  # every instance of it ran
    assert again["resumed"] == sum(c["n"] - 1 for lb, c in again["cells"]["exact"]["bursty/strict"].items()
                                   if lb != "best-static")


def test_a_resume_file_that_does_not_reproduce_or_is_malformed_is_one_config_error(tmp_path):
    from kairos_gym.benchmark.precision_resume import load_precision_resume

    kw = _resume_kw(tracks=("exact",))
    prev = run_precision(["no-deflect", "kairos"], **kw)
    xs = prev["cells"]["exact"]["bursty/strict"]["kairos"]["scores"]
    xs[0] = xs[0] - 0.002 if xs[0] >= 0.002 else xs[0] + 0.002  # another code version (or an edit)
    resume = load_precision_resume(_write(tmp_path, prev), "precision", MAX_INSTANCES)
    with pytest.raises(ConfigError) as e:
        run_precision(["no-deflect", "kairos"], **kw, resume=resume)
    assert e.value.field == "--resume" and "instance 0" in str(e.value)
    for bad in ("{nope", "[]", '{"cells": {"exact": {"t": {"p": {"scores": [1.5]}}}}, "best_static": {}}',
                '{"cells": {}, "best_static": {"nospace": {}}}'):
        (tmp_path / "bad.json").write_text(bad)
        with pytest.raises(ConfigError) as e:
            load_precision_resume(tmp_path / "bad.json", "precision", MAX_INSTANCES)
        assert e.value.field == "--resume"
    with pytest.raises(ConfigError):
        load_precision_resume(tmp_path / "absent.json", "precision", MAX_INSTANCES)
    from kairos_gym.cli.main import main

    assert main(["precision", "--resume", str(tmp_path / "absent.json"), "--tasks", "bursty/strict"]) == 2
