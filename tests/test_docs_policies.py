"""docs/policies.md "Writing a policy" documents every field a policy may read, and its example runs."""

from __future__ import annotations

import dataclasses
import re
import subprocess
import sys
from pathlib import Path

from kairos_gym.sim.hook import Decision, DecisionContext, DecodeNodeView, PrefillNodeView, RequestView

DOC = Path(__file__).resolve().parents[1] / "docs" / "policies.md"

# how the doc names each view's fields, and the NamedTuple behind it
VIEWS = {
    "ctx.": DecisionContext,
    "ctx.request.": RequestView,
    "ctx.prefill[p].": PrefillNodeView,
    "ctx.decode[d].": DecodeNodeView,
}


def _section() -> str:
    text = DOC.read_text(encoding="utf-8")
    start = text.index("## Writing a policy")
    end = text.find("\n## ", start + 1)
    return text[start:] if end < 0 else text[start:end]


def _table_names(section: str) -> set[str]:
    """First-column names of the section's tables: `| `ctx.now_s` | ...` -> "ctx.now_s"."""
    return set(re.findall(r"^\| `([^`]+)` \|", section, flags=re.MULTILINE))


def test_every_public_field_of_the_context_and_its_views_has_a_table_row():
    names = _table_names(_section())
    missing = [prefix + f for prefix, cls in VIEWS.items() for f in cls._fields if prefix + f not in names]
    assert not missing, f"docs/policies.md 'Writing a policy' does not document: {missing}"


def test_every_documented_field_exists():
    names = _table_names(_section())
    stale = []
    for name in names:
        if not name.startswith("ctx."):
            continue
        prefix = max((p for p in VIEWS if name.startswith(p) and "." not in name[len(p):]), key=len)
        if name[len(prefix):] not in VIEWS[prefix]._fields:
            stale.append(name)
    assert not stale, f"docs/policies.md documents fields that do not exist: {stale}"


def test_decision_fields_and_constructors_are_documented():
    names = _table_names(_section())
    for f in dataclasses.fields(Decision):
        assert f"Decision.{f.name}" in names, f.name
    constructors = [k for k, v in vars(Decision).items() if isinstance(v, staticmethod)]
    assert sorted(constructors) == ["deflect", "prefill_path"]
    for k in constructors:
        assert any(n.startswith(f"Decision.{k}(") for n in names), k


def test_the_writing_a_policy_example_runs(tmp_path: Path):
    blocks = re.findall(r"```python\n(.*?)```", _section(), flags=re.DOTALL)
    assert len(blocks) == 1 and len(blocks[0].splitlines()) <= 30
    script = tmp_path / "example.py"
    script.write_text(blocks[0], encoding="utf-8")
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    name, p95, attainment, deflection = out.stdout.split()
    assert name == "cheapest-ttft" and float(p95) > 0 and 0 < float(attainment) <= 1 and 0 < float(deflection) < 1
