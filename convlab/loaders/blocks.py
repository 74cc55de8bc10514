"""A message's content blocks as readers hand them to the builder, and their shared shapes.

Chat formats write a message's content as a string or a list of strings and typed blocks;
:func:`content_blocks` turns either into :class:`BlockRow` rows, and content of no known shape
is a counted skip whose reason :func:`junk_block` words the same way for every format.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

__all__ = ["REDACTED_THINKING", "BlockRow", "content_blocks", "junk_block", "other_block"]


class BlockRow(NamedTuple):
    """One content block of a message, as a reader hands it to the builder.

    A NamedTuple (cheap to build: readers make millions); the builder checks ``block_type``.
    """

    block_type: str
    text: str = ""
    tool_name: str | None = None
    tool_input: str | None = None
    is_error: bool = False


REDACTED_THINKING = BlockRow("thinking", "[redacted thinking]")
"""The block a ``redacted_thinking`` block becomes (its content is encrypted)."""


def other_block(block: dict[str, Any]) -> BlockRow:
    """An ``other`` block for a typed block no reader knows, keeping its ``text`` if a string."""
    text = block.get("text", "")
    return BlockRow("other", text if isinstance(text, str) else "")


_JSON_TYPES = ((bool, "a boolean"), (int, "a number"), (float, "a number"), (list, "an array"))


def junk_block(index: int, value: Any) -> str:
    """The skip reason for content block ``index`` of no known shape (not a string or object).

    Example:
        >>> junk_block(2, [1])
        'content block 2 is an array, not a string or an object'
    """
    what = "null" if value is None else "a value of another type"
    for kind, name in _JSON_TYPES:
        if isinstance(value, kind):
            what = name
            break
    return f"content block {index} is {what}, not a string or an object"


def content_blocks(
    content: Any,
    block: Callable[[Any, dict[str, Any]], BlockRow | None],
    junk: Callable[[str], None] | None = None,
) -> list[BlockRow] | None:
    """A message's content as block rows: a string, or a list of strings and typed blocks.

    What the chat formats share: a string is one ``text`` block (none when blank); in a list, a
    string is a ``text`` block, an object becomes ``block(its type, it)`` (``None``: no block)
    and anything else (a number, null, an array) is junk: left out, and its reason
    (:func:`junk_block`) handed to ``junk`` -- a reader passes the builder's ``skip`` for the
    record's line, so it is a counted skip, and a :class:`LoadError` in strict mode.

    Returns:
        The blocks, or ``None`` when ``content`` is neither a string nor a list (the reader skips
        the record, naming its line).

    Example:
        >>> content_blocks(["hi", {"type": "image"}], lambda t, b: BlockRow(t))
        [BlockRow(block_type='text', text='hi', tool_name=None, tool_input=None, is_error=False), \
BlockRow(block_type='image', text='', tool_name=None, tool_input=None, is_error=False)]
    """
    if isinstance(content, str):
        return [BlockRow("text", content)] if content.strip() else []
    if not isinstance(content, list):
        return None
    out: list[BlockRow] = []
    for i, b in enumerate(content):
        if isinstance(b, str):
            out.append(BlockRow("text", b))
        elif isinstance(b, dict):
            row = block(b.get("type"), b)
            if row is not None:
                out.append(row)
        elif junk is not None:
            junk(junk_block(i, b))
    return out
