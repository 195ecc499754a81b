"""Progress when stderr is not a terminal (kairos_gym/progress.py, lines mode): a line per 5% of the runs or per 30 s
with a finished run, each with the runs done, the time elapsed and the time left; a bar on a terminal; nothing
with --no-progress. The clock is the test's own: no test here depends on wall time."""

from __future__ import annotations

import io
import re

from kairos_gym.progress import LINE_EVERY_S, RunProgress, command_progress, duration_text


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


class _Clock:
    """A clock the test moves by hand (seconds)."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def _count(bar: RunProgress, n: int, clock: _Clock, step_s: float) -> None:
    for i in range(n):
        clock.now += step_s
        with bar.run(f"run {i}"):
            pass


def test_lines_every_5_percent_with_the_time_left():
    stream, clock = io.StringIO(), _Clock()
    bar = RunProgress("leaderboard", stream=stream, lines=True, clock=clock)
    bar.start(200)
    _count(bar, 200, clock, 0.1)  # 20 s in all: the 30 s rule never fires
    lines = stream.getvalue().splitlines()
    assert lines[0] == "leaderboard: 200 runs to do (a line every 5% of them or 30 s)"
    done = [int(m.group(1)) for ln in lines[1:] if (m := re.match(r"leaderboard: (\d+)/200 runs", ln))]
    assert done == list(range(10, 201, 10))  # one line per 10 runs (5% of 200), the last at 200
    assert lines[1] == "leaderboard: 10/200 runs (5%), 1 s elapsed, about 19 s left"
    assert lines[10] == "leaderboard: 100/200 runs (50%), 10 s elapsed, about 10 s left"
    assert lines[-1] == "leaderboard: 200/200 runs (100%), 20 s elapsed, done"


def test_a_line_after_30_s_when_a_run_finished_between_the_5_percent_marks():
    stream, clock = io.StringIO(), _Clock()
    bar = RunProgress("leaderboard", stream=stream, lines=True, clock=clock)
    bar.start(1000)  # 5% = 50 runs
    _count(bar, 3, clock, LINE_EVERY_S / 2)  # the third run ends 45 s in: one line at the second (30 s)
    lines = stream.getvalue().splitlines()[1:]
    assert lines == ["leaderboard: 2/1000 runs (0%), 30 s elapsed, about 4 h 09 min left"]
    clock.now += 10 * 60  # a slow run: nothing is written while it runs, one line when it ends
    assert len(stream.getvalue().splitlines()) == 2
    with bar.run("slow"):
        pass
    assert stream.getvalue().splitlines()[-1].startswith("leaderboard: 4/1000 runs (0%), 10 min 45 s elapsed")


def test_a_second_start_adds_runs_and_the_lines_follow_the_new_total():
    stream, clock = io.StringIO(), _Clock()
    bar = RunProgress("x", stream=stream, lines=True, clock=clock)
    bar.start(20)
    _count(bar, 20, clock, 0.5)
    bar.start(20)
    _count(bar, 2, clock, 0.5)  # 5% of 40: a line per 2 runs
    last = stream.getvalue().splitlines()[-1]
    assert last == "x: 22/40 runs (55%), 11 s elapsed, about 9 s left"
    assert stream.getvalue().count("runs to do") == 1


def test_command_progress_draws_a_bar_on_a_terminal_lines_elsewhere_and_nothing_with_no_progress():
    tty = _Tty()
    bar = command_progress("leaderboard", False, tty)
    assert bar.enabled and not bar.lines
    bar.start(3)
    with bar.run("a"):
        pass
    bar.close()
    assert "1/3" in tty.getvalue() and "runs to do" not in tty.getvalue()  # tqdm's bar, not a line
    log = io.StringIO()
    lines = command_progress("leaderboard", False, log)
    assert lines.enabled and lines.lines
    lines.start(3)
    assert log.getvalue().startswith("leaderboard: 3 runs to do")
    for no_progress_stream in (io.StringIO(), _Tty()):
        quiet = command_progress("leaderboard", True, no_progress_stream)
        quiet.start(3)
        for _ in range(3):
            with quiet.run("a"):
                pass
        quiet.close()
        assert quiet.done == 3 and no_progress_stream.getvalue() == ""


def test_durations_read_as_seconds_minutes_and_hours():
    assert [duration_text(s) for s in (0, 44.6, 60, 185, 3599.4, 3720, 90061)] == \
        ["0 s", "45 s", "1 min 00 s", "3 min 05 s", "59 min 59 s", "1 h 02 min", "25 h 01 min"]


def test_leaderboard_writes_progress_lines_to_a_stderr_that_is_not_a_terminal(tmp_path, monkeypatch, capsys):
    import kairos_gym.benchmark.suite as suite_mod
    from kairos_gym.benchmark.leaderboard import run_count
    from kairos_gym.cli.main import main
    from tests.fixtures import TINY_SUITE

    monkeypatch.setattr(suite_mod, "SUITE", TINY_SUITE)
    policies = ["no-deflect", "kairos", "oracle", "best-static"]
    argv = ["leaderboard", "--policies", ",".join(policies), "--out", str(tmp_path / "LB.md"), "--oracle-cache",
            str(tmp_path / "none.json")]
    assert main(argv) == 0  # both tracks
    err = capsys.readouterr().err.splitlines()
    total = 2 * run_count(policies, (), TINY_SUITE)
    assert err[0].startswith(f"leaderboard: {total} runs to do")  # every track's runs announced at once
    done = [int(m.group(1)) for ln in err[1:] if (m := re.match(rf"leaderboard: (\d+)/{total} runs \(", ln))]
    assert len(done) == len(err) - 1 >= 20 and done == sorted(done)
    assert err[-1].startswith(f"leaderboard: {total}/{total} runs (100%)") and err[-1].endswith(", done")
    assert main([*argv, "--no-progress"]) == 0
    assert capsys.readouterr().err == ""


def test_a_pool_counts_its_finished_runs_between_the_drivers_own_runs_not_only_at_the_end():
    """The driver's own runs (the Oracle's cached figures) go between the pool's: what the pool finished meanwhile
    is counted after each of them. A thread pool stands in for the process pool, so the test can wait for it."""
    from concurrent.futures import ThreadPoolExecutor, wait

    from kairos_gym.evaluation.backends import ProcessBackend, Task

    submitted = []

    class Recording(ThreadPoolExecutor):
        def submit(self, *args, **kwargs):
            fut = super().submit(*args, **kwargs)
            submitted.append(fut)
            return fut

    class ThreadBackend(ProcessBackend):
        def _executor(self):
            if self._pool is None:
                self._pool = Recording(max_workers=2)
            return self._pool

    bar = RunProgress("t", enabled=False)
    bar.start(8)

    def wait_for_the_pool(arg, tick):
        wait(submitted, timeout=60)  # a bound on a stuck pool, not a measurement
        return bar.done

    def seen(arg, tick):
        return bar.done

    tasks = [Task(lambda a, t: a * a, i, f"pool {i}") for i in range(6)]
    tasks += [Task(wait_for_the_pool, None, "driver 1", local=True), Task(seen, None, "driver 2", local=True)]
    with ThreadBackend(2) as backend:
        out = backend.map(tasks, bar)
    assert out[:6] == [0, 1, 4, 9, 16, 25]
    assert out[6] == 0  # nothing counted yet while the driver waited
    assert out[7] == 7  # the pool's 6 runs and the driver's first, counted before its second
    assert bar.done == 8
