"""``kairos-gym train --config C.yaml --tune SPACE.yaml``: Ray Tune sweeps of the SB3 pipeline (docs/scale-out.md).

Every trial is one ordinary SB3 training run (:func:`kairos_gym.train.trainer.train`) of the config with the
trial's hyperparameters put in, in its own folder (``<out>/<trial>/run``: model, TensorBoard logs in ``tb/``,
meta.json); it reports the figures of its last periodic evaluation (``eval.freq`` must be > 0) to Tune.
Tune's own per-trial TensorBoard files (``events.out.tfevents*``) sit in ``<out>/<trial>/``, so
``tensorboard --logdir <out>`` shows both. The search space file (read with
:func:`kairos_gym.yaml_io.load_yaml_file`)::

    metric: slo_attainment        # a figure of the evaluation (default slo_attainment)
    mode: max                     # max (default) or min
    num_samples: 1                # repeats of the grid (each with new draws of the random keys), 1..MAX_SAMPLES
    max_concurrent: 2             # trials at once (default: as many as CPUs allow, one CPU each)
    space:                        # config keys: the algorithm's hyperparameters, or n_envs
      learning_rate: {grid: [1.0e-4, 3.0e-4]}
      n_epochs: {choice: [2, 4]}
      gamma: {uniform: [0.95, 0.999]}
      ent_coef: {loguniform: [1.0e-4, 1.0e-2]}

Every key and every value is checked before Tune starts (each grid or choice value, and both bounds of a
range, are put in the config and parsed with :func:`kairos_gym.train.config.parse_config`).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from kairos_gym.train.config import TrainConfig, hyperparam_names, parse_config

from kairos_gym.errors import ConfigError, check_keys
from kairos_gym.evaluation.backends import BackendError

SPEC_KEYS = ("metric", "mode", "num_samples", "max_concurrent", "space")
KINDS = ("grid", "choice", "uniform", "loguniform")
METRICS = ("slo_attainment", "ttft_p95", "tbt_violation_rate", "deflection_rate")
MAX_SAMPLES = 1000
"""Largest ``num_samples``."""
MAX_TRIALS = 10_000
"""Most trials of one sweep (grid points x num_samples)."""
MAX_VALUES = 64
"""Most values of one ``grid`` or ``choice``."""


def trial_config(cfg: TrainConfig, params: dict[str, Any]) -> TrainConfig:
    """``cfg`` (with its command-line overrides) with ``params`` put into its section, parsed again."""
    body = {**cfg.to_yaml_dict()[cfg.env_id], **params}
    return parse_config({cfg.env_id: body}, cfg.env_id, source=f"{cfg.source} (tune trial {params})")


def load_space(path: str | Path, cfg: TrainConfig) -> dict[str, Any]:
    """The checked search-space file: ``{"metric", "mode", "num_samples", "max_concurrent", "space"}`` with
    ``space`` as ``{key: (kind, values)}``; ConfigError for anything wrong."""
    from kairos_gym.yaml_io import load_yaml_file

    p = Path(path)
    w = str(p)
    if not p.is_file():
        raise ConfigError("train", "--tune", str(path), "an existing YAML file (docs/scale-out.md)")
    data = load_yaml_file(p)
    if not isinstance(data, dict):
        raise ConfigError(w, "(top level)", data, "a mapping with the keys " + ", ".join(SPEC_KEYS))
    check_keys(w, data, SPEC_KEYS)
    metric = data.get("metric", "slo_attainment")
    if metric not in METRICS:
        raise ConfigError(w, "metric", metric, "one of " + ", ".join(METRICS))
    mode = data.get("mode", "max")
    if mode not in ("max", "min"):
        raise ConfigError(w, "mode", mode, "max or min")
    samples = data.get("num_samples", 1)
    if isinstance(samples, bool) or not isinstance(samples, int) or not 1 <= samples <= MAX_SAMPLES:
        raise ConfigError(w, "num_samples", samples, f"a whole number in [1, {MAX_SAMPLES}]")
    conc = data.get("max_concurrent")
    if conc is not None and (isinstance(conc, bool) or not isinstance(conc, int) or not 1 <= conc <= 256):
        raise ConfigError(w, "max_concurrent", conc, "a whole number in [1, 256]")
    space = data.get("space")
    if not isinstance(space, dict) or not space:
        raise ConfigError(w, "space", space, "a non-empty mapping: config key -> {grid|choice|uniform|loguniform: "
                          "...}")
    allowed = [*hyperparam_names(cfg.algo), "n_envs"]
    out: dict[str, tuple[str, list[Any]]] = {}
    grid_points = 1
    for key, spec in space.items():
        f = f"space.{key}"
        if key not in allowed:
            raise ConfigError(w, f, spec, "a hyperparameter of " + cfg.algo + " (" + ", ".join(allowed) + ")")
        if not isinstance(spec, dict) or len(spec) != 1 or next(iter(spec)) not in KINDS:
            raise ConfigError(w, f, spec, "one of {grid: [values]}, {choice: [values]}, {uniform: [low, high]}, "
                              "{loguniform: [low, high]}")
        kind, values = next(iter(spec.items()))
        if kind in ("grid", "choice"):
            if not isinstance(values, list) or not 1 <= len(values) <= MAX_VALUES:
                raise ConfigError(w, f"{f}.{kind}", values, f"a list of 1 to {MAX_VALUES} values")
            if kind == "grid":
                grid_points *= len(values)
        else:
            ok = (isinstance(values, list) and len(values) == 2
                  and all(isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) for v in values)
                  and values[0] < values[1] and (kind == "uniform" or values[0] > 0))
            if not ok:
                raise ConfigError(w, f"{f}.{kind}", values, "[low, high], finite numbers, low < high"
                                  + (", low > 0" if kind == "loguniform" else ""))
        for v in values:  # every value a trial may get (ranges: their bounds) must make a valid config
            try:
                trial_config(cfg, {key: v})
            except ConfigError as e:
                raise ConfigError(w, f"{f}.{kind}", v, f"values the config accepts ({e})") from None
        out[key] = (kind, list(values))
    if grid_points * samples > MAX_TRIALS:
        raise ConfigError(w, "space", f"{grid_points * samples} trials", f"at most {MAX_TRIALS} (grid x num_samples)")
    return {"metric": metric, "mode": mode, "num_samples": samples, "max_concurrent": conc, "space": out}


def _param_space(space: dict[str, tuple[str, list[Any]]]) -> dict[str, Any]:
    from ray import tune

    make = {"grid": tune.grid_search, "choice": tune.choice,
            "uniform": lambda v: tune.uniform(v[0], v[1]), "loguniform": lambda v: tune.loguniform(v[0], v[1])}
    return {k: make[kind](values) for k, (kind, values) in space.items()}


def _trainable(params: dict[str, Any], cfg: TrainConfig) -> None:
    """One trial: an SB3 run in the trial's folder; reports its last evaluation's figures."""
    from kairos_gym.train.trainer import train
    from ray import tune

    run = Path(tune.get_context().get_trial_dir()) / "run"
    meta = train(trial_config(cfg, dict(params)), run, progress=False, command="kairos-gym train --tune (trial)")
    ev = meta.get("last_eval") or {}
    tune.report({k: ev.get(k) for k in METRICS} | {"timesteps": meta["timesteps"], "run": str(run)})


def run_tune(cfg: TrainConfig, spec_path: str | Path, out: str | Path, *, workers: int | None = None,
             address: str | None = None) -> dict[str, Any]:
    """The sweep; returns ``{"best": {"params", metric...}, "trials": [...], "out"}`` (also ``<out>/tune.json``)."""
    import json

    from kairos_gym.evaluation.backends.ray_backend import import_ray

    ray = import_ray("train", "--tune", str(spec_path))
    spec = load_space(spec_path, cfg)
    if not cfg.eval.freq:
        raise ConfigError(cfg.source, "eval.freq", 0, "> 0 with --tune (a trial reports its last evaluation)")
    out = Path(out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    from ray import tune

    started = False
    if not ray.is_initialized():
        ray.init(address=address) if address else ray.init(num_cpus=workers, include_dashboard=False)
        started = True
    try:
        tuner = tune.Tuner(
            tune.with_resources(tune.with_parameters(_trainable, cfg=cfg), {"cpu": 1}),
            param_space=_param_space(spec["space"]),
            tune_config=tune.TuneConfig(metric=spec["metric"], mode=spec["mode"], num_samples=spec["num_samples"],
                                        max_concurrent_trials=spec["max_concurrent"]),
            run_config=tune.RunConfig(storage_path=str(out.parent), name=out.name, verbose=0),
        )
        grid = tuner.fit()
        trials = []
        for r in grid:
            if r.error is not None:
                first = str(r.error).splitlines()[0] if str(r.error) else type(r.error).__name__
                raise BackendError(f"tune trial {r.config} failed: {first}")
            trials.append({"params": {k: r.config[k] for k in spec["space"]},
                           **{k: r.metrics.get(k) for k in (*METRICS, "timesteps", "run")}})
        best = grid.get_best_result()
        res = {"metric": spec["metric"], "mode": spec["mode"], "out": str(out), "trials": trials,
               "best": {"params": {k: best.config[k] for k in spec["space"]},
                        **{k: best.metrics.get(k) for k in (*METRICS, "run")}}}
    finally:
        if started:
            ray.shutdown()
    (out / "tune.json").write_text(json.dumps(res, indent=2, sort_keys=True, default=str) + "\n", encoding="utf-8")
    return res
