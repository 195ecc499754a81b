"""The "machine" commands: ``latency`` (the step-latency model of a model/GPU/TP preset, its calibration) and
``verify`` (does this machine reproduce the published results?)."""

from __future__ import annotations

import argparse

from kairos_gym.cli.common import JSON_HELP, MAX_CHUNK, Subparsers, add_command, write_json, write_text
from kairos_gym.errors import ConfigError
from kairos_gym.flags import MAX_LIST, check_outputs, parse_float_list, parse_int, parse_int_list

MAX_BATCH = 4096
"""Largest ``latency --batches`` value (decode requests in one step)."""
MAX_CONTEXT = 1 << 20
"""Largest ``latency --contexts`` value (tokens)."""


def add_commands(sub: Subparsers) -> None:
    """Register ``latency`` and ``verify``."""
    p = add_command(sub, "latency", cmd_latency)
    p.add_argument("--model", default="deepseek-v2-lite", help="model preset (kairos_gym/data/models.yaml)")
    p.add_argument("--gpu", default="a100-80gb", help="GPU preset (kairos_gym/data/hardware.yaml)")
    p.add_argument("--tp", default="1", help="tensor-parallel degree: 1, 2, 4 or 8")
    p.add_argument("--batches", default="1,8,16,32,64",
                   help=f"decode batch sizes, distinct, 1..{MAX_BATCH}, at most {MAX_LIST}")
    p.add_argument("--contexts", default="512,1024,2048,4096",
                   help=f"context length of each decode request (tokens), 1..{MAX_CONTEXT}, at most {MAX_LIST}")
    p.add_argument("--chunks", default="128,256,512,1024,2048",
                   help=f"deflected chunk sizes (tokens), 1..{MAX_CHUNK}, at most {MAX_LIST}")
    p.add_argument("--prefixes", default="0", help="prefix of the prefill steps alone (tokens already in the "
                   f"request's KV), 0..{MAX_CONTEXT}, at most {MAX_LIST}")
    p.add_argument("--kv-reserve", default="0.1", help="fractions of GPU memory kept for activations "
                   "(cluster.kv_reserve_frac), in [0, 0.99], at most " f"{MAX_LIST}: the KV tokens each GPU holds at "
                   "each")
    p.add_argument("--json", metavar="PATH", help="write the tables as JSON ('-' for stdout), with each step's "
                   "compute share")
    p.add_argument("--calibration-report", metavar="PATH", nargs="?", const="docs/calibration.md",
                   help="write the calibration report (default docs/calibration.md)")
    p.add_argument("--fit", action="store_true", help="refit the dense-GEMM parameters to the Vidur data")
    p.add_argument("--bench", action="store_true", help="time the pricing of one Kairos decision")

    p = add_command(sub, "verify", cmd_verify)
    p.add_argument("--json", metavar="PATH", help=JSON_HELP)
    p.add_argument("--reference", metavar="PATH", help="the reference hashes to compare with (default: the "
                   "package's kairos_gym/data/verify.json)")
    p.add_argument("--dump", metavar="PATH.npz", help="also write every stage's arrays to this .npz file (to "
                   "compare two machines array by array)")
    p.add_argument("--record", action="store_true", help="developers: write this machine's hashes as the reference "
                   "(--reference, default the package's file) instead of comparing")


def cmd_latency(args: argparse.Namespace) -> int:
    """``kairos-gym latency``: the table (ms), the calibration report, the fit or the pricing's timing."""
    from kairos_gym.latency import StepLatencyModel
    from kairos_gym.latency.report import calibration_report_md, format_latency_table, latency_table

    w = "latency"
    tp = parse_int(w, "--tp", args.tp, 1, 64)
    batches = parse_int_list(w, "--batches", args.batches, 1, MAX_BATCH)
    contexts = parse_int_list(w, "--contexts", args.contexts, 1, MAX_CONTEXT)
    chunks = parse_int_list(w, "--chunks", args.chunks, 1, MAX_CHUNK)
    prefixes = parse_int_list(w, "--prefixes", args.prefixes, 0, MAX_CONTEXT)
    reserves = parse_float_list(w, "--kv-reserve", args.kv_reserve, 0.0, 0.99, lo_open=False, empty_ok=False)
    check_outputs(w, {"--json": args.json, "--calibration-report": args.calibration_report}, stdout_ok=["--json"])
    if args.fit:
        from kairos_gym.latency.fit import FIT_PARAMS, fit

        cal, mape = fit()
        print(f"overall MAPE {mape:.3f}% (64..4096 tokens, all models and TPs); put these in calibration.yaml:")
        for k in FIT_PARAMS:
            print(f"  {k}: {getattr(cal, k):.4g}")
        return 0
    if args.calibration_report:
        write_text(args.calibration_report, calibration_report_md(), flag="--calibration-report")
        print(f"wrote {args.calibration_report}")
        return 0
    m = StepLatencyModel.from_preset(args.model, args.gpu, tp)
    if args.bench:
        from kairos_gym.perf.pricing_speed import bench_pricing

        res = bench_pricing(m)
        for k, v in res.items():
            print(f"{k}: {v}")
        write_json(args.json, res)
        return 0
    table = latency_table(m, batches, contexts, chunks, prefixes=prefixes, kv_reserves=reserves)
    if args.json == "-":
        write_json("-", table)
    else:
        print(format_latency_table(table))
        write_json(args.json, table)
    return 0


def cmd_verify(args: argparse.Namespace) -> int:
    """``kairos-gym verify``: 0 when every stage reproduces the reference hashes, 1 when one does not."""
    from kairos_gym.verify import REFERENCE, record, run_verify, verdict_text

    ref = args.reference or REFERENCE
    if args.record:
        if args.dump is not None or args.json is not None:
            raise ConfigError("verify", "--record", "with --dump/--json", "--record alone (optionally --reference)")
        check_outputs("verify", {"--reference": str(ref)})
        out = record(ref)
        print(f"recorded {len(out['stages'])} stages ({', '.join(out['stages'])}) at commit {out['commit']} -> {ref}")
        return 0
    check_outputs("verify", {"--json": args.json, "--dump": args.dump}, stdout_ok=["--json"])
    if args.dump is not None and not str(args.dump).endswith(".npz"):
        raise ConfigError("verify", "--dump", args.dump, "a path ending in .npz")
    res = run_verify(ref, dump=args.dump)
    res["verdict"] = verdict_text(res)
    if args.json == "-":
        write_json("-", res)
    else:
        for r in res["stages"]:
            print(f"{r['stage']:<14} {r['status']:<13} {r['seconds']:6.2f} s  {r.get('detail', r['what'])}")
        print(f"verdict: {res['verdict']}")
        write_json(args.json, res)
    return 0 if res["reproduces"] else 1
