"""The docs' generated figures (tools/doc_figures.py): every marked block of README.md and docs/ is a registered
figure, and each fast one is what its command gives now (rerun here; the results are the same on every machine)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.tool_loader import load_tool

ROOT = Path(__file__).resolve().parents[1]
figures = load_tool("doc_figures")


def test_every_marked_block_is_a_registered_figure_and_each_figure_is_marked_once():
    marked = {}
    for doc in [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]:
        for name in figures.marked_names(doc.read_text(encoding="utf-8")):
            assert name not in marked, f"figure {name} is marked in {marked.get(name)} and {doc}"
            marked[name] = str(doc.relative_to(ROOT))
    assert marked == {name: fig.doc for name, fig in figures.FIGURES.items()}


@pytest.mark.parametrize("name", [n for n, f in figures.FIGURES.items() if f.fast and not f.timing])
def test_the_docs_fast_figures_are_what_their_commands_give_now(name: str):
    diffs = figures.check([figures.FIGURES[name]])
    assert not diffs, (f"{figures.FIGURES[name].doc}: figure {name} is stale; rewrite it with "
                       f"python tools/doc_figures.py --write {name} and reread the text around it\n" + diffs[0])


def test_a_block_is_replaced_between_its_markers_only():
    fig = figures.FIGURES["sq-sl-sweep"]
    text = "before\n<!-- figure sq-sl-sweep: old command -->\n| old |\n<!-- end figure sq-sl-sweep -->\nafter\n"
    new = figures.with_block(text, fig, "| new |\n")
    assert new == ("before\n<!-- figure sq-sl-sweep: kairos-gym measure --sweep --json OUT.json -->\n| new |\n"
                   "<!-- end figure sq-sl-sweep -->\nafter\n")
    assert figures.block_of(new, "sq-sl-sweep") == "| new |\n"
    with pytest.raises(ValueError, match="no '<!-- figure sq-sl-sweep"):
        figures.with_block("no markers\n", fig, "| new |\n")


def test_the_sweep_rows_render_one_line_per_rule():
    def row(label: str, ttft: float, viol: float, att: float) -> dict:
        return {"label": label, "ttft_p95": ttft, "tbt_violation_rate": viol, "slo_attainment": att}

    rows = json.dumps([row("sq", 1, 0, 1), row("sq(q>0 tok, chunk 512)", 2.1234, 0.0, 0.5),
                       row("sq(q>0 tok, chunk 2048)", 2.0, 0.01684, 0.25), row("sl(L<512, chunk 512)", 4.0, 0, 0.3),
                       row("sl(L<512, chunk 2048)", 4.0, 0, 0.3)])
    assert figures.FIGURES["sq-sl-sweep"].render(rows).splitlines() == [
        "| rule | chunk 512: P95 TTFT / TBT viol. / SLO att. | chunk 2048: P95 TTFT / TBT viol. / SLO att. |",
        "|---|---|---|",
        "| sq q > 0 | 2.123 / 0 / 0.500 | 2.000 / 0.0168 / 0.250 |",
        "| sl L < 512 | 4.000 / 0 / 0.300 | 4.000 / 0 / 0.300 |",
    ]


def test_a_statistic_a_trace_does_not_have_renders_as_a_dash():
    row = {"name": "lengths", "requests": 3, "span_s": None, "rate": None, "iat_cv": None, "minutes": None,
           "empty_minutes": None, "prompt_tokens_per_s": None, "prompt_p50": 2.0, "prompt_p99": 3.0,
           "prompt_mean": 2.0, "prompt_max": 3, "output_p50": 1.0, "output_p99": 1.0, "output_mean": 1.0,
           "output_max": 1}
    line = figures.FIGURES["packaged-traces"].render(json.dumps({"traces": [row], "profiles": {}})).splitlines()[-1]
    assert line == "| `lengths` | 3 | – | – | – | – | 2 / 3 (2, 3) | 1 / 1 (1, 1) | – |"


def test_an_overload_limit_a_scenario_does_not_set_renders_as_such():
    run = {"n_requests": 10, "n_completed": 10, "ttft_p50": 640.4, "ttft_p99": 1246.3, "slo_attainment": 0.0}
    text = json.dumps([{"scenario": "x", "runs": [run]}])
    assert figures.FIGURES["overload-10x"].render(text).splitlines()[-1] == (
        "| `x` | 10 | 10 (100.0%) | – (no such limit) | – (no such limit) | 640 | 1,246 | 0.000 |")


def test_timing_figures_are_written_but_never_checked(monkeypatch: pytest.MonkeyPatch):
    timed = figures.Figure("t", "docs/x.md", ("perf",), lambda text: text, timing=True)
    monkeypatch.setattr(figures, "run", lambda fig: pytest.fail("a timing figure was run by check"))
    assert figures.check([timed]) == []
    assert "timing: written by --write, never checked" in figures._kind(timed)
    assert figures._kind(figures.Figure("s", "docs/x.md", ("x",), str, fast=False)) == " (slow: not in make test)"


def test_the_acceptance_verdict_counts_only_the_checks_of_results():
    rows = [{"label": label, "ttft_p95": 1.0, "tbt_violation_rate": 0.0, "slo_attainment": 0.5,
             "deflection_rate": 0.0} for label in figures._ACCEPTANCE_ROWS]
    checks = [{"check": "bursty: kairos decision cost P99 < 1 ms", "pass": False},
              {"check": "bursty: kairos SLO attainment > no-deflect", "pass": True}]
    text = figures.FIGURES["measure-acceptance"].render(json.dumps({"seed": 0, "rows": rows, "checks": checks}))
    assert text.splitlines()[-1] == "1 of 1 checks of results PASS."
    checks[1]["pass"] = False
    text = figures.FIGURES["measure-acceptance"].render(json.dumps({"seed": 0, "rows": rows, "checks": checks}))
    assert text.splitlines()[-1] == "0 of 1 checks of results PASS; FAIL: bursty: kairos SLO attainment > no-deflect."


def test_the_soak_rows_mark_the_end_of_the_run():
    rows = [{"sim_time_s": 3600.0, "arrived": 10, "completed": 9, "rejected": 0, "timed_out": 1, "peak_rss_mb": 70.0,
             "wall_s": 0.3},
            {"sim_time_s": 86400.0, "arrived": 20, "completed": 19, "rejected": 0, "timed_out": 1,
             "peak_rss_mb": 70.5, "wall_s": 5.9}]
    text = figures.FIGURES["soak-24h"].render(json.dumps({"n_requests": 20, "checkpoints": rows}))
    assert text.splitlines()[2:] == ["| 1 h | 10 | 9 | 0 | 1 | 70.0 MB | 0.3 s |",
                                     "| 24 h (end) | 20 | 19 | 0 | 1 | 70.5 MB | 5.9 s |", "",
                                     "Peak RSS +0.7% between the first and the last checkpoint."]
    assert figures.FIGURES["soak-24h"].timing and not figures.FIGURES["fault-runs-shipped"].timing


def test_a_command_runs_once_for_the_figures_that_share_it(monkeypatch: pytest.MonkeyPatch):
    calls = []

    class Done:
        returncode = 1

    def fake_run(args, **kw):
        calls.append(args)
        Path(args[args.index("--json") + 1]).write_text("[]", encoding="utf-8")
        return Done()

    monkeypatch.setattr(figures.subprocess, "run", fake_run)
    monkeypatch.setattr(figures, "_OUTPUTS", {})
    cmd = ("fake", "--json", "{out}")
    assert figures.output(cmd, (0, 1)) == "[]" and figures.output(cmd, (0, 1)) == "[]"
    assert len(calls) == 1
    with pytest.raises(figures.subprocess.CalledProcessError):
        figures.output(("other", "--json", "{out}"))


def test_a_command_without_an_output_file_gives_its_standard_output(monkeypatch: pytest.MonkeyPatch):
    seen = {}

    class Done:
        returncode, stdout = 0, "| a |\n"

    def fake_run(args, **kwargs):
        seen.update(kwargs)
        return Done()

    monkeypatch.setattr(figures.subprocess, "run", fake_run)
    monkeypatch.setattr(figures, "_OUTPUTS", {})
    assert figures.output(("check", "fault-switch")) == "| a |\n"
    assert seen["stdout"] is figures.subprocess.PIPE
    assert figures.FIGURES["fault-switch-500"].render("\n\nline\n\n") == "line\n"


def test_a_markdown_output_is_shown_as_such_in_the_marker():
    fig = figures.FIGURES["ppo-generalisation-mooncake"]
    assert fig.shown_command().endswith("--markdown OUT.md")
    assert "{out}" not in figures.FIGURES["swap-order"].shown_command()


def test_compare_rows_render_one_line_per_scenario_and_policy_with_a_seed_range():
    runs = [{"policy": "p", "seed": s, "slo_attainment": v} for s, v in enumerate((0.5, 0.6, 0.7))]
    text = json.dumps([{"scenario": "kv-pressure", "runs": runs}])
    line = figures._compare_table((("SLO attainment", "slo_attainment", ".3f"),))(text).splitlines()[-1]
    assert line.startswith("| `kv-pressure` | p | 0-2 | 0.600 ± ")
    assert figures._seeds([0, 3]) == "0,3" and figures._seeds([4, 5, 6, 7]) == "4-7"


def test_the_soak_accounting_shows_where_every_arrival_went():
    text = json.dumps({"n_requests": 100, "n_completed": 70, "n_rejected": 20, "n_timed_out": 10, "conserved": True,
                       "ttft_p99": 1.234, "sim_time_s": 10.0})
    assert figures.FIGURES["soak-24h-accounting"].render(text).splitlines()[-1] == (
        "| 100 | 70 (70.0%) | 20 (20.0%) | 10 (10.0%) | 100 (conserved) | 1.23 | 7.0 |")


def test_the_oracle_suite_counts_and_walls_are_separate_blocks():
    row = {"task": "t", "instances": 1, "exhaustive_rollout_decisions": 5817690.0, "bounded_rollout_decisions": 499.0,
           "cost_ratio": 11658.7, "exhaustive_wall_s": 14.58, "bounded_wall_s": 0.18, "wall_ratio": 78.5,
           "reference_wall_s": 30.2, "reference_wall_ratio": 167.8}
    text = json.dumps({"tasks": [row], "total": row})
    decisions = figures.FIGURES["oracle-suite-decisions"].render(text)
    assert "| t | 5.82 M -> 499 | 11,659x |" in decisions and "wall" not in decisions
    assert "| t | 30.2 -> 14.6 -> 0.2 | 168x | 78.5x |" in figures.FIGURES["oracle-suite-wall"].render(text)
    assert figures.FIGURES["oracle-suite-wall"].timing and not figures.FIGURES["oracle-suite-decisions"].timing
