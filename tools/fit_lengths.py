"""Fit a ``lengths: {kind: lognormal}`` section to the prompt and output lengths of trace files (tokens).

    python tools/fit_lengths.py azure2023_code azure2023_conv

For each trace (a packaged name or a CSV path, read with :func:`kairos_gym.workload.load_trace`) and each side
(prompt, output), in tokens:

- ``median``: the median length (numpy's linear interpolation);
- ``sigma``: the lognormal sigma matched to the central 68.27 % of log-lengths,
  ``(ln q(84.13 %) - ln q(15.87 %)) / 2``, which is sigma exactly for a lognormal and, unlike the standard
  deviation of the logs (printed too, ``sd_log``), is not pulled by the traces' spikes of very short requests;
- ``max``: the largest length in the trace, used as the section's cap (the fitted distribution never draws a
  length the trace did not reach).

It prints the trace statistics, then the fitted section as YAML (medians rounded to whole tokens, sigmas to two
decimals), then the mean of 200,000 draws of that section (seed 0, truncated by rejection as a run draws it)
next to the trace's mean. ``configs/scenarios/regime-shift.yaml`` takes its two states' lengths from this
output (docs/benchmark.md).
"""

from __future__ import annotations

import argparse
import math

import numpy as np

from kairos_gym.workload import LognormalLengths, load_trace

_Q_LOW, _Q_HIGH = 100 * 0.5 * math.erfc(1 / math.sqrt(2)), 100 * (1 - 0.5 * math.erfc(1 / math.sqrt(2)))
CHECK_DRAWS = 200_000


def fit_side(x: np.ndarray) -> dict[str, float | int]:
    """``{median, sigma, sd_log, max, mean}`` of lengths ``x`` (tokens, each >= 1); see the module docstring."""
    logs = np.log(x.astype(np.float64))
    low, high = np.percentile(logs, [_Q_LOW, _Q_HIGH])
    return {"median": float(np.median(x)), "sigma": float((high - low) / 2), "sd_log": float(logs.std()),
            "max": int(x.max()), "mean": float(x.mean())}


def fit_trace(name: str) -> tuple[dict[str, dict[str, float | int]], LognormalLengths]:
    """The per-side statistics of trace ``name`` and the fitted lognormal section."""
    trace = load_trace(name, where="fit_lengths")
    stats = {"prompt": fit_side(trace.prompt_tokens), "output": fit_side(trace.output_tokens)}
    section = LognormalLengths(**{f"{side}_{k}": (round(s["median"]) if k == "median" else
                                                  round(s["sigma"], 2) if k == "sigma" else s["max"])
                                  for side, s in stats.items() for k in ("median", "sigma", "max")})
    return stats, section


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("traces", nargs="+", help="packaged trace names or CSV paths")
    args = parser.parse_args(argv)
    for name in args.traces:
        stats, section = fit_trace(name)
        print(f"# {name}: {len(load_trace(name, where='fit_lengths')):,} rows")
        for side, s in stats.items():
            print(f"#   {side}: median {s['median']:g}, sigma {s['sigma']:.3f} (sd_log {s['sd_log']:.3f}), "
                  f"max {s['max']:,}, mean {s['mean']:.1f}")
        d = section.to_dict()
        print("{" + ", ".join(f"{k}: {v:g}" if isinstance(v, float) else f"{k}: {v}" for k, v in d.items()) + "}")
        prompt, output = section.sample(np.random.default_rng(0), CHECK_DRAWS)
        print(f"#   fitted section's mean over {CHECK_DRAWS:,} draws: prompt {prompt.mean():.1f} "
              f"(trace {stats['prompt']['mean']:.1f}), output {output.mean():.1f} "
              f"(trace {stats['output']['mean']:.1f})")


if __name__ == "__main__":
    main()
