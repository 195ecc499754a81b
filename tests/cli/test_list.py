"""``kairos-gym list [scenarios|policies|tasks|envs]``: every name the registries hold, one line each."""

from __future__ import annotations

import pytest

from kairos_gym.cli.main import main


def _listed(capsys, *what: str) -> dict[str, str]:
    """name -> description of the rows ``kairos-gym list WHAT`` prints."""
    assert main(["list", *what]) == 0
    rows = {}
    for line in capsys.readouterr().out.splitlines():
        if line.startswith("  "):
            name, _, desc = line.strip().partition("  ")
            rows[name] = desc.strip()
    return rows


def test_scenarios_are_the_shipped_files(capsys):
    from kairos_gym.configs import SCENARIO_DIR

    rows = _listed(capsys, "scenarios")
    assert set(rows) == {p.stem for p in SCENARIO_DIR.glob("*.yaml")}
    assert rows["bursty"].startswith("Gamma arrivals") and all(rows.values())


def test_policies_are_the_registry_with_a_line_each(capsys):
    from kairos_gym.agents.registry import DESCRIPTIONS, POLICIES

    rows = _listed(capsys, "policies")
    assert list(rows) == list(POLICIES) and set(DESCRIPTIONS) == set(POLICIES)
    assert all(rows.values()) and "LargestSafe" in rows["sq-ls"]


def test_tasks_are_every_suite(capsys):
    from kairos_gym.benchmark.suite import SUITE
    from kairos_gym.benchmark.suite_v2 import SUITE as V2

    rows = _listed(capsys, "tasks")
    assert list(rows) == [t.name for t in SUITE] + [f"v2:{t.name}" for t in V2]
    assert "scenario mooncake" in rows["long-tail/strict"] and "seeds 0-9" in rows["bursty"]
    assert "unseen" in rows["v2:arxiv-summ"] and "seeds 0-29" in rows["v2:bursty"]


def test_envs_are_the_registered_ids(capsys):
    import gymnasium as gym

    rows = _listed(capsys, "envs")
    assert set(rows) == {k for k in gym.registry if k.startswith(("kairos_gym/", "kairos_train/"))}
    assert rows["kairos_gym/Kairos-v0"].startswith("scenario bursty: Gamma arrivals")


def test_no_argument_lists_all_four_sections_in_order(capsys):
    assert main(["list"]) == 0
    heads = [line for line in capsys.readouterr().out.splitlines() if line and not line.startswith(" ")]
    assert [h.split()[0] for h in heads] == ["scenarios", "policies", "tasks", "Gymnasium"]


@pytest.mark.parametrize("bad", ["scenario", "all", ""])
def test_an_unknown_section_is_one_error_line(bad, capsys):
    assert main(["list", bad]) == 2
    out, err = capsys.readouterr()
    assert out == "" and len(err.strip().splitlines()) == 1
    assert "kairos-gym list: error:" in err and "scenarios, policies, tasks, envs" in err
