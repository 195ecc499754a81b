"""What a checkpoint declares it trained on (kairos_gym/benchmark/trained_on.py): read from its config.yaml, never
guessed; the shipped learnt entries' cards."""

from __future__ import annotations

from pathlib import Path

from kairos_gym.benchmark.board_v2 import card
from kairos_gym.benchmark.trained_on import declared


def test_the_shipped_learnt_entries() -> None:
    assert card("ppo", "built-in") == (["bursty"], "RL: maskable_ppo, ttft reward; seed 0, 800,768 steps, exported: "
                                                   "best validation at 450,000")
    fams, how = card("distilled-oracle", "built-in")
    assert fams == ["bursty", "regime-shift", "decode-bound", "long-tail", "kv-pressure", "azure-code"]
    assert how == "supervised: distilled from the Oracle; seed 0, 58,642 Oracle-labelled decisions from 90 instances"
    assert card("kairos", "built-in") == (None, None)


def _folder(tmp_path: Path, text: str) -> Path:
    (tmp_path / "config.yaml").write_text(text)
    return tmp_path


def test_a_domain_config_with_and_without_families(tmp_path: Path) -> None:
    head = "kairos_train/KairosGeneral-v0:\n  algo: maskable_ppo\n  env_kwargs:\n    suite: v2\n    reward: misses\n"
    assert declared(_folder(tmp_path, head + "    families: [bursty, kv-pressure]\n")) == (
        ("bursty", "kv-pressure"), "RL: maskable_ppo, misses reward")
    assert declared(_folder(tmp_path, head)) == (("bursty", "regime-shift", "decode-bound", "kv-pressure"),
                                                 "RL: maskable_ppo, misses reward")  # v2's default: seen, no faults


def test_a_single_scenario_config_and_the_undeclared(tmp_path: Path) -> None:
    assert declared(_folder(tmp_path, "kairos_gym/Kairos-kv-pressure-v0:\n  algo: ppo\n"))[0] == ("kv-pressure",)
    for junk in ("[1, 2]\n", "a: 1\nb: 2\n", "other/Env-v0:\n  algo: ppo\n", "distill:\n  families: 3\n"):
        assert declared(_folder(tmp_path, junk))[0] is None
    assert declared(tmp_path / "nowhere") == (None, None)


def test_the_seed_and_budget_come_from_meta_json_when_it_records_them(tmp_path: Path) -> None:
    import json

    _folder(tmp_path, "kairos_gym/Kairos-v0:\n  algo: ppo\n  env_kwargs: {reward: slo}\n")
    (tmp_path / "meta.json").write_text(json.dumps({"seed": 4, "timesteps": 1000, "exported": "final"}))
    assert declared(tmp_path)[1] == "RL: ppo, slo reward; seed 4, 1,000 steps, exported: final"
    for junk in ("[]", '{"seed": "x"}', "{not json"):
        (tmp_path / "meta.json").write_text(junk)
        assert declared(tmp_path)[1] == "RL: ppo, slo reward"


def test_a_fine_tune_says_what_it_started_from(tmp_path: Path) -> None:
    _folder(tmp_path, "kairos_train/KairosGeneral-v0:\n  algo: maskable_ppo\n"
            "  init_from: agents/checkpoints/distilled-oracle\n"
            "  env_kwargs: {suite: v2, families: [bursty], reward: misses}\n")
    assert declared(tmp_path) == (("bursty",), "RL: maskable_ppo, misses reward, fine-tuned from distilled-oracle")
