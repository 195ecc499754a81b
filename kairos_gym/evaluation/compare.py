"""Trained checkpoints (and policies from files) against the baselines on several scenarios and loads (the
generalisation table).

    kairos-gym compare --checkpoint runs/ppo/fast/final --seeds 0-4 \\
        --scenarios bursty,bursty:workload.arrival.rate=30,azure-conv,mooncake --markdown out/compare.md

A scenario spec is a shipped name or YAML path, optionally followed by ``:section.key=value`` overrides
(one ``:`` per override; specs are separated by ``,``), e.g. ``azure-conv:workload.arrival.rate_scale=6``
or ``bursty:workload.arrival.rate=30:workload.num_requests=2000``.
A policy spec is a registry name with optional ``:param=value`` parameters, e.g. ``always-deflect:chunk=1024``
(``ppo`` is the shipped agent). Policies from outside the registry (``externals``: ``--checkpoint DIR``, a safe
checkpoint folder or a run folder, a Stable-Baselines3 zip only with ``--trust-checkpoint``; ``--policy
FILE.py:CLASS``) come after them, labelled ``checkpoint:DIR`` / ``file:FILE.py:CLASS``, and run under their guard.
Every policy runs on the same workloads (same seeds) through the simulator's policy hook; every spec and external
policy is checked before the first run.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from kairos_gym.errors import ConfigError
from kairos_gym.scenario import ScenarioConfig, load_scenario
from kairos_gym.yaml_io import load_yaml_text

if TYPE_CHECKING:
    from kairos_gym.agents.policy_file_loader import ExternalPolicy

MD_KEYS = (("ttft_p95", "TTFT P95 s", "{:.3g}"), ("slo_attainment", "SLO att", "{:.3f}"),
           ("tbt_violation_rate", "TBT viol", "{:.4f}"), ("deflection_rate", "deflect", "{:.3f}"))
DEFAULT_SCENARIOS = ("bursty", "bursty:workload.arrival.rate=16", "bursty:workload.arrival.rate=28", "steady",
                     "decode-heavy", "azure-code", "azure-conv", "azure-conv:workload.arrival.rate_scale=6",
                     "mooncake", "mooncake:workload.arrival.rate_scale=0.225")


def parse_scenario(spec: str) -> tuple[str, ScenarioConfig]:
    """``name[:a.b=v]...`` -> (label, ScenarioConfig)."""
    name, *overs = spec.split(":")
    sc = load_scenario(name)
    if overs:
        tree: dict[str, Any] = {}
        for o in overs:
            if "=" not in o:
                raise ConfigError("compare", "--scenarios", spec, "name[:section.key=value]..., e.g. "
                                  "azure-conv:workload.arrival.rate_scale=6")
            path, value = o.split("=", 1)
            node = tree
            keys = path.split(".")
            for k in keys[:-1]:
                node = node.setdefault(k, {})
            node[keys[-1]] = load_yaml_text(value, f"compare --scenarios {spec}")
        sc = sc.with_overrides(tree)
    return spec, sc


def parse_policy(spec: str) -> tuple[str, dict[str, Any]]:
    """``name[:param=value]...`` -> (registry name, parameters), e.g. ``always-deflect:chunk=1024``."""
    name, *params = spec.split(":")
    out: dict[str, Any] = {}
    for p in params:
        if "=" not in p:
            raise ConfigError("compare", "--policies", spec, "name[:param=value]..., e.g. always-deflect:chunk=1024")
        k, v = p.split("=", 1)
        out[k] = load_yaml_text(v, f"compare --policies {spec}")
    return name, out


def compare(scenarios: Sequence[str], policies: Sequence[str], seeds: Sequence[int], *,
            externals: Sequence[ExternalPolicy] = (), log: Any = None) -> list[dict[str, Any]]:
    """``[{"scenario": label, "seeds": [...], "policies": [labels], "runs": [summary, ...]}, ...]``: the policy
    specs ``policies``, then ``externals``, on every scenario spec and seed (none: no runs). Before any run: every
    scenario spec loads, every policy spec builds for the first scenario, and every external policy runs on a short
    prefix of it (ConfigError). ``log``: a line per (scenario, policy) with its wall time (s)."""
    from kairos_gym.agents.policy_file_loader import probe, run_checked
    from kairos_gym.agents.registry import make_policy
    from kairos_gym.agents.runner import run_policy

    if not seeds:
        raise ConfigError("compare", "--seeds", list(seeds), "at least one seed")
    if not policies and not externals:
        raise ConfigError("compare", "--policies", list(policies), "at least one policy (or --checkpoint/--policy)")
    parsed = [parse_scenario(spec) for spec in scenarios]
    if not parsed:
        return []
    specs = [(name, *parse_policy(name)) for name in policies]
    for name, base, params in specs:
        try:
            make_policy(base, parsed[0][1], seeds[0], **params)
        except ConfigError as e:
            raise ConfigError("compare", "--policies", name, f"a registry name with valid parameters ({e})") from e
    labels = [*policies, *(e.label for e in externals)]
    if len(set(labels)) != len(labels):
        raise ConfigError("compare", "--policies", ",".join(labels), "each policy once")
    for e in externals:
        probe(e, parsed[0][1], seeds[0])

    out = []
    for label, sc in parsed:
        runs = []
        for name, base, params in specs:
            t0 = time.perf_counter()
            for s in seeds:
                r = run_policy(base, sc, s, **params)
                r["policy"] = name
                runs.append(r)
            if log is not None:
                print(f"{label}: {name} {time.perf_counter() - t0:.1f} s", file=log, flush=True)
        for e in externals:
            t0 = time.perf_counter()
            for s in seeds:
                r = run_checked(e, sc, s)
                r["policy"] = e.label
                runs.append(r)
            if log is not None:
                print(f"{label}: {e.label} {time.perf_counter() - t0:.1f} s", file=log, flush=True)
        out.append({"scenario": label, "seeds": list(seeds), "policies": labels, "runs": runs})
    return out


def _mean(rows: list[dict[str, Any]], key: str) -> float:
    v = [r[key] for r in rows if r.get(key) is not None and not math.isnan(r[key])]
    return sum(v) / len(v) if v else math.nan


def markdown(results: list[dict[str, Any]]) -> str:
    """One row per scenario and policy: means across seeds."""
    head = "| scenario | policy | " + " | ".join(lbl for _, lbl, _ in MD_KEYS) + " |"
    lines = [head, "|" + "---|" * (2 + len(MD_KEYS))]
    for res in results:
        for name in res["policies"]:
            rows = [r for r in res["runs"] if r["policy"] == name]
            cells = [fmt.format(_mean(rows, k)) for k, _, fmt in MD_KEYS]
            lines.append(f"| {res['scenario']} | {name} | " + " | ".join(cells) + " |")
    return "\n".join(lines)
