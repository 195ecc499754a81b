"""The one YAML reader for user files: YAML 1.2 scalars, bounded size/depth/aliases, clear errors."""

from __future__ import annotations

import math

import pytest

from kairos_gym.errors import MAX_VALUE_REPR, ConfigError, bounded_repr
from kairos_gym.yaml_io import MAX_DEPTH, MAX_FILE_BYTES, MAX_NODES, load_yaml_file, load_yaml_text


@pytest.mark.parametrize(("text", "value"), [
    ("17.5e9", 17.5e9), ("20e9", 20e9), ("1e-3", 1e-3), (".5", 0.5), ("-2.", -2.0), ("+3.25", 3.25),
    ("12", 12), ("-7", -7), ("0", 0), ("0x1F", 31), ("0o17", 15), ("true", True), ("False", False),
    ("null", None), ("~", None), ("", None), ("yes", "yes"), ("on", "on"), ("1_000", "1_000"),
    ("2001-12-14", "2001-12-14"), ("1:30", "1:30"),
])
def test_yaml_1_2_scalars(text, value):
    got = load_yaml_text(f"x: {text}", "t")["x"]
    assert got == value and type(got) is type(value)


def test_inf_and_nan():
    assert load_yaml_text("x: .inf", "t")["x"] == math.inf
    assert load_yaml_text("x: -.inf", "t")["x"] == -math.inf
    assert math.isnan(load_yaml_text("x: .nan", "t")["x"])


@pytest.mark.parametrize("text", ["010", "-007", "+01"])
def test_octal_looking_int_is_refused(text):
    with pytest.raises(ConfigError, match="leading zero") as e:
        load_yaml_text(f"a: 1\ndecode_nodes: {text}\n", "s.yaml")
    assert "line 2" in str(e.value) and "s.yaml" in str(e.value)


def test_quoted_leading_zero_is_a_string():
    assert load_yaml_text("x: '010'", "t")["x"] == "010"


def test_merge_keys_and_anchors_still_work():
    got = load_yaml_text("base: &b {a: 1, b: 2}\nother:\n  <<: *b\n  b: 3\n", "t")
    assert got["other"] == {"a": 1, "b": 3}


def test_deep_nesting_is_a_clear_error_not_recursion():
    text = "[" * 2000 + "]" * 2000
    with pytest.raises(ConfigError, match="nesting"):
        load_yaml_text(text, "deep.yaml")
    ok = "[" * (MAX_DEPTH - 1) + "]" * (MAX_DEPTH - 1)
    assert load_yaml_text(ok, "t") is not None


def test_alias_bomb_is_refused_without_expanding():
    lines = ['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for i, name in enumerate("bcdefghi"):
        prev = "abcdefghi"[i]
        lines.append(f"{name}: &{name} [" + ",".join([f"*{prev}"] * 9) + "]")
    text = "\n".join(lines) + "\n"
    assert len(text) < 400
    with pytest.raises(ConfigError, match="aliases") as e:
        load_yaml_text(text, "bomb.yaml")
    assert len(str(e.value)) < 400
    assert str(MAX_NODES) in str(e.value)


def test_binary_and_non_utf8_files(tmp_path):
    binf = tmp_path / "b.yaml"
    binf.write_bytes(b"a: 1\n\x00\x01\x02")
    with pytest.raises(ConfigError, match="NUL byte"):
        load_yaml_file(binf)
    latin = tmp_path / "l.yaml"
    latin.write_bytes("name: caf\xe9\n".encode("latin-1"))
    with pytest.raises(ConfigError, match="UTF-8") as e:
        load_yaml_file(latin)
    assert "0xe9" in str(e.value)


def test_file_size_bound_checked_before_reading(tmp_path):
    big = tmp_path / "big.yaml"
    big.write_bytes(b"#" * (MAX_FILE_BYTES + 1))
    with pytest.raises(ConfigError, match="at most"):
        load_yaml_file(big)


def test_missing_file_and_folder(tmp_path):
    with pytest.raises(ConfigError, match="readable"):
        load_yaml_file(tmp_path / "nope.yaml")
    with pytest.raises(ConfigError, match="folder"):
        load_yaml_file(tmp_path)


def test_bad_yaml_is_one_line():
    with pytest.raises(ConfigError, match="valid YAML") as e:
        load_yaml_text("a: [1, 2\nb: }", "bad.yaml")
    assert "\n" not in str(e.value)


def test_bounded_repr_in_errors():
    huge = {"k": ["x" * 10_000] * 10_000}
    err = ConfigError("w", "f", huge, "small")
    assert len(str(err)) < MAX_VALUE_REPR + 100
    assert len(bounded_repr("y" * 5000)) <= MAX_VALUE_REPR
    assert bounded_repr(12) == "12"


def test_scenario_loader_reads_yaml_1_2_floats(tmp_path):
    from kairos_gym.scenario import load_scenario

    f = tmp_path / "s.yaml"
    f.write_text("transfer:\n  bandwidth_bytes_per_s: 17.5e9\ncluster:\n  swap_bandwidth_bytes_per_s: 20e9\n",
                 encoding="utf-8")
    sc = load_scenario(f)
    assert sc.transfer.bandwidth_bytes_per_s == 17.5e9 and sc.cluster.swap_bandwidth_bytes_per_s == 20e9


@pytest.mark.parametrize("text, key, line", [
    ("{prefill_nodes: 2, prefill_nodes: 1}", "prefill_nodes", 1),
    ("a: 1\nb: 2\na: 3\n", "a", 3),
    ("cluster:\n  x: 1\n  y: 2\n  x: 1\n", "x", 4),
    ("- {a: 1}\n- {b: 1, b: 1}\n", "b", 2),
])
def test_a_key_written_twice_is_refused(text, key, line):
    with pytest.raises(ConfigError) as e:
        load_yaml_text(text, "f.yaml")
    assert e.value.field == f"(duplicate key (line {line}))" and e.value.value == key


def test_a_merge_may_be_overridden_without_counting_as_a_duplicate():
    got = load_yaml_text("base: &b {x: 1, y: 2}\nd: {<<: *b, x: 3}\ne: *b\n", "f.yaml")
    assert got["d"] == {"x": 3, "y": 2} and got["e"] == {"x": 1, "y": 2}


def test_an_empty_or_comment_only_scenario_file_is_refused(tmp_path):
    from kairos_gym.scenario import load_scenario

    for i, text in enumerate(["", "# only a comment\n", "---\n"]):
        p = tmp_path / f"s{i}.yaml"
        p.write_text(text)
        with pytest.raises(ConfigError, match="a mapping of scenario sections"):
            load_scenario(p)
    (tmp_path / "defaults.yaml").write_text("{}\n")
    assert load_scenario(tmp_path / "defaults.yaml").cluster is not None


def _load_with(loader_cls, text):
    loader = loader_cls(text)
    try:
        return loader.get_single_data()
    finally:
        loader.dispose()


@pytest.mark.skipif(not __import__("yaml").__with_libyaml__, reason="PyYAML without libyaml")
def test_the_libyaml_loader_reads_every_shipped_file_as_the_python_one_does():
    from pathlib import Path

    from kairos_gym import yaml_io

    root = Path(yaml_io.__file__).resolve().parents[1]
    files = [*root.glob("configs/**/*.yaml"), *root.glob("kairos_gym/data/*.yaml"), *root.glob("agents/**/*.yaml")]
    assert len(files) > 20
    for f in files:
        text = f.read_text(encoding="utf-8")
        assert _load_with(yaml_io._CLoader, text) == _load_with(yaml_io._Loader, text), f
    tricky = "a: 17.5e9\nb: yes\nc: .inf\nd: 0x1F\ne: ~\nf: [1, 2.5, 'x']\ng: {<<: {h: 1}, i: 2}\nj: True\n"
    assert _load_with(yaml_io._CLoader, tricky) == _load_with(yaml_io._Loader, tricky)


def test_a_large_faults_list_is_read_quickly_enough_to_be_refused_early(tmp_path):
    """10,002 timed fault events (about 600 KB of YAML) are refused naming the field; reading them takes a
    fraction of the pure-Python reader's time (no timing asserted here: docs/reliability.md)."""
    from kairos_gym.scenario import load_scenario

    lines = ["faults:", "  events:"] + [f"    - {{at_s: {i}.0, kind: prefill_down, node: 0, duration_s: 1.0}}"
                                        for i in range(10_002)]
    (tmp_path / "f.yaml").write_text("\n".join(lines) + "\n")
    with pytest.raises(ConfigError, match="at most 10000 events"):
        load_scenario(tmp_path / "f.yaml")
