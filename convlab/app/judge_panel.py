"""The ipywidgets judging panel: label pooled candidates (:mod:`convlab.judge`) in a notebook.

All transcript text is HTML-escaped before it reaches an ``HTML`` widget.
"""

from __future__ import annotations

import html
from collections.abc import Mapping
from typing import Any

from convlab.app.text import clip
from convlab.app.widgets import marked_html

__all__ = ["JudgePanel"]


class JudgePanel:
    """Judge pooled candidates (:mod:`convlab.judge`) with buttons or the keyboard.

    Shows the query, the candidate with the query's terms marked and the context its unit
    resurrects (all HTML-escaped), the progress "k of N", and buttons Relevant / Partly / Not /
    Skip. Keyboard: click into the key box and type r/p/n/s (or 1/2/3/0); each key judges the
    shown candidate. Every judgment is appended to the qrels file at once
    (:meth:`convlab.judge.JudgmentLog.record`); candidates already judged by the assessor are not
    shown again, so reopening the panel resumes.

    Example:
        >>> pool = build_pool(data, systems, embedder=emb)  # doctest: +SKIP
        >>> JudgePanel(pool, JudgmentLog("qrels.jsonl", assessor="ana"))  # doctest: +SKIP
    """

    def __init__(self, candidates: Any, log: Any) -> None:
        import ipywidgets as w

        self.candidates = list(candidates)
        self.log = log
        self.pending = list(log.pending(self.candidates))
        self.progress = w.HTML(value="")
        self.progress.add_class("convlab-judge-progress")
        self.view = w.HTML(value="")
        self.view.add_class("convlab-judge-candidate")
        self.buttons = []
        for label, key, style in (
            ("Relevant (r/1)", "r", "success"),
            ("Partly (p/2)", "p", "info"),
            ("Not (n/3)", "n", "danger"),
            ("Skip (s/0)", "s", ""),
        ):
            b = w.Button(description=label, button_style=style)
            b.add_class(f"convlab-judge-{key}")
            b.on_click(lambda _, key=key: self.judge(key))
            self.buttons.append(b)
        self.keys = w.Text(
            value="", placeholder="type r/p/n/s or 1/2/3/0 here", continuous_update=True
        )
        self.keys.add_class("convlab-judge-keys")
        self.keys.observe(self._on_key, names="value")
        self.widget = w.VBox([self.progress, self.view, w.HBox(self.buttons), self.keys])
        self.widget.add_class("convlab-judge-panel")
        self._show()

    def _ipython_display_(self) -> None:
        from IPython.display import display

        display(self.widget)

    @property
    def current(self) -> Any:
        """The candidate shown (None when all are judged)."""
        return self.pending[0] if self.pending else None

    def _on_key(self, change: Mapping[str, Any]) -> None:
        text = str(change["new"])
        if not text:
            return
        from convlab.judge import KEYS

        for ch in text.lower():
            if ch in KEYS and self.current is not None:
                self.judge(ch)
        self.keys.value = ""

    def judge(self, key: str) -> None:
        """Record ``key`` (r/p/n/s, 1/2/3/0 or a judgment name) for the shown candidate."""
        if self.current is None:
            return
        self.log.record(self.current, key)
        self.pending.pop(0)
        self._show()

    def _show(self) -> None:
        total = len(self.candidates)
        done = total - len(self.pending)
        self.progress.value = f"<b>{min(done + 1, total)} of {total}</b>" + (
            "" if self.pending else " &middot; all judged"
        )
        c = self.current
        if c is None:
            self.view.value = "<i>All candidates are judged.</i>"
            return
        lines = [
            f'<div class="convlab-judge-query"><b>Query</b>: {html.escape(c.query)}</div>',
            f'<div class="convlab-judge-doc" data-doc="{html.escape(c.doc_id)}">'
            f"{marked_html(clip(c.text, 2000), c.query)}</div>",
        ]
        if c.context:
            lines.append('<div class="convlab-context"><i>context</i>')
            for role, text, target in c.context:
                style = "background:#fff3c4" if target else ""
                lines.append(
                    f'<div style="{style}"><b>{html.escape(role)}</b>: '
                    f"{marked_html(clip(text, 600), c.query)}</div>"
                )
            lines.append("</div>")
        self.view.value = "".join(lines)
