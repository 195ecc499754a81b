"""The Oracle's cached leaderboard scores (kairos_gym.benchmark.oracle_cache): the committed cache matches a fresh
Oracle run, stale or foreign entries are never used, the leaderboard reads the cache instead of running."""

from __future__ import annotations

import json

import pytest

import kairos_gym.benchmark.oracle_cache as osc
import kairos_gym.benchmark.scoring as scoring
from kairos_gym.benchmark.leaderboard import run_suite
from kairos_gym.benchmark.suite import SUITE, Task, seeds
from kairos_gym.errors import ConfigError
from kairos_gym.scenario import load_scenario
from tests.fixtures import tiny_scenario

TINY = tiny_scenario(80, name="tiny-o")
BASES = ["no-deflect", "always-deflect-ls"]


def test_the_committed_cache_matches_a_fresh_oracle_run_on_one_instance() -> None:
    entries = osc.load()
    assert entries, ("kairos_gym/benchmark/oracle_cache.json holds no entry (regenerate it: "
                     "kairos-gym oracle-cache)")
    key = min(entries, key=lambda k: entries[k]["summary"]["n_requests"])  # the cheapest instance
    e = entries[key]
    task = next(t for t in SUITE if t.name == e["task"])
    inst = next(i for i in task.test if i.label == e["instance"])
    sc = inst.scenario(task.base())
    bases = [b if isinstance(b, str) else (b[0], b[1]) for b in e["bases"]]
    assert osc.fingerprint(sc, inst.seed, bases, e["fixed_chunks"]) == key
    fresh = osc.run_oracle(sc, inst.seed, bases, e["fixed_chunks"])
    assert repr(fresh["summary"]) == repr(e["summary"])
    assert fresh["checks"] == {k: list(v) for k, v in e["checks"].items()}
    assert osc.lookup(entries, sc, inst.seed, bases) == e["summary"]


def test_every_committed_entry_names_a_test_instance_of_the_suite() -> None:
    names = {(t.name, i.label) for t in SUITE for i in t.test}
    for key, e in osc.load().items():
        assert (e["task"], e["instance"]) in names, key
        assert e["summary"]["slo_attainment"] >= max(v[0] for v in e["checks"].values()), key  # >= its bases


def test_lookup_uses_valid_entries_and_never_stale_or_foreign_ones(tmp_path) -> None:
    sc = load_scenario(TINY)
    e = osc.run_oracle(sc, 0, BASES)
    entries = {osc.fingerprint(sc, 0, BASES): {"task": "t", "instance": "seed 0", **e}}
    assert osc.lookup(entries, sc, 0, BASES) == e["summary"]
    assert osc.lookup(entries, sc, 1, BASES) is None  # another seed
    assert osc.lookup(entries, sc, 0, ["no-deflect"]) is None  # other bases
    assert osc.lookup(entries, sc, 0, BASES, fixed_chunks=False) is None
    assert osc.lookup(entries, sc.with_overrides({"slo": {"tbt_s": 0.09}}), 0, BASES) is None
    stale = json.loads(json.dumps(entries))
    next(iter(stale.values()))["checks"]["no-deflect"][0] += 1e-12  # the simulator would have changed
    assert osc.lookup(stale, sc, 0, BASES) is None
    path = tmp_path / "c.json"
    osc.save(entries, path)
    assert osc.load(path) == json.loads(json.dumps(entries))
    summary, source = osc.oracle_summary(osc.load(path), sc, 0, BASES)
    assert source == "cache" and summary == e["summary"]
    assert osc.oracle_summary({}, sc, 0, BASES) == (e["summary"], "run")


def test_a_bad_cache_file_is_refused(tmp_path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text("{nope")
    with pytest.raises(ConfigError, match="JSON"):
        osc.load(bad)
    bad.write_text(json.dumps({"version": 0, "entries": {}}))
    with pytest.raises(ConfigError, match="version"):
        osc.load(bad)
    assert osc.load(tmp_path / "absent.json") == {}
    from kairos_gym.cli.main import main

    assert main(["oracle-cache", "--max-requests", "0"]) == 2
    assert main(["oracle-cache", "--tasks", "nope"]) == 2


def test_the_leaderboard_takes_the_oracle_from_the_cache(tmp_path, monkeypatch) -> None:
    suite = (Task("tiny-o", TINY, seeds(0, 1), seeds(100)),)
    policies = ["no-deflect", "kairos", "oracle", "best-static"]
    path = tmp_path / "cache.json"
    first = run_suite(policies, suite=suite, reps=50, oracle_cache=path)
    assert first["oracle_sources"] == {"cache": 0, "run": 2}
    chosen = first["best_static"]["tiny-o"]["chosen"]
    base = suite[0].base()
    entries = {}
    for inst in suite[0].test:
        bases = osc.task_bases(chosen)
        e = osc.run_oracle(inst.scenario(base), inst.seed, bases)
        entries[osc.fingerprint(inst.scenario(base), inst.seed, bases)] = {"task": "tiny-o", "instance": inst.label,
                                                                             **e}
    osc.save(entries, path)

    def no_run(*a, **k):
        raise AssertionError("the Oracle ran although the cache holds the instance")

    monkeypatch.setattr(osc, "run_oracle", no_run)
    again = run_suite(policies, suite=suite, reps=50, oracle_cache=path)
    assert again["oracle_sources"] == {"cache": 2, "run": 0}
    assert again["figures"]["oracle"] == first["figures"]["oracle"]
    assert scoring.REFERENCE == "oracle" and again["anchors"]["tiny-o"]["reference"] == pytest.approx(
        sum(first["figures"]["oracle"]["tiny-o"]["slo_attainment"]) / 2)


def test_task_bases_are_the_defaults_then_the_familys_own_then_best_static() -> None:
    from kairos_gym.agents.oracle import DEFAULT_BASES

    from kairos_gym.benchmark.suite import FAMILY_ORACLE_BASES

    sl = {"policy": "sl", "params": {"length_threshold": 2048, "chunk": 512}}
    assert osc.task_bases(None) == list(DEFAULT_BASES)
    assert osc.task_bases(sl, ("pending-switch",)) == [*DEFAULT_BASES, "pending-switch", ["sl", sl["params"]]]
    # a rule already among them is rolled out once
    assert osc.task_bases({"policy": "sq-ls", "params": {}}, ("sq-ls", ("pending-switch", {"k": 2}))) == [
        *DEFAULT_BASES, ["pending-switch", {"k": 2}]]
    assert FAMILY_ORACLE_BASES == {"fault-shift": ("pending-switch",)}
    for t in SUITE:
        assert t.oracle_bases == FAMILY_ORACLE_BASES.get(t.family, ()), t.name
    assert {t.name for t in SUITE if t.family == "fault-shift"} == {"fault-shift/strict", "fault-shift",
                                                                     "fault-shift/relaxed"}


def test_the_leaderboards_oracle_rolls_out_the_tasks_own_bases(tmp_path, monkeypatch) -> None:
    """A task's ``oracle_bases`` reach the Oracle the leaderboard runs (after the defaults, before best-static), and
    the Oracle is then never below them on an instance."""
    fs = load_scenario("fault-shift").with_overrides({"workload": {"num_requests": 150}})
    suite = (Task("fs-o", fs.to_dict(), seeds(3), seeds(100), oracle_bases=("pending-switch",)),)
    seen = []
    real = osc.oracle_summary

    def spy(entries, sc, seed, bases, **kw):
        seen.append(list(bases))
        return real(entries, sc, seed, bases, **kw)

    monkeypatch.setattr(osc, "oracle_summary", spy)
    res = run_suite(["no-deflect", "kairos", "oracle", "pending-switch", "best-static"], suite=suite, reps=20,
                    oracle_cache=tmp_path / "cache.json")
    chosen = res["best_static"]["fs-o"]["chosen"]
    assert seen == [osc.task_bases(chosen, ("pending-switch",))]
    assert seen[0][:len(osc.DEFAULT_BASES) + 1] == [*osc.DEFAULT_BASES, "pending-switch"]
    fig = res["figures"]
    assert fig["oracle"]["fs-o"]["slo_attainment"][0] >= fig["pending-switch"]["fs-o"]["slo_attainment"][0]


def test_a_process_pool_regenerates_the_serial_entries(tmp_path) -> None:
    """oracle-cache on a process pool: the same entries as the serial run (their wall times aside), saved in
    groups; a second run finds every entry cached and runs nothing."""
    from kairos_gym.benchmark.oracle_cache import regenerate
    from kairos_gym.evaluation.backends import ProcessBackend
    from tests.fixtures import TINY_SUITE

    suite = TINY_SUITE[:1]  # the synthetic task: 3 test seeds of 120 requests
    serial = regenerate(out=tmp_path / "serial.json", log=lambda _m: None, suite=suite)
    with ProcessBackend(2) as pool:
        pooled = regenerate(out=tmp_path / "pool.json", log=lambda _m: None, backend=pool, suite=suite)
    assert len(serial) >= 3 and serial.keys() == pooled.keys()
    for k in serial:
        assert {**serial[k], "wall_s": 0} == {**pooled[k], "wall_s": 0}, k
    messages: list[str] = []
    regenerate(out=tmp_path / "pool.json", log=messages.append, suite=suite)
    assert messages and all(m.endswith("cached") for m in messages)


def test_two_caches_are_compared_entry_for_entry(tmp_path, capsys) -> None:
    from kairos_gym.cli.main import main

    entries = osc.load()
    keys = sorted(entries)[:3]
    same = {k: entries[k] for k in keys}
    changed = json.loads(json.dumps(same))
    changed[keys[1]]["summary"]["slo_attainment"] += 0.001
    changed[keys[2]]["wall_s"] = 1e6  # a machine figure: not compared
    res = osc.compare(changed, entries)
    assert (res["compared"], res["equal"], res["missing"]) == (3, 2, [])
    assert res["differ"] == [(entries[keys[1]]["task"], entries[keys[1]]["instance"])]
    assert osc.compare({"nope": entries[keys[0]]}, entries)["missing"] == [(entries[keys[0]]["task"],
                                                                             entries[keys[0]]["instance"])]
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    osc.save(same, a)
    osc.save(changed, b)
    assert main(["oracle-cache", "--out", str(a), "--compare", str(a)]) == 0
    assert "3 equal, 0 differ" in capsys.readouterr().out
    assert main(["oracle-cache", "--out", str(a), "--compare", str(b)]) == 1
    assert "2 equal, 1 differ" in capsys.readouterr().out
