"""From messages to units: turns, chunks, the content policy, tokens, redaction, units.

The stages :func:`convlab.turns`, :func:`convlab.chunks` and :func:`convlab.units` are exported by
``convlab`` itself (their modules share their names); the public names below, imported on first
use (:mod:`convlab._lazy`), are the policy and the reports on what the stages make.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from convlab._lazy import lazy_exports

_EXPORTS = {
    "ContentPolicy": "convlab.pipeline.policy",
    "count_tokens": "convlab.pipeline.tokens",
    "policy_summary": "convlab.pipeline.policy",
    "redact_corpus": "convlab.pipeline.redact",
    "turn_anatomy": "convlab.pipeline.anatomy",
    "turn_report": "convlab.pipeline.turns",
}
__all__ = list(_EXPORTS)
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)

if TYPE_CHECKING:  # what type checkers and IDEs see: the same names, re-exported
    from convlab.pipeline.anatomy import turn_anatomy as turn_anatomy
    from convlab.pipeline.policy import ContentPolicy as ContentPolicy
    from convlab.pipeline.policy import policy_summary as policy_summary
    from convlab.pipeline.redact import redact_corpus as redact_corpus
    from convlab.pipeline.tokens import count_tokens as count_tokens
    from convlab.pipeline.turns import turn_report as turn_report
