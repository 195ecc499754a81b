"""``kairos-gym verify``: this machine reproduces the recorded reference; a changed reference is caught and the
first differing stage named; bad input is one clean error line (exit 2)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from kairos_gym import verify
from kairos_gym.benchmark.provenance import verify_note
from kairos_gym.cli.main import main


@pytest.fixture(scope="module")
def reference() -> dict:
    return json.loads(verify.REFERENCE.read_text())


@pytest.fixture(scope="module")
def computed() -> list:
    return list(verify.compute_stages())


@pytest.fixture
def cached(monkeypatch, computed):
    """The stages computed once for this module (each real computation takes a few seconds): the tests that
    change the reference compare it with these."""
    monkeypatch.setattr(verify, "compute_stages", lambda: iter(computed))


def _write(tmp_path: Path, ref: dict) -> str:
    p = tmp_path / "ref.json"
    p.write_text(json.dumps(ref))
    return str(p)


def test_this_machine_reproduces_the_recorded_reference(capsys):
    assert main(["verify"]) == 0
    out = capsys.readouterr().out.splitlines()
    ref = verify.load_reference()
    for st in verify.STAGES:
        if st.name in ref["stages"]:
            assert any(line.split()[:2] == [st.name, "equal"] for line in out), out
    assert out[-1].startswith("verdict: this machine reproduces the reference results")


def test_the_reference_covers_every_computable_stage(reference):
    # a stage added without re-recording would only say "not recorded": keep the reference complete
    assert reference["format"] == verify.FORMAT
    assert set(reference["stages"]) == {st.name for st in verify.STAGES if st.available()}


@pytest.mark.parametrize("changed", [("pricer_tables", "runs"), ("env",), ("latency_model", "env")])
def test_a_changed_reference_exits_1_and_names_the_first_stage_that_differs(tmp_path, capsys, reference, changed,
                                                                            cached):
    ref = json.loads(json.dumps(reference))
    for name in changed:
        entry = ref["stages"][name]
        entry["sha256"] = "0" * 64
        first_array = next(iter(entry["arrays"]))
        entry["arrays"][first_array] = "0" * 16
    assert main(["verify", "--reference", _write(tmp_path, ref)]) == 1
    lines = capsys.readouterr().out.splitlines()
    for name in changed:
        row = next(line for line in lines if line.startswith(name + " "))
        assert row.split()[1] == "DIFFERS" and next(iter(ref["stages"][name]["arrays"])) in row
    assert sum(line.split()[1:2] == ["DIFFERS"] for line in lines[:-1]) == len(changed)
    assert lines[-1].endswith(f"first difference at stage {changed[0]}")


def test_json_output_and_a_stage_missing_from_the_reference(tmp_path, capsys, reference, cached):
    ref = json.loads(json.dumps(reference))
    del ref["stages"]["workloads"]
    assert main(["verify", "--reference", _write(tmp_path, ref), "--json", "-"]) == 0
    res = json.loads(capsys.readouterr().out)
    status = {r["stage"]: r["status"] for r in res["stages"]}
    assert status["workloads"] == "not recorded" and status["runs"] == "equal"
    assert res["reproduces"] is True and res["first_difference"] is None
    assert all(isinstance(r["seconds"], float) for r in res["stages"])


def test_record_then_verify_and_dump(tmp_path, capsys):
    ref = tmp_path / "sub" / "ref.json"
    assert main(["verify", "--record", "--reference", str(ref)]) == 0
    rec = json.loads(ref.read_text())
    assert rec["format"] == verify.FORMAT and "commit" in rec and "numpy" in rec["machine"]
    assert main(["verify", "--reference", str(ref), "--dump", str(tmp_path / "d.npz")]) == 0
    dump = np.load(tmp_path / "d.npz")
    assert "pricer_tables/bursty/g" in dump.files and dump["pricer_tables/bursty/g"].dtype == np.float64
    assert dump["pricer_tables/bursty/g"].shape[0] >= 8193


@pytest.mark.parametrize("argv,flag", [
    (["verify", "--reference", "/nonexistent/ref.json"], "--reference"),
    (["verify", "--dump", "out.txt"], "--dump"),
    (["verify", "--record", "--json", "-"], "--record"),
    (["verify", "--json", "/nonexistent-root-dir/x/"], "--json"),
])
def test_bad_input_is_one_clean_error_line(tmp_path, monkeypatch, capsys, argv, flag, cached):
    monkeypatch.chdir(tmp_path)
    assert main(argv) == 2
    cap = capsys.readouterr()
    err = cap.err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("kairos-gym verify: error:") and flag in err[0], cap.err
    assert cap.out == ""


def test_a_malformed_reference_is_one_clean_error(tmp_path, capsys, cached):
    p = tmp_path / "ref.json"
    p.write_text(json.dumps({"format": 999, "stages": {}}))
    assert main(["verify", "--reference", str(p)]) == 2
    p.write_text("not json")
    assert main(["verify", "--reference", str(p)]) == 2
    assert all(line.startswith("kairos-gym verify: error:") for line in capsys.readouterr().err.splitlines())


def test_an_unknown_flag_is_refused(capsys):
    with pytest.raises(SystemExit) as e:
        main(["verify", "--bogus"])
    assert e.value.code == 2 and "--bogus" in capsys.readouterr().err


def test_the_hash_sees_every_bit():
    a = np.linspace(0.0, 1.0, 101)
    b = a.copy()
    b[50] = np.nextafter(b[50], 2.0)  # one ulp
    assert verify.stage_hash({"x": verify.canonical(a)})[0] != verify.stage_hash({"x": verify.canonical(b)})[0]
    assert verify.array_hash(verify.canonical([0.0])) != verify.array_hash(verify.canonical([-0.0]))
    # integers and floats of the same values hash apart (dtype is hashed); a rename changes the stage hash
    assert verify.array_hash(verify.canonical([1, 2])) != verify.array_hash(verify.canonical([1.0, 2.0]))
    assert verify.stage_hash({"x": a})[0] != verify.stage_hash({"y": a})[0]
    assert verify.canonical(np.float32([0.1])).dtype == np.float64  # widened exactly


def test_the_portable_math_grid_is_fixed_and_covers_its_range():
    x = verify.bit_grid(-745.0, 709.0, 1000, seed=0)
    assert x[0] == -745.0 and x[-1] == 709.0 and np.all(np.diff(x) >= 0) and x.size == 1000
    assert np.array_equal(x, verify.bit_grid(-745.0, 709.0, 1000, seed=0))
    assert (np.abs(x) < 1e-100).any() and (np.abs(x) > 100).any()  # binades from tiny to large


def test_the_verdict_is_cached_and_printed_beside_the_commit():
    v = verify.machine_verdict()
    assert verify.machine_verdict() is v  # once per process
    assert v["reproduces"] is True and "reproduces" in v["text"]
    note = verify_note({"verify": v})
    assert note.startswith("; `kairos-gym verify`: this machine reproduces")
    assert verify_note({}) == ""  # results recorded before reports carried the verdict


def test_the_leaderboard_prints_the_verdict_beside_the_commit():
    from kairos_gym.benchmark.leaderboard_report import leaderboard_md
    from kairos_gym.benchmark.scoring import score

    def fig(xs: list[float]) -> dict:  # as tests/benchmark/test_leaderboard.py
        n = len(xs)
        return {"slo_attainment": xs, "ttft_p95": [1.0] * n, "tbt_violation_rate": [0.0] * n,
                "deflection_rate": [0.1] * n, "n_requests": [10.0] * n}

    figures = {"no-deflect": {"a": fig([0.1, 0.3])}, "oracle": {"a": fig([0.5, 0.7])},
               "kairos": {"a": fig([0.3, 0.5])}}
    res = {"command": "kairos-gym leaderboard", "version": "9.9", "commit": "abc123", "dirty": False,
           "date": "2030-01-01 00:00 UTC", "python": "3.x", "numpy": "2.x", "elapsed_s": 1.0,
           "verify": {"text": "this machine does NOT reproduce the reference results: first difference at stage runs"},
           "suite": [{"task": "a", "test": "seeds 0,1", "train": "seeds 9", "instances": ["seed 0", "seed 1"],
                      "windows": False}],
           "entries": [{"label": k, "kind": "built-in"} for k in figures], "best_static": {}}
    res.update(score(figures, ["a"], reps=100))
    code = next(line for line in leaderboard_md(res).splitlines() if line.startswith("Code: "))
    assert code.startswith("Code: kairos-gym 9.9, commit `abc123`; `kairos-gym verify`: this machine does NOT")
    assert "first difference at stage runs" in code
