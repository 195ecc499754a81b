"""``kairos-gym card DIR``: a checkpoint folder's record read from its own files (kairos_gym/benchmark/card.py), the
shipped checkpoints' cards, and bad input (not a checkpoint, oversized or malformed files) as one ConfigError."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from kairos_gym.benchmark import card as card_mod
from kairos_gym.benchmark.card import read_card, render_card
from kairos_gym.cli.main import main
from kairos_gym.errors import ConfigError

ROOT = Path(__file__).resolve().parents[2]
SHIPPED = ROOT / "agents" / "checkpoints"


def _copy(name: str, tmp_path: Path) -> Path:
    dest = tmp_path / name
    shutil.copytree(SHIPPED / name, dest)
    return dest


def test_the_shipped_rl_agent_card_gives_its_run_and_evaluations():
    c = read_card(SHIPPED / "ppo-kairos-v0")
    assert c["trained_on"]["families"] == ["bursty"]
    assert c["trained_on"]["how"].startswith("RL: maskable_ppo, ttft reward; seed 0, 800,768 steps")
    assert c["meta"]["best_eval"]["timesteps"] == 450_000 and c["history"] is None
    text = render_card(c)
    assert "| best (exported) | 450,000 | 0.766 | 2.27 | 0 | 0.266 |" in text
    assert "| kairos (reference) |  | 0.742 | 2.41 | 0 | 0.252 |" in text
    assert "- training: 1,538.1 s (evaluations 102.2 s of it)" in text
    assert text.count("- command: `kairos-gym train") == 2


def test_the_distilled_student_card_gives_validation_selection_and_leaderboard():
    c = read_card(SHIPPED / "distilled-oracle")
    assert len(c["history"]) == 60 and c["config"]["distill"]["seeds"] == [0, 1, 2]
    text = render_card(c)
    assert "| 0 | 60 | +0.0083 | -0.1364 | 0.583 | +0.0204 | -0.0401 | 24 s |" in text
    assert "| realistic | 0.615 / 0.529 | +0.086 ± 0.060 (18 cells) | 0.7341 / 0.7294 |" in text
    assert "| realistic | distill-kairos-label-seed0 | 0.718 [0.658, 0.776] | 0.670 [0.610, 0.730] |" in text
    assert "validation at epochs 20, 40, 60" in text


def test_json_writes_the_parsed_files(tmp_path, capsys):
    out = tmp_path / "card.json"
    assert main(["card", str(SHIPPED / "ppo-v2-seen"), "--json", str(out)]) == 0
    assert capsys.readouterr().out.startswith(f"# Checkpoint {SHIPPED / 'ppo-v2-seen'}\n")
    data = json.loads(out.read_text())
    assert data["meta"] == json.loads((SHIPPED / "ppo-v2-seen" / "meta.json").read_text())
    assert data["config"]["kairos_train/KairosGeneral-v0"]["env_kwargs"]["reward"] == "misses"
    assert data["trained_on"]["families"] == ["bursty", "regime-shift", "decode-bound", "kv-pressure"]
    assert set(data) == {"folder", "trained_on", "policy", "meta", "config", "history"}


def test_json_dash_prints_only_the_json(capsys):
    assert main(["card", str(SHIPPED / "ppo-kairos-v0"), "--json", "-"]) == 0
    assert json.loads(capsys.readouterr().out)["meta"]["seed"] == 0


def test_a_converted_checkpoint_without_meta_has_a_short_card(tmp_path):
    d = _copy("ppo-kairos-v0", tmp_path)
    (d / "meta.json").unlink()
    (d / "config.yaml").unlink()
    text = render_card(read_card(d))
    assert "- meta.json: none" in text and "undeclared" in text and "## Evaluations" not in text


@pytest.mark.parametrize("make", ["missing", "file", "empty-folder"])
def test_a_folder_that_is_not_a_checkpoint_is_one_config_error(tmp_path, capsys, make):
    target = tmp_path / "x"
    if make == "file":
        target.write_text("{}")
    elif make == "empty-folder":
        target.mkdir()
    with pytest.raises(ConfigError, match=r"card: DIR = .* allowed: a checkpoint folder: one with policy.json"):
        read_card(target)
    assert main(["card", str(target)]) == 2
    assert "a checkpoint folder" in capsys.readouterr().err


@pytest.mark.parametrize(("name", "text", "match"), [
    ("meta.json", "[1, 2]", "meta.json = 'list'"),
    ("meta.json", "{\"a\": 1, \"a\": 2}", "the key 'a' twice"),
    ("meta.json", "not json", "meta.json"),
    ("config.yaml", "a: [1, 2\n", "valid YAML"),
    ("config.yaml", "- 1\n", "config.yaml = 'list'"),
    ("history.jsonl", "{\"epoch\": 1}\n[1]\n", "history.jsonl line 2"),
    ("history.jsonl", "{\"epoch\": 1}\n{bad\n", "history.jsonl line 2"),
    ("history.jsonl", "\udcff", "history.jsonl"),
    ("policy.json", "{" * 100 + "}" * 100, "nested deeper"),
])
def test_a_malformed_file_is_one_config_error(tmp_path, name, text, match):
    d = _copy("distilled-oracle", tmp_path)
    (d / name).write_bytes(text.encode("utf-8", "surrogateescape"))
    with pytest.raises(ConfigError, match=match):
        read_card(d)


def test_an_oversized_file_is_refused_before_it_is_parsed(tmp_path, monkeypatch):
    d = _copy("distilled-oracle", tmp_path)
    monkeypatch.setattr(card_mod, "MAX_HISTORY_BYTES", 100)
    with pytest.raises(ConfigError, match=r"history.jsonl = .3917 bytes.*at most 100 bytes"):
        read_card(d)
    monkeypatch.setattr(card_mod, "MAX_META_BYTES", 100)
    with pytest.raises(ConfigError, match=r"meta.json = '.*meta.json \(7924 bytes\)'"):
        read_card(d)


def test_too_many_history_lines_are_refused(tmp_path, monkeypatch):
    d = _copy("distilled-oracle", tmp_path)
    monkeypatch.setattr(card_mod, "MAX_HISTORY_LINES", 10)
    with pytest.raises(ConfigError, match="60 lines"):
        read_card(d)


def test_a_bad_json_output_path_stops_before_reading(tmp_path):
    (tmp_path / "dir").mkdir()
    assert main(["card", str(SHIPPED / "ppo-kairos-v0"), "--json", str(tmp_path / "dir")]) == 2
