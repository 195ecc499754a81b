"""``kairos-gym precision``: every bad flag is one error line, exit status 2, before any run; a small good run
writes the markdown and the JSON."""

from __future__ import annotations

import json

import pytest

import kairos_gym.benchmark.entries as entries_mod
import kairos_gym.benchmark.precision as precision_mod
from kairos_gym.cli.main import main

POLICY_FILE = '''
from kairos_gym.sim.hook import Decision


class Prefill:
    """Never deflects: must score exactly as no-deflect."""

    def decide(self, ctx):
        return Decision.prefill_path()
'''

BAD_POLICY_FILE = (
    "class NoDecide:\n    pass\n\n\nclass ReturnsNone:\n    def decide(self, ctx):\n        return None\n\n\n"
    "class NeedsArgs:\n    def __init__(self, width):\n        pass\n\n    def decide(self, ctx):\n"
    "        return None\n")


@pytest.fixture
def no_work(monkeypatch):
    calls: list[str] = []

    def spy(*a, **k):
        calls.append("run")
        raise AssertionError("the run started before the bad flag was reported")

    monkeypatch.setattr(precision_mod, "run_precision", spy)
    monkeypatch.setattr(entries_mod, "run_task", spy)
    return calls


@pytest.mark.parametrize("flags,field", [
    (["--half-width", "0"], "--half-width"), (["--half-width", "-0.01"], "--half-width"),
    (["--half-width", "abc"], "--half-width"), (["--half-width", "nan"], "--half-width"),
    (["--half-width", "0.6"], "--half-width"),
    (["--pilot", "1"], "--pilot"), (["--pilot", "201"], "--pilot"), (["--pilot", "2.5"], "--pilot"),
    (["--pilot", "x"], "--pilot"),
    (["--max-instances", "10"], "--max-instances"), (["--pilot", "20", "--max-instances", "20"], "--max-instances"),
    (["--max-instances", "5001"], "--max-instances"), (["--max-instances", "1e3"], "--max-instances"),
    (["--track", "nope"], "--track"), (["--tasks", "nope"], "--tasks"), (["--tasks", "bursty,bursty"], "--tasks"),
    (["--tasks", ""], "--tasks"),
    (["--policies", "oracle"], "--policies"), (["--policies", "nope"], "--policies"),
    (["--policies", "kairos,kairos"], "--policies"), (["--policies", ""], "--policies"),
    (["--workers", "0"], "--workers"), (["--workers", "two"], "--workers"),
    (["--checkpoint", "/nonexistent/ckpt"], "--checkpoint"),
    (["--policy", "nocolon"], "--policy"), (["--policy", "{dir}/missing.py:X"], "no file"),
    (["--policy", "{file}:Missing"], "classes there with a decide method: Prefill"),
    (["--policy", "{bad}:NoDecide"], "has none"),
    (["--policy", "{file}:Prefill", "--policy", "{file}:Prefill"], "given twice"),
    (["--policy", "{file}:Prefill"] * 17, "at most 16 entries in all"),
])
def test_bad_flag_exits_2_before_any_run(flags, field, tmp_path, capsys, no_work):
    out = tmp_path / "P.md"
    (tmp_path / "good.py").write_text(POLICY_FILE)
    (tmp_path / "bad.py").write_text(BAD_POLICY_FILE)
    fmt = {"dir": tmp_path, "file": tmp_path / "good.py", "bad": tmp_path / "bad.py"}
    flags = [f.format(**fmt) for f in flags]
    assert main(["precision", "--out", str(out), "--no-progress", *flags]) == 2
    o, err = capsys.readouterr()
    assert no_work == [] and o == "" and not out.exists()
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("kairos-gym precision: error: precision: ") and field in lines[0]


@pytest.mark.parametrize("cls,needle", [("NeedsArgs", "also requires width"), ("ReturnsNone", "decision = None")])
def test_a_policy_class_that_cannot_run_is_one_error_before_any_suite_run(cls, needle, tmp_path, capsys,
                                                                           monkeypatch):
    """A class that does not build, or whose decide returns no Decision: the probe run (a few requests of the
    first instance) reports it, exit status 2, before best-static's tuning or any instance runs."""
    def fail(*a, **k):
        raise AssertionError("a suite run started before the bad policy was reported")

    monkeypatch.setattr(precision_mod, "tune_static", fail)
    monkeypatch.setattr(precision_mod, "entry_task", fail)
    (tmp_path / "bad.py").write_text(BAD_POLICY_FILE)
    out = tmp_path / "P.md"
    argv = ["precision", "--tasks", "bursty/strict", "--policy", f"{tmp_path / 'bad.py'}:{cls}", "--out", str(out),
            "--no-progress"]
    assert main(argv) == 2
    o, err = capsys.readouterr()
    lines = err.strip().splitlines()
    assert o == "" and not out.exists() and len(lines) == 1 and "--policy" in lines[0] and needle in lines[0]


def test_oracle_refusal_names_its_cost(capsys, tmp_path, no_work):
    assert main(["precision", "--policies", "kairos,oracle", "--out", str(tmp_path / "P.md")]) == 2
    assert "2-60 s per instance" in capsys.readouterr().err


@pytest.mark.parametrize("flag", ["--out", "--json"])
def test_bad_output_path_exits_2(flag, tmp_path, capsys, no_work):
    (tmp_path / "afile").write_text("x")
    args = ["precision", flag, str(tmp_path / "afile" / "below")]
    if flag == "--json":
        args += ["--out", str(tmp_path / "P.md")]
    assert main(args) == 2
    assert no_work == [] and capsys.readouterr().err.startswith("kairos-gym precision: error:")


def test_small_run_writes_markdown_and_json(tmp_path, capsys):
    out, js = tmp_path / "P.md", tmp_path / "p.json"
    argv = ["precision", "--tasks", "decode-bound/relaxed", "--policies", "no-deflect,kairos", "--track", "exact",
            "--half-width", "0.05", "--pilot", "3", "--max-instances", "6", "--no-progress", "--out", str(out),
            "--json", str(js)]
    assert main(argv) == 0
    assert "wrote" in capsys.readouterr().out
    md = out.read_text()
    assert "Command: `kairos-gym precision --tasks decode-bound/relaxed" in md
    # no-deflect is at 1.000 on every pilot instance there: n0 + 1 = 4 instances, marked (not "(40)")
    assert "1.000 ± 0.000 (4, s0 = 0)" in md
    res = json.loads(js.read_text())
    cells = res["cells"]["exact"]["decode-bound/relaxed"]
    assert set(cells) == {"no-deflect", "kairos"} and all(4 <= c["n"] <= 6 for c in cells.values())
    assert res["half_width"] == 0.05 and res["pilot"] == 3 and res["max_instances"] == 6


def test_a_policy_file_is_measured_like_a_built_in_and_resumed_by_its_label(tmp_path, capsys):
    """--policy FILE.py:CLASS (a submission, no edit of the package): the class runs on the same instances as the
    built-ins, so a rule that never deflects has no-deflect's scores instance by instance; --resume reuses its
    cells by label (instance 0 re-run) and gives the fresh run's result."""
    pol = tmp_path / "mine.py"
    pol.write_text(POLICY_FILE)
    out, js = tmp_path / "P.md", tmp_path / "p.json"
    argv = ["precision", "--tasks", "bursty/strict", "--policies", "no-deflect", "--policy", f"{pol}:Prefill",
            "--track", "exact", "--half-width", "0.05", "--pilot", "3", "--max-instances", "8", "--no-progress",
            "--out", str(out), "--json", str(js)]
    assert main(argv) == 0
    res = json.loads(js.read_text())
    cells = res["cells"]["exact"]["bursty/strict"]
    assert set(cells) == {"no-deflect", "file:mine.py:Prefill"}
    assert cells["file:mine.py:Prefill"]["scores"] == cells["no-deflect"]["scores"] and cells["no-deflect"]["n"] > 3
    assert "file:mine.py:Prefill" in out.read_text()
    out2, js2 = tmp_path / "P2.md", tmp_path / "p2.json"
    assert main([*argv[:-4], "--out", str(out2), "--json", str(js2), "--resume", str(js)]) == 0
    again = json.loads(js2.read_text())
    assert again["cells"] == res["cells"] and again["resumed"] == sum(c["n"] - 1 for c in cells.values())
    capsys.readouterr()
