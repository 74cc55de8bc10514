"""Late chunking: every strategy's units, their vectors pooled from one pass over the messages.

Günther et al., "Late Chunking: Contextual Chunk Embeddings Using Long-Context Embedding
Models" (arXiv 2409.04701): run the encoder once over a long window of text, keep its token
states, and make each chunk's vector the mean of its own tokens' states. Every token then carries
the context the window gave it, and a unit costs a mean over rows, not a forward pass.

Here a **pass** is a window of a conversation's consecutive messages, whole messages packed in
order up to ``window`` tokens ([CLS] and [SEP] included): 256 (the length MiniLM was trained on)
or 512 (its position embeddings, :data:`convlab.model.MAX_POSITIONS`). A window never spans two
sessions (:func:`convlab.schema.session_id`). The next window starts with the last messages of
the previous one that hold at most :data:`OVERLAP` of the window, so messages at a cut see both
sides; each chunk's rows are taken from its **home** pass, the one where it has the most context
on its shorter side. A message longer than a window is cut at its sentences into overlapping
windows (:func:`convlab.strategies.base.windows`): never truncated.

Each plain strategy ``S`` has two late variants, ``late_S`` (256-token passes) and
``late512_S`` (512): the same units as ``S`` (the same chunks, text, docs and targets, so BM25
and resurrection read the same), each unit's vector the mean of its chunks' token states in
their home passes, L2-normalised as the model's own pooling output is. ``late_isolated`` is
the paper's late chunking; ``late_sequential`` pools the target with its neighbours;
``late_message`` pools a whole message. A unit's ``context_tokens`` is the length of the
smallest pass its rows came from. The pooling is :func:`convlab.pipeline.late.late_vectors`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from itertools import groupby
from typing import cast

from convlab.model import MAX_POSITIONS, MAX_TOKENS, SPECIAL_TOKENS
from convlab.protocols import Chunk, Strategy
from convlab.schema import session_id
from convlab.strategies.base import STRATEGIES, Unit, windows

__all__ = [
    "LATE_WINDOWS",
    "OVERLAP",
    "LatePass",
    "homes",
    "late_window",
    "passes",
    "plain_of",
]

OVERLAP = 0.25
"""Share of a pass a window carries over from the previous one (whole messages)."""

LATE_WINDOWS = {"late": MAX_TOKENS, "late512": MAX_POSITIONS}
"""Name prefix -> tokens of a pass."""


@dataclass(frozen=True, slots=True)
class LatePass:
    """One forward pass: consecutive chunks of a conversation, embedded as one text."""

    chunks: tuple[Chunk, ...]

    @property
    def text(self) -> str:
        """The chunks' texts joined by one space (their tokens add up: see strategies.base)."""
        return " ".join(c.text for c in self.chunks)

    @property
    def n_tokens(self) -> int:
        """Tokens the model sees: the chunks' plus [CLS] and [SEP]."""
        return sum(c.n_tokens for c in self.chunks) + SPECIAL_TOKENS

    @property
    def spans(self) -> list[tuple[int, int]]:
        """Each chunk's token rows ``[start, end)`` in the pass's states ([CLS] is row 0)."""
        out, start = [], 1
        for c in self.chunks:
            out.append((start, start + c.n_tokens))
            start += c.n_tokens
        return out


def _messages(chunks: Sequence[Chunk]) -> list[list[Chunk]]:
    """The chunks grouped by message, in order."""
    return [list(g) for _, g in groupby(chunks, key=lambda c: c.message_index)]


def _size(message: Sequence[Chunk]) -> int:
    return sum(c.n_tokens for c in message)


def _carried(window: list[list[Chunk]], budget: float) -> list[list[Chunk]]:
    """The last messages of ``window`` holding at most ``budget`` tokens, never all of them."""
    kept: list[list[Chunk]] = []
    used = 0
    for m in reversed(window[1:]):
        if used + _size(m) > budget:
            break
        kept.insert(0, m)
        used += _size(m)
    return kept


def passes(chunks: Sequence[Chunk], window: int) -> list[LatePass]:
    """One conversation's chunks (in order) as late-chunking passes of at most ``window`` tokens.

    Whole messages are packed greedily; a full window is followed by one starting with its last
    messages that hold at most ``OVERLAP * window`` tokens; a new session starts a new window
    with nothing carried. A message that does not fit a window alone becomes overlapping windows
    of its sentences. Every chunk is in at least one pass.
    """
    out: list[LatePass] = []
    current: list[list[Chunk]] = []
    used = SPECIAL_TOKENS

    def flush() -> None:
        if current:
            out.append(LatePass(tuple(c for m in current for c in m)))

    last_session: str | None = None
    for m in _messages(chunks):
        session = session_id(m[0].conversation_id, m[0].timestamp)
        if session != last_session and current:
            flush()
            current, used = [], SPECIAL_TOKENS
        last_session = session
        size = _size(m)
        if size + SPECIAL_TOKENS > window:  # a long message: its own overlapping windows
            flush()
            out.extend(LatePass(tuple(w)) for w in windows(m, window, OVERLAP))
            current, used = [], SPECIAL_TOKENS
            continue
        if used + size > window:
            flush()
            current = _carried(current, OVERLAP * window)
            while current and SPECIAL_TOKENS + sum(map(_size, current)) + size > window:
                current.pop(0)
            used = SPECIAL_TOKENS + sum(map(_size, current))
        current.append(m)
        used += size
    flush()
    return out


def homes(all_passes: Sequence[LatePass]) -> dict[str, tuple[int, int]]:
    """Each chunk's home: ``chunk_id -> (pass index, position in the pass)``.

    The pass where the chunk has the most tokens on its shorter side (before or after it); the
    first such pass on a tie.
    """
    best: dict[str, tuple[int, int, int]] = {}
    for p, lp in enumerate(all_passes):
        total = lp.n_tokens
        for j, ((start, end), c) in enumerate(zip(lp.spans, lp.chunks, strict=True)):
            margin = min(start, total - end)
            if c.chunk_id not in best or margin > best[c.chunk_id][0]:
                best[c.chunk_id] = (margin, p, j)
    return {cid: (p, j) for cid, (_, p, j) in best.items()}


def late_window(strategy: str) -> int | None:
    """Tokens of a pass of the late strategy ``strategy``; None for any other name."""
    if strategy not in STRATEGIES:
        return None
    window = getattr(STRATEGIES.get(strategy), "window", None)
    return window if isinstance(window, int) else None


def plain_of(strategy: str) -> str:
    """The plain strategy a late one is the variant of (``late512_message`` -> ``message``)."""
    prefix, _, rest = strategy.partition("_")
    return rest if prefix in LATE_WINDOWS and late_window(strategy) is not None else strategy


class _Late:
    """The late variant of a plain strategy: its units, pooled from passes of ``window`` tokens."""

    def __init__(self, plain: Strategy, prefix: str) -> None:
        self.plain = plain
        self.window = LATE_WINDOWS[prefix]
        self.name = f"{prefix}_{plain.name}"

    def units(self, chunks: Sequence[Chunk], *, max_tokens: int) -> list[Unit]:
        """The plain strategy's units, renamed, each with the tokens of its smallest pass."""
        all_passes = passes(chunks, self.window)
        home = homes(all_passes)
        out = self.plain.units(chunks, max_tokens=max_tokens)
        cut = len(self.plain.name)
        for u in out:
            u["strategy"] = self.name
            u["unit_id"] = self.name + str(u["unit_id"])[cut:]
            ids = cast("list[str]", u["chunk_ids"])
            u["context_tokens"] = min(all_passes[home[i][0]].n_tokens for i in ids)
        return out


def _register_late_variants() -> None:
    """``late_S`` and ``late512_S`` for every plain strategy registered so far."""
    for name in list(STRATEGIES.names()):
        for prefix in LATE_WINDOWS:
            late = _Late(STRATEGIES.get(name), prefix)
            STRATEGIES.add(late.name, late)


_register_late_variants()
