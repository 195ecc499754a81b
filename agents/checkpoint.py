"""The project's own checkpoint format for trained policies: data only, nothing in it can execute code.

A checkpoint is a folder with

- ``policy.json``: what the network is (``format``, ``version``, ``algo``, ``maskable``,
  ``observation_size``, ``action_count``, ``hidden_sizes``, ``activation``, ``obs_normalization``, an
  optional ``inputs`` (the input layout, one of :data:`INPUTS`; absent: ``observation``, the environment's
  observation alone) and an optional free-form ``provenance`` mapping);
- ``policy.npz``: the actor's weights, float32, read with ``numpy.load(..., allow_pickle=False)``:
  ``layer<i>.weight`` (out x in) and ``layer<i>.bias`` per hidden layer, then ``action.weight`` and
  ``action.bias`` (the logits layer);
- ``normalize.json`` (required when ``obs_normalization`` is true): the VecNormalize statistics the
  observations were normalised with (``obs_mean``, ``obs_var``, ``epsilon``, ``clip_obs``, and for the
  record ``norm_obs``, ``norm_reward``, ``clip_reward``, ``gamma``, ``obs_count``).

:class:`GreedyActor` rebuilds the actor from these arrays and runs it with the C++ core's portable forward pass
(``kairos_gym._core.MlpActor``, src/core/mlp_forward.hpp): each unit is the float32 rounding of a double
sum taken in a fixed order (bias, then inputs by increasing index), each activation is computed in double from the
core's portable exp/expm1 (GELU: a portable erfc) and rounded once, so the logits, hence the greedy action, are the
same on every CPU (x86-64 with or without AVX2/FMA/AVX-512, aarch64), and acting needs no torch. Stable-Baselines3's
own forward (torch's float32 kernels, chosen by CPU feature) differs from them in the last bits: the greedy action is
SB3's ``model.predict(obs, deterministic=True, action_masks=mask)`` except where two unmasked logits lie within that
rounding of each other. Measured (``python tools/actor_agreement.py --requests 3000 --seeds 0 1 2 3 4``: the shipped
``ppo`` on bursty seeds 0-4, 15,000 decisions; ``distilled-oracle`` on the first two test instances of every suite task,
both tracks, 46,230 decisions): the same action as the old torch forward in 61,230 of 61,230 decisions (smallest gap
between the two best unmasked logits 1.0e-4), logits at most 2.9e-6 from torch's (from a float64 reference: these
9.4e-7, torch's 3.0e-6);
the shipped agent also takes SB3's recorded actions (tests/train/test_shipped_agent.py). Every size is bounded
(the ``MAX_*`` constants) and checked before the arrays are read. Stable-Baselines3 zips and
``vecnormalize.pkl`` files are another matter: they carry pickles, so loading them is opt-in
(``trust_checkpoint``, see :func:`resolve_checkpoint` and :mod:`kairos_gym.train.checkpoints`).
"""

from __future__ import annotations

import functools
import json
import math
import re
import zipfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from kairos_gym.errors import ConfigError
from kairos_gym.json_file import read_json_file

FORMAT = "kairos-gym-policy"
VERSION = 1
POLICY_JSON = "policy.json"
WEIGHTS_NPZ = "policy.npz"
NORMALIZE_JSON = "normalize.json"
SAFE_FILES = (POLICY_JSON, WEIGHTS_NPZ, NORMALIZE_JSON)

ALGOS = ("maskable_ppo", "ppo", "maskable_dqn")
"""How a checkpoint's network was trained (``policy.json`` ``algo``): MaskablePPO's or PPO's actor (logits), or
MaskableDQN's Q-network (Q-values); the greedy action is the (masked) argmax of the outputs either way."""
ACTIVATIONS = ("Tanh", "ReLU", "ELU", "LeakyReLU", "SiLU", "GELU", "Sigmoid")
"""``torch.nn`` activations the format (and a training config's ``activation_fn``) accepts, default arguments."""
MAX_OBSERVATION_SIZE = 65_536
"""Largest observation (features)."""
MAX_ACTIONS = 4_096
"""Most discrete actions."""
MAX_HIDDEN_LAYERS = 16
"""Most hidden layers of the actor."""
MAX_WIDTH = 4_096
"""Widest hidden layer (units)."""
MAX_JSON_BYTES = 8 << 20
"""Largest ``policy.json`` / ``normalize.json`` read (bytes)."""
MAX_NPZ_BYTES = 512 << 20
"""Largest ``policy.npz`` read (bytes, on disk and uncompressed)."""

INPUTS = ("observation", "observation+kairos")
"""Input layouts of a checkpoint (``policy.json`` ``inputs``): ``observation``, the env's observation (the default,
and what a checkpoint without the key has); ``observation+kairos``, the observation followed by a one-hot
(``action_count`` floats) of the action Kairos, on the scenario's information track, takes at the same decision
(:mod:`kairos_gym.agents.inputs`)."""
_POLICY_KEYS = ("format", "version", "algo", "maskable", "observation_size", "action_count", "hidden_sizes",
                "activation", "obs_normalization", "inputs", "provenance")
_NORMALIZE_KEYS = ("norm_obs", "norm_reward", "clip_obs", "clip_reward", "epsilon", "gamma", "obs_mean", "obs_var",
                   "obs_count")
_SB3_CKPT = re.compile(r"^ckpt_(\d+)_steps$")


# ---------------------------------------------------------------------------------------------- the actor
@dataclass(frozen=True)
class ObsNormalizer:
    """VecNormalize's observation transform: ``clip((obs - mean) / sqrt(var + epsilon), -clip_obs, clip_obs)``
    in float64, then float32 (bit for bit what ``VecNormalize.normalize_obs`` computes)."""

    mean: np.ndarray  # float64, (observation_size,)
    var: np.ndarray  # float64, (observation_size,)
    epsilon: float
    clip_obs: float

    def __call__(self, obs: np.ndarray) -> np.ndarray:
        return np.clip((obs - self.mean) / np.sqrt(self.var + self.epsilon), -self.clip_obs,
                       self.clip_obs).astype(np.float32)


class GreedyActor:
    """Deterministic (masked argmax) action of an MLP actor for one flat observation, the same on every CPU.

    ``hidden``: ``(weight, bias)`` per hidden layer (float32, weight out x in), each followed by
    ``activation``; ``head``: the logits layer. ``normalizer`` is applied to the raw observation first.
    The forward pass is the C++ core's portable one (``kairos_gym._core.MlpActor``, src/core/mlp_forward.hpp):
    each unit is ``float32(bias + sum_i w_i x_i)`` summed in double in a fixed order (bias, then inputs by
    increasing index), each activation computed in double from the portable transcendentals and rounded once to
    float32. No torch: importing or running it needs none. Shapes are checked here (one :class:`ConfigError`).
    """

    def __init__(self, hidden: Sequence[tuple[np.ndarray, np.ndarray]], head: tuple[np.ndarray, np.ndarray],
                 activation: str = "Tanh", *, maskable: bool = True, normalizer: ObsNormalizer | None = None,
                 algo: str = "maskable_ppo", inputs: str = "observation") -> None:
        if activation not in ACTIVATIONS:
            raise ConfigError("GreedyActor", "activation", activation, "one of " + ", ".join(ACTIVATIONS))
        if inputs not in INPUTS:
            raise ConfigError("GreedyActor", "inputs", inputs, "one of " + ", ".join(INPUTS))
        self.activation = activation
        self.hidden = [(_f32(w), _f32(b)) for w, b in hidden]
        """``(weight, bias)`` per hidden layer (float32 numpy arrays, weight out x in)."""
        self.head = (_f32(head[0]), _f32(head[1]))
        """The logits layer's ``(weight, bias)`` (float32)."""
        _check_layers(self.hidden, self.head)
        self.observation_size = int((self.hidden[0][0] if self.hidden else self.head[0]).shape[1])
        self.action_count = int(self.head[0].shape[0])
        self.maskable = bool(maskable)
        self.normalizer = normalizer
        self.algo = algo
        self.inputs = inputs
        """The input layout (:data:`INPUTS`): what :attr:`observation_size` features are."""
        from kairos_gym.compiled import core

        layers = [*self.hidden, self.head]
        self._net = core().MlpActor([w for w, _ in layers], [b for _, b in layers], activation)

    @property
    def hidden_sizes(self) -> list[int]:
        return [int(w.shape[0]) for w, _ in self.hidden]

    def normalize(self, obs: np.ndarray) -> np.ndarray:
        """The observation as the network sees it (float32)."""
        return np.asarray(obs if self.normalizer is None else self.normalizer(obs), dtype=np.float32)

    def _input(self, obs: np.ndarray) -> np.ndarray:
        x = np.ascontiguousarray(self.normalize(obs), dtype=np.float32).reshape(-1)
        if x.size != self.observation_size:
            raise ConfigError("GreedyActor", "observation", f"{x.size} values",
                              f"{self.observation_size} features (the network's input size)")
        return x

    def _mask(self, mask: np.ndarray | None) -> np.ndarray | None:
        if not self.maskable or mask is None:
            return None
        m = np.ascontiguousarray(mask, dtype=bool).reshape(-1)
        if m.size != self.action_count:
            raise ConfigError("GreedyActor", "mask", f"{m.size} values", f"{self.action_count} (one per action)")
        return m

    def logits(self, obs: np.ndarray) -> np.ndarray:
        """The action logits (float32, ``action_count``) of one raw observation."""
        return np.asarray(self._net.logits(self._input(obs)))

    def masked_logits(self, obs: np.ndarray, mask: np.ndarray | None) -> np.ndarray:
        """Logits with masked-out actions at -inf (only for a maskable actor given a mask)."""
        lg = self.logits(obs)
        m = self._mask(mask)
        return lg if m is None else np.where(m, lg, np.float32(-np.inf))

    def act(self, obs: np.ndarray, mask: np.ndarray | None = None) -> int:
        """The greedy action: the argmax of :meth:`masked_logits` (ties: the lowest index, as ``numpy.argmax``;
        computed in the core)."""
        return int(self._net.act(self._input(obs), self._mask(mask)))

    def sample(self, obs: np.ndarray, mask: np.ndarray | None, rng: np.random.Generator) -> int:
        """An action drawn from the (masked) softmax of the logits with ``rng``: weights
        ``exp(logit - max)`` (float64, the portable exp), their running sum in index order, and the first action
        whose share of it exceeds one ``rng.random()`` draw (``Generator.choice``'s own procedure). No result path
        samples (agents decide greedily); this keeps a draw the same on every CPU anyway."""
        from kairos_gym import portable_math

        lg = self.masked_logits(obs, mask).astype(np.float64)
        w = portable_math.exp(lg - lg.max())
        cdf = np.cumsum(w)  # add.accumulate: one correctly rounded addition per element, in index order
        cdf /= cdf[-1]
        return int(np.searchsorted(cdf, rng.random(), side="right"))

    def to_files(self) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
        """``(policy.json dict without provenance, policy.npz arrays)`` of this actor."""
        arrays: dict[str, np.ndarray] = {}
        for i, (w, b) in enumerate(self.hidden):
            arrays[f"layer{i}.weight"], arrays[f"layer{i}.bias"] = w.copy(), b.copy()
        arrays["action.weight"], arrays["action.bias"] = self.head[0].copy(), self.head[1].copy()
        spec = {"format": FORMAT, "version": VERSION, "algo": self.algo, "maskable": self.maskable,
                "observation_size": self.observation_size, "action_count": self.action_count,
                "hidden_sizes": self.hidden_sizes, "activation": self.activation,
                "obs_normalization": self.normalizer is not None}
        if self.inputs != "observation":  # written only when not the default (older files stay as they were)
            spec["inputs"] = self.inputs
        return spec, arrays


def _f32(a: Any) -> np.ndarray:
    """A C-contiguous float32 copy of ``a`` (a numpy array or anything ``numpy.array`` takes)."""
    return np.array(a, dtype=np.float32, order="C")


def _check_layers(hidden: Sequence[tuple[np.ndarray, np.ndarray]], head: tuple[np.ndarray, np.ndarray]) -> None:
    """Weights 2-D (out x in, nothing empty), biases 1-D of ``out``, each layer taking the previous one's ``out``."""
    fan_in: int | None = None
    for name, (w, b) in [*((f"hidden[{i}]", layer) for i, layer in enumerate(hidden)), ("head", head)]:
        if w.ndim != 2 or 0 in w.shape:
            raise ConfigError("GreedyActor", f"{name} weight", f"shape {w.shape}", "a 2-D (out x in) array, no size 0")
        if b.shape != (w.shape[0],):
            raise ConfigError("GreedyActor", f"{name} bias", f"shape {b.shape}", f"shape ({w.shape[0]},) (the "
                              "weight's out)")
        if fan_in is not None and w.shape[1] != fan_in:
            raise ConfigError("GreedyActor", f"{name} weight", f"shape {w.shape}", f"{fan_in} inputs (the previous "
                              "layer's out)")
        fan_in = int(w.shape[0])


# ---------------------------------------------------------------------------------------------- writing
def write_policy(folder: str | Path, actor: GreedyActor, normalize: Mapping[str, Any] | None = None,
                 provenance: Mapping[str, Any] | None = None) -> Path:
    """Write ``policy.json``, ``policy.npz`` and (``normalize``: the VecNormalize settings and statistics,
    see :data:`_NORMALIZE_KEYS`) ``normalize.json`` into ``folder``; returns the folder. A stale
    ``normalize.json`` is removed when there are no statistics."""
    d = Path(folder)
    d.mkdir(parents=True, exist_ok=True)
    spec, arrays = actor.to_files()
    if actor.normalizer is not None and normalize is None:
        raise ConfigError("write_policy", "normalize", None, "the statistics of the actor's observation normalizer")
    if provenance:
        spec["provenance"] = dict(provenance)
    np.savez(d / WEIGHTS_NPZ, **arrays)
    if normalize is not None:
        (d / NORMALIZE_JSON).write_text(json.dumps(_jsonable(normalize), indent=1) + "\n", encoding="utf-8")
    elif (d / NORMALIZE_JSON).is_file():
        (d / NORMALIZE_JSON).unlink()
    (d / POLICY_JSON).write_text(json.dumps(spec, indent=2) + "\n", encoding="utf-8")
    return d


def _jsonable(stats: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in stats.items():
        if isinstance(v, np.ndarray):
            v = [float(x) for x in v.astype(np.float64).ravel()]
        elif isinstance(v, np.generic):
            v = v.item()
        out[k] = v
    return out


# ---------------------------------------------------------------------------------------------- reading
def is_safe_checkpoint(path: str | Path) -> bool:
    """Is ``path`` a safe checkpoint folder (or its ``policy.json``)?"""
    p = Path(path)
    return (p / POLICY_JSON).is_file() or (p.name == POLICY_JSON and p.is_file())


def _latest_safe_ckpt(run: Path) -> Path | None:
    found = [(int(m.group(1)), d) for d in (run / "checkpoints").glob("ckpt_*_steps")
             if (m := _SB3_CKPT.match(d.name)) and (d / POLICY_JSON).is_file()]
    return max(found, key=lambda t: t[0])[1] if found else None


def resolve_checkpoint(path: str | Path, where: str = "policy ppo", field: str = "path") -> tuple[str, Path]:
    """``("safe", folder)`` or ``("sb3", model zip)`` for a checkpoint path: a safe checkpoint folder or its
    ``policy.json``; a run folder (its latest safe ``checkpoints/ckpt_<n>_steps/``, else its latest
    ``checkpoints/ckpt_<n>_steps.zip``); an SB3 ``.zip`` (with or without the suffix) or a folder holding
    ``model.zip``. Loading an ``sb3`` result executes pickles: see :func:`require_trust`."""
    p = Path(path)
    if p.name == POLICY_JSON and p.is_file():
        return "safe", p.parent
    if p.is_dir():
        if (p / POLICY_JSON).is_file():
            return "safe", p
        latest = _latest_safe_ckpt(p)
        if latest is not None:
            return "safe", latest
        zips = [(int(m.group(1)), f) for f in (p / "checkpoints").glob("ckpt_*_steps.zip")
                if (m := _SB3_CKPT.match(f.stem))]
        if zips:
            return "sb3", max(zips, key=lambda t: t[0])[1]
        if (p / "model.zip").is_file():
            return "sb3", p / "model.zip"
    elif p.is_file():
        return "sb3", p
    elif p.suffix != ".zip" and p.with_name(p.name + ".zip").is_file():
        return "sb3", p.with_name(p.name + ".zip")
    raise ConfigError(where, field, str(path), "a checkpoint folder with policy.json (+ policy.npz, normalize.json), "
                      "a run folder, or (with trust_checkpoint) a Stable-Baselines3 model .zip")


def require_trust(path: str | Path, trust_checkpoint: bool, where: str = "policy ppo", field: str = "path",
                  flag: str = "trust_checkpoint=True (CLI: --trust-checkpoint)") -> None:
    """Refuse to unpickle ``path`` unless the caller opted in: Stable-Baselines3 zips carry cloudpickle
    entries and ``vecnormalize.pkl`` is a pickle, and unpickling a file can run any code in it."""
    if trust_checkpoint is True:
        return
    if not isinstance(trust_checkpoint, bool):
        raise ConfigError(where, "trust_checkpoint", trust_checkpoint, "true or false")
    p = Path(path)
    safe = next((c for c in (p.with_suffix(""), p.parent) if (c / POLICY_JSON).is_file()), None)
    hint = f"; its safe export {safe} loads without trust" if safe is not None else (
        "; or convert it once to the safe format: kairos-gym convert --trust-checkpoint SRC DEST")
    raise ConfigError(where, field, str(path), "a safe checkpoint (policy.json + policy.npz), or this "
                      "Stable-Baselines3 zip/pickle with " + flag + ": loading it unpickles the file, which can "
                      f"execute arbitrary code stored in it, so opt in only for a file you made or trust{hint}")


def load_policy(path: str | Path) -> GreedyActor:
    """The :class:`GreedyActor` of a safe checkpoint folder (or its ``policy.json``); every field, size and
    array is checked, and nothing is unpickled. Cached per file version (the actor is never modified)."""
    p = Path(path)
    folder = p.parent if p.name == POLICY_JSON else p
    files = [folder / n for n in SAFE_FILES]
    stamp = tuple((f.stat().st_mtime_ns, f.stat().st_size) if f.is_file() else None for f in files)
    return _load_policy_cached(str(folder.resolve()), stamp)


@functools.lru_cache(maxsize=8)
def _load_policy_cached(folder_s: str, _stamp: tuple[Any, ...]) -> GreedyActor:
    folder = Path(folder_s)
    where = f"checkpoint {folder}"
    spec = _read_json(folder / POLICY_JSON, where)
    spec_where = f"{where}/{POLICY_JSON}"
    for k in spec:
        if k not in _POLICY_KEYS:
            raise ConfigError(spec_where, str(k), spec[k], "one of the keys " + ", ".join(_POLICY_KEYS))
    if spec.get("format") != FORMAT:
        raise ConfigError(spec_where, "format", spec.get("format"), repr(FORMAT))
    if spec.get("version") != VERSION:
        raise ConfigError(spec_where, "version", spec.get("version"), str(VERSION))
    algo = spec.get("algo")
    if algo not in ALGOS:
        raise ConfigError(spec_where, "algo", algo, "one of " + ", ".join(ALGOS))
    maskable = _bool(spec_where, "maskable", spec.get("maskable"))
    n_obs = _size(spec_where, "observation_size", spec.get("observation_size"), MAX_OBSERVATION_SIZE)
    n_act = _size(spec_where, "action_count", spec.get("action_count"), MAX_ACTIONS)
    hidden = spec.get("hidden_sizes")
    if not isinstance(hidden, list) or len(hidden) > MAX_HIDDEN_LAYERS:
        raise ConfigError(spec_where, "hidden_sizes", hidden, f"a list of at most {MAX_HIDDEN_LAYERS} layer widths")
    widths = [_size(spec_where, "hidden_sizes", h, MAX_WIDTH) for h in hidden]
    activation = spec.get("activation")
    if activation not in ACTIVATIONS:
        raise ConfigError(spec_where, "activation", activation, "one of " + ", ".join(ACTIVATIONS))
    norm = _bool(spec_where, "obs_normalization", spec.get("obs_normalization"))
    inputs = spec.get("inputs", "observation")
    if inputs not in INPUTS:
        raise ConfigError(spec_where, "inputs", inputs, "one of " + ", ".join(INPUTS) + " (or no inputs key: "
                          "observation)")
    if "provenance" in spec and not isinstance(spec["provenance"], dict):
        raise ConfigError(spec_where, "provenance", spec["provenance"], "a mapping")

    shapes: dict[str, tuple[int, ...]] = {}
    fan_in = n_obs
    for i, w in enumerate(widths):
        shapes[f"layer{i}.weight"], shapes[f"layer{i}.bias"] = (w, fan_in), (w,)
        fan_in = w
    shapes["action.weight"], shapes["action.bias"] = (n_act, fan_in), (n_act,)
    arrays = _read_npz(folder / WEIGHTS_NPZ, where, shapes)
    hidden_layers = [(arrays[f"layer{i}.weight"], arrays[f"layer{i}.bias"]) for i in range(len(widths))]
    normalizer = _read_normalizer(folder / NORMALIZE_JSON, where, n_obs) if norm else None
    return GreedyActor(hidden_layers, (arrays["action.weight"], arrays["action.bias"]), activation,
                       maskable=maskable, normalizer=normalizer, algo=algo, inputs=inputs)


def _bool(where: str, field: str, value: Any) -> bool:
    if not isinstance(value, bool):
        raise ConfigError(where, field, value, "true or false")
    return value


def _size(where: str, field: str, value: Any, most: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= most:
        raise ConfigError(where, field, value, f"a whole number from 1 to {most}")
    return value


def _read_json(path: Path, where: str) -> dict[str, Any]:
    if not path.is_file():
        raise ConfigError(where, path.name, None, f"the file {path} (part of the checkpoint)")
    data = read_json_file(where, path.name, path, MAX_JSON_BYTES, "checkpoint file with finite numbers", finite=True)
    if not isinstance(data, dict):
        raise ConfigError(where, path.name, data, "a JSON object")
    return data


def _read_npz(path: Path, where: str, shapes: Mapping[str, tuple[int, ...]]) -> dict[str, np.ndarray]:
    """The arrays of ``shapes`` from an uncompressed or compressed ``.npz``: exactly these names, float32,
    these shapes, finite. Member sizes are checked before anything is decompressed; no pickles."""
    field = WEIGHTS_NPZ
    if not path.is_file():
        raise ConfigError(where, field, None, f"the file {path} (part of the checkpoint)")
    if path.stat().st_size > MAX_NPZ_BYTES:
        raise ConfigError(where, field, f"{path.stat().st_size} bytes", f"at most {MAX_NPZ_BYTES} bytes")
    expected = {f"{k}.npy": k for k in shapes}
    try:
        with zipfile.ZipFile(path) as z:
            infos = {i.filename: i for i in z.infolist()}
    except (OSError, zipfile.BadZipFile) as e:
        raise ConfigError(where, field, str(e)[:120], "a NumPy .npz archive") from None
    if set(infos) != set(expected):
        raise ConfigError(where, field, sorted(k.removesuffix(".npy") for k in infos),
                          "exactly the arrays " + ", ".join(shapes))
    total = 0
    for info in infos.values():
        name = info.filename
        limit = 4 * math.prod(shapes[expected[name]]) + 1024  # float32 data + the .npy header
        total += info.file_size
        if info.file_size > limit or total > MAX_NPZ_BYTES:
            raise ConfigError(where, f"{field}: {expected[name]}", f"{info.file_size} bytes",
                              f"at most {limit} bytes (float32 of shape {shapes[expected[name]]})")
    out: dict[str, np.ndarray] = {}
    try:
        with np.load(path, allow_pickle=False) as npz:
            for key in shapes:
                out[key] = npz[key]
    except (OSError, ValueError, zipfile.BadZipFile) as e:
        raise ConfigError(where, field, str(e)[:120], "a NumPy .npz archive of float32 arrays (no pickles)") from None
    for key, shape in shapes.items():
        a = out[key]
        if a.dtype != np.float32 or a.shape != shape:
            raise ConfigError(where, f"{field}: {key}", f"{a.dtype} {a.shape}", f"float32 of shape {shape}")
        if not np.isfinite(a).all():
            raise ConfigError(where, f"{field}: {key}", "non-finite values", "finite numbers")
    return out


def _read_normalizer(path: Path, where: str, n_obs: int) -> ObsNormalizer:
    if not path.is_file():
        raise ConfigError(where, NORMALIZE_JSON, None, f"the file {path}: policy.json says the model was trained "
                          "with observation normalisation, and without its statistics it would see raw observations")
    data = _read_json(path, where)
    nw = f"{where}/{NORMALIZE_JSON}"
    for k in data:
        if k not in _NORMALIZE_KEYS:
            raise ConfigError(nw, str(k), data[k], "one of the keys " + ", ".join(_NORMALIZE_KEYS))
    if data.get("norm_obs") is not True:
        raise ConfigError(nw, "norm_obs", data.get("norm_obs"), "true (policy.json says obs_normalization: true)")
    vecs = {}
    for k in ("obs_mean", "obs_var"):
        v = data.get(k)
        if not isinstance(v, list) or len(v) != n_obs or not all(
                isinstance(x, (int, float)) and not isinstance(x, bool) for x in v):
            raise ConfigError(nw, k, v, f"a list of {n_obs} numbers (observation_size)")
        vecs[k] = np.array(v, dtype=np.float64)
        if not np.isfinite(vecs[k]).all():
            raise ConfigError(nw, k, "non-finite values", "finite numbers")
    if (vecs["obs_var"] < 0).any():
        raise ConfigError(nw, "obs_var", data["obs_var"], "numbers >= 0")
    scalars = {}
    for k in ("epsilon", "clip_obs"):
        v = data.get(k)
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 < v < math.inf:
            raise ConfigError(nw, k, v, "a number > 0")
        scalars[k] = float(v)
    return ObsNormalizer(vecs["obs_mean"], vecs["obs_var"], scalars["epsilon"], scalars["clip_obs"])
