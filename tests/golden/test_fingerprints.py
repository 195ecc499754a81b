"""Golden dataset: today's results, bit for bit (BLIS-style). A refactor or a speed-up must reproduce every entry
of ``fingerprints.json`` (the simulator's internals: ``engine_traces.json``, test_engine_traces.py). A change meant to
alter results re-records it (``python tools/fingerprint.py tests/golden/fingerprints.json``) and says why in its
commit."""

from __future__ import annotations

import json
from pathlib import Path

from tests.tool_loader import load_tool

ROOT = Path(__file__).resolve().parents[2]
GOLDEN = Path(__file__).resolve().parent / "fingerprints.json"


def _fingerprint_module():
    return load_tool("fingerprint")


def test_results_match_the_golden_fingerprints():
    golden = json.loads(GOLDEN.read_text(encoding="utf-8"))
    got = _fingerprint_module().compute()
    assert sorted(got) == sorted(golden), "the set of golden cases changed"
    changed = sorted(k for k in golden if got[k] != golden[k])
    assert not changed, f"{len(changed)} of {len(golden)} golden results changed: {changed}"


def test_golden_dataset_covers_every_path():
    golden = json.loads(GOLDEN.read_text(encoding="utf-8"))
    assert len(golden) >= 50
    for part in ("nodef", "d512", "dls", "rand", "tight-swap", "tight-reserve", "incl", "/kairos/", "/kairos-exact/",
                 "kairos_gym/Kairos-v0",
                 "kairos_gym/KairosSmall-v0"):
        assert any(part in k for k in golden), part
