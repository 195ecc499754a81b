"""The docstrings' reStructuredText markup as Markdown, for the API reference of the docs site (a griffe extension,
named in ``mkdocs.yml``).

The package's docstrings cross-reference with Sphinx roles (``:class:`~kairos_gym.sim.hook.Decision```) and open
literal blocks with ``::``; mkdocstrings renders docstrings as Markdown, where both would print as they are typed.
This extension rewrites each docstring as it is loaded: a role becomes a code span of its target (the last
name only after ``~``, as Sphinx shows it) and a paragraph's closing ``::`` a single colon (the indented block
after it is a code block in Markdown too). The docstrings in the code do not change.
"""

from __future__ import annotations

import re
from typing import Any

from griffe import Extension, Object

_ROLE = re.compile(r":(?:py:)?(?:class|func|meth|mod|data|attr|obj|exc|const):`(~?)([^`]+)`")
_LITERAL_BLOCK = re.compile(r"(\S)::$", flags=re.MULTILINE)


def markdown_of(text: str) -> str:
    """``text`` with every Sphinx role a code span and every closing ``::`` one colon."""
    def role(m: re.Match[str]) -> str:
        target = m.group(2).strip()
        return f"`{target.rsplit('.', 1)[-1] if m.group(1) else target}`"

    return _LITERAL_BLOCK.sub(r"\1:", _ROLE.sub(role, text))


class RstRoles(Extension):
    """Rewrites every loaded object's docstring with :func:`markdown_of`."""

    def on_instance(self, *, obj: Object, **kwargs: Any) -> None:
        """Called by griffe for every object it loads."""
        if obj.docstring is not None:
            obj.docstring.value = markdown_of(obj.docstring.value)
