"""`kairos-gym latency` prints through the one table renderer (<= 120 columns) and survives a closed pipe."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from kairos_gym.cli.main import main


def test_latency_table_fits_120_columns(capsys):
    assert main(["latency", "--chunks", "128,256,512,1024,2048,4096"]) == 0
    out = capsys.readouterr().out
    assert max(len(line) for line in out.splitlines()) <= 120
    assert "(ms, index 1-5)" in out and "85/114/142/171/199" in out


def test_closed_pipe_is_not_a_traceback():
    # `kairos-gym latency | head -1`: the reader closes the pipe after one line
    many = ",".join(str(b) for b in range(1, 65))  # 64 x 16 rows: far more than a pipe buffer holds
    ctx = ",".join(str(512 * i) for i in range(1, 17))
    proc = subprocess.Popen([sys.executable, "-m", "kairos_gym.cli", "latency", "--batches", many, "--contexts", ctx],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.readline()
    proc.stdout.close()
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=60) == 0, err
    assert "Traceback" not in err and "BrokenPipe" not in err


def test_latency_json_has_each_steps_compute_share(capsys):
    argv = ["latency", "--batches", "1,256", "--contexts", "2048", "--chunks", "512,2048", "--prefixes", "0,4096"]
    assert main([*argv, "--json", "-"]) == 0
    table = json.loads(capsys.readouterr().out)
    shares = [r["decode_compute_share"] for r in table["rows"]]
    assert 0 < shares[0] < shares[1] < 1  # a decode step is memory-bound, less so at a large batch
    assert [(r["tokens"], r["prefix"]) for r in table["prefill"]] == [(512, 0), (512, 4096), (2048, 0), (2048, 4096)]
    for r in table["prefill"]:
        assert 0 < r["compute_share"] < 1 and r["tokens_per_s"] == pytest.approx(r["tokens"] / r["ms"] * 1e3, rel=1e-3)
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "A prefill step alone" in out and max(len(line) for line in out.splitlines()) <= 120


def test_latency_gives_the_kv_tokens_per_gpu_at_each_reserve(capsys):
    assert main(["latency", "--kv-reserve", "0.1,0.56", "--json", "-"]) == 0
    kv = json.loads(capsys.readouterr().out)["kv_capacity"]
    assert [r["kv_reserve_frac"] for r in kv] == [0.1, 0.56]
    assert kv[0]["tokens_per_gpu"] > kv[1]["tokens_per_gpu"] > 0
    assert main(["latency", "--kv-reserve", "1"]) == 2
    assert "--kv-reserve" in capsys.readouterr().err
