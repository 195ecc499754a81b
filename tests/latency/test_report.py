"""docs/calibration.md is the output of `kairos-gym latency --calibration-report` for this checkout."""

from __future__ import annotations

from pathlib import Path

import pytest

from kairos_gym.latency.report import architecture_rows, calibration_report_md

DOC = Path(__file__).resolve().parents[2] / "docs" / "calibration.md"


@pytest.mark.skipif(not DOC.is_file(), reason="docs/ not present (installed package)")
def test_calibration_doc_is_regenerated():
    assert DOC.read_text(encoding="utf-8") == calibration_report_md(), (
        "docs/calibration.md is stale: run `kairos-gym latency --calibration-report`")


def test_architecture_table_rows():
    rows = {r["model"]: r for r in architecture_rows()}
    assert rows["opt-13b"]["rotary_bytes"] == 0 and rows["opt-13b"]["mlp_matrices"] == 2
    assert rows["llama-2-7b"]["rotary_bytes"] > 0 and rows["llama-2-7b"]["mlp_matrices"] == 3
    assert rows["llama-2-70b"]["prefill_tp"] == 2  # 138 GB of weights do not fit one A100
