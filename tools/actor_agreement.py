"""How often the portable actor's greedy action differs from a torch float32 forward pass.

    python tools/actor_agreement.py [--requests 400] [--seeds 0 1 2] [--instances 2]

Runs the shipped agents (``ppo`` on its scenario ``bursty``; ``distilled-oracle`` on the first test instances of every
task of the suite, both information tracks) with the portable actor (:class:`kairos_gym.agents.checkpoint.
GreedyActor`), records every decision's network input and mask, and recomputes each decision with a torch forward
pass (``F.linear`` + activation per layer, float32, batch of one: libm- and SIMD-dependent) and with a
float64 reference (numpy, the float32 weights widened). Prints, per agent: decisions, greedy actions that differ
between the two float32 passes, the largest |logit difference|, and how often each pass agrees with the float64
reference. Needs torch (for that pass); the agents themselves do not.
"""

from __future__ import annotations

import argparse
from typing import Any

import numpy as np
from kairos_gym.agents.registry import make_policy
from kairos_gym.agents.runner import run_policy

from kairos_gym.benchmark.suite import SUITE, on_track


class Recorder:
    """A GreedyActor stand-in that records ``(network input, mask)`` of each ``act`` and acts as the actor."""

    def __init__(self, actor: Any) -> None:
        self.actor = actor
        self.rows: list[tuple[np.ndarray, np.ndarray]] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self.actor, name)

    def act(self, obs: np.ndarray, mask: np.ndarray | None = None) -> int:
        m = np.ones(self.actor.action_count, dtype=bool) if mask is None else np.asarray(mask, dtype=bool)
        self.rows.append((self.actor.normalize(obs).reshape(-1).copy(), m.copy()))
        return self.actor.act(obs, mask)


def torch_logits(actor: Any, x: np.ndarray) -> np.ndarray:
    """GreedyActor.logits computed with torch functional ops (float32) on an already normalised input."""
    import torch
    import torch.nn.functional as F

    act = {"Tanh": torch.tanh, "ReLU": torch.relu, "ELU": F.elu, "LeakyReLU": F.leaky_relu, "SiLU": F.silu,
           "GELU": F.gelu, "Sigmoid": torch.sigmoid}[actor.activation]
    layers = [(torch.from_numpy(w), torch.from_numpy(b)) for w, b in actor.hidden]
    head = (torch.from_numpy(actor.head[0]), torch.from_numpy(actor.head[1]))
    out = []
    with torch.no_grad():
        for row in x:
            h = torch.from_numpy(row.reshape(1, -1))
            for w, b in layers:
                h = act(F.linear(h, w, b))
            out.append(F.linear(h, *head)[0].numpy())
    return np.array(out, dtype=np.float32)


def float64_logits(actor: Any, x: np.ndarray) -> np.ndarray:
    """The same network in float64 (tanh-family activations from numpy; a reference, not a portable path)."""
    import math

    f = {"Tanh": np.tanh, "ReLU": lambda v: np.maximum(v, 0.0), "Sigmoid": lambda v: 1 / (1 + np.exp(-v)),
         "SiLU": lambda v: v / (1 + np.exp(-v)), "ELU": lambda v: np.where(v > 0, v, np.expm1(v)),
         "LeakyReLU": lambda v: np.where(v > 0, v, 0.01 * v),
         "GELU": np.vectorize(lambda v: v * 0.5 * math.erfc(-v / math.sqrt(2)))}[actor.activation]
    h = x.astype(np.float64)
    for w, b in actor.hidden:
        h = f(h @ w.astype(np.float64).T + b.astype(np.float64))
    return h @ actor.head[0].astype(np.float64).T + actor.head[1].astype(np.float64)


def masked_argmax(lg: np.ndarray, mask: np.ndarray) -> np.ndarray:
    return np.argmax(np.where(mask, lg, -np.inf), axis=1)


def measure(name: str, runs: list[tuple[Any, int]], requests: int) -> dict[str, Any]:
    xs, ms, actor = [], [], None
    for sc, seed in runs:
        sc = sc.with_overrides({"workload": {"max_requests": requests}})  # a prefix of the instance's workload
        agent = make_policy(name, sc, 0)
        rec = Recorder(agent.actor)
        agent.actor = rec
        run_policy(agent, sc, seed)
        actor = rec.actor
        xs += [r[0] for r in rec.rows]
        ms += [r[1] for r in rec.rows]
    x, m = np.array(xs, dtype=np.float32), np.array(ms, dtype=bool)
    native = np.asarray(actor._net.logits_rows(np.ascontiguousarray(x)))
    torch_out = torch_logits(actor, x)
    ref = float64_logits(actor, x)
    a_native, a_torch, a_ref = masked_argmax(native, m), masked_argmax(torch_out, m), masked_argmax(ref, m)
    assert np.array_equal(a_native, [actor._net.act(r, k) for r, k in zip(x, m, strict=True)]), "rows and act differ"
    gap = np.sort(np.where(m, ref, -np.inf), axis=1)
    top2 = gap[:, -1] - gap[:, -2]
    return {"agent": name, "decisions": len(x), "action_differs": int((a_native != a_torch).sum()),
            "max_abs_logit_diff_vs_torch": float(np.abs(native - torch_out).max()),
            "max_abs_logit_err_native": float(np.abs(native - ref).max()),
            "max_abs_logit_err_torch": float(np.abs(torch_out - ref).max()),
            "native_vs_float64_action_differs": int((a_native != a_ref).sum()),
            "torch_vs_float64_action_differs": int((a_torch != a_ref).sum()),
            "smallest_top2_gap": float(top2[np.isfinite(top2)].min()) if np.isfinite(top2).any() else None}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--requests", type=int, default=400, help="requests per episode (workload.max_requests)")
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2], help="ppo's workload seeds on bursty")
    ap.add_argument("--instances", type=int, default=2,
                    help="distilled-oracle: the first N test instances of each task")
    args = ap.parse_args()
    from kairos_gym.scenario import load_scenario

    ppo_runs = [(load_scenario("bursty"), s) for s in args.seeds]
    general_runs = [(on_track(inst.scenario(t.base()), track), inst.seed)
                    for t in SUITE for inst in t.test[:args.instances] for track in ("exact", "realistic")]
    for name, runs in (("ppo", ppo_runs), ("distilled-oracle", general_runs)):
        print(measure(name, runs, args.requests))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
