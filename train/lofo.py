"""Leave one family out (``kairos-gym lofo``; docs/benchmark.md, "Leave one family out").

Suite v2's unseen column asks whether a learnt entry transfers to data it never saw; leave-one-family-out asks the
same of each seen family, for a training **recipe** (a domain config, ``kairos_train/KairosGeneral-v0`` with
``suite: v2``): for every held-out family F of the recipe's families, the recipe is trained again on the others
(its validation, and so its best-checkpoint choice, never sees F either), and the agent is scored on F's v2 test
instances beside the agent the same recipe trains on **every** family (same seed, same budget) and Kairos.

- ``without-F - all``: what having trained on F is worth on F (negative: the recipe's score on F comes from
  training on F; about 0: it transfers to F from the other families);
- ``without-F - kairos``: whether the agent that never saw F still beats the analytical baseline there.

Each difference is paired (same test instances) with a bootstrap interval over the task's test instances; with
several training seeds, an instance's score is the mean over the seeds' agents. The interval is over instances with
the trained agents fixed: it does not contain the seed-to-seed spread of training (docs/training.md), which the report
shows per seed beside it.

The runs go to ``OUT/seed<s>/{all,without-<family>}/`` (each an ordinary training run folder with its ``export/``); a
run whose export exists and whose config equals the one asked for is reused, so an interrupted study resumes.
"""

from __future__ import annotations

import dataclasses
import json
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
from kairos_gym.train.config import TrainConfig

from kairos_gym.errors import ConfigError

SUITE = "v2"
"""The suite whose seen families are held out and whose test instances score the agents."""
TRACKS = ("exact", "realistic")
"""The information tracks the agents are scored on."""
MAX_SEEDS = 10
"""Most training seeds per study (each seed trains 1 + len(held out) runs)."""
REPS = 20_000
"""Bootstrap resamples of the intervals (seeded: they reproduce)."""
ALL = "all"
"""The label of the run on every family."""
MAX_JSON_BYTES = 64 * 2**20
"""Largest study JSON ``--from-json`` reads (bytes)."""
STUDY_KEYS = ("study", "suite", "command", "config", "families", "held_out", "seeds", "timesteps", "runs", "scores",
              "summary", "elapsed_s")
"""The keys of a study's JSON (:func:`run_lofo`)."""


def without(family: str) -> str:
    """The label of the run that leaves ``family`` out."""
    return f"without-{family}"


@dataclass(frozen=True)
class LofoRun:
    """One training run of the study: ``held_out`` None trains on every family of the recipe."""

    seed: int
    held_out: str | None
    folder: Path

    @property
    def name(self) -> str:
        """``all`` or ``without-<family>``."""
        return ALL if self.held_out is None else without(self.held_out)

    @property
    def label(self) -> str:
        """The entry label of its agent in the scores (``<name>/seed<s>``)."""
        return f"{self.name}/seed{self.seed}"

    @property
    def export(self) -> Path:
        """The run's exported checkpoint (safe format)."""
        return self.folder / "export"


def recipe_families(cfg: TrainConfig) -> tuple[str, ...]:
    """The families a suite-v2 domain recipe trains on (its ``env_kwargs.families``, else the domain's default);
    a ConfigError for any other kind of config."""
    from kairos_gym.benchmark.suites import default_training_families
    from kairos_gym.env.registration import GENERAL_ENV_ID

    where = f"lofo {cfg.source}"
    if cfg.env_id != GENERAL_ENV_ID:
        raise ConfigError(where, "env id", cfg.env_id, f"{GENERAL_ENV_ID} (a domain recipe: configs/ppo/v2-seen.yaml)")
    if cfg.env_kwargs.get("suite") != SUITE:
        raise ConfigError(where, "env_kwargs.suite", cfg.env_kwargs.get("suite"),
                          f"{SUITE} (families are held out of suite {SUITE}'s seen families)")
    fams = cfg.env_kwargs.get("families")
    fams = tuple(fams) if fams is not None else default_training_families(SUITE)
    if len(fams) < 2:
        raise ConfigError(where, "env_kwargs.families", list(fams), "at least two families (one is held out)")
    return fams


def parse_held_out(cfg: TrainConfig, value: str | None) -> tuple[str, ...]:
    """``--hold-out`` (comma-separated families; None: every family of the recipe), each a family of the recipe."""
    fams = recipe_families(cfg)
    if value is None:
        return fams
    names = [v.strip() for v in value.split(",")]
    for n in names:
        if n not in fams:
            raise ConfigError("lofo", "--hold-out", n, "families of the recipe: " + ", ".join(fams))
    if len(set(names)) != len(names):
        raise ConfigError("lofo", "--hold-out", value, "each family once")
    return tuple(f for f in fams if f in names)


def run_config(cfg: TrainConfig, held_out: str | None, seed: int, timesteps: int | None) -> TrainConfig:
    """The recipe for one run: ``held_out`` removed from its families (None: all kept), at ``seed`` and, if given,
    ``timesteps``. The written config.yaml declares the families it trained on (the board's "trained on")."""
    from kairos_gym.train.trainer import with_overrides

    fams = [f for f in recipe_families(cfg) if f != held_out]
    out = with_overrides(cfg, timesteps=timesteps, seed=seed)
    raw_kwargs = {**(out.raw.get("env_kwargs") or {}), "families": fams}
    return replace(out, env_kwargs={**out.env_kwargs, "families": fams}, raw={**out.raw, "env_kwargs": raw_kwargs})


def plan(cfg: TrainConfig, out: str | Path, held_out: Sequence[str], seeds: Sequence[int]) -> list[LofoRun]:
    """The study's runs: per seed, the run on every family, then one per held-out family."""
    if not seeds or len(seeds) > MAX_SEEDS or len(set(seeds)) != len(seeds):
        raise ConfigError("lofo", "--seeds", list(seeds), f"1 to {MAX_SEEDS} distinct seeds")
    out = Path(out)
    return [LofoRun(s, f, out / f"seed{s}" / (ALL if f is None else without(f)))
            for s in seeds for f in (None, *held_out)]


def _same_config(folder: Path, cfg: TrainConfig) -> bool:
    from kairos_gym.yaml_io import load_yaml_file

    path = folder / "config.yaml"
    return path.is_file() and load_yaml_file(path) == json.loads(json.dumps(cfg.to_yaml_dict()))


def train_runs(cfg: TrainConfig, runs: Sequence[LofoRun], timesteps: int | None, *, log: Any = print,
               progress: bool = False, command: str | None = None) -> list[dict[str, Any]]:
    """Train every run not already done (an export and the same config: reused); per run its label, families,
    reuse and training seconds."""
    from kairos_gym.train.trainer import train

    done = []
    for i, run in enumerate(runs):
        rcfg = run_config(cfg, run.held_out, run.seed, timesteps)
        fams = list(rcfg.env_kwargs["families"])
        if (run.export / "policy.json").is_file() and _same_config(run.folder, rcfg):
            log(f"[{i + 1}/{len(runs)}] {run.label}: reused {run.export}")
            meta = json.loads((run.folder / "meta.json").read_text(encoding="utf-8"))
            done.append({"label": run.label, "families": fams, "reused": True,
                         "train_seconds": meta.get("train_seconds")})
            continue
        log(f"[{i + 1}/{len(runs)}] {run.label}: training on {', '.join(fams)} "
            f"({rcfg.n_timesteps:,} timesteps) into {run.folder}")
        meta = train(rcfg, run.folder, progress=progress, export=run.export, command=command)
        log(f"[{i + 1}/{len(runs)}] {run.label}: {meta['train_seconds']:.0f} s")
        done.append({"label": run.label, "families": fams, "reused": False, "train_seconds": meta["train_seconds"]})
    return done


def seen_tasks() -> dict[str, Any]:
    """Suite v2's seen task of each family (the one a held-out family is scored on)."""
    from kairos_gym.benchmark.suites import suite_named

    return {t.family: t for t in suite_named(SUITE) if t.split != "unseen"}


def evaluate(runs: Sequence[LofoRun], held_out: Sequence[str], tracks: Sequence[str] = TRACKS,
             backend: Any = None, progress: Any = None,
             tasks: Mapping[str, Any] | None = None) -> dict[str, dict[str, dict[str, list[float]]]]:
    """``{track: {family: {label: per-instance SLO attainment}}}``: on each held-out family's test instances
    (``tasks``: family -> benchmark Task, default :func:`seen_tasks`), Kairos, every seed's agent without that
    family and every seed's agent on all families."""
    from kairos_gym.agents.policy_file_loader import policy_from_checkpoint

    from kairos_gym.benchmark.board_v2 import run_v2

    tasks = seen_tasks() if tasks is None else tasks
    out: dict[str, dict[str, dict[str, list[float]]]] = {}
    for track in tracks:
        out[track] = {}
        for fam in held_out:
            mine = [r for r in runs if r.held_out in (fam, None)]
            ext = [dataclasses.replace(policy_from_checkpoint(str(r.export), "lofo", "--runs"), label=r.label)
                   for r in mine]
            res = run_v2(["kairos"], ext, suite=(tasks[fam],), track=track, backend=backend, progress=progress,
                         command="kairos-gym lofo")
            out[track][fam] = {lab: list(map(float, res["scores"][lab][tasks[fam].name]))
                               for lab in ("kairos", *(r.label for r in mine))}
    return out


def _seed_mean(scores: dict[str, list[float]], name: str, seeds: Sequence[int]) -> np.ndarray:
    return np.mean([np.asarray(scores[f"{name}/seed{s}"], dtype=float) for s in seeds], axis=0)


def _diff(x: np.ndarray, y: np.ndarray) -> dict[str, float]:
    """The paired mean difference ``x - y`` in points, with its 95% bootstrap interval over the instances."""
    from kairos_gym.benchmark.aggregate import aggregate_mean, stratified_bootstrap

    pt, lo, hi = stratified_bootstrap(lambda a, b: aggregate_mean(a) - aggregate_mean(b), [[x], [y]], reps=REPS)
    return {"mean": 100 * pt, "low": 100 * lo, "high": 100 * hi}


def summarise(scores: dict[str, dict[str, dict[str, list[float]]]], seeds: Sequence[int]) -> dict[str, Any]:
    """Per track and held-out family: the three means (points), per-seed means, and the paired differences
    ``without - all`` and ``without - kairos``; per track the same over the held-out families (stratified)."""
    from kairos_gym.benchmark.aggregate import aggregate_mean, stratified_bootstrap

    out: dict[str, Any] = {}
    for track, by_fam in scores.items():
        rows = {}
        w_all: list[np.ndarray] = []
        a_all: list[np.ndarray] = []
        k_all: list[np.ndarray] = []
        for fam, sc in by_fam.items():
            w, a = _seed_mean(sc, without(fam), seeds), _seed_mean(sc, ALL, seeds)
            k = np.asarray(sc["kairos"], dtype=float)
            w_all.append(w)
            a_all.append(a)
            k_all.append(k)
            rows[fam] = {"without": 100 * float(w.mean()), "all": 100 * float(a.mean()),
                         "kairos": 100 * float(k.mean()),
                         "per_seed": {str(s): {"without": 100 * float(np.mean(sc[f"{without(fam)}/seed{s}"])),
                                               "all": 100 * float(np.mean(sc[f"{ALL}/seed{s}"]))} for s in seeds},
                         "without_vs_all": _diff(w, a), "without_vs_kairos": _diff(w, k),
                         "all_vs_kairos": _diff(a, k), "n": len(k)}
        pooled = {}
        for key, (x, y) in {"without_vs_all": (w_all, a_all), "without_vs_kairos": (w_all, k_all),
                            "all_vs_kairos": (a_all, k_all)}.items():
            pt, lo, hi = stratified_bootstrap(lambda p, q: aggregate_mean(p) - aggregate_mean(q), [x, y], reps=REPS)
            pooled[key] = {"mean": 100 * pt, "low": 100 * lo, "high": 100 * hi}
        out[track] = {"families": rows, "pooled": pooled}
    return out


def run_lofo(cfg: TrainConfig, out: str | Path, held_out: Sequence[str], seeds: Sequence[int],
             timesteps: int | None = None, tracks: Sequence[str] = TRACKS, *, backend: Any = None,
             log: Any = print, progress: Any = None, command: str = "kairos-gym lofo",
             tasks: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Train the study's runs (:func:`plan`, :func:`train_runs`), score them (:func:`evaluate`, on ``tasks``) and
    summarise; the JSON-ready result."""
    from kairos_gym.benchmark.provenance import provenance

    t0 = time.perf_counter()
    runs = plan(cfg, out, held_out, seeds)
    trained = train_runs(cfg, runs, timesteps, log=log, command=command)
    scores = evaluate(runs, held_out, tracks, backend, progress, tasks)
    return {"study": "leave-one-family-out", "suite": SUITE, "command": command, **provenance(),
            "config": cfg.source, "families": list(recipe_families(cfg)), "held_out": list(held_out),
            "seeds": list(seeds), "timesteps": run_config(cfg, None, seeds[0], timesteps).n_timesteps,
            "runs": trained, "scores": scores, "summary": summarise(scores, seeds),
            "elapsed_s": round(time.perf_counter() - t0, 1)}


def check_study(res: Any, path: str) -> dict[str, Any]:
    """``res`` if it is a study's JSON (its keys, this study kind, a summary per track), else a ConfigError naming
    ``--from-json``."""
    what = "the --json of an earlier kairos-gym lofo run"
    if not isinstance(res, dict) or res.get("study") != "leave-one-family-out":
        raise ConfigError("lofo", "--from-json", path, what)
    missing = [k for k in STUDY_KEYS if k not in res]
    if missing or not isinstance(res["summary"], dict) or not res["summary"]:
        raise ConfigError("lofo", "--from-json", path, f"{what} (missing: {', '.join(missing) or 'summary'})")
    return res


def _ci(d: dict[str, float]) -> str:
    return f"{d['mean']:+.1f} [{d['low']:+.1f}, {d['high']:+.1f}]"


def render(res: dict[str, Any]) -> str:
    """The study as markdown (results/lofo-v2.md)."""
    seeds = res["seeds"]
    lines = ["# Leave one family out, suite v2", "",
             f"Generated by `{res['command']}` at {res.get('commit', '?')}. Recipe `{res['config']}` "
             f"({res['timesteps']:,} timesteps per run, training seed(s) {', '.join(map(str, seeds))}); families "
             f"{', '.join(res['families'])}; each held-out family scored on its {SUITE} test instances "
             "(docs/benchmark.md, \"Leave one family out\").", "",
             "*without F*: the recipe trained on every family but F (its validation never sees F either); *all*: the "
             "same recipe, seed and budget on every family; both in SLO points (x 100) on F's test instances, an "
             "instance's score the mean over the seeds' agents. Differences are paired (same instances), with 95% "
             "bootstrap intervals over the instances (20,000 resamples; *pooled*: stratified over the held-out "
             "families, each weighted equally). The intervals hold the trained agents fixed: the spread between "
             "training seeds is in the per-seed columns, not in the intervals.", ""]
    for track in [t for t in TRACKS if t in res["summary"]]:
        summ = res["summary"][track]
        lines += [f"## {track} track", "",
                  "| held out | n | without F | all | kairos | without - all | without - kairos | all - kairos | "
                  "per seed (without / all) |",
                  "|---|---|---|---|---|---|---|---|---|"]
        for fam in res["held_out"]:  # the study's order (a JSON reader may sort the keys)
            r = summ["families"][fam]
            per = "; ".join(f"s{s}: {r['per_seed'][str(s)]['without']:.1f} / {r['per_seed'][str(s)]['all']:.1f}"
                            for s in seeds)
            lines.append(f"| {fam} | {r['n']} | {r['without']:.1f} | {r['all']:.1f} | {r['kairos']:.1f} | "
                         f"{_ci(r['without_vs_all'])} | {_ci(r['without_vs_kairos'])} | {_ci(r['all_vs_kairos'])} | "
                         f"{per} |")
        p = summ["pooled"]
        lines.append(f"| **pooled** | | | | | {_ci(p['without_vs_all'])} | {_ci(p['without_vs_kairos'])} | "
                     f"{_ci(p['all_vs_kairos'])} | |")
        lines.append("")
    secs = [r["train_seconds"] for r in res["runs"] if r.get("train_seconds") is not None]
    lines += [f"Training: {len(res['runs'])} runs ({sum(1 for r in res['runs'] if r['reused'])} reused), "
              f"{sum(secs):,.0f} s of training in all; whole study {res['elapsed_s']:,.0f} s (this machine; wall "
              "times vary, the scores do not)."]
    return "\n".join(lines) + "\n"


__all__ = ["ALL", "MAX_JSON_BYTES", "SUITE", "TRACKS", "LofoRun", "check_study", "evaluate", "parse_held_out",
           "plan", "recipe_families", "render", "run_config", "run_lofo", "seen_tasks",
           "summarise", "train_runs", "without"]
