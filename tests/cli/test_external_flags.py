"""``--policy FILE.py:CLASS`` and ``--checkpoint DIR`` on simulate, evaluate, sweep and compare
(kairos_gym/cli/external.py): rows labelled by what they are, bad input one error line naming the flag before any
work, a crash reported with the user's file:line."""

from __future__ import annotations

import json

import kairos_gym.agents.runner as runner
import pytest
from kairos_gym.agents.ppo import DEFAULT_CHECKPOINT, GENERAL_CHECKPOINT

import kairos_gym.evaluation.compare as compare_mod
import kairos_gym.evaluation.evaluate as evaluate_mod
import kairos_gym.evaluation.sweep as sweep_mod
from kairos_gym.cli.main import main
from tests.fixtures import tiny_scenario

CKPT = str(DEFAULT_CHECKPOINT.parent)
POLICY = '''from kairos_gym.sim.hook import Decision


class Prefill:
    def decide(self, ctx):
        return Decision.prefill_path()


class Crash:
    def decide(self, ctx):
        return ctx.queue


NOT_A_CLASS = 3
'''
SMALL = {"sweep": ["--loads", "1", "--sq-thresholds", "2048", "--sl-thresholds", "", "--chunks", "512",
                   "--references", "kairos"],
         "evaluate": [], "simulate": []}


@pytest.fixture
def files(tmp_path, monkeypatch):
    """A tiny scenario file and a policy file in the working folder (the labels name the file as given)."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "tiny.yaml").write_text(json.dumps(tiny_scenario(60)))
    (tmp_path / "mine.py").write_text(POLICY)
    return tmp_path


def _json(capsys) -> object:
    return json.loads(capsys.readouterr().out)


@pytest.mark.parametrize("cmd", ["evaluate", "sweep"])
def test_evaluate_and_sweep_take_files_and_checkpoints(cmd, files, capsys):
    assert main([cmd, "--scenario", "tiny.yaml", "--policies", "no-deflect,ppo", "--policy", "mine.py:Prefill",
                 "--checkpoint", CKPT, "--seeds", "0", "--json", "-", *SMALL[cmd]]) == 0
    out = _json(capsys)
    rows = out["runs"] if cmd == "evaluate" else out["load"]
    figs = {r["policy"]: r["slo_attainment"] for r in rows}
    assert list(figs) == ["no-deflect", "ppo", "file:mine.py:Prefill", f"checkpoint:{CKPT}"]
    assert figs["file:mine.py:Prefill"] == figs["no-deflect"] and figs[f"checkpoint:{CKPT}"] == figs["ppo"]


def test_evaluate_with_only_a_file_and_the_table(files, capsys):
    assert main(["evaluate", "--scenario", "tiny.yaml", "--policies", "", "--policy", "mine.py:Prefill",
                 "--seeds", "0"]) == 0
    assert "file:mine.py:Prefill" in capsys.readouterr().out


@pytest.mark.parametrize("flags,label", [(["--policy", "mine.py:Prefill"], "file:mine.py:Prefill"),
                                         (["--checkpoint", CKPT], f"checkpoint:{CKPT}"),
                                         ([], "no-deflect")])
def test_simulate_runs_one_of_a_name_a_file_a_checkpoint(flags, label, files, capsys):
    assert main(["simulate", "--scenario", "tiny.yaml", *flags, "--json", "-", "--requests-csv", "r.csv"]) == 0
    s = _json(capsys)
    assert s["policy"] == label and s["n_requests"] == 60
    assert len((files / "r.csv").read_text().splitlines()) == 61


def test_the_shipped_general_agent_as_a_checkpoint_is_distilled_oracle(files, capsys):
    """agents/checkpoints/distilled-oracle (inputs: observation+kairos) through --checkpoint acts as the registry's."""
    general = str(GENERAL_CHECKPOINT.parent)
    assert main(["evaluate", "--scenario", "tiny.yaml", "--policies", "distilled-oracle", "--checkpoint", general,
                 "--seeds", "0,1", "--json", "-"]) == 0
    runs = _json(capsys)["runs"]
    mine = [(r["ttft_p95"], r["deflection_rate"]) for r in runs if r["policy"] == f"checkpoint:{general}"]
    assert mine == [(r["ttft_p95"], r["deflection_rate"]) for r in runs if r["policy"] == "distilled-oracle"]
    assert len(mine) == 2


def test_compare_takes_checkpoints_and_files(files, capsys):
    assert main(["compare", "--scenarios", "tiny.yaml", "--policies", "no-deflect", "--checkpoint", CKPT,
                 "--policy", "mine.py:Prefill", "--seeds", "0", "--json", "c.json"]) == 0
    out = capsys.readouterr().out
    assert f"| tiny.yaml | checkpoint:{CKPT} |" in out and "| tiny.yaml | file:mine.py:Prefill |" in out
    res = json.loads((files / "c.json").read_text())
    assert res[0]["policies"] == ["no-deflect", "file:mine.py:Prefill", f"checkpoint:{CKPT}"]  # files, then checkpoints


@pytest.fixture
def no_work(monkeypatch):
    """Every function that runs policies fails the test if reached."""
    def spy(*a, **k):
        raise AssertionError("a run started before the bad flag was reported")

    for mod, attr in ((evaluate_mod, "evaluate"), (sweep_mod, "sweep"), (compare_mod, "compare"),
                      (runner, "simulate")):
        monkeypatch.setattr(mod, attr, spy)


BAD = [
    (["--policy", "missing.py:X"], "--policy", "no file 'missing.py'"),
    (["--policy", "mine.py:Nope"], "--policy", "classes there with a decide method: Crash, Prefill"),
    (["--policy", "mine.py:NOT_A_CLASS"], "--policy", "is a int"),
    (["--policy", "mine.py"], "--policy", "path/to/file.py:ClassName"),
    (["--checkpoint", "no-such-run"], "--checkpoint", "(no such file or folder)"),
    (["--checkpoint", "."], "--checkpoint", "(no checkpoint found there)"),
]


@pytest.mark.parametrize("cmd", ["simulate", "evaluate", "sweep", "compare"])
@pytest.mark.parametrize("flags,flag,needle", BAD)
def test_bad_input_is_one_error_line_before_any_work(cmd, flags, flag, needle, files, capsys, no_work):
    scenario = ["--scenarios", "tiny.yaml"] if cmd == "compare" else ["--scenario", "tiny.yaml"]
    assert main([cmd, *scenario, *flags]) == 2
    out, err = capsys.readouterr()
    lines = err.strip().splitlines()
    assert out == "" and len(lines) == 1, err
    assert lines[0].startswith(f"kairos-gym {cmd}: error: {cmd}: {flag} = ") and needle in lines[0]
    assert "allowed:" in lines[0]


def test_an_sb3_zip_needs_trust_where_offered(files, capsys, no_work):
    (files / "model.zip").write_bytes(b"PK\x05\x06" + bytes(18))  # never opened
    assert main(["evaluate", "--scenario", "tiny.yaml", "--checkpoint", "model.zip"]) == 2
    err = capsys.readouterr().err
    assert "--trust-checkpoint" in err and "execute" in err
    assert main(["leaderboard", "--checkpoint", "model.zip", "--tasks", "bursty", "--out", "o.md"]) == 2
    assert "convert it" in capsys.readouterr().err  # the leaderboard has no --trust-checkpoint


def test_simulate_takes_one_policy(files, capsys, no_work):
    assert main(["simulate", "--scenario", "tiny.yaml", "--policy", "kairos", "--checkpoint", CKPT]) == 2
    assert "not with --policy" in capsys.readouterr().err
    assert main(["simulate", "--scenario", "tiny.yaml", "--policy", "kairoz"]) == 2
    assert "a registry name" in capsys.readouterr().err


@pytest.mark.parametrize("cmd", ["simulate", "evaluate", "sweep", "compare"])
def test_a_crash_names_the_users_line(cmd, files, capsys):
    scenario = ["--scenarios", "tiny.yaml"] if cmd == "compare" else ["--scenario", "tiny.yaml"]
    assert main([cmd, *scenario, "--policy", "mine.py:Crash", "--seeds" if cmd != "simulate" else "--seed", "0",
                 *SMALL.get(cmd, [])]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "LazyDecisionContext" not in err
    assert "AttributeError: DecisionContext has no attribute 'queue'" in err
    assert "at mine.py:11 in decide: return ctx.queue" in err
