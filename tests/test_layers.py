"""The wings and their one-way arrows (docs/architecture.md): every import, also one inside a function, points
down the stack. Read from the source with ``ast``; nothing is imported."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# wing -> the wings it may import (besides itself). Lower wings never import higher ones.
FOUNDATION = "foundation"
ALLOWED: dict[str, set[str]] = {
    FOUNDATION: set(),
    "package": {FOUNDATION, "core"},  # kairos_gym/__init__.py registers the env ids
    "core": {FOUNDATION},
    "agents": {FOUNDATION, "core"},
    "evaluation": {FOUNDATION, "core", "agents"},
    "verify": {FOUNDATION, "core", "agents"},
    "benchmark": {FOUNDATION, "core", "agents", "evaluation", "verify"},
    "perf": {FOUNDATION, "core", "agents", "evaluation"},
    "train": {FOUNDATION, "core", "agents", "evaluation", "benchmark", "verify"},
    "cli": {FOUNDATION, "core", "agents", "evaluation", "verify", "benchmark", "perf", "train"},
}
CORE_PACKAGES = ("latency", "workload", "sim", "env")
CORE_MODULES = ("scenario", "faults")


def wing(module: str) -> str | None:
    """The wing of a dotted module name under ``kairos_gym`` (None: not the project's)."""
    parts = module.split(".")
    if parts[0] != "kairos_gym":
        return None
    if len(parts) == 1:
        return "package"
    head = parts[1]
    if head in CORE_PACKAGES or head in CORE_MODULES:
        return "core"
    if head in ("agents", "evaluation", "benchmark", "perf", "train", "cli", "verify"):
        return head
    return FOUNDATION


def source_files() -> dict[str, Path]:
    """Dotted module name -> file, for the installed packages (agents/ and train/ install as kairos_gym.*)."""
    out: dict[str, Path] = {}
    for top, prefix in (("kairos_gym", "kairos_gym"), ("agents", "kairos_gym.agents"), ("train", "kairos_gym.train")):
        for f in (ROOT / top).rglob("*.py"):
            rel = f.relative_to(ROOT / top).with_suffix("")
            parts = [p for p in rel.parts if p != "__init__"]
            out[".".join([prefix, *parts])] = f
    return out


def imports(module: str, path: Path) -> set[str]:
    """Every module the file imports, anywhere in it, as absolute dotted names."""
    tree = ast.parse(path.read_text(), filename=str(path))
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, base]) if base else ".".join(anchor)
            found.add(base)
            found.update(f"{base}.{a.name}" for a in node.names)
    return found


def violations() -> list[str]:
    files = source_files()
    bad = []
    for module, path in sorted(files.items()):
        mine = wing(module)
        for target in sorted(imports(module, path) - {"kairos_gym"}):  # the package itself: loaded by every import
            theirs = wing(target)
            if theirs is None or theirs == mine:
                continue
            if theirs not in ALLOWED[mine]:
                bad.append(f"{path.relative_to(ROOT)} ({mine}) imports {target} ({theirs})")
    return bad


def test_imports_point_down_the_stack():
    bad = violations()
    assert not bad, "imports against the layering of docs/architecture.md:\n" + "\n".join(bad)


def test_every_module_has_a_wing():
    for module in source_files():
        assert wing(module) in ALLOWED, module


def test_the_checker_sees_a_wrong_way_import(tmp_path):
    f = tmp_path / "x.py"
    f.write_text("def f():\n    from kairos_gym.train.config import TrainConfig\n")
    found = imports("kairos_gym.agents.x", f)
    assert "kairos_gym.train.config" in found
    assert "train" not in ALLOWED[wing("kairos_gym.agents.x")]
