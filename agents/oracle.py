"""The clairvoyant rollout Oracle: an upper bound on the exact track.

The Oracle knows the future (the simulator's workload: every arrival time and output length) and the true
latencies (the simulator itself). At each decision it tries every candidate action and rolls each out to the
**end of the instance** under each of its **base policies**, then takes the action whose best rollout is best:

- candidates (``_core.candidate_actions``, src/core/rollout.cpp): the prefill path (join-shortest-queue), and for
  each decode node that can take a deflection a deflection with LargestSafe chunks and with each fixed menu size
  (``fixed_chunks=True``, default). Deduplicated when identical by construction: fixed sizes >= the prompt (one
  chunk of the whole prompt: only the smallest is kept), every fixed size when the prompt is <= the smallest
  menu size (LargestSafe runs it as one chunk too: only LargestSafe is kept). A decision with one candidate (no
  decode node can take a deflection) is taken without rollouts.
- base policies (:data:`DEFAULT_BASES`): no-deflect, kairos-exact (Kairos with staleness 0 and model error 0),
  always-deflect-ls, sq-ls and sl-ls (their default thresholds), decided inside the native core
  (src/core/base_policies.cpp, bit-identical to the Python policies: tests/core/test_base_policies.py).
  ``bases`` takes registry names or ``(name, params)`` pairs of these rules (also the fixed-chunk
  always-deflect, sq, sl) and of pending-switch (deflect while the decode nodes' pending admissions sum to >= k:
  the one base that switches when a fault cuts the KV links, e.g. on fault-shift; not a default base); a rule
  named twice (the same native spec) is rolled out once.
- each base policy's own action at the decision is added when it is not a candidate already (after the same
  dedupe: e.g. a fixed-chunk base with ``fixed_chunks=False``), so the improvement property below holds for
  any options.
- objective: the benchmark's score, SLO attainment (requests finished within both the TTFT and the TBT SLO,
  counted exactly as :func:`kairos_gym.sim.metrics.summarize` counts them), ties broken by the number of
  requests meeting the TTFT SLO plus those meeting the TBT SLO, then by candidate order (prefill path first,
  decode nodes by index, LargestSafe before fixed sizes in increasing order), then by base order.

Every rollout of one decision starts from the same state (a C++ copy of the simulator restored into a scratch
simulator; the workload is fixed and nothing in the exact track is random: common random numbers). The whole
decision is one native call (``_core.RolloutOracle.decide``).

**Rollout improvement property**: the Oracle's final SLO attainment is >= each base policy's on every instance.
Induction: every base policy is Markov in the simulator state and its own action is among the candidates (or
an action identical to it by construction), and rollouts are exact, so the best rollout value never decreases
from one decision to the next; at the first decision it is >= every base's run, at the last it is the Oracle's
own result. Tested in tests/agents/test_oracle.py on many small instances.

Cost: a decision with ``k`` candidates runs ``k x len(bases)`` rollouts of the rest of the instance, so a run of
``n`` requests costs O(n^2 k b / 2) simulated requests (measured in docs/policies.md). Size instances so that
fits (a few hundred requests), or bound on a prefix of the instance.

The Oracle rolls out inside the simulator's core: it decides for a :class:`kairos_gym.sim.Simulator` it is attached to
(``attach(sim)``; ``run_policy`` attaches it).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from kairos_gym.agents.base import BasePolicy
from kairos_gym.agents.baselines import SL, SQ, AlwaysDeflect, NoDeflect, PendingSwitch
from kairos_gym.agents.kairos import Kairos

from kairos_gym.compiled import core as _native_core
from kairos_gym.errors import ConfigError
from kairos_gym.scenario import ScenarioConfig, load_scenario
from kairos_gym.sim.hook import Decision, DecisionContext

DEFAULT_BASES: tuple[str, ...] = ("no-deflect", "kairos-exact", "always-deflect-ls", "sq-ls", "sl-ls")
"""The Oracle's base policies (registry names, default parameters), in tie-break order."""
BASE_NAMES = ("no-deflect", "kairos-exact", "always-deflect", "always-deflect-ls", "sq", "sq-ls", "sl", "sl-ls",
              "pending-switch")
"""The registry policies that have a native twin (:func:`native_spec`)."""
MAX_BASES = 16
"""Most base policies of one Oracle."""


def native_spec(policy: BasePolicy) -> dict[str, Any]:
    """The native base-policy spec (``_core.BasePolicy``) of a Python policy object, from its own constants (so
    the native decision is bit-identical). ConfigError for a policy without a native twin: anything but
    no-deflect, always-deflect(-ls), sq(-ls), sl(-ls), pending-switch and Kairos on the exact information track
    with the scenario's chunk menu."""
    c = _native_core()
    where = f"policy {policy.name}"
    if isinstance(policy, Kairos):
        if policy.realistic:
            raise ConfigError(where, "information.track", policy.scenario.information.track,
                              "exact (only Kairos on the exact track has a native twin)")
        if tuple(policy.chunk_menu) != tuple(sorted(policy.scenario.deflection.chunk_menu)):
            raise ConfigError(where, "chunk_menu", list(policy.chunk_menu),
                              f"the scenario's menu {list(policy.scenario.deflection.chunk_menu)}")
        return {"kind": c.BASE_KAIROS_EXACT, "alpha": float(policy.alpha), "beta": float(policy.beta),
                "ttft_slo_s": float(policy.scenario.slo.ttft_s), "prefill_budget": int(policy.prefill_budget),
                "xfer_setup_s": float(policy._xfer_setup), "xfer_per_token_s": float(policy._xfer_per_token),
                "menu_desc": [int(x) for x in policy.menu_desc]}
    if isinstance(policy, NoDeflect):
        return {"kind": c.BASE_NO_DEFLECT}
    if isinstance(policy, AlwaysDeflect):
        return {"kind": c.BASE_ALWAYS_DEFLECT, "chunk": int(policy.chunk)}
    if isinstance(policy, SQ):
        return {"kind": c.BASE_SQ, "chunk": int(policy.chunk), "threshold": float(policy.queue_threshold),
                "unit_requests": policy.unit == "requests"}
    if isinstance(policy, SL):
        return {"kind": c.BASE_SL, "chunk": int(policy.chunk), "threshold": float(policy.length_threshold)}
    if isinstance(policy, PendingSwitch):
        return {"kind": c.BASE_PENDING_SWITCH, "chunk": int(policy.chunk), "min_pending": int(policy.k)}
    raise ConfigError(where, "policy", policy.name, "a policy with a native twin: " + ", ".join(BASE_NAMES))


def base_policies(scenario: ScenarioConfig, bases: Any) -> list[tuple[str, dict[str, Any]]]:
    """``bases`` (names or ``(name, params)`` pairs) checked: ``[(name, params), ...]``."""
    allowed = ("a non-empty list of base policies: names from " + ", ".join(BASE_NAMES)
               + f" or [name, {{params}}] pairs, each once, at most {MAX_BASES}")
    if isinstance(bases, (str, bytes, Mapping)) or not isinstance(bases, Sequence) or not bases \
            or len(bases) > MAX_BASES:
        raise ConfigError("policy oracle", "bases", bases, allowed)
    out: list[tuple[str, dict[str, Any]]] = []
    for b in bases:
        if isinstance(b, str):
            name, params = b, {}
        elif isinstance(b, Sequence) and len(b) == 2 and isinstance(b[0], str) and isinstance(b[1], Mapping):
            name, params = b[0], dict(b[1])
        else:
            raise ConfigError("policy oracle", "bases", b, allowed)
        if name not in BASE_NAMES:
            raise ConfigError("policy oracle", "bases", name, allowed)
        if (name, params) in out:
            raise ConfigError("policy oracle", "bases", bases, allowed)
        out.append((name, params))
    return out


def _decision(kind: int, node: int, chunk: int) -> Decision:
    """A core action (kind 0 prefill / 1 deflect, node or -1, chunk or 0) as a Decision."""
    if kind == 0:
        return Decision.prefill_path(None if node < 0 else node)
    return Decision.deflect(node, chunk)


class Oracle(BasePolicy):
    """Clairvoyant rollout Oracle over the native core (see the module docstring)."""

    name = "oracle"

    def __init__(self, scenario: Any = "bursty", seed: int | None = 0, bases: Any = DEFAULT_BASES,
                 fixed_chunks: bool = True, threads: int = 1, exhaustive: bool = False,
                 reference: bool = False) -> None:
        """``threads``: the rollouts of one decision run on this many threads (1 to ``MAX_ROLLOUT_THREADS``, 64);
        the decisions and scores are the same for any number. ``exhaustive``: every rollout runs to the end, so
        :meth:`last_scores` holds every candidate's value under every base (the distillation labels need them);
        by default the bounded search stops the rollouts that cannot be chosen (the same decisions, see the
        module docstring). ``reference`` (with ``exhaustive``): the Oracle as it ran before its exact
        constant-factor savings (src/core/rollout.hpp), the cost baseline of ``kairos-gym perf-oracle --search
        reference``: the same run, slower. All three are execution settings, not part of :meth:`describe`."""
        super().__init__(seed)
        from kairos_gym.agents.registry import make_policy

        sc = load_scenario(scenario)
        self.scenario = sc
        # what the native rollouts implement: arrival decisions on the exact track, per-request records
        for field, value, allowed in (("information.track", sc.information.track, "exact"),
                                      ("deflection.decision_points", sc.deflection.decision_points, "arrival"),
                                      ("metrics.mode", sc.metrics.mode, "exact")):
            if value != allowed:
                raise ConfigError("policy oracle", field, value, f"{allowed} (the Oracle's rollouts support only it)")
        if not isinstance(fixed_chunks, bool):
            raise ConfigError("policy oracle", "fixed_chunks", fixed_chunks, "true or false")
        self.fixed_chunks = fixed_chunks
        most = int(_native_core().MAX_ROLLOUT_THREADS)
        if isinstance(threads, bool) or not isinstance(threads, int) or not 1 <= threads <= most:
            raise ConfigError("policy oracle", "threads", threads, f"a whole number from 1 to {most}")
        self.threads = threads
        if not isinstance(exhaustive, bool):
            raise ConfigError("policy oracle", "exhaustive", exhaustive, "true or false")
        self.exhaustive = exhaustive
        if not isinstance(reference, bool):
            raise ConfigError("policy oracle", "reference", reference, "true or false")
        if reference and not exhaustive:
            raise ConfigError("policy oracle", "reference", reference, "false, or true with exhaustive=True (the "
                              "reference search is exhaustive)")
        self.reference = reference
        self.bases = base_policies(sc, bases)
        self.specs: list[dict[str, Any]] = []
        for n, p in self.bases:  # a rule given twice under two spellings (sl-ls, [sl-ls, {length_threshold: 2048}])
            spec = native_spec(make_policy(n, sc, 0, **p))  # rolls out once: its rollouts would be identical
            if spec not in self.specs:
                self.specs.append(spec)
        self.sim: Any = None
        self._oracle: Any = None

    def attach(self, sim: Any) -> None:
        """Decide for this simulator (one of the Oracle's scenario)."""
        core = getattr(sim, "_core", None)
        if not isinstance(core, _native_core().Simulator):
            raise ConfigError("policy oracle", "engine", type(sim).__name__,
                              "a kairos_gym.sim.Simulator (the Oracle rolls out inside its core)")
        if sim.scenario != self.scenario:
            raise ConfigError("policy oracle", "scenario", sim.scenario.name,
                              f"a simulator of the Oracle's scenario {self.scenario.name!r}")
        self.sim = sim
        slo = self.scenario.slo
        self._oracle = _native_core().RolloutOracle(core, self.specs, float(slo.ttft_s), float(slo.tbt_s),
                                                    self.fixed_chunks, self.threads, self.exhaustive,
                                                    self.reference)

    @property
    def stats(self) -> dict[str, int]:
        """This run's decisions, searched decisions (more than one candidate), rollouts started, candidates,
        rollouts the bound stopped (``n_pruned``), values reused from the previous decision (``n_reused``) and
        decisions simulated inside rollouts (``n_rollout_decisions``: the cost, about the simulated requests); of
        them, those of the stopped rollouts (``n_stopped_decisions``) and the arrivals still to come when those
        started (``n_stopped_remaining``: what running them to the end would have cost, about)."""
        return dict(self._oracle.stats) if self._oracle is not None else {}

    def _reset_state(self) -> None:
        if getattr(self, "_oracle", None) is not None:
            self._oracle.reset_stats()

    def _decide(self, ctx: DecisionContext) -> Decision:
        if self._oracle is None:
            raise RuntimeError("Oracle needs the simulator it decides for: call oracle.attach(sim) first, or run it "
                               "with kairos_gym.agents.runner.run_policy(oracle, scenario, seed)")
        core = self.sim._core
        if core.pending_rid < 0 or core.pending_rid != ctx.request.rid:
            raise RuntimeError("Oracle.decide(ctx): ctx is not the attached simulator's pending decision")
        return _decision(*self._oracle.decide(core))

    def last_scores(self) -> list[tuple[Decision, list[tuple[int, int]]]]:
        """The last searched decision: per candidate, its (n_ok, n_partial) under each base (in base order);
        ``(-1, -1)`` where the bounded search stopped the rollout (it could not be chosen: worse than the chosen
        candidate's value, or equal to it and later in the tie-break order). ``exhaustive=True``: every value."""
        if self._oracle is None:
            return []
        cands = self._oracle.last_candidates()
        scores = self._oracle.last_scores()
        nb = self._oracle.n_bases
        return [(_decision(k, n, c), scores[i * nb:(i + 1) * nb]) for i, (k, n, c) in enumerate(cands)]

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), "bases": [n if not p else [n, p] for n, p in self.bases],
                "fixed_chunks": self.fixed_chunks}
