"""kairos_gym.json_file.read_json_file: the bounded JSON reader of --resume files."""

from __future__ import annotations

import pytest

from kairos_gym.errors import ConfigError
from kairos_gym.json_file import read_json_file


def test_it_reads_data_and_refuses_a_missing_a_large_or_a_non_json_file(tmp_path):
    p = tmp_path / "a.json"
    p.write_text('{"x": [1, 2.5]}')
    assert read_json_file("cmd", "--resume", p, 100, "file of cmd") == {"x": [1, 2.5]}
    cases = [(tmp_path / "absent.json", 100, "an existing file of cmd"), (p, 5, "at most 5 bytes")]
    (tmp_path / "b.json").write_text("{nope")
    cases.append((tmp_path / "b.json", 100, "a JSON file of cmd"))
    for path, cap, why in cases:
        with pytest.raises(ConfigError) as e:
            read_json_file("cmd", "--resume", path, cap, "file of cmd")
        assert e.value.field == "--resume" and why in str(e.value) and e.value.where == "cmd"
