"""Policies from outside the package (kairos_gym.agents.policy_file_loader): a class in a Python file, a safe
checkpoint."""

from __future__ import annotations

import pytest
from kairos_gym.agents.policy_file_loader import (
    load_policy_class,
    parse_policy_spec,
    policy_from_checkpoint,
    policy_from_file,
    probe,
    run_checked,
)
from kairos_gym.agents.ppo import DEFAULT_CHECKPOINT
from kairos_gym.agents.runner import run_policy

from kairos_gym.errors import ConfigError
from kairos_gym.scenario import load_scenario
from tests.fixtures import tiny_scenario

TINY = tiny_scenario(80)

GOOD = '''
from kairos_gym.agents.baselines import least_loaded_deflectable
from kairos_gym.sim.hook import Decision

BUILT = []


class Deflector:
    """Deflects (LargestSafe) to the least-loaded decode node that can take it."""

    name = "deflector"

    def __init__(self, scenario=None, seed=0):
        BUILT.append((scenario.name, seed))

    def decide(self, ctx):
        d = least_loaded_deflectable(ctx)
        return Decision.prefill_path() if d is None else Decision.deflect(d)


class NoArgs:
    def decide(self, ctx):
        return Decision.prefill_path()


NOT_A_CLASS = 3
'''


def _write(tmp_path, text, name="pol.py"):
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def test_a_class_from_a_file_runs_like_a_built_in(tmp_path):
    spec = _write(tmp_path, GOOD) + ":Deflector"
    ext = policy_from_file(spec)
    assert ext.label == "file:pol.py:Deflector" and ext.flag == "--policy"
    sc = load_scenario(TINY)
    s = run_checked(ext, sc, 2)
    assert s["policy"] == "deflector" and s["deflection_rate"] > 0
    # the same decisions as the same rule built in: always-deflect with LargestSafe chunks
    ref = run_policy("always-deflect-ls", sc, 2)
    for key in ("ttft_p95", "slo_attainment", "deflection_rate", "n_requests"):
        assert s[key] == ref[key], key
    # a fresh instance per run, built with scenario= and seed=
    built = type(ext.build(sc, 5)).__init__.__globals__["BUILT"]
    assert built == [("tiny", 2), ("tiny", 5)]
    assert load_policy_class(spec).__name__ == "Deflector"
    assert run_checked(policy_from_file(_write(tmp_path, GOOD) + ":NoArgs"), sc, 0)["deflection_rate"] == 0.0


def test_a_checkpoint_folder_is_the_ppo_agent():
    ext = policy_from_checkpoint(str(DEFAULT_CHECKPOINT.parent))
    sc = load_scenario(TINY)
    s = run_checked(ext, sc, 0)
    ref = run_policy("ppo", sc, 0)
    assert ext.label.startswith("checkpoint:") and s["ttft_p95"] == ref["ttft_p95"]


BAD = [
    ("nocolon", None, "path/to/file.py:ClassName"),
    ("{path}:1abc", GOOD, "is not a Python name"),
    ("{dir}/missing.py:X", None, "no file"),
    ("{dir}/pol.txt:X", None, "does not end in .py"),
    ("{path}:Missing", GOOD, "classes there with a decide method: Deflector, NoArgs"),
    ("{path}:NOT_A_CLASS", GOOD, "is a int"),
    ("{path}:X", "class X:\n    pass\n", "has none"),
    ("{path}:X", "raise RuntimeError('boom at import')\n", "RuntimeError: boom at import"),
    ("{path}:X", "def broken(:\n", "SyntaxError"),
    ("{path}:X", "import sys\nsys.exit(3)\n", "SystemExit"),
]


@pytest.mark.parametrize("spec,text,needle", BAD)
def test_bad_policy_files_are_one_config_error(spec, text, needle, tmp_path):
    path = _write(tmp_path, text) if text is not None else str(tmp_path / "pol.py")
    (tmp_path / "pol.txt").write_text("x")
    with pytest.raises(ConfigError) as e:
        policy_from_file(spec.format(path=path, dir=tmp_path))
    assert e.value.field == "--policy" and needle in str(e.value), str(e.value)


def test_oversized_policy_file(tmp_path, monkeypatch):
    import kairos_gym.agents.policy_file_loader as loader

    monkeypatch.setattr(loader, "MAX_POLICY_FILE_BYTES", 10)
    with pytest.raises(ConfigError, match="at most 10 bytes"):
        parse_policy_spec(_write(tmp_path, GOOD) + ":Deflector")


DECIDE_BAD = [
    ("class X:\n    def __init__(self, scenario, seed, width):\n        pass\n    def decide(self, ctx):\n"
     "        return None\n", "also requires width"),
    ("class X:\n    def __init__(self):\n        raise ValueError('no GPU')\n    def decide(self, ctx):\n"
     "        return None\n", "ValueError: no GPU"),
    ("class X:\n    def decide(self, ctx):\n        return None\n", "decision = None"),
    ("class X:\n    def decide(self, ctx):\n        return 'prefill'\n", "decision = 'prefill'"),
    ("from kairos_gym.sim.hook import Decision\nclass X:\n    def decide(self, ctx):\n"
     "        return Decision.deflect(7)\n", "decode node index"),
    ("class X:\n    def decide(self, ctx):\n        raise KeyError('oops')\n", "KeyError"),
]


@pytest.mark.parametrize("text,needle", DECIDE_BAD)
def test_probe_reports_a_bad_constructor_or_decide(text, needle, tmp_path):
    ext = policy_from_file(_write(tmp_path, text) + ":X")  # the file itself is fine
    with pytest.raises(ConfigError) as e:
        probe(ext, load_scenario(TINY))
    assert e.value.field == "--policy" and needle in str(e.value), str(e.value)


def test_bad_checkpoints(tmp_path):
    with pytest.raises(ConfigError) as e:
        policy_from_checkpoint(str(tmp_path / "nothing-here"))
    assert e.value.field == "--checkpoint"
    zip_path = tmp_path / "model.zip"
    zip_path.write_bytes(b"PK")
    with pytest.raises(ConfigError, match="--checkpoint"):
        policy_from_checkpoint(str(zip_path))
