"""Outputs: every path is probed before a run (a special file, a pseudo file system or a read-only folder is one
error naming the flag), and a write after the run is all or nothing (kairos_gym/output_file.py)."""

from __future__ import annotations

import os
import sys

import pytest

from kairos_gym.errors import ConfigError
from kairos_gym.flags import check_outputs
from kairos_gym.output_file import WriteError, open_output, write_text

SPECIAL = [p for p in ("/proc/x.json", "/sys/kernel/x.json", "/dev/full", "/proc/version", "/dev/zero")
           if sys.platform.startswith("linux")]


@pytest.mark.parametrize("path", SPECIAL)
@pytest.mark.parametrize("flag", ["--json", "--requests-csv"])
def test_a_path_no_file_can_be_written_to_is_refused_before_the_run(path, flag):
    with pytest.raises(ConfigError) as e:
        check_outputs("simulate", {flag: path})
    assert e.value.field == flag and e.value.value == path


@pytest.mark.parametrize("path", [p for p in ("/proc/plots", "/sys/kernel/plots") if sys.platform.startswith("linux")])
def test_a_folder_output_on_a_pseudo_file_system_is_refused(path):
    with pytest.raises(ConfigError, match="takes new files"):
        check_outputs("evaluate", folders={"--plots": (path, ("a.png",))})


def test_dev_null_and_ordinary_paths_are_accepted(tmp_path):
    check_outputs("simulate", {"--json": os.devnull, "--requests-csv": str(tmp_path / "new" / "r.csv")})
    assert not list(tmp_path.rglob(".kairos-gym-probe.*"))  # the probe leaves nothing


def test_a_write_is_all_or_nothing(tmp_path):
    p = tmp_path / "out.json"
    p.write_text("old")
    with pytest.raises(RuntimeError), open_output(p, where="simulate", flag="--json") as f:
        f.write("half")
        raise RuntimeError("the run failed while writing")
    assert p.read_text() == "old" and sorted(x.name for x in tmp_path.iterdir()) == ["out.json"]
    write_text(p, "new", where="simulate", flag="--json")
    assert p.read_text() == "new" and oct(p.stat().st_mode & 0o777) == oct(0o666 & ~_umask())


def _umask() -> int:
    m = os.umask(0o022)
    os.umask(m)
    return m


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
def test_a_write_error_is_one_error_naming_the_path(tmp_path, monkeypatch):
    real_fsync = os.fsync

    def full(fd):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "fsync", full)
    with pytest.raises(WriteError) as e:
        write_text(tmp_path / "x.json", "{}", where="simulate", flag="--json")
    monkeypatch.setattr(os, "fsync", real_fsync)
    assert e.value.field == "--json" and "No space left on device" in str(e.value)
    assert not list(tmp_path.iterdir())
