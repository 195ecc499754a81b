"""Safe, bounded YAML for every file or string a user hands the project (scenarios, training configs, flags).

PyYAML's ``safe_load`` is not enough for files from strangers, and it reads YAML 1.1, which silently
reinterprets values (``17.5e9`` is a string, ``010`` is 8, ``yes``/``on`` are booleans). :func:`load_yaml_file`
and :func:`load_yaml_text` read YAML 1.2 core-schema scalars instead and bound every size before any work:

- libyaml's parser reads it when PyYAML has libyaml (the pure-Python reader otherwise; both resolve and construct
  alike, tested on every shipped file);
- the file is at most :data:`MAX_FILE_BYTES` bytes, UTF-8 text without NUL bytes;
- nesting is at most :data:`MAX_DEPTH` levels (a 2,000-deep file would otherwise raise RecursionError);
- the document, with every alias expanded, has at most :data:`MAX_NODES` nodes (an alias bomb is refused,
  never expanded);
- a key written twice in one mapping is refused (PyYAML keeps the last one silently); keys a merge
  (``<<: *base``) brings in may be overridden;
- scalars: ``true``/``false`` (any case spelled True/TRUE) are booleans, ``null``/``~``/empty is None, decimal
  integers, ``0x``/``0o`` integers, floats such as ``17.5e9``, ``1e-3``, ``.5``, ``.inf``, ``.nan``; everything
  else is a string. An integer with a leading zero (``010``) is refused: YAML 1.1 reads it as octal, 1.2 as
  decimal, and the file's author cannot have meant both.

Every failure is one :class:`~kairos_gym.errors.ConfigError` naming the file, what is wrong and what is allowed.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, ClassVar

import yaml

from kairos_gym.errors import ConfigError

MAX_FILE_BYTES = 1 << 20
"""Largest YAML file read (bytes): scenario and training configs are a few KB."""
MAX_DEPTH = 64
"""Deepest nesting of mappings and sequences accepted."""
MAX_NODES = 100_000
"""Most YAML nodes a document may have once every alias is expanded."""

_INT = re.compile(r"^[-+]?(?:0|[1-9][0-9]*)$")
_INT_BASE = re.compile(r"^(?:0o[0-7]+|0x[0-9a-fA-F]+)$")
_LEADING_ZERO = re.compile(r"^[-+]?0[0-9]+$")
_FLOAT = re.compile(r"^[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?$")
_INF = re.compile(r"^[-+]?\.(?:inf|Inf|INF)$")
_NAN = re.compile(r"^\.(?:nan|NaN|NAN)$")
_BOOL = re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$")
_NULL = re.compile(r"^(?:~|null|Null|NULL|)$")

_AMBIGUOUS_INT_TAG = "tag:kairos-gym,2026:ambiguous-int"


class _TooDeep(Exception):
    pass


class _Loader(yaml.SafeLoader):
    """SafeLoader with YAML 1.2 core-schema scalars and a depth bound while composing."""

    yaml_implicit_resolvers: ClassVar[dict[str, list[tuple[str, re.Pattern[str]]]]] = {}  # YAML 1.2 set below
    _depth = 0

    def compose_node(self, parent: Any, index: Any) -> Any:
        self._depth += 1
        try:
            if self._depth > MAX_DEPTH:
                raise _TooDeep
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1


class _DuplicateKey(Exception):
    def __init__(self, key: Any, mark: Any) -> None:
        self.key, self.mark = key, mark


def _construct_mapping(loader: _Loader, node: yaml.MappingNode, deep: bool = False) -> Any:
    """SafeConstructor's mapping, after refusing a key written twice in it (PyYAML keeps the last silently).
    Keys brought in by a merge (``<<: *base``) may be overridden: only the mapping's own keys are compared."""
    seen: set[Any] = set()
    for key_node, _ in node.value:
        if key_node.tag == "tag:yaml.org,2002:merge" or not isinstance(key_node, yaml.ScalarNode):
            continue
        key = loader.construct_object(key_node, deep=True)
        if key in seen:
            raise _DuplicateKey(key, key_node.start_mark)
        seen.add(key)
    return yaml.SafeLoader.construct_mapping(loader, node, deep=deep)


_Loader.construct_mapping = _construct_mapping  # type: ignore[method-assign]


def _resolver(tag: str, pattern: re.Pattern[str], first: str) -> None:
    _Loader.add_implicit_resolver(tag, pattern, list(first) if first else [""])


_DIGITS = "0123456789"
_resolver("tag:yaml.org,2002:bool", _BOOL, "tTfF")
_resolver("tag:yaml.org,2002:null", _NULL, "~nN")
_Loader.add_implicit_resolver("tag:yaml.org,2002:null", _NULL, [""])
_resolver(_AMBIGUOUS_INT_TAG, _LEADING_ZERO, "-+0")
_resolver("tag:yaml.org,2002:int", _INT, "-+" + _DIGITS)
_resolver("tag:yaml.org,2002:int", _INT_BASE, "0")
_resolver("tag:yaml.org,2002:float", _FLOAT, "-+." + _DIGITS)
_resolver("tag:yaml.org,2002:float", _INF, "-+.")
_resolver("tag:yaml.org,2002:float", _NAN, ".")
_resolver("tag:yaml.org,2002:merge", re.compile(r"^<<$"), "<")


def _construct_int(loader: _Loader, node: yaml.ScalarNode) -> int:
    text = loader.construct_scalar(node)
    if _INT_BASE.match(text):
        return int(text, 0)
    return int(text)


def _construct_float(loader: _Loader, node: yaml.ScalarNode) -> float:
    text = str(loader.construct_scalar(node))
    if _NAN.match(text):
        return float("nan")
    if _INF.match(text):
        return float("-inf") if text.startswith("-") else float("inf")
    return float(text)


def _construct_bool(loader: _Loader, node: yaml.ScalarNode) -> bool:
    return str(loader.construct_scalar(node)).lower() == "true"


class _AmbiguousInt(Exception):
    def __init__(self, text: str, mark: Any) -> None:
        self.text, self.mark = text, mark


def _construct_ambiguous(loader: _Loader, node: yaml.ScalarNode) -> Any:
    raise _AmbiguousInt(str(loader.construct_scalar(node)), node.start_mark)


_Loader.add_constructor("tag:yaml.org,2002:int", _construct_int)
_Loader.add_constructor("tag:yaml.org,2002:float", _construct_float)
_Loader.add_constructor("tag:yaml.org,2002:bool", _construct_bool)
_Loader.add_constructor(_AMBIGUOUS_INT_TAG, _construct_ambiguous)


def _count_nodes(root: yaml.Node) -> int:
    """Nodes of the document with aliases expanded (aliases share node objects, so they are walked again);
    stops counting past MAX_NODES."""
    seen = 0
    stack = [root]
    while stack:
        node = stack.pop()
        seen += 1
        if seen > MAX_NODES:
            return seen
        if isinstance(node, yaml.SequenceNode):
            stack.extend(node.value)
        elif isinstance(node, yaml.MappingNode):
            for k, v in node.value:
                stack.append(k)
                stack.append(v)
    return seen


if yaml.__with_libyaml__:
    from yaml._yaml import CParser

    class _CLoader(CParser, yaml.constructor.SafeConstructor, yaml.resolver.Resolver):  # type: ignore[misc]
        """:class:`_Loader`'s resolvers and constructors over libyaml's parser and composer (about 6x faster on a
        large file). libyaml composes recursively, so :func:`_event_depth` bounds the nesting first."""

        yaml_implicit_resolvers = _Loader.yaml_implicit_resolvers
        yaml_constructors = _Loader.yaml_constructors
        construct_mapping = _construct_mapping

        def __init__(self, stream: str) -> None:
            CParser.__init__(self, stream)
            yaml.constructor.SafeConstructor.__init__(self)
            yaml.resolver.Resolver.__init__(self)

    def _event_depth(text: str) -> int:
        """The deepest nesting of mappings and sequences in ``text``, from libyaml's event stream (iterative);
        stops past :data:`MAX_DEPTH`."""
        parser = CParser(text)
        depth = deepest = 0
        try:
            while (event := parser.get_event()) is not None:
                if isinstance(event, (yaml.MappingStartEvent, yaml.SequenceStartEvent)):
                    depth += 1
                    deepest = max(deepest, depth)
                    if deepest > MAX_DEPTH:
                        break
                elif isinstance(event, (yaml.MappingEndEvent, yaml.SequenceEndEvent)):
                    depth -= 1
                elif isinstance(event, yaml.StreamEndEvent):
                    break
        except yaml.YAMLError as e:  # libyaml's own nesting limit (1,000 levels), met while scanning ahead
            if getattr(e, "problem", None) != "exceeded maximum nesting depth":
                raise
            return MAX_DEPTH + 1
        finally:
            parser.dispose()
        return deepest


def _make_loader(text: str) -> Any:
    """The loader of ``text``: libyaml's when PyYAML has it (nesting checked first: a document deeper than
    :data:`MAX_DEPTH` raises :class:`_TooDeep`), else the pure-Python one (which checks while composing)."""
    if yaml.__with_libyaml__:
        if _event_depth(text) > MAX_DEPTH:
            raise _TooDeep
        return _CLoader(text)
    return _Loader(text)


def load_yaml_text(text: str, where: str) -> Any:
    """Parse one YAML document from ``text`` (see the module doc for the rules); ``where`` names its source."""
    if not isinstance(text, str):
        raise ConfigError(where, "(YAML)", type(text).__name__, "YAML text (a str)")
    if len(text) > MAX_FILE_BYTES:
        raise ConfigError(where, "(size)", f"{len(text)} characters", f"at most {MAX_FILE_BYTES} characters")
    loader = None
    try:
        try:
            loader = _make_loader(text)
            node = loader.get_single_node()
        except _TooDeep:
            raise ConfigError(where, "(nesting)", f"deeper than {MAX_DEPTH} levels",
                              f"at most {MAX_DEPTH} nested mappings/sequences") from None
        except yaml.YAMLError as e:
            raise ConfigError(where, "(YAML)", str(e).splitlines()[0][:200], "valid YAML") from None
        if node is None:
            return None
        if _count_nodes(node) > MAX_NODES:
            raise ConfigError(where, "(size)", f"more than {MAX_NODES} nodes once aliases are expanded",
                              f"at most {MAX_NODES} nodes (anchors/aliases count once per use)")
        try:
            return loader.construct_document(node)
        except _AmbiguousInt as e:
            line = f" (line {e.mark.line + 1})" if e.mark is not None else ""
            raise ConfigError(where, f"(number{line})", e.text,
                              "an integer without a leading zero (YAML 1.1 reads it as octal, 1.2 as decimal): "
                              f"write {int(e.text, 10)} for decimal, or 0o{e.text.lstrip('+-0') or '0'} for octal, "
                              "or quote it for a string") from None
        except _DuplicateKey as e:
            line = f" (line {e.mark.line + 1})" if e.mark is not None else ""
            raise ConfigError(where, f"(duplicate key{line})", e.key,
                              "each key once per mapping (YAML would keep only the last)") from None
        except yaml.YAMLError as e:
            raise ConfigError(where, "(YAML)", str(e).splitlines()[0][:200], "valid YAML") from None
    finally:
        if loader is not None:
            loader.dispose()


def load_yaml_file(path: str | Path, where: str | None = None) -> Any:
    """Read and parse a YAML file: at most MAX_FILE_BYTES, UTF-8, no NUL bytes (see the module doc)."""
    p = Path(path)
    where = where or str(p)
    try:
        size = p.stat().st_size
    except OSError as e:
        raise ConfigError(where, "path", str(p), f"a readable YAML file ({e.strerror})") from None
    if not p.is_file():
        raise ConfigError(where, "path", str(p), "a YAML file (not a folder)")
    if size > MAX_FILE_BYTES:
        raise ConfigError(where, "(size)", f"{size} bytes", f"a YAML file of at most {MAX_FILE_BYTES} bytes")
    try:
        raw = p.read_bytes()
    except OSError as e:
        raise ConfigError(where, "path", str(p), f"a readable YAML file ({e.strerror})") from None
    nul = raw.find(b"\x00")
    if nul >= 0:
        raise ConfigError(where, "(encoding)", f"NUL byte at offset {nul}",
                          "a UTF-8 YAML text file (this looks binary)")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise ConfigError(where, "(encoding)", f"byte 0x{raw[e.start]:02x} at offset {e.start}",
                          "a UTF-8 text file") from None
    return load_yaml_text(text.removeprefix("\ufeff"), where)
