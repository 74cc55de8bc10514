"""What every strategy shares: the registry, chunks, and packing under the unit's token limit.

A strategy (:class:`convlab.protocols.Strategy`) turns one conversation's chunks (rows of
:data:`convlab.schema.CHUNKS`, in conversation order) into units (rows of
:data:`convlab.schema.UNITS`). What a unit's docs are (turns or messages) is read from each
chunk's ``doc_kind``, decided once per conversation when it was loaded. A unit's ``text`` is its
chunks' texts joined by one space in conversation order, and ``n_tokens`` = the chunks' token sum
+ 2 ([CLS] and [SEP]): WordPiece counts of space-joined texts are additive (tested), so the count
is exact without re-tokenising. Resurrection reads ``chunk_ids`` and never recomputes them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from itertools import groupby
from typing import TypeVar

from convlab.model import SPECIAL_TOKENS
from convlab.protocols import Chunk, Strategy
from convlab.registry import Registry

__all__ = [
    "STRATEGIES",
    "Chunk",
    "Unit",
    "doc_ids_for",
    "get_strategy",
    "make_unit",
    "message_windows",
    "pack",
    "pack_window",
    "register_strategy",
    "window_units",
    "windows",
    "windows_per",
]


Unit = dict[str, object]
"""One unit row: :data:`convlab.schema.UNITS` columns by name."""

STRATEGIES: Registry[Strategy] = Registry("strategy")
"""The strategies by name, each registered by :func:`register_strategy` in its own module."""

S = TypeVar("S", bound=Strategy)


def register_strategy(cls: type[S]) -> type[S]:
    """Class decorator: instantiate the strategy and register it under its ``name``.

    Raises:
        ValueError: a strategy of that name is registered already.
    """
    strategy = cls()
    STRATEGIES.add(strategy.name, strategy)
    return cls


def get_strategy(name: str) -> Strategy:
    """The registered strategy called ``name``.

    Raises:
        ValueError: listing the valid names.
    """
    return STRATEGIES.get(name)


def tokens_of(chunks: Iterable[Chunk]) -> int:
    """Tokens the model sees for these chunks joined: their sum plus [CLS] and [SEP]."""
    return sum(c.n_tokens for c in chunks) + SPECIAL_TOKENS


def pack(target: Chunk, context: Sequence[Chunk | None], max_tokens: int) -> list[Chunk]:
    """The target plus each context chunk (in priority order) that fits, in conversation order.

    ``None`` entries and chunks already taken (the target being an S0, say) are passed over.
    """
    return pack_window([target], context, max_tokens)


def pack_window(
    window: Sequence[Chunk], context: Sequence[Chunk | None], max_tokens: int
) -> list[Chunk]:
    """:func:`pack` for a target of several chunks: the window, then each context chunk that fits.

    ``None`` entries and chunks the window holds already are passed over; the result is in
    conversation order.
    """
    chosen = list(window)
    taken = {c.chunk_id for c in chosen}
    used = tokens_of(chosen)
    for c in context:
        if c is None or c.chunk_id in taken:
            continue
        if used + c.n_tokens <= max_tokens:
            chosen.append(c)
            taken.add(c.chunk_id)
            used += c.n_tokens
    return sorted(chosen, key=lambda c: c.position)


def windows(chunks: Sequence[Chunk], max_tokens: int, overlap: float = 0.25) -> list[list[Chunk]]:
    """Cut chunks (in order) into windows of whole chunks that fit ``max_tokens``, with overlap.

    A window is filled greedily; the next one starts with the last chunks of the previous one
    that together hold at most ``overlap * max_tokens`` tokens (never the whole previous window,
    so every window adds new chunks). Text that fits ``max_tokens`` is one window.
    """
    out: list[list[Chunk]] = []
    i = 0
    n = len(chunks)
    while i < n:
        win = [chunks[i]]
        used = tokens_of(win)
        j = i + 1
        while j < n and used + chunks[j].n_tokens <= max_tokens:
            win.append(chunks[j])
            used += chunks[j].n_tokens
            j += 1
        out.append(win)
        if j >= n:
            break
        # carry back up to overlap*max_tokens tokens, keeping at least one new chunk per window
        back = 0
        k = j
        while k - 1 > i and back + chunks[k - 1].n_tokens <= overlap * max_tokens:
            back += chunks[k - 1].n_tokens
            k -= 1
        i = k
    return out


def make_unit(
    strategy: str,
    unit_id: str,
    chunks: Sequence[Chunk],
    *,
    target: Chunk | None,
    doc_ids: Sequence[str],
    side: str | None = None,
) -> Unit:
    """A unit row from its chunks (in conversation order)."""
    first = target or chunks[0]
    return {
        "unit_id": unit_id,
        "strategy": strategy,
        "conversation_id": first.conversation_id,
        "turn_index": first.turn_index,
        "message_index": first.message_index,
        "doc_ids": list(doc_ids),
        "role": None if target is None else target.role,
        "side": side,
        "target_chunk_id": None if target is None else target.chunk_id,
        "chunk_ids": [c.chunk_id for c in chunks],
        "text": " ".join(c.text for c in chunks),
        "n_tokens": tokens_of(chunks),
        "timestamp": first.timestamp,
    }


def doc_ids_for(chunks: Sequence[Chunk]) -> list[str]:
    """The docs a group of chunks stands for, in order: each chunk's turn or message.

    Which one is the chunk's ``doc_kind`` (decided once per conversation when it was loaded).
    """
    seen: dict[str, None] = {}
    for c in chunks:
        seen[c.message_id if c.doc_kind == "message" else c.turn_id] = None
    return list(seen)


def s0_index(chunks: Sequence[Chunk]) -> Mapping[tuple[int, str], Chunk]:
    """Each turn's S0 per role: ``(turn_index, role) -> chunk``."""
    return {(c.turn_index, c.role): c for c in chunks if c.sentence_index == 0}


OVERLAP = 0.25
"""Share of ``max_tokens`` a window may carry over from the previous one (whole_turn, ...)."""

WINDOW_SHARE = 0.5
"""Share of ``max_tokens`` a bounded strategy's window of sentences may fill (128 of 256).

The rest is left for the context ``sequential_window`` and ``turn_pair_window`` add around it.
"""


def message_windows(chunks: Sequence[Chunk], max_tokens: int) -> list[list[Chunk]]:
    """Each message's chunks cut into consecutive windows without overlap (the bounded targets).

    A window is filled greedily with whole chunks, in order, up to ``WINDOW_SHARE * max_tokens``
    tokens ([CLS] and [SEP] counted, as in :func:`tokens_of`); the chunk that would pass it starts
    the next window, and a chunk larger than that alone is a window of its own (it still fits
    ``max_tokens``: :func:`convlab.pipeline.units.units` checks that every chunk does). Every
    chunk is in exactly one window, so a message of ``n`` tokens makes about
    ``n / (WINDOW_SHARE * max_tokens)`` units instead of one per sentence, and a message that
    fits is one window.

    Args:
        chunks: one conversation's chunks in order.
        max_tokens: the unit's token limit.
    """
    budget = int(WINDOW_SHARE * max_tokens)
    out: list[list[Chunk]] = []
    for _, group in groupby(chunks, key=lambda c: c.message_index):
        win: list[Chunk] = []
        used = SPECIAL_TOKENS
        for c in group:
            if win and used + c.n_tokens > budget:
                out.append(win)
                win, used = [], SPECIAL_TOKENS
            win.append(c)
            used += c.n_tokens
        out.append(win)
    return out


def window_units(
    strategy: str,
    prefix: str,
    chunks: Sequence[Chunk],
    max_tokens: int,
    *,
    with_target: bool,
    side: str | None = None,
) -> list[Unit]:
    """Units of one group of chunks cut into overlapping windows (ids ``{prefix}{i}``).

    Args:
        strategy: the strategy's name.
        prefix: unit id prefix, e.g. ``"whole_turn:c:t0:w"``.
        chunks: the group's chunks in order.
        max_tokens: the unit's token limit.
        with_target: a window's first chunk is its target (else the window has none).
        side: qa_pair's side.
    """
    return [
        make_unit(
            strategy,
            f"{prefix}{i}",
            win,
            target=win[0] if with_target else None,
            doc_ids=doc_ids_for(win),
            side=side,
        )
        for i, win in enumerate(windows(chunks, max_tokens, OVERLAP))
    ]


def windows_per(
    strategy: str, chunks: Sequence[Chunk], max_tokens: int, *, level: str, with_target: bool
) -> list[Unit]:
    """Each turn's (``level="turn"``) or message's (``"message"``) chunks as windowed units.

    What ``whole_turn`` and ``message`` share: consecutive chunks of one turn (or message) form
    a group, cut by :func:`window_units` into units ``{strategy}:{turn or message id}:w{i}``.

    Args:
        strategy: the strategy's name.
        chunks: one conversation's chunks in order.
        max_tokens: the unit's token limit.
        level: ``turn`` or ``message``.
        with_target: a window's first chunk is its target (else the window has none).

    Raises:
        ValueError: an unknown ``level``.
    """
    if level == "turn":
        groups = groupby(chunks, key=lambda c: c.turn_index)
    elif level == "message":
        groups = groupby(chunks, key=lambda c: c.message_index)
    else:
        raise ValueError(f"unknown window level {level!r}; valid: turn, message")
    out: list[Unit] = []
    for _, group in groups:
        part = list(group)
        first = part[0].turn_id if level == "turn" else part[0].message_id
        prefix = f"{strategy}:{first}:w"
        out += window_units(strategy, prefix, part, max_tokens, with_target=with_target)
    return out
