"""Your own policy, evaluated against Kairos on the same workloads.

A policy is a class with ``decide(ctx: DecisionContext) -> Decision`` (docs/policies.md, "Writing a policy"): the
simulator calls it once per arriving request with everything it priced for that request, and applies the decision
it returns. This one is a rule of thumb: deflect a *short* prompt to a decode node while the prefill nodes are
*busy*, else take the prefill path.

    python examples/my_policy.py            # seeds 0-4 of the bursty scenario (3,000 requests each), ~3 s
    python examples/my_policy.py --smoke    # the first 300 requests of seeds 0-1 (what CI runs)

The same comparison from the command line, with this file as it is:

    kairos-gym evaluate --policies no-deflect,kairos --policy examples/my_policy.py:BusyShortDeflect --seeds 0-4
"""

from __future__ import annotations

import argparse
from pathlib import Path

from kairos_gym.sim.hook import Decision, DecisionContext


class BusyShortDeflect:
    """Deflect prompts of at most ``max_prompt`` tokens when every prefill node's predicted wait is above ``busy_s``
    seconds, to the decode node that predicts the earliest first token with LargestSafe chunks."""

    name = "busy-short"  # how tables label it (optional; the class name otherwise)

    def __init__(self, max_prompt: int = 2048, busy_s: float = 0.25) -> None:
        self.max_prompt = max_prompt
        self.busy_s = busy_s

    def decide(self, ctx: DecisionContext) -> Decision:
        """The decision for ``ctx.request``: ``Decision.deflect(node)`` or ``Decision.prefill_path()``."""
        busy = min(p.predicted_wait_s for p in ctx.prefill) > self.busy_s
        if busy and ctx.request.prompt_tokens <= self.max_prompt:
            # decode nodes that accept a deflection now and have a LargestSafe chunk schedule (each chunk's step
            # within beta x the TBT SLO): the earliest predicted first token among them
            options = [(ctx.largest_safe_ttft_s[d], d) for d, node in enumerate(ctx.decode)
                       if node.can_deflect and ctx.largest_safe_feasible[d]]
            if options:
                return Decision.deflect(min(options)[1])  # chunk=LARGEST_SAFE: sized step by step by the simulator
        return Decision.prefill_path()  # the prefill node with the fewest queued tokens


def main() -> None:
    """Evaluate :class:`BusyShortDeflect` beside no-deflect and Kairos and print the table."""
    from kairos_gym.agents.policy_file_loader import policy_from_file

    from kairos_gym.evaluation.evaluate import evaluate, format_table
    from kairos_gym.evaluation.stats import mean_ci
    from kairos_gym.scenario import load_scenario

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--smoke", action="store_true", help="a small run (300 requests, 2 seeds)")
    args = parser.parse_args()

    scenario = load_scenario("bursty")
    seeds = [0, 1, 2, 3, 4]
    if args.smoke:
        scenario = scenario.with_overrides({"workload": {"max_requests": 300}})
        seeds = [0, 1]
    # the loader the command line's --policy uses: each run gets a fresh instance, checked on a short prefix first
    mine = policy_from_file(f"{Path(__file__).resolve()}:BusyShortDeflect", where="example", flag="--policy")
    result = evaluate(scenario, ["no-deflect", "kairos"], seeds, externals=[mine])
    print(format_table(result))

    # result["runs"]: one summary dict per (policy, seed) run (docs/metrics.md names the keys)
    def mean(label: str, key: str) -> float:
        return mean_ci([r[key] for r in result["runs"] if r["policy"] == label])[0]

    for key in ("slo_attainment", "ttft_p95"):
        print(f"{key}: {mine.label} {mean(mine.label, key):.3f} vs kairos {mean('kairos', key):.3f}")


if __name__ == "__main__":
    main()
