"""The faces of convlab: the ``convlab`` command, terminal display, exit codes, widgets.

The command is :mod:`convlab.app.cli`; the public names below are imported on first use
(:mod:`convlab._lazy`), so the command does not load the widgets' libraries.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from convlab._lazy import lazy_exports

_EXPORTS = {
    "JudgePanel": "convlab.app.judge_panel",
    "SearchPanel": "convlab.app.widgets",
    "describe_hits": "convlab.app.display",
}
__all__ = list(_EXPORTS)
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)

if TYPE_CHECKING:  # what type checkers and IDEs see: the same names, re-exported
    from convlab.app.display import describe_hits as describe_hits
    from convlab.app.judge_panel import JudgePanel as JudgePanel
    from convlab.app.widgets import SearchPanel as SearchPanel
