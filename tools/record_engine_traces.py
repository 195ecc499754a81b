"""Record the engine reference dataset ``tests/golden/engine_traces.json`` (cases: tests/golden/engine_cases.py).

    python tools/record_engine_traces.py tests/golden/engine_traces.json   # run from the checkout's root

The dataset holds, per case, digests of the simulator's internals (decision contexts, per-request columns, event
traces, token-gap records, counters, node states, error messages, env trajectories, snapshots, Oracle decisions)
and the commit they were recorded at (``recorded_with``). ``tests/golden/test_engine_traces.py`` recomputes every
case and fails on any difference. Re-record it only for a change meant to alter results, and say why in the
commit. Takes a few seconds.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path.cwd()))  # the checkout being recorded (run from its root)

from tests.golden.engine_cases import cases


def makers() -> tuple[Any, Any]:
    """``(make_sim, make_env)`` building simulators and envs."""
    from kairos_gym.env.core import KairosEnv
    from kairos_gym.sim import Simulator

    def make_sim(scenario: Any, **kw: Any) -> Any:
        return Simulator(scenario, **kw)

    def make_env(**kw: Any) -> Any:
        return KairosEnv(**kw)

    return make_sim, make_env


def record() -> dict[str, Any]:
    """Every case: ``{key: {"params": ..., "out": ...}}``."""
    make_sim, make_env = makers()
    return {key: {"params": params, "out": run(params, make_sim, make_env)} for key, params, run in cases()}


def dumps(data: dict[str, Any]) -> str:
    """The dataset as JSON, one case a line (small diffs when a case changes)."""
    lines = [f"{json.dumps(k)}: {json.dumps(v, sort_keys=True, separators=(',', ':'))}"
             for k, v in sorted(data["cases"].items())]
    return ('{"recorded_with": ' + json.dumps(data["recorded_with"]) + ',\n"cases": {\n' + ",\n".join(lines)
            + "\n}}\n")


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python tools/record_engine_traces.py", description=__doc__.splitlines()[0])
    p.add_argument("out", help="the JSON file to write (tests/golden/engine_traces.json)")
    args = p.parse_args(argv)
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                            check=False).stdout.strip() or "unknown"
    data = {"recorded_with": f"the engine at commit {commit}", "cases": record()}
    Path(args.out).write_text(dumps(data), encoding="utf-8")
    print(f"{len(data['cases'])} cases -> {args.out}")


if __name__ == "__main__":
    main()
