"""Every script of examples/ runs at smoke size (``--smoke``) in a fresh process, exits 0 and prints what it promises.

The training examples need their libraries: the SB3 one sb3-contrib, the CleanRL-style one torch, the RLlib one Ray
(the extra kairos-gym[ray]; CI runs it in its scale-out step, .ci/run). Without Ray the RLlib example says so and
exits 0, which is tested with Ray hidden.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"


def _has(module: str) -> bool:
    return importlib.util.find_spec(module) is not None


def run_example(name: str, tmp_path: Path, *args: str, env: dict[str, str] | None = None) -> str:
    """Run ``examples/<name>`` with this Python in ``tmp_path``; its stdout (the test fails on a non-zero exit)."""
    env = {**os.environ, "OMP_NUM_THREADS": "1", **(env or {})}
    out = subprocess.run([sys.executable, str(EXAMPLES / name), *args], capture_output=True, text=True, cwd=tmp_path,
                         env=env, timeout=600)
    assert out.returncode == 0, f"{name} exited {out.returncode}:\n{out.stdout}\n{out.stderr}"
    return out.stdout


TESTED = {"my_policy.py", "read_results.py", "sb3_maskable_ppo.py", "cleanrl_ppo.py", "rllib_ppo.py"}


def test_every_example_is_tested_and_examples_is_no_package():
    assert {p.name for p in EXAMPLES.glob("*.py")} == TESTED
    assert not (EXAMPLES / "__init__.py").exists()  # scripts, not installed: pyproject.toml lists its packages


def test_my_policy_is_evaluated_beside_kairos(tmp_path: Path):
    out = run_example("my_policy.py", tmp_path, "--smoke")
    assert "scenario bursty, seeds 0,1 (n=2)" in out
    for row in ("no-deflect", "kairos", "file:my_policy.py:BusyShortDeflect"):
        assert f"\n{row} " in out, row
    assert "slo_attainment: file:my_policy.py:BusyShortDeflect " in out and " vs kairos " in out


def test_read_results_prints_both_tables(tmp_path: Path):
    out = run_example("read_results.py", tmp_path, "--smoke")
    assert "evaluate.json: 3 policies x 2 seeds (0, 1), mean (std)" in out
    assert "requests.csv: 200 requests; TTFT (s) by path" in out
    for row in ("no-deflect", "sq", "kairos", "prefill", "deflect"):
        assert f"\n{row} " in out, row


@pytest.mark.skipif(not _has("sb3_contrib"), reason="sb3-contrib is not installed")
def test_sb3_maskable_ppo_trains_and_never_takes_a_masked_action(tmp_path: Path):
    out = run_example("sb3_maskable_ppo.py", tmp_path, "--smoke", "--out", "model")
    assert "trained MaskablePPO on kairos_gym/KairosSmall-v0 for 256 decisions" in out
    assert "n_invalid_actions: agent 0.000 vs kairos 0.000" in out
    assert (tmp_path / "model" / "model.zip").is_file()


@pytest.mark.skipif(not _has("torch"), reason="torch is not installed")
def test_cleanrl_ppo_runs_one_update_and_never_takes_a_masked_action(tmp_path: Path):
    out = run_example("cleanrl_ppo.py", tmp_path, "--smoke")
    assert "update 1/1: 256 decisions" in out
    assert "n_invalid_actions: agent 0.000 vs kairos 0.000" in out


@pytest.mark.skipif(not _has("ray"), reason="Ray is not installed")
def test_rllib_ppo_runs_one_iteration_and_never_takes_a_masked_action(tmp_path: Path):
    out = run_example("rllib_ppo.py", tmp_path, "--smoke")
    assert "iteration 1/1: 400" in out
    assert "n_invalid_actions: agent 0.000 vs kairos 0.000" in out


def test_rllib_example_without_ray_says_so_and_exits_0(tmp_path: Path):
    hidden = tmp_path / "no-ray"  # a ray package that fails to import, first on the path: Ray as if not installed
    (hidden / "ray").mkdir(parents=True)
    (hidden / "ray" / "__init__.py").write_text("raise ImportError('hidden by the test')\n", encoding="utf-8")
    path = os.pathsep.join(p for p in (str(hidden), os.environ.get("PYTHONPATH")) if p)
    out = run_example("rllib_ppo.py", tmp_path, "--smoke", env={"PYTHONPATH": path})
    assert out.strip() == "skipped: Ray is not installed; pip install 'kairos-gym[ray]' (docs/scale-out.md)"
