"""The hostile probe's cases, one row each: every one exits with status 2 and one ``error:`` line that names the
field, before any run where the input allows it (docs/reliability.md, "Bad input, outputs and submitted
policies: the bounds"). Paths on /proc, /sys and /dev need Linux."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from kairos_gym.cli.main import main
from tests.fixtures import MISBEHAVING_POLICIES

LINUX = sys.platform.startswith("linux")
SMOKE = Path(__file__).resolve().parents[2] / "configs" / "ppo" / "smoke.yaml"
SHIPPED = Path(__file__).resolve().parents[2] / "agents" / "checkpoints" / "ppo-kairos-v0"
DEEP = "[" * 100_000 + "]" * 100_000

def _train_config(body: str, section: str = "kairos_gym/KairosSmall-v0") -> str:
    return f"{section}:\n  n_envs: 1\n  n_steps: 64\n  batch_size: 64\n  n_timesteps: 64\n  eval: {{freq: 0}}\n{body}"


# (id, argv with {tmp} for the test's folder, files to write first {name: text}, the field the error names)
CASES = [
    ("json-proc", ["simulate", "--scenario", "small", "--json", "/proc/x.json"], {}, "--json"),
    ("json-sys", ["simulate", "--scenario", "small", "--json", "/sys/kernel/x.json"], {}, "--json"),
    ("plots-proc", ["evaluate", "--scenario", "small", "--plots", "/proc/plots"], {}, "--plots"),
    ("calibration-report-proc", ["latency", "--calibration-report", "/proc/x.md"], {}, "--calibration-report"),
    ("perf-json-proc", ["perf", "--json", "/proc/x.json"], {}, "--json"),
    ("demo-out-proc", ["demo", "--out", "/proc/x"], {}, "--out"),
    ("train-out-proc", ["train", "--config", str(SMOKE), "--out", "/proc/x"], {}, "--out"),
    ("train-export-proc", ["train", "--config", str(SMOKE), "--out", "{tmp}/run", "--export", "/proc/x"], {},
     "--export"),
    ("results-out-proc", ["results", "--out", "/proc/x.md"], {}, "--out"),
    ("json-dev-full", ["simulate", "--scenario", "small", "--json", "/dev/full"], {}, "--json"),
    ("csv-dev-full", ["simulate", "--scenario", "small", "--requests-csv", "/dev/full"], {}, "--requests-csv"),
    ("oracle-cache-urandom", ["leaderboard", "--oracle-cache", "/dev/urandom", "--out", "{tmp}/o.md"], {},
     "oracle cache: file"),
    ("oracle-cache-deep", ["leaderboard", "--oracle-cache", "{tmp}/deep.json", "--out", "{tmp}/o.md"],
     {"deep.json": DEEP}, "oracle cache: file"),
    ("precision-resume-deep", ["precision", "--resume", "{tmp}/deep.json", "--out", "{tmp}/p.md"],
     {"deep.json": DEEP}, "--resume"),
    ("checkpoint-policy-json-deep", ["leaderboard", "--checkpoint", "{tmp}/ckpt", "--out", "{tmp}/o.md"],
     {"ckpt/policy.json": DEEP}, "--checkpoint"),
    ("lr-nan", ["train", "--config", "{tmp}/t.yaml", "--out", "{tmp}/run"],
     {"t.yaml": _train_config("  learning_rate: .nan\n")}, "learning_rate"),
    ("lr-negative", ["train", "--config", "{tmp}/t.yaml", "--out", "{tmp}/run"],
     {"t.yaml": _train_config("  learning_rate: -1\n")}, "learning_rate"),
    ("gamma-2", ["train", "--config", "{tmp}/t.yaml", "--out", "{tmp}/run"],
     {"t.yaml": _train_config("  gamma: 2\n")}, "gamma"),
    ("n-steps-0", ["train", "--config", "{tmp}/t.yaml", "--out", "{tmp}/run"],
     {"t.yaml": _train_config("").replace("n_steps: 64", "n_steps: 0")}, "n_steps"),
    ("unknown-env-id", ["train", "--config", "{tmp}/t.yaml", "--out", "{tmp}/run"],
     {"t.yaml": _train_config("", section="kairos_gym/Nope-v0")}, "(env id)"),
    ("timesteps-1e15", ["train", "--config", "{tmp}/t.yaml", "--out", "{tmp}/run"],
     {"t.yaml": _train_config("").replace("n_timesteps: 64", "n_timesteps: 1.0e15")}, "n_timesteps"),
    ("n-envs-65", ["train", "--config", str(SMOKE), "--n-envs", "65", "--out", "{tmp}/run"], {}, "--n-envs"),
    ("batch-above-rollout", ["train", "--config", "{tmp}/t.yaml", "--out", "{tmp}/run"],
     {"t.yaml": _train_config("").replace("batch_size: 64", "batch_size: 100000")}, "batch_size"),
    ("streaming-window-64", ["simulate", "--scenario", "{tmp}/s.yaml", "--no-progress"],
     {"s.yaml": "name: small-stream\nmetrics: {mode: streaming, window: 64}\n"
                "workload: {arrival: {kind: gamma, rate: 22, cv: 3}, num_requests: 2000}\n"}, "window"),
    ("duplicate-yaml-key", ["simulate", "--scenario", "{tmp}/s.yaml"],
     {"s.yaml": "cluster: {prefill_nodes: 2, prefill_nodes: 1}\n"}, "(duplicate key"),
    ("empty-scenario", ["simulate", "--scenario", "{tmp}/s.yaml"], {"s.yaml": "# only a comment\n"}, "(file)"),
    ("bandwidth-1e-300", ["simulate", "--scenario", "{tmp}/s.yaml"],
     {"s.yaml": "transfer: {bandwidth_bytes_per_s: 1.0e-300}\n"}, "bandwidth_bytes_per_s"),
    ("setup-1e308", ["simulate", "--scenario", "{tmp}/s.yaml"], {"s.yaml": "transfer: {setup_s: 1.0e308}\n"},
     "setup_s"),
    ("policy-sys-exit", ["leaderboard", "--policy", "{tmp}/p.py:Exits", "--tasks", "bursty", "--out", "{tmp}/o.md"],
     {"p.py": MISBEHAVING_POLICIES}, "--policy"),
    ("policy-slow-decide", ["leaderboard", "--policy", "{tmp}/p.py:Slow", "--decision-time-limit", "0.1",
                            "--tasks", "bursty", "--out", "{tmp}/o.md"], {"p.py": MISBEHAVING_POLICIES}, "--policy"),
    ("policy-isolated-exit", ["leaderboard", "--policy", "{tmp}/p.py:Exits", "--isolate", "--tasks", "bursty",
                              "--out", "{tmp}/o.md"], {"p.py": MISBEHAVING_POLICIES}, "--policy"),
    ("isolate-memory-tiny", ["leaderboard", "--isolate", "--isolate-memory", "1000", "--out", "{tmp}/o.md"], {},
     "--isolate-memory"),
    ("decision-limit-zero", ["leaderboard", "--decision-time-limit", "0", "--out", "{tmp}/o.md"], {},
     "--decision-time-limit"),
]


@pytest.mark.skipif(not LINUX, reason="the probe's special paths are Linux's")
@pytest.mark.parametrize("argv, files, field", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_every_probe_case_is_one_clean_error(tmp_path, capsys, argv, files, field):
    import shutil

    for name, text in files.items():
        p = tmp_path / name
        if name.startswith("ckpt/"):
            shutil.copytree(SHIPPED, tmp_path / "ckpt", dirs_exist_ok=True)
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    args = [a.replace("{tmp}", str(tmp_path)) for a in argv]
    assert main(args) == 2
    _out, err = capsys.readouterr()
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith(f"kairos-gym {args[0]}: error: ") and field in lines[0], lines[0]
    assert not (tmp_path / "run").exists()  # a refused training run leaves no folder
