"""Fingerprints of simulator and env results, to check that a refactor or a speed-up changed nothing.

    cd <old checkout> && python <this checkout>/tools/fingerprint.py /tmp/before.json
    cd <new checkout> && python tools/fingerprint.py /tmp/after.json
    diff /tmp/before.json /tmp/after.json              # no output: bit-identical results
    python tools/fingerprint.py tests/golden/fingerprints.json   # re-record the golden dataset (see below)

``tests/golden/fingerprints.json`` is the golden dataset: ``tests/golden/test_fingerprints.py`` recomputes
every entry and fails on any difference, so a refactor or a speed-up must reproduce today's results bit for bit.
The simulator's internals (decision contexts, event traces, node states, messages) have a golden dataset of their
own, ``tests/golden/engine_traces.json`` (tools/record_engine_traces.py).
Re-record it only for a change that is meant to alter results, and say why in the commit.

The package under test is the one in the current directory; the workloads, policies and memory set-up
come from this checkout (``tests/sim/conftest.py`` next to this file), so both sides run the same cases.

Each entry hashes, for one scenario x policy x seed, every per-request record of the simulator (arrival,
first token, finish, prefill start/end, execution, transfer, nodes, worst gap, path, KV moved, chunks)
and the run's summary (minus wall-clock keys); the tight-memory entries cover the ``swap`` policy, the
``incl`` entries a scenario whose TTFT excludes the transfer, the ``tight-swap-lifo`` entries the swap policy's
``swap_order: lifo`` (the most recently swapped request comes back first).
The env entries hash 4,000 steps of
observations, rewards and end-of-episode summaries on ``Kairos-v0`` and ``KairosSmall-v0`` under a
seeded random masked policy. Takes about 10 s.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path.cwd()))  # the checkout being fingerprinted (run from its root)

import gymnasium as gym

import kairos_gym.env  # noqa: F401
from kairos_gym.scenario import ScenarioConfig
from kairos_gym.sim import Simulator
from kairos_gym.verify import RandomDeflect

_spec = importlib.util.spec_from_file_location(
    "fingerprint_cases", Path(__file__).resolve().parent.parent / "tests" / "sim" / "conftest.py")
assert _spec is not None and _spec.loader is not None
_cases = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_cases)
SMALL, DeflectAll, NoDeflect = _cases.SMALL, _cases.DeflectAll, _cases.NoDeflect
tight_memory_sim = _cases.tight_memory_sim

_COLUMNS = ("arrival", "first_token", "finish", "prefill_start", "prefill_end", "exec_s", "xfer_start", "xfer_end",
            "p_node", "d_node", "max_gap", "path", "kv_moved")


def _stable(summary: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in summary.items() if "wall" not in k and "per_s" not in k}


def fingerprint(sim: Simulator, summary: dict[str, Any]) -> str:
    h = hashlib.sha256()
    for k in _COLUMNS:
        h.update(np.asarray(getattr(sim, k)).tobytes())
    h.update(repr(sim.chunks).encode())
    h.update(json.dumps(_stable(summary), sort_keys=True, default=str).encode())
    h.update(repr((sim.wait_area, sim.tbt_violations, sim.tokens_out, sim.now, sim.n_preemptions,
                   sim.swap_bytes)).encode())
    return h.hexdigest()[:16]


SIM_SCENARIOS = ("bursty", "decode-heavy", "azure-code", "mooncake", "small")
SIM_POLICIES = ("nodef", "d512", "dls", "rand")
ENV_IDS = ("kairos_gym/Kairos-v0", "kairos_gym/KairosSmall-v0")


def sim_cases() -> list[tuple[str, Callable[[], tuple[Simulator, Any]]]]:
    """Every simulator case as (key, make) where ``make()`` builds the simulator and returns it with the policy
    to run."""
    cases: list[tuple[str, Callable[[], tuple[Simulator, Any]]]] = []

    def policy(name: str, seed: int) -> Any:
        return {"nodef": NoDeflect, "d512": lambda: DeflectAll(512), "dls": lambda: DeflectAll(0),
                "d256": lambda: DeflectAll(256), "d128": lambda: DeflectAll(128),
                "rand": lambda: RandomDeflect(seed)}[name]()

    for scen in SIM_SCENARIOS:
        for name in SIM_POLICIES:
            for seed in (0, 1):
                cases.append((f"{scen}/{name}/{seed}",
                              lambda s=scen, n=name, sd=seed: (Simulator(s, seed=sd), policy(n, sd))))
    for mp in ("swap", "reserve"):
        for name, pseed in (("nodef", 0), ("d256", 0), ("rand", 3)):
            cases.append((f"tight-{mp}/{name}",
                          lambda m=mp, n=name, ps=pseed: (tight_memory_sim(m), policy(n, ps))))
    cases.append(("tight-swap-slow", lambda: (tight_memory_sim("swap", swap_bandwidth_bytes_per_s=1e8),
                                                 policy("d128", 0))))
    # swap_order lifo: the most recently admitted member is preempted, the most recently swapped comes back first
    for name, pseed in (("nodef", 0), ("d256", 0), ("rand", 3)):
        cases.append((f"tight-swap-lifo/{name}", lambda n=name, ps=pseed: (
            tight_memory_sim("swap", swap_order="lifo"), policy(n, ps))))
    cases.append(("tight-swap-lifo-slow", lambda: (
        tight_memory_sim("swap", swap_bandwidth_bytes_per_s=1e8, swap_order="lifo"), policy("d128", 0))))
    sc = ScenarioConfig.from_dict({**SMALL, "cluster": {"ttft_includes_transfer": True}})
    for name, pseed in (("nodef", 0), ("rand", 5)):
        cases.append((f"incl/{name}", lambda n=name, ps=pseed: (Simulator(sc, seed=2), policy(n, ps))))
    # the analytical baseline itself (its pricer): ``kairos`` on the realistic information track (the served stale
    # view and model-error draws) and ``kairos-exact`` on the exact track
    from kairos_gym.agents.registry import make_policy

    from kairos_gym.scenario import load_scenario

    for scen in ("bursty", "mooncake"):
        real = load_scenario(scen).with_overrides({"information": {"track": "realistic"}})
        cases.append((f"{scen}/kairos/0", lambda r=real: (Simulator(r, seed=0), make_policy("kairos", r, seed=0))))
        cases.append((f"{scen}/kairos-exact/0", lambda s=scen: (
            Simulator(s, seed=0), make_policy("kairos-exact", s, seed=0))))
    return cases


def compute(select: Callable[[str], bool] | None = None) -> dict[str, str]:
    """Every fingerprint, keyed by case (``scenario/policy/seed``, ``tight-<policy>/...``, ``incl/...``, env ids).

    ``select(key)``: compute only the cases it accepts (None: all)."""
    out: dict[str, str] = {}
    for key, make in sim_cases():
        if select is None or select(key):
            sim, pol = make()
            out[key] = fingerprint(sim, sim.run(pol))
    for env_id in ENV_IDS:
        if select is not None and not select(env_id):
            continue
        env = gym.make(env_id, reward="ttft")  # the reward the golden fingerprints were taken with
        rng = np.random.default_rng(0)
        h = hashlib.sha256()
        obs, info = env.reset(seed=0)
        episodes = 0
        for _ in range(4000):
            valid = np.flatnonzero(info["action_mask"])
            obs, reward, terminated, truncated, info = env.step(int(valid[rng.integers(valid.size)]))
            h.update(obs.tobytes())
            h.update(np.float64(reward).tobytes())
            if terminated or truncated:
                episodes += 1
                h.update(json.dumps(_stable(info.get("summary", {})), sort_keys=True, default=str).encode())
                obs, info = env.reset(seed=episodes)
        out[env_id] = h.hexdigest()[:16]
    return out


def main(out_path: str) -> None:
    out = compute()
    Path(out_path).write_text(json.dumps(out, indent=1) + "\n")
    print(f"{len(out)} fingerprints -> {out_path}")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: python tools/fingerprint.py OUT.json  (run from the checkout's root)")
    main(sys.argv[1])
