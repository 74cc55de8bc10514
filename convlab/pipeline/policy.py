"""The content policy: what text each block contributes to what is embedded.

By default: user text and assistant text on; tool calls on, rendered as
``name key:value key:value`` with each value cut to 250 characters; thinking and tool results
off (when turned on, each block is capped). System messages (system prompts, injected context,
compaction summaries) are off by default: they are not what a person said. An analyst changes the
policy and compares strategies under it.

In dialogs (``conversations.kind == "dialog"``), :attr:`ContentPolicy.text_format` names how a
message's text is written (:data:`TEXT_FORMATS`): ``plain``, ``speaker`` (``Ann: text``, the
default), ``date`` (``(1:56 pm on 8 May, 2023) Ann: text``) or ``locomo``, the form LoCoMo's own
retrieval baseline embeds (``(1:56 pm on 8 May, 2023) Ann said, "text"``; snap-research/locomo,
``task_eval/dpr_qa.py``, ``get_context_embeddings``). The prefix goes on the first kept block of
the message (the closing quote of ``locomo`` on the last), so it is part of the chunk text,
counted in its tokens and brought back by resurrection.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import asdict, dataclass, replace
from typing import Any

import polars as pl

from convlab.loaders.corpus import Corpus
from convlab.registry import Registry

__all__ = [
    "TEXT_FORMATS",
    "ContentPolicy",
    "date_text",
    "policy_summary",
    "policy_text",
    "render_tool_call",
]

TextFormat = Callable[[pl.Expr, pl.Expr], tuple[pl.Expr, pl.Expr]]
"""``(speaker, date) -> (prefix, suffix)`` of a dialog message's text.

``speaker`` is the speaker's name and ``date`` the message's time as :func:`date_text` writes it,
each null when the message has none; a null prefix or suffix adds nothing.
"""

TEXT_FORMATS: Registry[TextFormat] = Registry("text format")
"""How a dialog message's text is written, by name (:attr:`ContentPolicy.text_format`)."""


@TEXT_FORMATS.register("plain")
def _plain(speaker: pl.Expr, date: pl.Expr) -> tuple[pl.Expr, pl.Expr]:
    """The text alone."""
    return pl.lit(None, pl.String), pl.lit(None, pl.String)


@TEXT_FORMATS.register("speaker")
def _speaker(speaker: pl.Expr, date: pl.Expr) -> tuple[pl.Expr, pl.Expr]:
    """``Ann: text``."""
    return speaker + pl.lit(": "), pl.lit(None, pl.String)


@TEXT_FORMATS.register("date")
def _date(speaker: pl.Expr, date: pl.Expr) -> tuple[pl.Expr, pl.Expr]:
    """``(1:56 pm on 8 May, 2023) Ann: text``."""
    return _joined("(" + date + ") ", speaker + pl.lit(": ")), pl.lit(None, pl.String)


@TEXT_FORMATS.register("locomo")
def _locomo(speaker: pl.Expr, date: pl.Expr) -> tuple[pl.Expr, pl.Expr]:
    """``(1:56 pm on 8 May, 2023) Ann said, "text"``, as LoCoMo's RAG baseline embeds a message.

    Without a speaker there is nothing to quote: ``(date) text``.
    """
    quote = pl.when(speaker.is_not_null()).then(pl.lit('"'))
    return _joined("(" + date + ") ", speaker + pl.lit(' said, "')), quote


def _joined(*parts: pl.Expr) -> pl.Expr:
    """The parts that are not null, concatenated (empty when all are)."""
    return pl.concat_str(list(parts), ignore_nulls=True)


def date_text(timestamp: pl.Expr) -> pl.Expr:
    """A message's time in LoCoMo's own short form: ``1:56 pm on 8 May, 2023``.

    Written in UTC, the zone the loaders store (LoCoMo's session times are read as UTC, so its
    ``session_N_date_time`` strings come back exactly); seconds are added (``1:56:07 pm ...``)
    only when they are not zero; fractions of a second are dropped. Month names and am/pm are
    polars' own English (chrono), whatever the process locale. Null stays null.

    Example:
        >>> from datetime import UTC, datetime
        >>> ts = pl.Series([datetime(2023, 5, 8, 13, 56, tzinfo=UTC)])
        >>> pl.select(date_text(pl.lit(ts))).item()
        '1:56 pm on 8 May, 2023'
    """
    return (
        pl.when(timestamp.dt.second() == 0)
        .then(timestamp.dt.strftime("%-I:%M %P on %-d %B, %Y"))
        .otherwise(timestamp.dt.strftime("%-I:%M:%S %P on %-d %B, %Y"))
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class ContentPolicy:
    """What text each block contributes.

    Attributes:
        user_text: text blocks of user messages.
        assistant_text: text blocks of assistant messages.
        tool_calls: tool calls as ``name key:value ...``.
        tool_call_value_chars: each tool-call value is cut to this many characters.
        thinking: thinking blocks (assistant reasoning).
        thinking_max_chars: cap on a thinking block when on.
        tool_results: tool outputs (role ``tool`` chunks).
        tool_result_max_chars: cap on a tool output when on.
        system: system messages (system prompts, injected context, summaries).
        speaker_labels: the older switch for dialog speaker labels: ``False`` is
            ``text_format="plain"``; ``None`` (the default) follows :attr:`text_format`. After
            construction it always holds whether the format writes the speaker.
        text_format: how a dialog message's text is written, a name in :data:`TEXT_FORMATS`:
            ``plain`` (the text), ``speaker`` (``Ann: text``), ``date`` (``(date) Ann: text``)
            or ``locomo`` (``(date) Ann said, "text"``). The date is the message's time in
            :func:`date_text`'s form; a message without a time gets no date part, one without
            a speaker no speaker part. Chats (agents, assistants) never get a prefix.

    Raises:
        ValueError: a cap below 1, an unknown ``text_format`` (listing the valid ones), or a
            ``speaker_labels`` that contradicts ``text_format`` (``True`` with ``plain``,
            ``False`` with ``date`` or ``locomo``). ``speaker_labels=False`` with the default
            ``text_format="speaker"`` is the older spelling of ``plain``, not a contradiction.
    """

    user_text: bool = True
    assistant_text: bool = True
    tool_calls: bool = True
    tool_call_value_chars: int = 250
    thinking: bool = False
    thinking_max_chars: int = 2000
    tool_results: bool = False
    tool_result_max_chars: int = 2000
    system: bool = False
    speaker_labels: bool | None = None
    text_format: str = "speaker"

    def __post_init__(self) -> None:
        for name in ("tool_call_value_chars", "thinking_max_chars", "tool_result_max_chars"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be at least 1")
        if not isinstance(self.text_format, str) or self.text_format not in TEXT_FORMATS:
            raise ValueError(
                f"text_format must be one of {', '.join(TEXT_FORMATS.names())}, "
                f"not {self.text_format!r}"
            )
        if self.speaker_labels is False and self.text_format == "speaker":
            object.__setattr__(self, "text_format", "plain")  # the older spelling of plain
        writes_speaker = self.text_format != "plain"
        if self.speaker_labels is not None and self.speaker_labels != writes_speaker:
            raise ValueError(
                f"speaker_labels={self.speaker_labels} contradicts text_format="
                f"{self.text_format!r}, which {'writes' if writes_speaker else 'omits'} the "
                "speaker; set text_format alone"
            )
        object.__setattr__(self, "speaker_labels", writes_speaker)

    def as_dict(self) -> dict[str, Any]:
        """The policy as a plain dict (saved in manifests and run configs)."""
        return asdict(self)

    def with_text_format(self, text_format: str) -> ContentPolicy:
        """A copy that writes dialog messages in ``text_format`` (the speaker switch follows).

        Example:
            >>> ContentPolicy().with_text_format("plain").speaker_labels
            False
        """
        return replace(self, text_format=text_format, speaker_labels=None)


def render_tool_call(name: str | None, tool_input: str | None, value_chars: int = 250) -> str:
    """``name key:value key:value``, each value cut to ``value_chars`` characters.

    Example:
        >>> render_tool_call("Bash", '{"command": "ls -la", "timeout": 5}')
        'Bash command:ls -la timeout:5'
    """
    parts = [name or "tool"]
    try:
        data = json.loads(tool_input) if tool_input else {}
    except ValueError:
        data = tool_input
    if isinstance(data, dict):
        for key, value in data.items():
            text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
            parts.append(f"{key}:{_cut(text, value_chars)}")
    elif data not in (None, ""):
        text = data if isinstance(data, str) else json.dumps(data, ensure_ascii=False)
        parts.append(_cut(text, value_chars))
    return " ".join(parts)


def _cut(text: str, n: int) -> str:
    return text if len(text) <= n else text[:n] + "..."


def policy_text(corpus: Corpus, policy: ContentPolicy) -> pl.DataFrame:
    """One row per kept block: ``conversation_id, message_index, block_index, role, text``.

    ``role`` is the chunk role: ``tool`` for tool results, else the message's role. In dialogs,
    the :attr:`ContentPolicy.text_format` prefix goes on the first kept block of each message and
    its suffix (``locomo``'s closing quote) on the last.
    """
    m = corpus.messages.select("conversation_id", "message_index", "role", "speaker", "timestamp")
    b = corpus.blocks.join(m, on=["conversation_id", "message_index"], how="inner")
    kind = corpus.conversations.select("conversation_id", "kind")
    b = b.join(kind, on="conversation_id", how="left")
    role, bt = pl.col("role"), pl.col("block_type")
    keep = (
        ((bt == "text") & (role == "user") & pl.lit(policy.user_text))
        | ((bt == "text") & (role == "assistant") & pl.lit(policy.assistant_text))
        | ((bt == "text") & (role == "system") & pl.lit(policy.system))
        | ((bt == "text") & (role == "tool") & pl.lit(policy.tool_results))
        | ((bt == "tool_call") & pl.lit(policy.tool_calls))
        | ((bt == "thinking") & pl.lit(policy.thinking))
        | ((bt == "tool_result") & pl.lit(policy.tool_results))
    )
    b = b.filter(keep)
    calls = b.filter(bt == "tool_call")
    rendered = [
        render_tool_call(n, i, policy.tool_call_value_chars)
        for n, i in zip(calls["tool_name"], calls["tool_input"], strict=True)
    ]
    calls = calls.with_columns(pl.Series("text", rendered, dtype=pl.String))
    b = pl.concat([b.filter(bt != "tool_call"), calls]).sort(
        "conversation_id", "message_index", "block_index"
    )
    b = b.with_columns(
        pl.when(bt == "thinking")
        .then(pl.col("text").str.slice(0, policy.thinking_max_chars))
        .when(bt == "tool_result")
        .then(pl.col("text").str.slice(0, policy.tool_result_max_chars))
        .otherwise(pl.col("text"))
        .alias("text"),
        pl.when(bt == "tool_result").then(pl.lit("tool")).otherwise(role).alias("role"),
    ).filter(pl.col("text").str.strip_chars() != "")
    if policy.text_format != "plain":
        b = b.with_columns(_formatted(policy.text_format).alias("text"))
    return b.select("conversation_id", "message_index", "block_index", "role", "text")


def _formatted(text_format: str) -> pl.Expr:
    """The kept block's text written in ``text_format`` (dialogs only)."""
    prefix, suffix = TEXT_FORMATS.get(text_format)(
        pl.col("speaker"), date_text(pl.col("timestamp"))
    )
    block, message = pl.col("block_index"), ("conversation_id", "message_index")
    dialog = pl.col("kind") == "dialog"
    first = dialog & (block == block.min().over(*message))
    last = dialog & (block == block.max().over(*message))
    return pl.concat_str(
        [
            pl.when(first).then(prefix),
            pl.col("text"),
            pl.when(last).then(suffix),
        ],
        ignore_nulls=True,
    )


def policy_summary(corpus: Corpus, policy: ContentPolicy) -> pl.DataFrame:
    """What the policy keeps and drops: blocks and characters by role and block type."""
    m = corpus.messages.select("conversation_id", "message_index", "role")
    b = corpus.blocks.join(m, on=["conversation_id", "message_index"], how="inner")
    kept = policy_text(corpus, policy).select(
        "conversation_id", "message_index", "block_index", pl.lit(True).alias("kept")
    )
    b = b.join(kept, on=["conversation_id", "message_index", "block_index"], how="left")
    return (
        b.with_columns(pl.col("kept").fill_null(False))
        .group_by("role", "block_type", "kept")
        .agg(pl.len().alias("blocks"), pl.col("text").str.len_chars().sum().alias("chars"))
        .sort("role", "block_type", "kept")
    )
