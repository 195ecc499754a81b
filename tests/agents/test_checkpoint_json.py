"""A safe checkpoint's JSON files are read under the bounds of kairos_gym.json_file: a deep, duplicate-key or
non-finite ``policy.json``/``normalize.json`` is one ConfigError naming the file, never a RecursionError."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from kairos_gym.agents.checkpoint import load_policy

from kairos_gym.errors import ConfigError

SHIPPED = Path(__file__).resolve().parents[2] / "agents" / "checkpoints" / "ppo-kairos-v0"


@pytest.mark.parametrize("name, text, why", [
    ("policy.json", "[" * 100_000 + "]" * 100_000, "nested at most 64 levels"),
    ("policy.json", '{"format": 1, "format": 1}', "each key once per object"),
    ("normalize.json", '{"epsilon": NaN}', "finite numbers"),
])
def test_a_bad_checkpoint_json_is_one_error_naming_the_file(tmp_path, name, text, why):
    ckpt = tmp_path / "ckpt"
    shutil.copytree(SHIPPED, ckpt)
    load_policy(ckpt)  # the copy loads as shipped
    (ckpt / name).write_text(text)
    with pytest.raises(ConfigError) as e:
        load_policy(ckpt)
    assert e.value.field == name and why in str(e.value)
