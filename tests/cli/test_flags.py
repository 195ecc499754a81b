"""Strict flag values, the seed-list parser, output-path checks and the Student-t interval (no simulation)."""

from __future__ import annotations

import itertools
import math
import os

import pytest

from kairos_gym.errors import ConfigError
from kairos_gym.evaluation.stats import format_ci, mean_ci, t_quantile_975
from kairos_gym.flags import (
    MAX_LIST,
    MAX_SEEDS,
    SEED_LIMIT,
    check_outputs,
    check_seed_list,
    format_seeds,
    parse_float,
    parse_float_list,
    parse_int,
    parse_int_list,
    parse_names,
    parse_seeds,
)

# ---------------------------------------------------------------------------- seeds


def test_parse_seeds_forms_keep_the_order_given():
    assert parse_seeds("0-4") == [0, 1, 2, 3, 4]
    assert parse_seeds("0,3,7") == [0, 3, 7]
    assert parse_seeds("7, 0-2") == [7, 0, 1, 2]
    assert parse_seeds("5-5") == [5]
    assert parse_seeds(f"{SEED_LIMIT - 1}") == [SEED_LIMIT - 1]
    assert parse_seeds(f"0-{MAX_SEEDS - 1}") == list(range(MAX_SEEDS))


@pytest.mark.parametrize("text,why", [
    ("", "neither"), (" ", "neither"), ("0,,1", "empty element"), ("0,", "empty element"),
    ("a-b", "neither"), ("-3", "neither"), ("1.5", "neither"), ("+1", "neither"), ("1_000", "neither"),
    ("0-1-2", "neither"),
    ("0,0,0", "listed twice"), ("0-3,2", "listed twice"), ("5,0-9", "listed twice"),
    ("3-1", "is empty"), ("0,3-1", "is empty"),
    (str(SEED_LIMIT), "below"), (f"0-{SEED_LIMIT}", "below"),
    ("0-1000000000000", "below"),  # was a MemoryError
    ("0-100000000", f"at most {MAX_SEEDS}"),  # was a run that never ends
    (f"0-{MAX_SEEDS}", f"at most {MAX_SEEDS}"),
    (",".join(str(i) for i in range(MAX_SEEDS + 1)), f"at most {MAX_SEEDS}"),
    ("0-499,1000-1500", f"at most {MAX_SEEDS}"),
])
def test_parse_seeds_refuses_every_bad_form(text, why):
    with pytest.raises(ConfigError) as e:
        parse_seeds(text, "--seeds", "results")
    msg = str(e.value)
    assert msg.startswith("results: --seeds = ") and why in msg and len(msg) < 600


def test_huge_range_is_refused_before_it_is_expanded(monkeypatch):
    # the bound is checked on the range's ends: nothing as long as the range is built
    import builtins

    real_range = builtins.range
    sizes = []

    def spy(*a):
        r = real_range(*a)
        sizes.append(len(r))
        return r

    monkeypatch.setattr(builtins, "range", spy)
    with pytest.raises(ConfigError):
        parse_seeds("0-4000000000")
    assert not sizes or max(sizes) <= MAX_SEEDS


def test_format_seeds_prints_them_as_given():
    assert format_seeds([0, 7]) == "0,7"
    assert format_seeds([0, 1, 2, 3, 4]) == "0-4"
    assert format_seeds([0, 1]) == "0,1"
    assert format_seeds([5, 0, 1, 2, 9]) == "5,0-2,9"
    for text in ("0,7", "0-4", "5,0-2,9", "3"):
        assert format_seeds(parse_seeds(text)) == text


def test_seed_lists_from_a_config():
    assert check_seed_list([100, 101]) == [100, 101]
    for bad in ([0, 0], [], [-1], [1.0], [True], [SEED_LIMIT], list(range(MAX_SEEDS + 1)), "0"):
        with pytest.raises(ConfigError, match=r"eval\.seeds"):
            check_seed_list(bad, "eval.seeds", "cfg")


def test_train_config_refuses_duplicate_eval_seeds():
    from kairos_gym.train.config import parse_config

    for seeds in ([100, 100], "100,100", "102-100"):
        with pytest.raises(ConfigError, match=r"eval\.seeds"):
            parse_config({"kairos_gym/KairosSmall-v0": {"eval": {"seeds": seeds}}})


# ---------------------------------------------------------------------------- numbers and names


def test_integers_are_not_truncated():
    assert parse_int_list("sweep", "--chunks", "512,2048", 0, 65536) == (512, 2048)
    for bad in ("512.7", "5e2", "512,512", "-1", "70000", "512,,2048", "", ",".join(map(str, range(MAX_LIST + 1)))):
        with pytest.raises(ConfigError, match="--chunks"):
            parse_int_list("sweep", "--chunks", bad, 0, 65536)
    assert parse_int_list("sweep", "--chunks", "", 0, 65536, empty_ok=True) == ()
    assert parse_int("perf", "--env-repeats", "3", 1, 100) == 3
    for bad in ("1.5", "0", "101", "", "3x", True):
        with pytest.raises(ConfigError, match="--env-repeats"):
            parse_int("perf", "--env-repeats", bad, 1, 100)


def test_durations_are_finite_and_bounded():
    assert parse_float("perf", "--env-seconds", "2.5", 0.0, 600.0) == 2.5
    for bad in ("inf", "nan", "-1", "0", "601", "1e9", "x"):
        with pytest.raises(ConfigError, match="--env-seconds"):
            parse_float("perf", "--env-seconds", bad, 0.0, 600.0)
    assert parse_float_list("sweep", "--loads", "0.5,1", 0.0, 100.0) == (0.5, 1.0)
    assert parse_float_list("sweep", "--loads", "", 0.0, 100.0) == ()
    for bad in ("0", "nan", "inf", "0.5,0.50", "1e3", "0.5,,1", "a"):
        with pytest.raises(ConfigError, match="--loads"):
            parse_float_list("sweep", "--loads", bad, 0.0, 100.0)


def test_names_are_checked_and_distinct():
    assert parse_names("evaluate", "--policies", "sq, kairos", ["sq", "kairos"]) == ["sq", "kairos"]
    for bad in ("sq,sq", "sq,,kairos", "nope", ""):
        with pytest.raises(ConfigError, match="--policies"):
            parse_names("evaluate", "--policies", bad, ["sq", "kairos"])


# ---------------------------------------------------------------------------- output paths


def test_output_paths(tmp_path):
    (tmp_path / "file.txt").write_text("x")
    (tmp_path / "dir").mkdir()
    ok_file, ok_dir = tmp_path / "new" / "deeper" / "o.json", tmp_path / "new" / "plots"
    check_outputs("evaluate", {"--json": str(ok_file), "--csv": None}, {"--plots": (str(ok_dir), ("a.png",))})
    check_outputs("evaluate", {"--json": "-"}, stdout_ok=["--json"])
    bad = [
        ({"--json": str(tmp_path / "dir")}, {}, "not an existing folder"),
        ({"--json": str(tmp_path / "x") + "/"}, {}, "trailing /"),
        ({"--json": str(tmp_path / "file.txt" / "o.json")}, {}, "is a file"),
        ({"--json": ""}, {}, "path of a file"),
        ({}, {"--plots": (str(tmp_path / "file.txt"), ())}, "not an existing file"),
        ({}, {"--plots": (str(tmp_path / "file.txt" / "sub"), ())}, "is a file"),
        ({}, {"--plots": (str(tmp_path), ("dir",))}, "is a folder"),
        ({"--json": str(tmp_path / "a.json"), "--markdown": str(tmp_path / "a.json")}, {}, "--json writes it too"),
        ({"--json": str(tmp_path / "p" / "a.png")}, {"--plots": (str(tmp_path / "p"), ("a.png",))},
         "--json writes it too"),
        ({"--json": str(tmp_path / ("n" * 5000))}, {}, "path of a file"),
    ]
    for files, folders, why in bad:
        with pytest.raises(ConfigError, match="is not valid") as e:
            check_outputs("evaluate", files, folders)
        assert why in str(e.value), (files, folders, str(e.value))


@pytest.mark.skipif(os.geteuid() == 0, reason="root may write anywhere")
def test_output_path_permission(tmp_path):
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o500)
    try:
        with pytest.raises(ConfigError, match="permission denied"):
            check_outputs("evaluate", {"--json": str(ro / "x" / "o.json")})
    finally:
        ro.chmod(0o700)


# ---------------------------------------------------------------------------- intervals

# two-sided 95% Student-t quantiles t_{0.975, df} (standard tables, 3 decimals)
T_TABLE = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306, 9: 2.262, 10: 2.228,
           11: 2.201, 12: 2.179, 13: 2.160, 14: 2.145, 15: 2.131, 16: 2.120, 17: 2.110, 18: 2.101, 19: 2.093,
           20: 2.086, 21: 2.080, 22: 2.074, 23: 2.069, 24: 2.064, 25: 2.060, 26: 2.056, 27: 2.052, 28: 2.048,
           29: 2.045, 30: 2.042, 40: 2.021, 60: 2.000, 120: 1.980}


def test_t_quantile_matches_the_tables():
    for df, q in T_TABLE.items():
        assert round(t_quantile_975(df), 3) == q, df
    assert t_quantile_975(1) == pytest.approx(12.706204736, abs=1e-8)
    assert t_quantile_975(10**6) == pytest.approx(1.959964, abs=1e-6)
    assert t_quantile_975(50_000) == pytest.approx(1.959964, abs=1e-4)
    qs = [t_quantile_975(d) for d in range(1, 200)]
    assert all(a > b for a, b in itertools.pairwise(qs))  # decreasing towards the normal limit
    for bad in (0, -1, 1.5, True):
        with pytest.raises(ValueError):
            t_quantile_975(bad)


def test_interval_and_its_text():
    v = [3.0, 5.0, 4.0, 8.0]
    m, h = mean_ci(v)
    sd = math.sqrt(sum((x - 5.0) ** 2 for x in v) / 3)
    assert m == 5.0 and h == pytest.approx(3.182446305 * sd / 2.0, rel=1e-9)
    assert format_ci(m, h) == f"5 ± {h:.2g}"
    assert format_ci(*mean_ci([2.5])) == "2.5 ± n/a"  # one seed: no interval, not "± 0"
    assert format_ci(*mean_ci([])) == "n/a"
