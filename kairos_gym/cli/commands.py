"""The list of ``kairos-gym`` commands: name, group, the module that registers it, its one-line description.

This table is all ``kairos-gym --help`` needs, so the top-level help imports no command module (and with them
numpy, gymnasium, torch or the C++ core): a command's module (``kairos_gym.cli.<module>``) is imported only when
that command runs or shows its own ``--help`` (:func:`kairos_gym.cli.main.build_parser`). Each description here
is also the description of the command's own ``--help`` (:func:`kairos_gym.cli.common.add_command` reads it).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Command:
    """One command: ``module`` (under ``kairos_gym.cli``) registers it in its ``add_commands(sub)``."""

    name: str
    group: str
    module: str
    description: str


GROUPS: tuple[tuple[str, str], ...] = (
    ("discover", "the names the other commands take, the shipped traces"),
    ("run", "policies on scenarios"),
    ("benchmark", "the standard suite, its reports and design checks"),
    ("train", "agents: training, distillation, selection, conversion"),
    ("performance", "throughput and memory on this machine"),
    ("machine", "the step-latency model; does this machine reproduce the results?"),
)
"""The command groups of ``kairos-gym --help``, in its order: (title, what their commands do)."""

COMMANDS: tuple[Command, ...] = (
    Command("list", "discover", "listing", "the shipped scenarios, the registered policies, the benchmark's tasks "
            "and the Gymnasium ids, one line each (kairos-gym list [scenarios|policies|tasks|envs])"),
    Command("traces", "discover", "traces", "the statistics of the shipped traces and rate profiles (requests, "
            "span, rate, IAT CV, length percentiles), of trace files, or of the workloads scenarios draw "
            "(--scenarios)"),
    Command("simulate", "run", "run", "run one policy (a registry name, a --policy FILE.py:CLASS or a --checkpoint "
            "DIR) on one scenario and print the summary"),
    Command("evaluate", "run", "run", "every policy on the same workloads (registry names, --policy files, "
            "--checkpoint folders); table, JSON, plots"),
    Command("sweep", "run", "run", "load sweep and SQ/SL threshold sweeps against Kairos (and the Oracle), your "
            "--policy/--checkpoint beside them"),
    Command("demo", "run", "run", "the main job: evaluate the policies on the default bursty scenario"),
    Command("measure", "run", "run", "the baselines on one scenario: P95 TTFT, TBT violations, SLO attainment, "
            "deflection and decision cost per policy; --acceptance: the acceptance criteria"),
    Command("fault-runs", "run", "run", "the fault runs of docs/reliability.md: Kairos on the shipped fault "
            "scenarios, re-entry decisions against the rule (3,000 requests each; --json)"),
    Command("leaderboard", "benchmark", "benchmark", "run the standard suite and write the leaderboard "
            "(out/leaderboard.md; docs/benchmark.md)"),
    Command("precision", "benchmark", "benchmark", "Stein's two-stage protocol: enough instances per task for the "
            "target interval of each policy's mean (docs/benchmark.md); writes results/precision.md"),
    Command("oracle-precision", "benchmark", "benchmark", "two-phase sampling of the Oracle's per-task means, "
            "headroom and normalised scores to a target interval (docs/benchmark.md); writes "
            "results/oracle-precision.md"),
    Command("oracle-cache", "benchmark", "benchmark", "regenerate the leaderboard Oracle's cached scores "
            "(kairos_gym/benchmark/oracle_cache.json; hours for the whole suite)"),
    Command("convergence", "benchmark", "benchmark", "the instance-length study: policies' scores and order vs "
            "burn-in and scored requests per synthetic family (tau-b, shift; docs/benchmark.md)"),
    Command("headroom", "benchmark", "benchmark", "suite v2's headroom against the Oracle per task (exact "
            "track): a certified bound from the board, and the Oracle on K test instances"),
    Command("pull-compare", "benchmark", "benchmark", "Kairos against Kairos-pull on the suite's prefill-bound "
            "tasks: SLO attainment with 95% intervals, paired differences (the table of docs/policies.md)"),
    Command("results", "benchmark", "benchmark", "regenerate results/paper-claims.md: the paper's claims next to "
            "the simulator's"),
    Command("check", "benchmark", "checks", "the benchmark's design checks: fault-switch, mix-shift, regime-shift, "
            "normalised-sizing (markdown tables)"),
    Command("train", "train", "train", "train a MaskablePPO / PPO / MaskableDQN agent from a training config "
            "(configs/ppo/*.yaml, configs/dqn/*.yaml)"),
    Command("distill", "train", "train", "distil the clairvoyant Oracle into a masked MLP policy: labels, "
            "training, validation (configs/ppo/distill.yaml)"),
    Command("curves", "train", "train", "learning curves across training seeds, rliable style: the IQM of the "
            "validation gap to Kairos per step, with stratified-bootstrap intervals over the runs"),
    Command("lofo", "train", "train", "leave one family out: a suite-v2 domain recipe retrained without each seen "
            "family, scored there against the recipe on every family and Kairos (docs/benchmark.md)"),
    Command("select", "train", "train", "choose between two distilled students on the train-side selection set "
            "(docs/training.md, \"A second selection protocol\")"),
    Command("compare", "train", "train", "trained checkpoints (and --policy files) against the baselines on "
            "several scenarios and loads (the generalisation table)"),
    Command("reward-order", "train", "train", "do an env reward's episode returns order the shipped policies as "
            "their SLO attainment does? (discordant pairs per reward kind, same seeds)"),
    Command("card", "train", "train", "a checkpoint folder's card, read from its files (nothing runs): what it "
            "trained on and how, seed, steps, export, and the evaluations, selection and leaderboard aggregates its "
            "meta.json records; --json writes the parsed files"),
    Command("convert", "train", "train", "convert a Stable-Baselines3 checkpoint (model zip + vecnormalize.pkl) "
            "to the safe format (policy.json, policy.npz, normalize.json)"),
    Command("perf", "performance", "performance", "throughput of the simulator, the pricing and the env on this "
            "machine"),
    Command("soak", "performance", "performance", "run a long scenario and report peak memory at simulated-time "
            "checkpoints, plus the request accounting (exit status 1 if it does not add up)"),
    Command("perf-scenario", "performance", "performance", "wall time of a whole scenario under no-deflect (JSON on "
            "stdout)"),
    Command("perf-env", "performance", "performance", "the env's decisions per second under a random masked "
            "policy, on one core (a JSON line per env id)"),
    Command("perf-train", "performance", "train", "end-to-end MaskablePPO steps per second of the domain-randomised "
            "recipes (configs/ppo/general-fast.yaml, v2-seen.yaml) and the single-scenario one (kairos-v0-fast.yaml) "
            "in one process, and their ratios (needs the [train] extra)"),
    Command("perf-components", "performance", "performance", "operations per second of the C++ core's components "
            "(link, event queue) against their Python counterparts"),
    Command("perf-pool", "performance", "performance", "the process pool's driver cost (CPU s, wall s) on a large "
            "map of trivial tasks"),
    Command("perf-oracle", "performance", "performance", "the rollout Oracle's cost: the exhaustive and the bounded "
            "search on one instance per thread count (the same result for each, checked), on the suite's instances "
            "(--suite), its growth in the requests (--growth), or how often an arrival finds the cluster empty "
            "(--empty)"),
    Command("latency", "machine", "machine", "step-latency table of a model/GPU/TP preset; calibration report and "
            "fit"),
    Command("verify", "machine", "machine", "does this machine reproduce the published results? (a few seconds; "
            "docs/reliability.md)"),
)
"""Every command, in the order of ``kairos-gym --help`` within its group."""

BY_NAME: dict[str, Command] = {c.name: c for c in COMMANDS}
"""The commands by name."""

MODULES: tuple[str, ...] = tuple(dict.fromkeys(c.module for c in COMMANDS))
"""The command modules (under ``kairos_gym.cli``), each once, in table order."""


def description(name: str) -> str:
    """The one-line description of command ``name`` (its line in ``kairos-gym --help``)."""
    return BY_NAME[name].description


__all__ = ["BY_NAME", "COMMANDS", "GROUPS", "MODULES", "Command", "description"]
