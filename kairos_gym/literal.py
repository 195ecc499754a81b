"""Python-literal syntax read without evaluation (no ``eval``): numbers, strings, booleans, lists, dicts and a
named set of ``nn.<Name>`` activations, bounded in length and depth. Used for config values written as text."""

from __future__ import annotations

import ast
from collections.abc import Mapping
from typing import Any

from kairos_gym.errors import ConfigError

MAX_LITERAL_CHARS = 4096
"""Longest ``policy_kwargs`` / ``normalize`` string parsed (characters)."""
MAX_LITERAL_DEPTH = 16
"""Deepest nesting of such a string."""


def parse_literal(where: str, field: str, text: str, names: Mapping[str, Any] | None = None) -> Any:
    """Python-literal syntax without evaluation: numbers, strings, True/False/None, lists, tuples, dicts,
    ``dict(key=value, ...)`` and ``nn.<Name>`` / ``th.nn.<Name>`` / ``torch.nn.<Name>`` for a name in
    ``names`` (nothing else: no other calls, attributes, names or operators). Bounded by
    :data:`MAX_LITERAL_CHARS` and :data:`MAX_LITERAL_DEPTH`."""
    allowed = "a literal: numbers, strings, True/False/None, [...], {...}, dict(key=value, ...)" + (
        ", nn.<" + "|".join(names) + ">" if names else "")
    if len(text) > MAX_LITERAL_CHARS:
        raise ConfigError(where, field, text, f"at most {MAX_LITERAL_CHARS} characters of {allowed}")
    try:
        tree = ast.parse(text, mode="eval")
    except (SyntaxError, ValueError, RecursionError, MemoryError) as e:
        raise ConfigError(where, field, text, f"{allowed} ({type(e).__name__})") from None
    return _literal(where, field, text, tree.body, names or {}, allowed, 0)


def _literal(where: str, field: str, text: str, node: ast.AST, names: Mapping[str, Any], allowed: str,
             depth: int) -> Any:
    def bad(why: str) -> ConfigError:
        return ConfigError(where, field, text, f"{allowed}; {why} is not")

    if depth > MAX_LITERAL_DEPTH:
        raise bad(f"nesting deeper than {MAX_LITERAL_DEPTH}")

    def sub(n: ast.AST) -> Any:
        return _literal(where, field, text, n, names, allowed, depth + 1)

    if isinstance(node, ast.Constant):
        if node.value is None or isinstance(node.value, (bool, int, float, str)):
            return node.value
        raise bad(f"the constant {type(node.value).__name__}")
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)) \
            and isinstance(node.operand, ast.Constant) and type(node.operand.value) in (int, float):
        return -node.operand.value if isinstance(node.op, ast.USub) else node.operand.value
    if isinstance(node, (ast.List, ast.Tuple)):
        if any(isinstance(e, ast.Starred) for e in node.elts):
            raise bad("*unpacking")
        return [sub(e) for e in node.elts]
    if isinstance(node, ast.Dict):
        out: dict[str, Any] = {}
        for k, v in zip(node.keys, node.values, strict=True):
            key = None if k is None else sub(k)
            if not isinstance(key, str):
                raise bad("a non-string key or **unpacking")
            out[key] = sub(v)
        return out
    if isinstance(node, ast.Call):
        if not (isinstance(node.func, ast.Name) and node.func.id == "dict"):
            raise bad(f"the call {ast.unparse(node.func)[:40]}(...)")
        if node.args or any(kw.arg is None for kw in node.keywords):
            raise bad("dict(...) with positional arguments or **unpacking")
        return {kw.arg: sub(kw.value) for kw in node.keywords}
    if isinstance(node, ast.Attribute):
        path = ast.unparse(node)
        prefix, _, name = path.rpartition(".")
        if prefix in ("nn", "th.nn", "torch.nn") and name in names:
            return names[name]
        raise bad(f"the name {path[:60]}")
    raise bad(f"{type(node).__name__} ({ast.unparse(node)[:40]})")


__all__ = ["MAX_LITERAL_CHARS", "MAX_LITERAL_DEPTH", "parse_literal"]
