"""The ``kairos-gym`` command line. Thin: parses flags, calls the library, prints or writes results.

Bad flags exit with status 2 and one line naming the flag, the value and what is allowed.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from kairos_gym.errors import ConfigError


def _int_list(flag: str) -> Callable[[str], tuple[int, ...]]:
    def parse(text: str) -> tuple[int, ...]:
        try:
            vals = tuple(int(x) for x in text.split(",") if x.strip())
        except ValueError:
            raise argparse.ArgumentTypeError(f"{flag} = {text!r}: allowed: comma-separated integers") from None
        if not vals or min(vals) < 0:
            raise argparse.ArgumentTypeError(f"{flag} = {text!r}: allowed: comma-separated integers >= 0")
        return vals

    return parse


def _write_json(path: str | None, obj: object) -> None:
    if path is None:
        return
    text = json.dumps(obj, indent=2, sort_keys=True)
    if path == "-":
        print(text)
    else:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        Path(path).write_text(text + "\n", encoding="utf-8")


# ---------------------------------------------------------------------------- latency
def _add_latency(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("latency", help="step-latency table of a model/GPU/TP preset; calibration report and fit")
    p.add_argument("--model", default="deepseek-v2-lite")
    p.add_argument("--gpu", default="a100-80gb")
    p.add_argument("--tp", type=int, default=1)
    p.add_argument("--batches", type=_int_list("--batches"), default=(1, 8, 16, 32, 64))
    p.add_argument("--contexts", type=_int_list("--contexts"), default=(512, 1024, 2048, 4096))
    p.add_argument("--chunks", type=_int_list("--chunks"), default=(128, 256, 512, 1024, 2048))
    p.add_argument("--json", metavar="PATH", help="write the table as JSON ('-' for stdout)")
    p.add_argument("--calibration-report", metavar="PATH", nargs="?", const="docs/calibration.md",
                   help="write the calibration report (default docs/calibration.md)")
    p.add_argument("--fit", action="store_true", help="refit the dense-GEMM parameters to the Vidur data")
    p.add_argument("--bench", action="store_true", help="time the pricing of one Kairos decision")
    p.set_defaults(func=_cmd_latency)


def _cmd_latency(args: argparse.Namespace) -> int:
    from kairos_gym.latency import StepLatencyModel
    from kairos_gym.latency.report import calibration_report_md, format_latency_table, latency_table

    if args.fit:
        from kairos_gym.latency.fit import FIT_PARAMS, fit

        cal, mape = fit()
        print(f"overall MAPE {mape:.3f}% (64..4096 tokens, all models and TPs); put these in calibration.yaml:")
        for k in FIT_PARAMS:
            print(f"  {k}: {getattr(cal, k):.4g}")
        return 0
    if args.calibration_report:
        Path(args.calibration_report).parent.mkdir(parents=True, exist_ok=True)
        Path(args.calibration_report).write_text(calibration_report_md(), encoding="utf-8")
        print(f"wrote {args.calibration_report}")
        return 0
    m = StepLatencyModel.from_preset(args.model, args.gpu, args.tp)
    if args.bench:
        from kairos_gym.latency.bench import bench_pricing

        res = bench_pricing(m)
        for k, v in res.items():
            print(f"{k}: {v}")
        _write_json(args.json, res)
        return 0
    table = latency_table(m, args.batches, args.contexts, args.chunks)
    if args.json == "-":
        _write_json("-", table)
    else:
        print(format_latency_table(table))
        _write_json(args.json, table)
    return 0


# ---------------------------------------------------------------------------- demo
def _add_demo(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("demo", help="the main job: the best end-to-end run available")
    p.add_argument("--out", default="out/demo", help="folder for plots and JSON")
    p.set_defaults(func=_cmd_demo)


def _cmd_demo(args: argparse.Namespace) -> int:
    from kairos_gym.latency import StepLatencyModel
    from kairos_gym.latency.report import format_latency_table, latency_table, seed_target_checks

    m = StepLatencyModel.from_preset()
    print(format_latency_table(latency_table(m)))
    print()
    for r in seed_target_checks(m):
        print(f"  {r['target']:<48} {r['value_ms']:>12} ms  bound {r['bound_ms']:>8} ms  {'ok' if r['ok'] else 'FAIL'}")
    return 0


COMMANDS = (_add_latency, _add_demo)


def build_parser() -> argparse.ArgumentParser:
    """The argument parser with every subcommand."""
    parser = argparse.ArgumentParser(prog="kairos-gym", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    for add in COMMANDS:
        add(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``kairos-gym`` console script."""
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except ConfigError as e:
        print(f"kairos-gym {args.command}: error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
