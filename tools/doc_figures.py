"""The docs' generated figures: a block of README.md or of a page of docs/ between the markers

    <!-- figure NAME: <the command> -->
    ...
    <!-- end figure NAME -->

is what that command prints (or writes) now, rendered by this script, never typed by hand. The markers are HTML
comments: invisible on GitHub and on the docs site.

    python tools/doc_figures.py                 # list the figures, their docs and commands
    python tools/doc_figures.py sq-sl-sweep     # print one figure as the command gives it now
    python tools/doc_figures.py --check         # exit 1, with a diff, where a doc's block is not what its command gives
    python tools/doc_figures.py --write         # rewrite the docs' blocks from their commands

``tests/test_doc_figures.py`` checks the fast figures (:attr:`Figure.fast`) on every ``make test``: a change that
moves a figure fails until the doc is rewritten (``--write NAME``) and the text around it still reads true. The
results are the same on every machine (docs/architecture.md, "Same results on every machine"), so only a change of
the code moves them; figures of wall-clock time cannot be checked so and stay out of these blocks.
"""

from __future__ import annotations

import argparse
import difflib
import json
import re
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

ROOT = Path(__file__).resolve().parents[1]


class Figure(NamedTuple):
    """One generated block: its ``name`` (in the markers), the ``doc`` holding it (a repository path), the
    ``command`` (``kairos-gym`` arguments; ``{out}`` stands for a temporary output file), ``render`` (the output
    file's text -> the block's lines) and ``fast`` (a few seconds: checked by the tests). (A NamedTuple, not a
    dataclass: the tests load this script without registering it as a module, which dataclasses need.)"""

    name: str
    doc: str
    command: tuple[str, ...]
    render: Callable[[str], str]
    fast: bool = True

    def shown_command(self) -> str:
        """The command as the marker shows it."""
        return "kairos-gym " + " ".join(self.command).replace("{out}", "OUT.json")


_SWEEP_LABEL = re.compile(r"^(sq|sl)\((q>|L<)(\d+)(?: tok)?, chunk (\d+)\)$")


def _sq_sl_sweep(text: str) -> str:
    """``measure --sweep --json``'s rows as one Markdown row per rule, one column per chunk size: P95 TTFT (s), TBT
    violation rate, SLO attainment (``measure``'s own precisions; a violation rate of 0 as ``0``)."""
    cells: dict[str, dict[int, str]] = {}
    for row in json.loads(text):
        m = _SWEEP_LABEL.match(row["label"])
        if m is None:  # the policies' own rows: their decision times are wall clock, not reproducible
            continue
        rule = f"{m.group(1)} {m.group(2)[0]} {m.group(2)[1]} {m.group(3)}"
        viol = row["tbt_violation_rate"]
        cells.setdefault(rule, {})[int(m.group(4))] = (
            f"{row['ttft_p95']:.3f} / {'0' if viol == 0 else format(viol, '.4f')} / {row['slo_attainment']:.3f}")
    chunks = sorted({c for by_chunk in cells.values() for c in by_chunk})
    lines = ["| rule | " + " | ".join(f"chunk {c}: P95 TTFT / TBT viol. / SLO att." for c in chunks) + " |",
             "|---|" + "---|" * len(chunks)]
    lines += [f"| {rule} | " + " | ".join(by_chunk[c] for c in chunks) + " |" for rule, by_chunk in cells.items()]
    return "\n".join(lines) + "\n"


def _reward_order(text: str) -> str:
    """``reward-order --json``'s discordant pairs per reward, as the command prints them (in a code block)."""
    res = json.loads(text)
    order = ("misses", "ttft", "slo", "goodput")  # the command's order (the JSON's keys are sorted)
    rows = [f"  {r:<8} {v['discordant']:>4} of {v['pairs']} pairs discordant ({100 * v['share']:.1f}%)"
            for r, v in sorted(res["rewards"].items(), key=lambda kv: order.index(kv[0]))]
    return "```\n" + "\n".join(rows) + "\n```\n"


def _empty_arrivals(text: str) -> str:
    """``perf-oracle --empty --json``'s rows as a Markdown table: per task the arrivals finding the cluster empty."""
    lines = ["| task | arrivals | finding the cluster empty | mean busy period (arrivals) |", "|---|---|---|---|"]
    lines += [f"| {r['task']} | {r['arrivals']:,} | {r['empty']:,} ({100 * r['share']:.1f}%) | {r['busy_period']:.1f} |"
              for r in json.loads(text)]
    return "\n".join(lines) + "\n"


def _n(x: float | None, spec: str) -> str:
    """``x`` formatted, or ``–`` where a statistic is undefined (``None``)."""
    return "–" if x is None else format(x, spec)


def _lengths_cell(r: dict, side: str, short: bool = False) -> str:
    """``p50 / p99 (mean, max)`` of one token column of a ``traces --json`` row (``short``: ``p50 (mean)``)."""
    if short:
        return f"{r[f'{side}_p50']:,.0f} ({r[f'{side}_mean']:,.0f})"
    return (f"{r[f'{side}_p50']:,.0f} / {r[f'{side}_p99']:,.0f} ({r[f'{side}_mean']:,.0f}, "
            f"{r[f'{side}_max']:,})")


def _packaged_traces(text: str) -> str:
    """``traces --json``'s packaged traces as a Markdown table."""
    lines = ["| name | requests | span (s) | rate (req/s) | IAT CV | empty minutes | prompt p50 / p99 (mean, max) | "
             "output p50 / p99 (mean, max) | prompt tokens/s |", "|---|---:|---:|---:|---:|---:|---|---|---:|"]
    for r in json.loads(text)["traces"]:
        empty = "–" if r["minutes"] is None else f"{r['empty_minutes']} of {r['minutes']}"
        lines.append(f"| `{r['name']}` | {r['requests']:,} | {_n(r['span_s'], ',.0f')} | {_n(r['rate'], '.3f')} | "
                     f"{_n(r['iat_cv'], '.2f')} | {empty} | {_lengths_cell(r, 'prompt')} | "
                     f"{_lengths_cell(r, 'output')} | {_n(r['prompt_tokens_per_s'], ',.0f')} |")
    return "\n".join(lines) + "\n"


def _rate_profiles(text: str) -> str:
    """``traces --json``'s rate profiles as a Markdown table: per model, the spread of the window rates over the
    whole profile and over its first day."""
    def spread(s: dict | None) -> str:
        if s is None:
            return "– | – | – | –"
        return (f"{s['peak_over_mean']:.2f} | {s['min_over_mean']:.2f} | {_n(s['p90_over_p10'], '.2f')} | "
                f"{_n(s['max_over_min'], '.1f')}")

    lines = ["| profile | model | windows | days | peak / mean | min / mean | p90 / p10 | max / min | first day: "
             "peak / mean | min / mean | p90 / p10 | max / min |", "|---|---|---:|---:|" + "---:|" * 8]
    for name, rows in json.loads(text)["profiles"].items():
        lines += [f"| `{name}` | `{r['model']}` | {r['windows']:,} | {r['days']:g} | {spread(r)} | "
                  f"{spread(r['day1'])} |" for r in rows]
    return "\n".join(lines) + "\n"


def _scenario_workloads(text: str) -> str:
    """``traces --scenarios ... --json``'s workloads as a Markdown table, one row per scenario."""
    lines = ["| scenario | requests | span (s) | rate (req/s) | IAT CV | prompt p50 (mean) | output p50 (mean) | "
             "prompt tokens/s |", "|---|---:|---:|---:|---:|---:|---:|---:|"]
    lines += [f"| `{r['name']}` | {r['requests']:,} | {_n(r['span_s'], ',.0f')} | {_n(r['rate'], '.2f')} | "
              f"{_n(r['iat_cv'], '.2f')} | {_lengths_cell(r, 'prompt', True)} | {_lengths_cell(r, 'output', True)} | "
              f"{_n(r['prompt_tokens_per_s'], ',.0f')} |" for r in json.loads(text)["scenarios"]]
    return "\n".join(lines) + "\n"


def _step_compute_share(text: str) -> str:
    """``latency --json``'s decode-only and prefill-alone steps: time, throughput and compute share (two tables)."""
    table = json.loads(text)
    lines = ["| decode-only step: batch | context (tokens) | step (ms) | compute share |", "|---:|---:|---:|---:|"]
    lines += [f"| {r['batch']} | {r['context']:,} | {r['decode_ms']:.1f} | {100 * r['decode_compute_share']:.1f}% |"
              for r in table["rows"]]
    lines += ["", "| prefill step alone: tokens | prefix (tokens) | step (ms) | tokens/s | compute share |",
              "|---:|---:|---:|---:|---:|"]
    lines += [f"| {r['tokens']:,} | {r['prefix']:,} | {r['ms']:.1f} | {r['tokens_per_s']:,.0f} | "
              f"{100 * r['compute_share']:.1f}% |" for r in table["prefill"]]
    return "\n".join(lines) + "\n"


def _ci(values: list, spec: str = ".3f", half_spec: str = ".2g") -> str:
    """Mean ± the 95% Student-t half-width over the seeds (``kairos_gym.evaluation.stats``), as the tables print
    it; one seed: the value alone."""
    from kairos_gym.evaluation.stats import format_ci, mean_ci

    mean, half = mean_ci(values)
    return format(mean, spec) if len(values) == 1 else format_ci(mean, half, spec, half_spec)


def _by_policy(runs: list[dict]) -> dict[str, list[dict]]:
    """Runs grouped by policy, in their order."""
    out: dict[str, list[dict]] = {}
    for r in runs:
        out.setdefault(r["policy"], []).append(r)
    return out


def _policy_table(columns: tuple[tuple[str, str, str], ...]) -> Callable[[str], str]:
    """A render of ``evaluate --json``: one row per policy, one column per (header, summary key, format), each
    cell the mean ± 95% half-width over the seeds (the value alone for one seed)."""
    def render(text: str) -> str:
        lines = ["| policy | seeds | " + " | ".join(h for h, _, _ in columns) + " |",
                 "|---|---|" + "---:|" * len(columns)]
        for policy, runs in _by_policy(json.loads(text)["runs"]).items():
            seeds = ",".join(str(r["seed"]) for r in runs)
            cells = [_ci([r[key] for r in runs], spec) for _, key, spec in columns]
            lines.append(f"| {policy} | {seeds} | " + " | ".join(cells) + " |")
        return "\n".join(lines) + "\n"
    return render


def _per_seed_table(columns: tuple[tuple[str, Callable[[dict], str]], ...]) -> Callable[[str], str]:
    """A render of ``evaluate --json`` (one policy): one row per seed, one column per (header, cell of a run)."""
    def render(text: str) -> str:
        lines = ["| policy | seed | " + " | ".join(h for h, _ in columns) + " |", "|---|---:|" + "---:|" * len(columns)]
        lines += [f"| {r['policy']} | {r['seed']} | " + " | ".join(cell(r) for _, cell in columns) + " |"
                  for r in json.loads(text)["runs"]]
        return "\n".join(lines) + "\n"
    return render


def _nodes(key: str) -> Callable[[dict], str]:
    """A run's per-node values of ``key`` (a list) and their mean, e.g. ``0.805 / 0.802 (0.804)``."""
    def cell(r: dict) -> str:
        v = r[key]
        return " / ".join(f"{x:.3f}" for x in v) + f" (mean {sum(v) / len(v):.3f})"
    return cell


def _sig(x: float) -> str:
    """Three significant digits, or the whole number from 100 on (``639``, ``1,246``)."""
    return f"{x:,.0f}" if abs(x) >= 100 else f"{x:.3g}"


def _overload(text: str) -> str:
    """``compare --json``'s overload runs (one policy, one seed per scenario) as a Markdown table: where every
    arrival went, and the TTFT of the completed ones."""
    lines = ["| scenario | arrived | completed | rejected at admission | timed out | TTFT P50 (s) | TTFT P99 (s) | "
             "SLO attainment |", "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for res in json.loads(text):
        for r in res["runs"]:
            n = r["n_requests"]

            def share(k: str, r: dict = r, n: int = n) -> str:
                v = r.get(k)
                return "– (no such limit)" if v is None else f"{v:,} ({100 * v / n:.1f}%)"

            lines.append(f"| `{res['scenario']}` | {n:,} | {share('n_completed')} | {share('n_rejected_admission')} | "
                         f"{share('n_timed_out')} | {_sig(r['ttft_p50'])} | {_sig(r['ttft_p99'])} | "
                         f"{r['slo_attainment']:.3f} |")
    return "\n".join(lines) + "\n"


def _gaps_and_requests(text: str) -> str:
    """``compare --json``'s runs: per run the share of token gaps above the TBT SLO and of requests missing it."""
    lines = ["| scenario | policy | seed | token gaps | gaps above `slo.tbt_s` | requests with a gap above it |",
             "|---|---|---:|---:|---:|---:|"]
    lines += [f"| `{res['scenario']}` | `{r['policy']}` | {r['seed']} | {r['tbt_gaps']:,} | "
              f"{100 * r['tbt_violation_rate']:.1f}% | {100 * (1 - r['tbt_request_attainment']):.1f}% |"
              for res in json.loads(text) for r in res["runs"]]
    return "\n".join(lines) + "\n"


def _kv_capacity(text: str) -> str:
    """``latency --json``'s KV capacity per GPU at each activation reserve, as a Markdown table."""
    table = json.loads(text)
    p = table["preset"]
    lines = [f"| `cluster.kv_reserve_frac` | KV tokens per GPU ({p['model']}, {p['gpu']}, TP{p['tp']}) |",
             "|---:|---:|"]
    lines += [f"| {r['kv_reserve_frac']:g} | {r['tokens_per_gpu']:,} |" for r in table["kv_capacity"]]
    return "\n".join(lines) + "\n"


_SCENARIO_WORKLOADS = ("bursty,steady,decode-heavy,azure-code,azure-conv,mooncake,small,decode-bound,regime-shift,"
                       "servegen-day,servegen-sharegpt,arxiv-summ,mooncake-synthetic,mix-shift,kv-shift,fault-shift,"
                       "overload-10x,bursty-prefill-failure,bursty-link-degraded,kv-pressure")
"""The shipped scenarios of the figure scenario-workloads: all but the 24-hour soaks (millions of requests)."""


FIGURES = {f.name: f for f in (
    Figure("sq-sl-sweep", "docs/policies.md", ("measure", "--sweep", "--json", "{out}"), _sq_sl_sweep),
    Figure("oracle-empty-arrivals", "docs/policies.md", ("perf-oracle", "--empty", "--instances", "3", "--json",
                                                           "{out}"), _empty_arrivals),
    Figure("reward-order", "docs/env.md", ("reward-order", "--json", "{out}"), _reward_order),
    Figure("packaged-traces", "docs/workloads.md", ("traces", "--json", "{out}"), _packaged_traces),
    Figure("rate-profiles", "docs/workloads.md", ("traces", "--json", "{out}"), _rate_profiles),
    Figure("scenario-workloads", "docs/scenarios.md", ("traces", "--scenarios", _SCENARIO_WORKLOADS, "--json",
                                                       "{out}"), _scenario_workloads),
    Figure("decode-bound", "docs/scenarios.md", ("evaluate", "--scenario", "decode-bound", "--policies",
                                                 "no-deflect,kairos,kairos-exact", "--seeds", "0-3", "--json",
                                                 "{out}"),
           _policy_table((("SLO attainment", "slo_attainment", ".3f"), ("deflection rate", "deflection_rate", ".3f"),
                          ("prefill SM-util proxy", "prefill_utilization", ".3f"),
                          ("decode SM-util proxy", "decode_utilization", ".3f")))),
    Figure("servegen-day", "docs/scenarios.md", ("evaluate", "--scenario", "servegen-day", "--policies",
                                                 "no-deflect,always-deflect-ls,kairos", "--seeds", "0", "--json",
                                                 "{out}"),
           _policy_table((("SLO attainment", "slo_attainment", ".3f"), ("TTFT P95 (s)", "ttft_p95", ".3f"),
                          ("deflection rate", "deflection_rate", ".3f"),
                          ("prefill SM-util proxy", "prefill_utilization", ".3f")))),
    Figure("overload-10x", "docs/scenarios.md", ("compare", "--scenarios", "overload-10x,"
                                                 "docs/figures/overload-10x-timeouts-only.yaml,"
                                                 "docs/figures/overload-10x-uncontrolled.yaml", "--policies",
                                                 "no-deflect", "--seeds", "0", "--json", "{out}"), _overload),
    Figure("kv-pressure", "docs/scenarios.md", ("evaluate", "--scenario", "kv-pressure", "--policies", "no-deflect",
                                                "--seeds", "0-4", "--json", "{out}"),
           _policy_table((("preemptions", "n_preemptions", ".0f"),
                          ("TBT request attainment", "tbt_request_attainment", ".3f"),
                          ("TBT violation rate (gaps)", "tbt_violation_rate", ".5f"),
                          ("SLO attainment", "slo_attainment", ".3f")))),
    Figure("bursty-utilization", "docs/metrics.md", ("evaluate", "--scenario", "bursty", "--policies", "no-deflect",
                                                     "--seeds", "0-4", "--json", "{out}"),
           _per_seed_table((("prefill SM-util proxy per node", _nodes("prefill_sm_util_per_node")),
                            ("prefill busy", lambda r: f"{r['prefill_busy_fraction']:.3f}"),
                            ("decode SM-util proxy per node", _nodes("decode_sm_util_per_node")),
                            ("decode busy", lambda r: f"{r['decode_busy_fraction']:.3f}")))),
    Figure("step-compute-share", "docs/metrics.md", ("latency", "--batches", "1,64,256", "--contexts", "2048",
                                                     "--chunks", "512,2048", "--prefixes", "0,4096", "--json",
                                                     "{out}"), _step_compute_share),
    Figure("gaps-and-requests", "docs/metrics.md", ("compare", "--scenarios", "small:slo.tbt_s=0.03", "--policies",
                                                    "always-deflect:chunk=2048", "--seeds", "0", "--json", "{out}"),
           _gaps_and_requests),
    Figure("kv-capacity", "docs/scenarios.md", ("latency", "--kv-reserve", "0.1,0.56", "--json", "{out}"),
           _kv_capacity),
)}
"""Every generated block of the docs, by name."""


def run(figure: Figure) -> str:
    """The block's lines as ``figure``'s command gives them now (it runs with this Python, in the repository)."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "out.json"
        args = [a.replace("{out}", str(out)) for a in figure.command]
        subprocess.run([sys.executable, "-m", "kairos_gym.cli", *args], cwd=ROOT, check=True,
                       stdout=subprocess.DEVNULL)
        return figure.render(out.read_text(encoding="utf-8"))


def _block(name: str) -> re.Pattern[str]:
    return re.compile(rf"(<!-- figure {re.escape(name)}: [^\n]*-->\n)(.*?)(<!-- end figure {re.escape(name)} -->)",
                      flags=re.DOTALL)


def marked_names(text: str) -> list[str]:
    """The names of the figure markers in a doc's ``text``, in order."""
    return re.findall(r"<!-- figure ([\w-]+): ", text)


def block_of(text: str, name: str) -> str:
    """The lines between the markers of figure ``name`` in ``text`` (ValueError when they are missing)."""
    m = _block(name).search(text)
    if m is None:
        raise ValueError(f"no '<!-- figure {name}: ... -->' ... '<!-- end figure {name} -->' block")
    return m.group(2)


def with_block(text: str, figure: Figure, body: str) -> str:
    """``text`` with figure's block replaced by ``body`` (and its opening marker naming the command)."""
    block_of(text, figure.name)  # present, else ValueError
    head = f"<!-- figure {figure.name}: {figure.shown_command()} -->\n"
    return _block(figure.name).sub(lambda m: head + body + m.group(3), text, count=1)


def check(figures: list[Figure]) -> list[str]:
    """A unified diff (doc -> command) per figure whose block differs; empty when every block is current."""
    diffs = []
    for fig in figures:
        doc = ROOT / fig.doc
        old, new = block_of(doc.read_text(encoding="utf-8"), fig.name), run(fig)
        if old != new:
            diffs.append("".join(difflib.unified_diff(old.splitlines(True), new.splitlines(True),
                                                      f"{fig.doc} ({fig.name})", f"{fig.shown_command()} (now)")))
    return diffs


def main(argv: list[str] | None = None) -> int:
    """List, print, check or write the figures."""
    p = argparse.ArgumentParser(description="the docs' generated figures (see the module docstring)")
    p.add_argument("names", nargs="*", help="figures (default: every one); names: " + ", ".join(FIGURES))
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--check", action="store_true", help="exit 1 with a diff where a doc's block differs")
    mode.add_argument("--write", action="store_true", help="rewrite the docs' blocks")
    args = p.parse_args(argv)
    unknown = [n for n in args.names if n not in FIGURES]
    if unknown:
        p.error(f"unknown figure {', '.join(unknown)}; figures: {', '.join(FIGURES)}")
    figures = [FIGURES[n] for n in args.names] or list(FIGURES.values())
    if args.check:
        diffs = check(figures)
        print("".join(diffs) or f"{len(figures)} figure(s) current")
        return 1 if diffs else 0
    if args.write:
        for fig in figures:
            doc = ROOT / fig.doc
            doc.write_text(with_block(doc.read_text(encoding="utf-8"), fig, run(fig)), encoding="utf-8")
            print(f"wrote {fig.doc} ({fig.name})")
        return 0
    if not args.names:
        for fig in figures:
            print(f"{fig.name}: {fig.doc}, {fig.shown_command()}{'' if fig.fast else ' (slow: not in make test)'}")
        return 0
    for fig in figures:
        print(run(fig), end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
