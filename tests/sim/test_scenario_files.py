"""Bad scenario files end to end: ``load_scenario``, ``gym.make(..., scenario=path)`` and ``kairos-gym simulate
--scenario path.yaml`` each give one ConfigError (exit 2, one line on stderr, no traceback), never a crash or a
silently reinterpreted value; the docs' own YAML loads as written."""

from __future__ import annotations

import re
from pathlib import Path

import gymnasium as gym
import pytest

import kairos_gym.env  # noqa: F401  (registers the ids)
from kairos_gym.cli.main import main
from kairos_gym.errors import MAX_VALUE_REPR, ConfigError
from kairos_gym.scenario import ClusterConfig, ScenarioConfig, TransferSection, load_scenario

DOCS = Path(__file__).resolve().parents[2] / "docs" / "scenarios.md"


def _alias_bomb() -> str:
    """A 9-level billion-laughs document (9**9 nodes once expanded), a few hundred bytes on disk."""
    lines = ['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for i, name in enumerate("bcdefghi"):
        lines.append(f"{name}: &{name} [" + ",".join([f"*{'abcdefghi'[i]}"] * 9) + "]")
    return "\n".join(lines) + "\ncluster: *i\n"


# name -> (file bytes, text that must appear in the one-line error)
BAD_FILES = {
    "binary": (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(range(256)), "(encoding)"),
    "latin1": ("name: caf\u00e9\ncluster: {prefill_nodes: 2}\n".encode("latin-1"), "UTF-8"),
    "deep": (("cluster: " + "[" * 2000 + "]" * 2000 + "\n").encode(), "(nesting)"),
    "alias_bomb": (_alias_bomb().encode(), "aliases"),
    "octal": (b"cluster:\n  decode_nodes: 010\n", "leading zero"),
    "huge_nodes": (b"cluster:\n  prefill_nodes: 100000000000\n", "prefill_nodes"),
    "budget_1e9": (b"cluster:\n  prefill_token_budget: 1e9\n", "prefill_token_budget"),
    "budget_1e7": (b"cluster:\n  prefill_token_budget: 1e7\n", "prefill_token_budget"),
    "empty_window": (b"workload:\n  arrival: {kind: poisson, rate: 8}\n  duration_s: 1e-9\n", "duration_s"),
}


def _write(tmp_path: Path, name: str) -> Path:
    p = tmp_path / f"{name}.yaml"
    p.write_bytes(BAD_FILES[name][0])
    return p


@pytest.mark.parametrize("name", sorted(set(BAD_FILES) - {"empty_window"}))
def test_load_scenario_refuses_bad_file(tmp_path, name):
    """Refused while the file is read and validated: before any simulator (or allocation) exists."""
    p = _write(tmp_path, name)
    with pytest.raises(ConfigError) as e:
        load_scenario(p)
    msg = str(e.value)
    assert str(p) in msg and BAD_FILES[name][1] in msg and "allowed" in msg, msg
    assert len(msg) < 4 * MAX_VALUE_REPR + 400  # a bounded message, even for the alias bomb


@pytest.mark.parametrize("name", sorted(BAD_FILES))
def test_gym_make_refuses_bad_file(tmp_path, name):
    p = _write(tmp_path, name)
    with pytest.raises(ConfigError, match=re.escape(BAD_FILES[name][1])):
        gym.make("kairos_gym/Kairos-v0", scenario=str(p))


@pytest.mark.parametrize("name", sorted(BAD_FILES))
def test_cli_simulate_bad_file_one_line_exit_2(tmp_path, name, capsys):
    p = _write(tmp_path, name)
    assert main(["simulate", "--scenario", str(p), "--no-progress"]) == 2
    out = capsys.readouterr()
    lines = out.err.strip().splitlines()
    assert len(lines) == 1, out.err
    assert lines[0].startswith("kairos-gym simulate: error: ") and BAD_FILES[name][1] in lines[0]
    assert "Traceback" not in out.err and out.out == ""


def test_docs_float_values_are_read_as_floats(tmp_path):
    """``17.5e9`` and ``20e9`` (docs/scenarios.md) are floats, not strings that fail validation."""
    p = tmp_path / "s.yaml"
    p.write_text("cluster:\n  swap_bandwidth_bytes_per_s: 20e9\ntransfer:\n  bandwidth_bytes_per_s: 17.5e9\n"
                 "workload: {num_requests: 20}\n")
    sc = load_scenario(p)
    assert sc.cluster.swap_bandwidth_bytes_per_s == 20e9 and sc.transfer.bandwidth_bytes_per_s == 17.5e9
    env = gym.make("kairos_gym/Kairos-v0", scenario=str(p))
    assert env.unwrapped.scenario == sc
    assert main(["simulate", "--scenario", str(p), "--no-progress", "--json", str(tmp_path / "o.json")]) == 0


def test_docs_defaults_block_loads_and_matches_the_defaults(tmp_path):
    """The ``Fields (defaults)`` YAML block of docs/scenarios.md, as written, is the scenario defaults."""
    text = DOCS.read_text(encoding="utf-8")
    block = text.split("## Fields (defaults)", 1)[1].split("```yaml\n", 1)[1].split("```", 1)[0]
    block = "\n".join(line for line in block.splitlines() if not line.startswith("workload:"))
    p = tmp_path / "docs.yaml"
    p.write_text(block)
    sc = load_scenario(p)
    assert sc.cluster == ClusterConfig() and sc.transfer == TransferSection()
    assert sc == ScenarioConfig(name="custom")
