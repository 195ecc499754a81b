"""Gymnasium's vector layout of infos, as :class:`~kairos_gym.env.vector.KairosVectorEnv` builds it.

A vector env's ``infos`` is a dict with, for every key some env's info has, an array of ``num_envs`` entries and a
bool mask ``infos["_" + key]`` telling which envs have it (entries of the others are zero, False or None). The
array's dtype follows the first env's value: ``bool``, ``int`` and ``float`` give bool, int64 and float64 arrays, a
numpy array of shape S an array of shape ``(num_envs, *S)``, anything else an object array; a dict value (an
episode's ``summary``) is itself laid out this way; ``final_obs`` is an object array of observations. That is
``gymnasium.vector.VectorEnv._add_info``, which ``SyncVectorEnv`` uses, and :func:`add_info` is the same, numpy's
conversions included (None stored in a float array reads nan; a float stored in an int array is truncated), except
where Gymnasium's raises: a value numpy cannot store in its key's array (None in an int array, a string in a float
one, an array of another shape) turns that array into an object array. :func:`unbatch_info` takes env i's info
back out, with Python scalars. :func:`masked_arrays` builds the per-step keys of the batched native step from
arrays.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np


def _new_array(num_envs: int, value: Any) -> np.ndarray:
    """The empty array of a key whose first value is ``value`` (Gymnasium's choice of dtype and shape)."""
    if type(value) in (int, float, bool) or isinstance(value, np.number):
        return np.zeros(num_envs, dtype=type(value))
    if isinstance(value, np.ndarray):
        return np.zeros((num_envs, *value.shape), dtype=value.dtype)
    return np.full(num_envs, None, dtype=object)


def _as_objects(array: np.ndarray) -> np.ndarray:
    """``array`` as a 1-D object array of its rows."""
    out = np.full(len(array), None, dtype=object)
    for j in range(len(array)):
        out[j] = array[j]
    return out


def add_info(num_envs: int, vector_infos: dict[str, Any], env_info: Mapping[str, Any], env_num: int) -> dict[str, Any]:
    """Add env ``env_num``'s ``env_info`` to ``vector_infos`` (see the module docstring); returns it."""
    for key, value in env_info.items():
        if key == "final_obs":
            array = vector_infos.get(key)
            if array is None:
                array = np.full(num_envs, None, dtype=object)
            array[env_num] = value
        elif isinstance(value, dict):
            array = add_info(num_envs, vector_infos.get(key, {}), value, env_num)
        else:
            array = vector_infos[key] if key in vector_infos else _new_array(num_envs, value)
            try:
                array[env_num] = value  # numpy's conversion, as Gymnasium's (None in a float array: nan)
            except (TypeError, ValueError):  # where Gymnasium's fails: None in an int array, a str in a float one
                array = _as_objects(array)
                array[env_num] = value
        mask = vector_infos.get("_" + key)
        if mask is None:
            mask = np.zeros(num_envs, dtype=np.bool_)
        mask[env_num] = True
        vector_infos[key], vector_infos["_" + key] = array, mask
    return vector_infos


def unbatch_info(infos: Mapping[str, Any], i: int) -> dict[str, Any]:
    """Env ``i``'s info dict from a vector env's ``infos``: the keys whose mask is True for env ``i``, numpy scalars
    as Python scalars, rows of batched arrays as arrays, nested dicts unbatched alike."""
    out: dict[str, Any] = {}
    for key, value in infos.items():
        if key.startswith("_") and key[1:] in infos:
            continue
        mask = infos.get("_" + key)
        if mask is not None and not mask[i]:
            continue
        if isinstance(value, Mapping):
            out[key] = unbatch_info(value, i)
            continue
        v = value[i]
        out[key] = v.item() if isinstance(v, np.generic) else v.copy() if isinstance(v, np.ndarray) else v
    return out


def masked_arrays(infos: dict[str, Any], values: Mapping[str, tuple[np.ndarray, type]], has: np.ndarray) -> None:
    """Add keys laid out as :func:`add_info` would for per-env values of one Python type each: ``values[key] =
    (array of num_envs, bool | int | float)``; the envs where ``has`` is False get 0 / False and a False mask. No
    env has them (``has`` all False): no keys, as no env info brought them."""
    if not has.any():
        return
    every = bool(has.all())  # the common case: one copy per key
    for key, (value, kind) in values.items():
        if every:
            array = np.array(value, dtype=kind)
        else:
            array = np.zeros(len(has), dtype=kind)
            np.copyto(array, value, where=has, casting="unsafe")
        infos[key] = array
        infos["_" + key] = has.copy()
