"""What a researcher reads: tables within 120 columns with units, intervals, progress bars, plots, help."""

from __future__ import annotations

import argparse
import io
import json
import math

import pytest

from kairos_gym.cli.main import build_parser, main
from kairos_gym.evaluation.evaluate import TABLE_KEYS, evaluate, format_table
from kairos_gym.evaluation.sweep import write_sweep_plots
from kairos_gym.progress import RunProgress, progress_enabled
from kairos_gym.table import TABLE_WIDTH, render_table
from tests.fixtures import TINY_BENCH

DEFAULT_POLICIES = ["no-deflect", "always-deflect", "sq", "sl", "kairos", "ppo"]  # evaluate's default


def _width(text: str) -> int:
    return max(len(line) for line in text.splitlines())


# ---------------------------------------------------------------------------- tables


def test_evaluate_table_fits_120_columns_with_every_default_metric():
    res = evaluate(TINY_BENCH, [*DEFAULT_POLICIES, "random"], [0, 1, 2])
    text = format_table(res)
    assert _width(text) <= TABLE_WIDTH, text
    assert "left out" not in text  # every column of TABLE_KEYS is there
    flat = " ".join(text.split())
    for _, label in TABLE_KEYS:
        assert " ".join(label.split("\n")[0].split()) in flat
    assert "TTFT P95" in text and "(s)" in text and "(req/s)" in text and "p50 (us)" in text
    assert "seeds 0-2 (n=3): mean ± 95% t-interval over n seeds (half-width)" in text


def _fake_result(values: dict[str, list[float]], seeds: list[int], policies: list[str]) -> dict:
    runs = [{"policy": p, **{k: v[i] for k, v in values.items()}} for p in policies for i in range(len(seeds))]
    return {"scenario": "x", "seeds": seeds, "policies": policies, "runs": runs}


def test_table_interval_is_student_t_and_one_seed_prints_no_zero():
    keys = [k for k, _ in TABLE_KEYS]
    res = _fake_result({k: [1.0, 2.0, 3.0] for k in keys}, [0, 7, 9], ["kairos"])
    text = format_table(res)
    # mean 2, s = 1, n = 3: t half-width 4.3027 / sqrt(3) = 2.48 (a 1.96 z interval would print 1.1)
    assert "± 2.5" in text and "± 1.1" not in text
    assert "seeds 0,7,9 (n=3)" in text  # the seeds as given, not "0..9"
    one = format_table(_fake_result({k: [0.25] for k in keys}, [7], ["kairos"]))
    assert "± 0" not in one and "seed 7 (n=1)" in one and "no interval (± n/a)" in one and "0.25" in one


def test_widest_cells_still_fit_or_say_what_is_left_out():
    keys = [k for k, _ in TABLE_KEYS]
    res = _fake_result({k: [1.234e-05, 9.876e-05, 5.5e-05] for k in keys}, [0, 1, 2],
                       ["always-deflect", "no-deflect", "kairos"])
    text = format_table(res)
    assert _width(text) <= TABLE_WIDTH
    wide = render_table(["name"] + [f"column {i} (s)" for i in range(12)],
                        [["row"] + [("123.456", "78.9")] * 12])
    assert _width(wide) <= TABLE_WIDTH and "left out to fit 120 columns: " in wide and "column 11 (s)" in wide
    narrow = render_table(["name", "a (s)"], [["r", ("1.5", "0.2")]])
    assert "1.5 ± 0.2" in narrow  # one line when it fits


def test_sweep_table_and_json(tmp_path, capsys):
    scen = tmp_path / "tiny.yaml"
    scen.write_text(json.dumps(TINY_BENCH))
    js = tmp_path / "s.json"
    assert main(["sweep", "--scenario", str(scen), "--loads", "1", "--policies", "no-deflect", "--seeds", "4",
                 "--sq-thresholds", "8192", "--sl-thresholds", "", "--chunks", "512", "--references", "kairos",
                 "--json", str(js)]) == 0
    out = capsys.readouterr().out
    assert _width(out) <= TABLE_WIDTH and "seed 4 (n=1)" in out and "± 0" not in out
    assert "P95 TTFT" in out and "(tokens)" in out
    res = json.loads(js.read_text())  # strict JSON: no NaN for the missing interval
    assert res["load"][0]["slo_attainment_ci95"] is None and res["load"][0]["n_seeds"] == 1
    json.dumps(res, allow_nan=False)


# ---------------------------------------------------------------------------- progress


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_only_on_a_terminal():
    assert progress_enabled(False, _Tty()) and not progress_enabled(True, _Tty())
    assert not progress_enabled(False, io.StringIO())


def test_evaluate_counts_every_run_on_the_bar_and_the_oracle_decisions():
    stream = _Tty()
    bar = RunProgress("evaluate", enabled=True, stream=stream)
    with bar:
        evaluate(TINY_BENCH, ["no-deflect", "sq"], [0, 1], progress=bar)
    assert bar.done == bar.total == 4
    assert "4/4" in stream.getvalue() and "evaluate" in stream.getvalue()
    inner = RunProgress("x", enabled=True, stream=_Tty())
    inner.start(2)
    with inner.run("oracle seed 0", "oracle", 10) as tick:
        assert callable(tick)
    with inner.run("kairos seed 0", "kairos", 10) as tick:
        assert tick is None  # one update per run for fast policies
    inner.close()
    silent = RunProgress("y", enabled=False)
    silent.start(1)
    with silent.run("a", "oracle") as tick:
        assert tick is None
    assert silent.done == 1


def test_commands_that_run_long_have_no_progress():
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    for cmd in ("evaluate", "demo", "sweep", "leaderboard", "results", "simulate"):
        flags = {o for a in sub.choices[cmd]._actions for o in a.option_strings}
        assert "--no-progress" in flags, cmd


# ---------------------------------------------------------------------------- help


def test_every_option_of_every_command_has_help():
    def commands(parser, prefix=""):
        """(name, parser) of every command, nested ones (check NAME) included."""
        sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
        for name, p in sub.choices.items():
            yield prefix + name, p
            if any(isinstance(a, argparse._SubParsersAction) for a in p._actions):
                yield from commands(p, f"{prefix}{name} ")

    seen = 0
    for cmd, p in commands(build_parser()):
        seen += 1
        assert p.description, cmd
        for a in p._actions:
            if isinstance(a, (argparse._HelpAction, argparse._SubParsersAction)):
                continue
            assert a.help and a.help.strip(), f"{cmd} {a.option_strings}"
    assert seen >= 29  # 25 commands, 4 checks


# ---------------------------------------------------------------------------- plots


@pytest.fixture
def figures(monkeypatch):
    """The figures a call saves (kept open for inspection)."""
    from matplotlib.figure import Figure

    import kairos_gym.evaluation.plots as plots_mod
    import kairos_gym.evaluation.sweep as sweep_mod
    from kairos_gym.output_file import save_figure

    saved: dict[str, Figure] = {}

    def spy(fig, path, **k):
        saved[str(path).rsplit("/", 1)[-1]] = fig
        return save_figure(fig, path, **k)

    for mod in (plots_mod, sweep_mod):
        monkeypatch.setattr(mod, "save_figure", spy)
    return saved


def _texts(fig) -> list[str]:
    out = [fig.get_suptitle()]
    for ax in fig.axes:
        out.append(ax.get_title())
    return out


def test_every_evaluate_figure_names_its_seed_and_utilization_shows_the_table_quantity(tmp_path, figures):
    res = evaluate(TINY_BENCH, ["no-deflect", "kairos"], [3, 4], tmp_path)
    assert sorted(figures) == sorted(p.rsplit("/", 1)[-1] for p in res["plots"])
    for name, fig in figures.items():
        assert any("seed 3" in t for t in _texts(fig)), name
    fig = figures["utilization.png"]
    assert "SM-util proxy" in fig.get_suptitle() and "busy fraction" in fig.get_suptitle()
    runs = {r["policy"]: r for r in res["runs"] if r["seed"] == 3}
    bar_axes = [ax for ax in fig.axes if ax.patches]
    assert len(bar_axes) == 2
    for ax, policy in zip(bar_axes, ["no-deflect", "kairos"], strict=True):
        labels = [t.get_text() for t in ax.get_legend().get_texts()]
        assert labels == ["SM-util proxy", "busy fraction"]
        names = [t.get_text() for t in ax.get_xticklabels()]
        n = len(names)
        proxy = [p.get_height() for p in ax.patches[:n]]
        busy = [p.get_height() for p in ax.patches[n:2 * n]]
        d = [i for i, nm in enumerate(names) if nm.startswith("D")]
        pp = [i for i, nm in enumerate(names) if nm.startswith("P")]
        s = runs[policy]
        # the bars are the table's P util / D util (their means) and the busy fraction beside them
        assert sum(proxy[i] for i in d) / len(d) == pytest.approx(s["decode_utilization"], rel=1e-9)
        assert sum(proxy[i] for i in pp) / len(pp) == pytest.approx(s["prefill_utilization"], rel=1e-9)
        assert sum(busy[i] for i in d) / len(d) == pytest.approx(s["decode_busy_fraction"], rel=1e-9)


def _overlaps(fig) -> list[tuple[str, str]]:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.text import Text

    canvas = FigureCanvasAgg(fig)  # the figure was closed after saving: draw it again to measure its texts
    canvas.draw()
    r = canvas.get_renderer()
    boxes = [(t.get_text(), t.get_window_extent(r)) for t in fig.findobj(Text)
             if t.get_visible() and t.get_text().strip()]
    bad = []
    for i, (a, ba) in enumerate(boxes):
        for b, bb in boxes[i + 1:]:
            if ba.overlaps(bb) and ba.width * ba.height > 0 and bb.width * bb.height > 0:
                bad.append((a, b))
    return bad


def test_pareto_labels_do_not_overlap_and_figures_name_the_seeds(tmp_path, figures):
    # many settings at almost the same point (the usual case: several settings never deflect)
    thr = [{"policy": p, "threshold": t, "chunk": c, "ttft_p95": 2.0 + 1e-4 * i, "tbt_violation_rate": 0.0,
            "slo_attainment": 0.5, "n_seeds": 3}
           for i, (p, t, c) in enumerate((p, t, c) for c in (512, 2048) for p in ("sq", "sl") for t in (1e3, 2e3, 4e3))]
    thr += [{"policy": "kairos", "ttft_p95": 2.0, "tbt_violation_rate": 0.0, "slo_attainment": 0.6, "n_seeds": 3}]
    load = [{"policy": "kairos", "load": f, "slo_attainment": 0.5, "slo_attainment_ci95": 0.1} for f in (0.5, 1.0)]
    write_sweep_plots(load, thr, tmp_path, "bursty", [0, 1, 2])
    pareto = figures["pareto_ttft_tbt.png"]
    assert _overlaps(pareto) == []
    labels = [t.get_text() for t in pareto.axes[0].get_legend().get_texts()]
    assert "sq threshold 1000, chunk 512" in labels and "kairos" in labels
    assert "means over seeds 0-2 (n=3)" in pareto.axes[0].get_title()
    assert "means over seeds 0-2 (n=3), bars: 95% t-interval" in figures["slo_vs_load.png"].axes[0].get_title()


def test_no_nan_in_interval_json():
    from kairos_gym.benchmark.leaderboard import run_suite
    from kairos_gym.benchmark.suite import Task, seeds

    # one instance: no t-interval (None in the JSON, not NaN)
    res = run_suite(["no-deflect", "kairos", "oracle"], suite=[Task("small", "small", seeds(0), seeds(1))],
                    reps=200)
    cell = res["per_task"]["kairos"]["small"]["raw"]
    assert cell["ci95"] is None and not math.isnan(cell["mean"])
    json.dumps(res, allow_nan=False)
