"""MCP tool replies sized for an agent: one compact JSON text, within ``max_chars``.

An agent pays for every character a tool returns. A reply is sent once, as compact JSON text
(never again as structured content), and fitted to ``max_chars``: long strings are clipped
first (to a length halved until the reply fits, never below :data:`MIN_CLIP`; ids and paths
are never clipped: :data:`WHOLE`), then the last items of the longest list (hits, messages)
are left out. A fitted reply says so:
``"truncated": true`` and, when items were left out, ``"omitted": {"hits": 3}``.

Example:
    >>> reply({"hits": [{"text": "x" * 500}] * 4}, 400)[:40]
    '{"hits":[{"text":"xxxxxxxxxxxxxxxxxxxxxx'
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["DEFAULT_MAX_CHARS", "MIN_CLIP", "WHOLE", "ranked_text", "reply"]

DEFAULT_MAX_CHARS = 6000
"""The longest reply, in characters, when the agent sets no ``max_chars``."""
MIN_CLIP = 80
"""No string is clipped shorter than this."""
WHOLE = ("_id", "source_path", "timestamp", "target")
"""Fields never clipped (an id cut short names nothing): those whose names end so."""
_START = 2000


def _dump(payload: Any) -> str:
    return json.dumps(payload, ensure_ascii=False, separators=(",", ":"), default=str)


def _clip(value: Any, limit: int) -> tuple[Any, bool]:
    """``value`` with every string longer than ``limit`` cut to it (and "…"); whether any was."""
    if isinstance(value, str):
        return (value[:limit] + "…", True) if len(value) > limit else (value, False)
    if isinstance(value, Mapping):
        out, cut = {}, False
        for k, v in value.items():
            if isinstance(k, str) and k.endswith(WHOLE):
                out[k], c = v, False
            else:
                out[k], c = _clip(v, limit)
            cut |= c
        return out, cut
    if isinstance(value, list | tuple):
        items = [_clip(v, limit) for v in value]
        return [v for v, _ in items], any(c for _, c in items)
    return value, False


def _flat(item: Any) -> Any:
    """An item without its nested fields (objects and lists inside it), when it is an object."""
    if not isinstance(item, Mapping):
        return item
    return {k: v for k, v in item.items() if not isinstance(v, Mapping | list | tuple)}


def _longest_list(payload: Mapping[str, Any]) -> str | None:
    lists = [(len(_dump(v)), k) for k, v in payload.items() if isinstance(v, list) and v]
    return max(lists)[1] if lists else None


def reply(payload: Mapping[str, Any], max_chars: int) -> str:
    """``payload`` as compact JSON of at most ``max_chars`` characters (see the module).

    The most items of the longest list that fit, each as whole as the limit allows: for each
    count from all of them down to one, strings are clipped to 2,000 characters, then halved
    down to :data:`MIN_CLIP`; the first that fits is the reply. One item that does not fit even
    then loses its nested fields.

    Raises:
        ValueError: ``max_chars`` below 200 (no reply would be useful).
    """
    if max_chars < 200:
        raise ValueError(f"max_chars is {max_chars}; it must be at least 200")
    text = _dump(payload)
    if len(text) <= max_chars:
        return text
    key = _longest_list(payload)
    total = len(payload[key]) if key is not None else 1
    base: dict[str, Any] = dict(payload)
    marks: dict[str, Any] = {"truncated": True}
    for n in range(total, 0, -1):
        if key is not None:
            base[key] = list(payload[key][:n])
            marks = {"truncated": True, **({"omitted": {key: total - n}} if n < total else {})}
        limit = _START
        while limit >= MIN_CLIP:
            text = _dump({**_clip(base, limit)[0], **marks})
            if len(text) <= max_chars:
                return text
            limit //= 2
    fitted = _clip(base, MIN_CLIP // 4)[0]
    if key is not None:
        fitted[key] = [_flat(v) for v in fitted[key]]
    text = _dump({**fitted, **marks})
    if len(text) > max_chars:  # too many fields for the limit: say so, in valid JSON
        text = _dump({"truncated": True, "error": f"the reply does not fit in {max_chars} chars"})
    return text


def ranked_text(pieces_by_hit: Sequence[Sequence[Mapping[str, Any]]]) -> str:
    """Prompt-ready text of each hit's pieces, best hit first (not grouped by conversation).

    Args:
        pieces_by_hit: per hit in rank order, the blocks it brought back (``header`` and
            ``text``: :func:`convlab.resurrection.render.hit_contexts`' ``pieces``).
    """
    lines: list[str] = []
    for pieces in pieces_by_hit:
        for p in pieces:
            lines += [str(p["header"]), str(p["text"])]
    return "\n".join(lines)
