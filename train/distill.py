"""Distil the clairvoyant rollout Oracle into a masked MLP policy: labels, training, validation.

**Labels (teacher-student, both information tracks).** A training instance (the benchmark's TRAIN side only:
:func:`kairos_gym.train.domain.training_instance`, seeds >= 10,000 or the trace's train windows but the last) runs
as two simulators in lockstep: ``E`` on the exact track, to which the :class:`~kairos_gym.agents.oracle.Oracle` is
attached, and ``R``, the same scenario and seed on the realistic track. The information track never changes the
physics (src/core/information.hpp: it only changes what the simulator *serves*; admission, the shortest queue and
the LargestSafe plan read the true state), so applying the same decision to both keeps them in the same state,
checked at every decision (same pending request, same clock) and at the end (same summary). At each decision:

- the Oracle's rollout values per candidate (``Oracle.last_scores``: per base policy ``(n_ok, n_partial)``; a
  candidate's value is its best base, compared as the Oracle compares, n_ok then n_partial) are spread over the
  env's discrete actions (:func:`action_values`): a fixed chunk that is the same single chunk as a candidate (size
  >= the prompt, or the prompt <= the smallest size) takes that candidate's value; a deflection the true state
  refuses falls back to the prefill path and takes its value;
- two samples are recorded: the **exact** view (``E``'s observation and mask) and the **realistic** view (``R``'s:
  the stale, noisy observation the realistic-track student will see, and its mask, which can offer deflections
  the true state refuses or hide ones it would take). Each view's labels are the actions its mask offers whose
  value is the best among them (``best``, a set) and one ``hard`` action: the Oracle's own when the view offers
  it, else the lowest-index best one;
- the behaviour (which decision is applied) is the Oracle's (round 0) or, for DAgger rounds, a student's greedy
  action on the realistic view (the Oracle still labels every state the student visits).

Decisions whose view offers one action only carry no information and are not kept for that view; those where
every offered action is best (``tie``: the rollouts cannot tell them apart) are kept, flagged, and weighted by
``tie_weight`` in training (their only label is the Oracle's tie-break: the prefill path first).

**Training**: an MLP (``hidden`` widths, ``activation``) on observations normalised with the dataset's mean and
variance (stored as the safe format's ``normalize.json``), by minimising ``-log P(best set) + hard_weight x
-log P(hard)`` over the masked softmax, Adam, minibatches. The result is written in the project's safe
checkpoint format (:mod:`kairos_gym.agents.checkpoint`, ``algo: maskable_ppo``: a masked-argmax MLP actor,
the architecture of the shipped MaskablePPO checkpoints), so ``kairos-gym leaderboard --checkpoint DIR`` and the
``ppo`` policy load it unchanged.

**Validation** (never the test split): the held-out train instances of :func:`kairos_gym.train.domain.
validation_cases` (every family x tier x track), SLO attainment of the student and of Kairos on each; logged
to TensorBoard (``distill/``) every ``eval_every`` epochs; the best epoch (mean SLO attainment gap to Kairos on
the realistic track) is kept.

Command::

    kairos-gym distill --config configs/ppo/distill.yaml --out runs/distill [--data runs/distill/data.npz]

Times in seconds, sizes in tokens.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from kairos_gym.agents.checkpoint import INPUTS

from kairos_gym.errors import ConfigError
from kairos_gym.scenario import ScenarioConfig

WHERE = "distill config"
MAX_INSTANCES = 2_000
"""Most label instances per round (each runs the Oracle: O(requests^2))."""
MAX_REQUESTS = 5_000
"""Largest per-instance request cap of a synthetic family."""
MAX_SAMPLES = 2_000_000
"""Most labelled samples of one dataset (x 57 float32 features: ~460 MB at most)."""
MAX_EPOCHS = 1_000
MAX_DAGGER_ROUNDS = 8
VIEWS = ("exact", "realistic")
DATASET_KEYS = ("obs", "mask", "best", "hard", "view", "task", "tie")
"""Arrays of a label dataset (``.npz``, read with ``allow_pickle=False``)."""
OPTIONAL_KEYS = ("kairos",)
"""Arrays a dataset may hold besides :data:`DATASET_KEYS`: ``kairos``, per row the env action Kairos on that view's
track takes at the decision (int16; datasets collected before it have none)."""
HARD_LABELS = ("oracle", "kairos-if-best")
"""Hard-label rules (``hard_label``): ``oracle``, the Oracle's own action when the view offers it (else the
lowest-index best); ``kairos-if-best``, Kairos's action (on the view's track) when it is in the best set, else
``oracle``'s."""
LABEL_RNG_TAG = 0x64697374
"""Mixed into ``label_seed``: the generator that draws the label jobs (and their DAgger rounds' jobs)."""


# ---------------------------------------------------------------------------------------------- config
@dataclass(frozen=True)
class DistillConfig:
    """Every knob of one distillation run (see configs/ppo/distill.yaml and docs/training.md)."""

    families: tuple[str, ...] = ()
    tiers: tuple[str, ...] = ("strict", "default", "relaxed")
    load: tuple[float, float] = (0.7, 1.3)
    instances_per_task: int = 4          # label instances per family x tier (round 0)
    max_requests: int = 500              # cap on a synthetic instance's requests (the Oracle is quadratic)
    dagger_rounds: int = 0               # rounds of student-visited states relabelled by the Oracle
    dagger_instances_per_task: int = 2
    hidden: tuple[int, ...] = (128, 128)
    activation: str = "Tanh"
    epochs: int = 60
    batch_size: int = 512
    learning_rate: float = 1e-3
    weight_decay: float = 1e-5
    hard_weight: float = 0.5
    tie_weight: float = 0.1              # weight of a tie row (every offered action best) in the loss
    eval_every: int = 10
    seeds: tuple[int, ...] = (0, 1, 2)
    label_seed: int = 0
    inputs: str = "observation"          # INPUTS: the observation alone, or + the one-hot of Kairos's action
    hard_label: str = "oracle"           # HARD_LABELS

    @classmethod
    def from_mapping(cls, raw: Any, where: str = WHERE) -> DistillConfig:
        """Validate a mapping (a YAML file's ``distill`` section); every bad value is a ConfigError."""
        from kairos_gym.agents.checkpoint import ACTIVATIONS, MAX_HIDDEN_LAYERS, MAX_WIDTH
        from kairos_gym.train.domain import DomainSpec

        if not isinstance(raw, Mapping):
            raise ConfigError(where, "distill", raw, "a mapping of distillation settings")
        names = {f for f in cls.__dataclass_fields__}
        for k in raw:
            if k not in names:
                raise ConfigError(where, str(k), raw[k], "one of " + ", ".join(sorted(names)))
        spec = DomainSpec.parse(raw.get("families"), raw.get("tiers"), ["exact"], raw.get("load", [0.7, 1.3]), where)

        def integer(name: str, lo: int, hi: int) -> int:
            v = raw.get(name, getattr(cls, name))
            if isinstance(v, bool) or not isinstance(v, int) or not lo <= v <= hi:
                raise ConfigError(where, name, v, f"a whole number from {lo} to {hi}")
            return int(v)

        def number(name: str, lo: float, hi: float) -> float:
            v = raw.get(name, getattr(cls, name))
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not np.isfinite(v) or not lo <= v <= hi:
                raise ConfigError(where, name, v, f"a number from {lo:g} to {hi:g}")
            return float(v)

        hidden = raw.get("hidden", list(cls.hidden))
        if isinstance(hidden, (str, bytes)) or not isinstance(hidden, Sequence) or not 1 <= len(hidden) \
                <= MAX_HIDDEN_LAYERS or any(isinstance(h, bool) or not isinstance(h, int) or not 1 <= h <= MAX_WIDTH
                                            for h in hidden):
            raise ConfigError(where, "hidden", hidden, f"1 to {MAX_HIDDEN_LAYERS} layer widths from 1 to {MAX_WIDTH}")
        act = raw.get("activation", cls.activation)
        if act not in ACTIVATIONS:
            raise ConfigError(where, "activation", act, "one of " + ", ".join(ACTIVATIONS))
        seeds = raw.get("seeds", list(cls.seeds))
        if isinstance(seeds, (str, bytes)) or not isinstance(seeds, Sequence) or not 1 <= len(seeds) <= 16 \
                or any(isinstance(s, bool) or not isinstance(s, int) or not 0 <= s < 2**31 for s in seeds) \
                or len(set(seeds)) != len(seeds):
            raise ConfigError(where, "seeds", seeds, "1 to 16 distinct whole numbers from 0 to 2**31 - 1")
        inputs = raw.get("inputs", cls.inputs)
        if inputs not in INPUTS:
            raise ConfigError(where, "inputs", inputs, "one of " + ", ".join(INPUTS))
        hard_label = raw.get("hard_label", cls.hard_label)
        if hard_label not in HARD_LABELS:
            raise ConfigError(where, "hard_label", hard_label, "one of " + ", ".join(HARD_LABELS))
        return cls(spec.families, spec.tiers, spec.load, integer("instances_per_task", 1, MAX_INSTANCES),
                   integer("max_requests", 10, MAX_REQUESTS), integer("dagger_rounds", 0, MAX_DAGGER_ROUNDS),
                   integer("dagger_instances_per_task", 1, MAX_INSTANCES), tuple(int(h) for h in hidden), str(act),
                   integer("epochs", 1, MAX_EPOCHS), integer("batch_size", 1, 65_536),
                   number("learning_rate", 1e-7, 1.0), number("weight_decay", 0.0, 1.0),
                   number("hard_weight", 0.0, 100.0), number("tie_weight", 0.0, 100.0),
                   integer("eval_every", 1, MAX_EPOCHS),
                   tuple(int(s) for s in seeds), integer("label_seed", 0, 2**31 - 1), str(inputs), str(hard_label))


def load_config(path: str | Path) -> DistillConfig:
    """The ``distill`` section of a YAML file (read through the project's bounded YAML reader)."""
    from kairos_gym.yaml_io import load_yaml_file

    raw = load_yaml_file(path)
    if not isinstance(raw, Mapping) or set(raw) != {"distill"}:
        raise ConfigError(f"distill config {path}", "top level", raw if not isinstance(raw, Mapping) else list(raw),
                          "one key, distill: a mapping of settings")
    return DistillConfig.from_mapping(raw["distill"], f"distill config {path}")


# ---------------------------------------------------------------------------------------------- labels
def action_values(layout: Any, ctx: Any, scores: Sequence[tuple[Any, Sequence[tuple[int, int]]]] | None
                  ) -> np.ndarray:
    """Per env action of ``layout`` (an :class:`~kairos_gym.env.actions.ActionLayout`), the Oracle's rollout
    value ``(n_ok, n_partial)`` at the exact-track decision ``ctx``: int64 ``(n, 2)``. ``scores``: the Oracle's
    ``last_scores()`` of this decision (None: one candidate, every action is the prefill path's equal). A
    deflection the true state refuses is the prefill path; a fixed chunk identical by construction to a
    candidate (one chunk of the whole prompt) takes that candidate's value; an action without a candidate
    (none should exist) gets ``(-1, -1)``, never best."""
    from kairos_gym.sim.hook import DEFLECT, LARGEST_SAFE

    out = np.full((layout.n, 2), -1, dtype=np.int64)
    if scores is None:
        out[:] = 0
        return out
    val: dict[tuple[int, int], tuple[int, int]] = {}
    for dec, per_base in scores:
        best = max((int(a), int(b)) for a, b in per_base)
        if dec.path == DEFLECT:
            val[(int(dec.decode_node), int(dec.chunk))] = best
        elif dec.prefill_node is None:
            val[(-1, 0)] = best
    prefill = val.get((-1, 0), (-1, -1))
    sizes = sorted(layout.menu)
    prompt = int(ctx.request.prompt_tokens)
    out[0] = prefill
    for a in range(1, layout.n):
        j, c = int(layout.node[a]), int(layout.chunk[a])
        if not ctx.decode[j].can_deflect:
            out[a] = prefill
            continue
        if c != LARGEST_SAFE:
            if prompt <= sizes[0]:
                c = LARGEST_SAFE
            elif c >= prompt:
                c = min(s for s in sizes if s >= prompt)
        out[a] = val.get((j, c), (-1, -1))
    return out


def view_labels(values: np.ndarray, mask: np.ndarray, chosen: int) -> tuple[np.ndarray, int, bool] | None:
    """``(best, hard, tie)`` of one view: the offered actions (``mask``) whose value is the best offered, the
    Oracle's ``chosen`` action when offered (else the lowest-index best), and whether every offered action is
    best (a tie: only the Oracle's tie-break, the prefill path first, tells them apart); None when the view
    offers one action only (nothing to learn)."""
    offered = np.flatnonzero(np.asarray(mask, dtype=bool))
    if len(offered) <= 1:
        return None
    key = values[:, 0] * (1 << 32) + values[:, 1]
    top = key[offered].max()
    best = np.zeros(len(mask), dtype=bool)
    best[offered[key[offered] == top]] = True
    hard = chosen if best[chosen] else int(np.flatnonzero(best)[0])
    return best, hard, bool(best.sum() == len(offered))


class LockstepError(RuntimeError):
    """The exact and realistic twins of one instance left the same state (they must not: the track is not physics)."""


def collect_instance(sc: ScenarioConfig, seed: int, task: int = 0, student: Any = None,
                     views: Sequence[str] = VIEWS) -> dict[str, np.ndarray]:
    """Labels of one instance (module docstring): ``sc`` on the exact track, workload seed ``seed``; ``student``
    (a :class:`~kairos_gym.agents.checkpoint.GreedyActor`, or None: the Oracle) decides what is applied, on the
    realistic view. Returns the :data:`DATASET_KEYS` arrays (``task``: this int on every row; ``view``: 0 exact,
    1 realistic), ``kairos`` (per row the env action of Kairos built for that view's track, deciding on that view's
    context: :class:`~kairos_gym.agents.inputs.KairosFeature`; never applied) plus ``summary_slo`` (the behaviour's
    SLO attainment)."""
    from kairos_gym.agents.inputs import KairosFeature, extra_size, one_hot
    from kairos_gym.agents.kairos import build_model
    from kairos_gym.agents.oracle import Oracle

    from kairos_gym.benchmark.suite import on_track
    from kairos_gym.env.actions import ActionLayout
    from kairos_gym.env.observation import ObservationLayout
    from kairos_gym.sim import Simulator

    if sc.information.track != "exact":
        raise ConfigError("distill", "information.track", sc.information.track, "exact (the Oracle's own track)")
    for v in views:
        if v not in VIEWS:
            raise ConfigError("distill", "views", v, "exact or realistic")
    sc_r = on_track(sc, "realistic")
    sim_e, sim_r = Simulator(sc, seed=seed), Simulator(sc_r, seed=seed)
    oracle = Oracle(sc, exhaustive=True)  # labels need every candidate's value (last_scores)
    oracle.reset()
    oracle.attach(sim_e)
    obs_l = ObservationLayout(sc, max_context=build_model(sc).model.max_context)
    act_l = ActionLayout(sc)
    kairos_e, kairos_r = KairosFeature(sc, act_l), KairosFeature(sc_r, act_l)
    s_inputs = getattr(student, "inputs", "observation")
    want = obs_l.size + extra_size(s_inputs, act_l.n)
    if student is not None and (student.observation_size != want or student.action_count != act_l.n):
        raise ConfigError("distill", "student", f"{student.observation_size} features, {student.action_count} actions",
                          f"{want} features and {act_l.n} actions (this scenario's env, inputs {s_inputs})")
    buf = np.zeros(obs_l.size, dtype=np.float32)
    rows: dict[str, list[Any]] = {k: [] for k in (*DATASET_KEYS, "kairos")}
    searched = 0
    while True:
        ce, cr = sim_e.next_decision(), sim_r.next_decision()
        if ce is None or cr is None:
            if ce is not None or cr is not None:
                raise LockstepError("one twin finished before the other")
            break
        if ce.request.rid != cr.request.rid or ce.now_s != cr.now_s:
            raise LockstepError(f"twins at request {ce.request.rid} / {cr.request.rid}, t {ce.now_s} / {cr.now_s}")
        dec = oracle.decide(ce)
        now_searched = oracle.stats["n_searched"]
        scores = oracle.last_scores() if now_searched > searched else None
        searched = now_searched
        values = action_values(act_l, ce, scores)
        chosen = act_l.action_of(dec, ce)
        obs_r = obs_l.encode(cr, buf).copy()
        mask_r = act_l.mask(cr).astype(bool)
        k_views = (kairos_e.action(ce), kairos_r.action(cr))
        for vi, name in enumerate(VIEWS):
            if name not in views:
                continue
            obs = obs_l.encode(ce, buf).copy() if vi == 0 else obs_r
            mask = act_l.mask(ce).astype(bool) if vi == 0 else mask_r
            lab = view_labels(values, mask, chosen)
            if lab is None:
                continue
            rows["obs"].append(obs)
            rows["mask"].append(mask)
            rows["best"].append(lab[0])
            rows["hard"].append(lab[1])
            rows["view"].append(vi)
            rows["task"].append(task)
            rows["tie"].append(lab[2])
            rows["kairos"].append(k_views[vi])
        if student is not None:
            x = obs_r if s_inputs == "observation" else np.concatenate([obs_r, one_hot(k_views[1], act_l.n)])
            dec = act_l.decision(student.act(x, mask_r))
        sim_e.apply(dec)
        sim_r.apply(dec)
    s_e, s_r = sim_e.summary(), sim_r.summary()
    if s_e["slo_attainment"] != s_r["slo_attainment"] or s_e["ttft_p95"] != s_r["ttft_p95"]:
        raise LockstepError("the twins' summaries differ")
    n = len(rows["obs"])
    out = {"obs": np.asarray(rows["obs"], dtype=np.float32).reshape(n, obs_l.size),
           "mask": np.asarray(rows["mask"], dtype=bool).reshape(n, act_l.n),
           "best": np.asarray(rows["best"], dtype=bool).reshape(n, act_l.n),
           "hard": np.asarray(rows["hard"], dtype=np.int64), "view": np.asarray(rows["view"], dtype=np.int8),
           "task": np.asarray(rows["task"], dtype=np.int16), "tie": np.asarray(rows["tie"], dtype=bool),
           "kairos": np.asarray(rows["kairos"], dtype=np.int16)}
    out["summary_slo"] = np.asarray(float(s_e["slo_attainment"]))
    return out


@dataclass(frozen=True)
class LabelJob:
    """One label instance: a family x tier of the suite at a load factor, on a training instance."""

    family: str
    tier: str
    load: float
    instance: Any  # kairos_gym.benchmark.suite.Instance
    max_requests: int

    def scenario(self) -> ScenarioConfig:
        from kairos_gym.train.domain import Draw

        sc = Draw(self.family, self.tier, "exact", self.load, self.instance, True).scenario()
        wl = sc.workload
        if wl.arrival.kind != "trace" and getattr(wl, "num_requests", 0) > self.max_requests:
            sc = sc.with_overrides({"workload": {"num_requests": self.max_requests}})
        return sc


def label_jobs(cfg: DistillConfig, per_task: int, rng: np.random.Generator) -> list[LabelJob]:
    """``per_task`` training instances of every family x tier of ``cfg`` (loads uniform in ``cfg.load``), in a
    fixed order from ``rng``; never a test or validation instance
    (:func:`~kairos_gym.train.domain.training_instance`)."""
    from kairos_gym.train.domain import _suite, training_instance

    suite = _suite()
    jobs = []
    lo, hi = cfg.load
    for _ in range(per_task):
        for fam in cfg.families:
            for tier in cfg.tiers:
                load = float(lo if lo == hi else rng.uniform(lo, hi))
                jobs.append(LabelJob(fam, tier, load, training_instance(suite[(fam, tier)], rng), cfg.max_requests))
    return jobs


def _label_job(arg: tuple[LabelJob, int, Any], tick: Callable[[], Any] | None) -> dict[str, Any]:
    """One backend task: :func:`collect_instance` of a job (``arg``: the job, its index, the student or None),
    with its wall time (``seconds``: a machine timing, not part of the labels)."""
    job, i, student = arg
    t0 = time.perf_counter()
    part = collect_instance(job.scenario(), job.instance.seed, i, student)
    return {"part": part, "seconds": time.perf_counter() - t0}


def collect(jobs: Sequence[LabelJob], student: Any = None, log: Callable[[str], Any] | None = None,
            backend: Any = None) -> dict[str, np.ndarray]:
    """The concatenated labels of ``jobs`` (``task`` = the job's index). The instances run on ``backend`` (a
    :class:`kairos_gym.evaluation.backends.Backend`; None: serially, in this process): each is independent
    and the results come back in the jobs' order, so every backend gives the serial run's arrays, bit for bit."""
    from kairos_gym.evaluation.backends import SerialBackend
    from kairos_gym.evaluation.backends import Task as BackendTask

    if len(jobs) > MAX_INSTANCES:
        raise ConfigError("distill", "instances", len(jobs), f"at most {MAX_INSTANCES} per round")
    run = backend or SerialBackend(retries=0)
    done = run.map([BackendTask(_label_job, (job, i, student), f"{job.family}/{job.tier} {job.instance.label}",
                                policy="oracle") for i, job in enumerate(jobs)])
    parts = []
    total = 0
    for i, (job, res) in enumerate(zip(jobs, done, strict=True)):
        part = res["part"]
        total += len(part["hard"])
        if total > MAX_SAMPLES:
            raise ConfigError("distill", "samples", total, f"at most {MAX_SAMPLES} labelled decisions")
        parts.append(part)
        if log is not None:
            log(f"[{i + 1}/{len(jobs)}] {job.family}/{job.tier} load {job.load:.2f} {job.instance.label}: "
                f"{len(part['hard'])} samples, behaviour SLO {float(part['summary_slo']):.3f}, "
                f"{res['seconds']:.1f} s")
    return {k: np.concatenate([p[k] for p in parts]) for k in (*DATASET_KEYS, *OPTIONAL_KEYS)}


def save_dataset(path: str | Path, data: Mapping[str, np.ndarray]) -> None:
    np.savez_compressed(path, **{k: data[k] for k in (*DATASET_KEYS, *OPTIONAL_KEYS) if k in data})


def load_dataset(path: str | Path) -> dict[str, np.ndarray]:
    """A dataset written by :func:`save_dataset` (no pickles: ``allow_pickle=False``; shapes checked): the
    :data:`DATASET_KEYS` arrays, and ``kairos`` when it holds one (:data:`OPTIONAL_KEYS`)."""
    with np.load(path, allow_pickle=False) as z:
        files = sorted(z.files)
        if files not in (sorted(DATASET_KEYS), sorted((*DATASET_KEYS, *OPTIONAL_KEYS))):
            raise ConfigError("distill dataset", "arrays", files, ", ".join(DATASET_KEYS) + " (and optionally "
                              + ", ".join(OPTIONAL_KEYS) + ")")
        n = int(z["hard"].shape[0])
        if n > MAX_SAMPLES:
            raise ConfigError("distill dataset", "samples", n, f"at most {MAX_SAMPLES}")
        data = {k: z[k] for k in files}
    for k in files:
        if data[k].shape[0] != n:
            raise ConfigError("distill dataset", k, data[k].shape, f"{n} rows")
    if "kairos" in data:
        k = data["kairos"]
        n_act = data["mask"].shape[1] if data["mask"].ndim == 2 else 0
        if k.ndim != 1 or not np.issubdtype(k.dtype, np.integer) or (n and (k.min() < 0 or k.max() >= n_act)):
            raise ConfigError("distill dataset", "kairos", f"{k.dtype} {k.shape}", f"action indices 0 to {n_act - 1}")
    return data


def student_inputs(data: Mapping[str, np.ndarray], inputs: str) -> np.ndarray:
    """The student's raw inputs of every row (float32 ``(n, features)``): ``obs``, followed for
    ``observation+kairos`` by the one-hot of the row's ``kairos`` action (ConfigError when the dataset has none)."""
    if inputs == "observation":
        return data["obs"]
    if inputs != "observation+kairos":
        raise ConfigError(WHERE, "inputs", inputs, "one of " + ", ".join(INPUTS))
    if "kairos" not in data:
        raise ConfigError("distill dataset", "arrays", sorted(data), "a kairos array (inputs observation+kairos: "
                          "collect the labels again, datasets from before it have none)")
    n_act = data["mask"].shape[1]
    return np.concatenate([data["obs"], np.eye(n_act, dtype=np.float32)[data["kairos"].astype(np.int64)]], axis=1)


def hard_labels(data: Mapping[str, np.ndarray], rule: str) -> np.ndarray:
    """The hard label of every row (int64) under ``rule`` (:data:`HARD_LABELS`): ``oracle``, the dataset's
    ``hard``; ``kairos-if-best``, the row's ``kairos`` action where it is in the row's ``best`` set, else ``hard``."""
    hard = data["hard"].astype(np.int64)
    if rule == "oracle":
        return hard
    if rule != "kairos-if-best":
        raise ConfigError(WHERE, "hard_label", rule, "one of " + ", ".join(HARD_LABELS))
    if "kairos" not in data:
        raise ConfigError("distill dataset", "arrays", sorted(data), "a kairos array (hard_label kairos-if-best)")
    k = data["kairos"].astype(np.int64)
    ok = data["best"][np.arange(len(k)), k]
    return np.where(ok, k, hard)


# ---------------------------------------------------------------------------------------------- training
def normalizer_stats(obs: np.ndarray) -> dict[str, Any]:
    """The safe format's ``normalize.json`` content for ``obs`` (mean and variance per feature, float64)."""
    x = obs.astype(np.float64)
    return {"norm_obs": True, "norm_reward": False, "clip_obs": 10.0, "clip_reward": 10.0, "epsilon": 1e-8,
            "gamma": 0.99, "obs_mean": x.mean(axis=0), "obs_var": x.var(axis=0), "obs_count": float(len(x))}


def set_loss(logits: Any, mask: Any, best: Any, hard: Any, hard_weight: float, weight: Any = None) -> Any:
    """Mean over rows of ``-log P(best) - hard_weight log P(hard)`` under the masked softmax (torch tensors),
    each row times ``weight`` (None: 1) when given."""
    import torch

    neg = torch.finfo(logits.dtype).min
    lg = logits.masked_fill(~mask, neg)
    lse = torch.logsumexp(lg, dim=1)
    lse_best = torch.logsumexp(lg.masked_fill(~best, neg), dim=1)
    loss = lse - lse_best
    if hard_weight:
        loss = loss + hard_weight * (lse - lg.gather(1, hard.view(-1, 1)).squeeze(1))
    return loss.mean() if weight is None else (loss * weight).mean()


def _actor(net: Any, stats: Mapping[str, Any], activation: str, inputs: str = "observation") -> Any:
    from kairos_gym.agents.checkpoint import GreedyActor, ObsNormalizer

    layers = [m for m in net if hasattr(m, "weight")]
    hidden = [(m.weight.detach().numpy().copy(), m.bias.detach().numpy().copy()) for m in layers[:-1]]
    head = (layers[-1].weight.detach().numpy().copy(), layers[-1].bias.detach().numpy().copy())
    norm = ObsNormalizer(np.asarray(stats["obs_mean"], dtype=np.float64),
                         np.asarray(stats["obs_var"], dtype=np.float64), float(stats["epsilon"]),
                         float(stats["clip_obs"]))
    return GreedyActor(hidden, head, activation, maskable=True, normalizer=norm, algo="maskable_ppo", inputs=inputs)


@dataclass
class TrainResult:
    actor: Any
    stats: dict[str, Any]
    history: list[dict[str, Any]] = field(default_factory=list)
    best_epoch: int = 0
    seconds: float = 0.0


def train_student(data: Mapping[str, np.ndarray], cfg: DistillConfig, seed: int,
                  validate: Callable[[Any], dict[str, float]] | None = None,
                  writer: Any = None, log: Callable[[str], Any] | None = None) -> TrainResult:
    """Fit the masked MLP on ``data`` (module docstring). ``validate(actor) -> scalars`` runs every
    ``cfg.eval_every`` epochs and at the end; the best epoch by ``validate``'s ``select`` key is returned (the last
    one without ``validate``). ``writer``: a TensorBoard SummaryWriter (``distill/`` scalars)."""
    import torch

    t0 = time.perf_counter()
    torch.manual_seed(seed)
    rng = np.random.default_rng(seed)
    raw = student_inputs(data, cfg.inputs)
    stats = normalizer_stats(raw)
    std = np.sqrt(stats["obs_var"] + stats["epsilon"])
    x = torch.from_numpy(np.clip((raw - stats["obs_mean"]) / std, -10, 10).astype(np.float32))
    mask = torch.from_numpy(data["mask"].astype(bool))
    best = torch.from_numpy(data["best"].astype(bool))
    hard = torch.from_numpy(hard_labels(data, cfg.hard_label))
    tie = torch.from_numpy(data["tie"].astype(bool))
    wt = torch.from_numpy(np.where(data["tie"], cfg.tie_weight, 1.0).astype(np.float32))
    act = getattr(torch.nn, cfg.activation)
    layers: list[Any] = []
    width = x.shape[1]
    for h in cfg.hidden:
        layers += [torch.nn.Linear(width, h), act()]
        width = h
    layers.append(torch.nn.Linear(width, mask.shape[1]))
    net = torch.nn.Sequential(*layers)
    opt = torch.optim.Adam(net.parameters(), lr=cfg.learning_rate, weight_decay=cfg.weight_decay)
    n = x.shape[0]
    res = TrainResult(_actor(net, stats, cfg.activation, cfg.inputs), stats)
    best_score = -np.inf
    for epoch in range(1, cfg.epochs + 1):
        perm = torch.from_numpy(rng.permutation(n))
        tot = 0.0
        for i in range(0, n, cfg.batch_size):
            idx = perm[i:i + cfg.batch_size]
            loss = set_loss(net(x[idx]), mask[idx], best[idx], hard[idx], cfg.hard_weight, wt[idx])
            opt.zero_grad()
            loss.backward()
            opt.step()
            tot += float(loss.detach()) * len(idx)
        row: dict[str, Any] = {"epoch": epoch, "loss": tot / n}
        if epoch % cfg.eval_every == 0 or epoch == cfg.epochs:
            with torch.no_grad():
                lg = net(x).masked_fill(~mask, torch.finfo(torch.float32).min)
                pick = lg.argmax(dim=1)
                hit = best[torch.arange(n), pick]
                row["train_best_accuracy"] = float(hit[~tie].float().mean()) if bool((~tie).any()) else 1.0
            actor = _actor(net, stats, cfg.activation, cfg.inputs)
            if validate is not None:
                row.update(validate(actor))
            score = row.get("select", epoch)
            if score > best_score:
                best_score, res.actor, res.best_epoch = score, actor, epoch
        res.history.append(row)
        if writer is not None:
            for k, v in row.items():
                if k != "epoch" and isinstance(v, (int, float)):
                    writer.add_scalar(f"distill/{k}", v, epoch)
        if log is not None and len(row) > 2:
            log("  " + ", ".join(f"{k} {v:.4f}" if isinstance(v, float) else f"{k} {v}" for k, v in row.items()))
    res.seconds = time.perf_counter() - t0
    return res


# ---------------------------------------------------------------------------------------------- validation
def validation_suite(cfg: DistillConfig) -> tuple[list[Any], dict[str, float]]:
    """The held-out validation cases (every family x tier of ``cfg`` x both tracks, the families' last train
    instance) and Kairos's SLO attainment on each (run once). The normalisation anchors of each case (no-deflect
    and kairos-exact, :data:`~kairos_gym.train.domain.ANCHOR_BASELINE` / ``ANCHOR_REFERENCE``) are in
    :func:`validation_anchors`."""
    from kairos_gym.train.domain import DomainSpec, run_reference, validation_cases

    spec = DomainSpec(cfg.families, cfg.tiers, VIEWS, (1.0, 1.0), True)
    cases = validation_cases(spec)
    return cases, {c.label: run_reference(c, "kairos")["slo_attainment"] for c in cases}


def validation_anchors(cases: Sequence[Any]) -> dict[str, tuple[float, float]]:
    """``{case label: (no-deflect, kairos-exact)}`` SLO attainment: the 0 and the 1 of the validation's normalised
    score (the training env's anchors, train/domain.py: the clairvoyant Oracle has no cached scores on train-side
    instances, so its place is taken by Kairos with exact information)."""
    from kairos_gym.train.domain import ANCHOR_BASELINE, ANCHOR_REFERENCE, run_reference

    return {c.label: (run_reference(c, ANCHOR_BASELINE)["slo_attainment"],
                      run_reference(c, ANCHOR_REFERENCE)["slo_attainment"]) for c in cases}


def run_student(actor: Any, case: Any) -> dict[str, float]:
    """A student's figures (:data:`~kairos_gym.train.domain.VALIDATION_KEYS`) on a validation ``case``: one whole
    episode of a bare KairosEnv of the case's scenario with greedy actions on the actor's inputs (``inputs``
    ``observation``: :func:`~kairos_gym.train.domain.run_actor` itself; ``observation+kairos``: the observation
    followed by the one-hot of the action Kairos, built for the case's scenario, takes on the env's pending
    :class:`~kairos_gym.sim.hook.DecisionContext`, as :class:`~kairos_gym.agents.ppo.PPOAgent` computes it)."""
    from kairos_gym.agents.inputs import KairosFeature
    from kairos_gym.train.domain import VALIDATION_KEYS, run_actor

    from kairos_gym.env.core import KairosEnv

    inputs = getattr(actor, "inputs", "observation")
    if inputs == "observation":
        return run_actor(actor, case)
    sc = case.scenario()
    env = KairosEnv(sc)
    feat = KairosFeature(sc, env.action_layout)
    obs, info = env.reset(seed=int(case.instance.seed))
    while True:
        x = np.concatenate([obs, feat.encode(env.decision_context)])
        obs, _r, term, trunc, info = env.step(actor.act(x, info["action_mask"]))
        if term or trunc:
            return {k: float(info["summary"][k]) for k in VALIDATION_KEYS}


def validate_actor(actor: Any, cases: Sequence[Any], kairos: Mapping[str, float],
                   anchors: Mapping[str, tuple[float, float]] | None = None) -> dict[str, float]:
    """The student's SLO attainment on ``cases`` against Kairos's: per track the mean gap, the worst case's gap
    (``worst_<track>``) and the win rate (ties 1/2); ``select`` = the realistic track's mean gap. With ``anchors``
    (:func:`validation_anchors`), also per track the mean and IQM of the normalised score (``norm_mean_<track>``,
    ``norm_iqm_<track>``; cases without room to normalise in are left out, as on the leaderboard); they are
    logged, never used to choose an epoch."""
    from kairos_gym.train.domain import normalized_score, summarize_scores

    out: dict[str, float] = {}
    norm: dict[str, float | None] = {}
    for track in VIEWS:
        gaps = []
        for c in cases:
            if c.track != track:
                continue
            x = run_student(actor, c)["slo_attainment"]
            gaps.append(x - kairos[c.label])
            if anchors is not None:
                norm[c.label] = normalized_score(x, *anchors[c.label])
        if gaps:
            g = np.asarray(gaps)
            out[f"gap_{track}"] = float(g.mean())
            out[f"worst_{track}"] = float(g.min())
            out[f"win_{track}"] = float(((g > 0) + 0.5 * (g == 0)).mean())
    if anchors is not None:
        agg = summarize_scores(norm)
        for track in VIEWS:
            if track in agg and agg[track]["n"]:
                out[f"norm_mean_{track}"] = agg[track]["mean"]
                out[f"norm_iqm_{track}"] = agg[track]["iqm"]
    out["select"] = out.get("gap_realistic", out.get("gap_exact", 0.0))
    return out


# ---------------------------------------------------------------------------------------------- pipeline
def run(cfg: DistillConfig, out: str | Path, data_path: str | Path | None = None,
        log: Callable[[str], Any] = print, backend: Any = None) -> dict[str, Any]:
    """Collect labels (or load ``data_path``), the DAgger rounds, then train one student per seed; write
    ``out/data.npz``, ``out/seed<s>/`` (safe checkpoint of the best validation epoch, ``history.jsonl``,
    ``tb/``) and ``out/meta.json``. Returns the meta. The label instances run on ``backend`` (:func:`collect`;
    None: serially), with the serial run's labels."""
    import torch

    torch.set_num_threads(1)
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    meta: dict[str, Any] = {"config": {k: list(v) if isinstance(v, tuple) else v for k, v in asdict(cfg).items()},
                            "command": " ".join(sys.argv), "rounds": [], "seeds": {}}
    t0 = time.perf_counter()
    rng = np.random.default_rng([cfg.label_seed, LABEL_RNG_TAG])
    if data_path is not None:
        data = load_dataset(data_path)
        meta["rounds"].append({"round": 0, "loaded": str(data_path), "samples": len(data["hard"])})
    else:
        jobs = label_jobs(cfg, cfg.instances_per_task, rng)
        log(f"round 0: {len(jobs)} instances, Oracle behaviour")
        data = collect(jobs, None, log, backend)
        meta["rounds"].append({"round": 0, "instances": len(jobs), "samples": len(data["hard"]),
                               "seconds": time.perf_counter() - t0})
    student_inputs(data, cfg.inputs)  # a dataset without the kairos array: refused before any training
    hard_labels(data, cfg.hard_label)
    save_dataset(out / "data.npz", data)
    cases, kairos = validation_suite(cfg)
    anchors = validation_anchors(cases)
    meta["validation_kairos"] = kairos
    meta["validation_anchors"] = {k: list(v) for k, v in anchors.items()}
    validate = _bind(validate_actor, cases=cases, kairos=kairos, anchors=anchors)
    for r in range(1, cfg.dagger_rounds + 1):
        t1 = time.perf_counter()
        student = train_student(data, cfg, cfg.seeds[0], validate, log=log).actor
        jobs = label_jobs(cfg, cfg.dagger_instances_per_task, rng)
        log(f"round {r}: {len(jobs)} instances, student behaviour (DAgger)")
        extra = collect(jobs, student, log, backend)
        extra["task"] = extra["task"] + int(data["task"].max()) + 1
        data = {k: np.concatenate([data[k], extra[k]]) for k in (*DATASET_KEYS, *OPTIONAL_KEYS)
                if k in data and k in extra}
        meta["rounds"].append({"round": r, "instances": len(jobs), "samples": len(extra["hard"]),
                               "seconds": time.perf_counter() - t1})
        save_dataset(out / "data.npz", data)
    meta["label_seconds"] = time.perf_counter() - t0
    from kairos_gym.agents.checkpoint import write_policy

    for seed in cfg.seeds:
        folder = out / f"seed{seed}"
        writer = _writer(folder / "tb")
        log(f"training seed {seed} on {len(data['hard'])} samples")
        res = train_student(data, cfg, seed, validate, writer, log)
        if writer is not None:
            writer.close()
        prov = {"trainer": "kairos_gym.train.distill", "seed": seed, "best_epoch": res.best_epoch,
                "samples": len(data["hard"]), "teacher": "oracle (exact track rollouts)"}
        if cfg.inputs != "observation" or cfg.hard_label != "oracle":
            prov.update({"inputs": cfg.inputs, "hard_label": cfg.hard_label})
        write_policy(folder, res.actor, res.stats, prov)
        with open(folder / "history.jsonl", "w", encoding="utf-8") as f:
            for row in res.history:
                f.write(json.dumps(row) + "\n")
        meta["seeds"][str(seed)] = {"best_epoch": res.best_epoch, "train_seconds": res.seconds,
                                    "best": next(r for r in res.history if r["epoch"] == res.best_epoch)}
    meta["total_seconds"] = time.perf_counter() - t0
    (out / "meta.json").write_text(json.dumps(meta, indent=1) + "\n", encoding="utf-8")
    return meta


def _bind(fn: Callable[..., Any], **kw: Any) -> Callable[[Any], Any]:
    """``actor -> fn(actor, **kw)``."""
    return lambda actor: fn(actor, **kw)


def _writer(folder: Path) -> Any:
    try:
        from torch.utils.tensorboard import SummaryWriter
    except ImportError:  # tensorboard not installed: history.jsonl only
        return None
    return SummaryWriter(str(folder))
