"""A griffe extension for the API pages: ``Example:`` sections are read as ``Examples:``.

convlab's docstrings head their doctests ``Example:``; griffe's Google parser knows only
``Examples:``, and would render the doctest's output as Markdown (where ``[a, b]`` after ``[...]``
reads as a link). This changes the docs' reading of the docstrings, never the source.
"""

from __future__ import annotations

import re
from typing import Any

import griffe

SECTION = re.compile(r"^(\s*)Example:\s*$", re.MULTILINE)


class ExampleSections(griffe.Extension):
    """Rename ``Example:`` section titles to ``Examples:`` as each object is loaded."""

    def on_instance(self, *, obj: griffe.Object, **kwargs: Any) -> None:
        """Rewrite the object's docstring before it is parsed."""
        if obj.docstring is not None:
            obj.docstring.value = SECTION.sub(r"\1Examples:", obj.docstring.value)
