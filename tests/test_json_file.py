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


@pytest.mark.parametrize("text, why", [
    ("[" * 100_000 + "]" * 100_000, "nested at most 64 levels"),
    ('{"a": {"b": 1, "b": 2}}', "each key once per object"),
    ('{"a": 1, "a": 1}', "each key once per object"),
    ('{"x": NaN}', "a JSON file of cmd"),
    ('{"x": Infinity}', "a JSON file of cmd"),
    ("{nope", "a JSON file of cmd"),
])
def test_deep_duplicate_or_non_finite_json_is_one_clean_error(tmp_path, text, why):
    p = tmp_path / "a.json"
    p.write_text(text)
    with pytest.raises(ConfigError) as e:
        read_json_file("cmd", "--resume", p, 10**6, "file of cmd", finite=True)
    assert e.value.field == "--resume" and why in str(e.value)


def test_nan_is_data_unless_finite_numbers_are_asked_for(tmp_path):
    p = tmp_path / "a.json"
    p.write_text('{"x": NaN, "deep": ' + "[" * 63 + "]" * 63 + ', "s": "[[[[{{{{\\"]]"}')
    got = read_json_file("cmd", "--resume", p, 10**6, "file of cmd")
    assert got["x"] != got["x"] and got["s"] == '[[[[{{{{"]]'


@pytest.mark.parametrize("special", ["/dev/urandom", "/dev/zero", "/proc/self"])
def test_special_files_and_folders_are_refused_before_reading(special):
    with pytest.raises(ConfigError, match="a regular file"):
        read_json_file("cmd", "--oracle-cache", special, 100, "file of cmd")


def test_the_depth_scan_ignores_brackets_in_strings():
    from kairos_gym.json_file import json_depth

    assert json_depth('{"a": "[[[[\\\\"}') == 1
    assert json_depth('[[1], [[2]]]') == 3
    assert json_depth('"{"') == 0
