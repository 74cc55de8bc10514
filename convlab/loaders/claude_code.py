"""Claude Code session JSONL (``~/.claude/projects/<cwd slug>/<sessionId>.jsonl``).

What it handles (see shared/transcripts/FORMATS.md section 2):

- v2.x writes one content block per assistant line; lines sharing ``message.id`` are one message
  (their blocks merged in order, ``usage`` not summed), whose ``source_line`` is its first line
  that is not thinking alone (the text or tool call a hit shows);
- tool results arrive as ``type:user`` lines holding ``tool_result`` blocks: such a line becomes a
  ``tool`` message (``tool_result`` blocks, ``is_error`` kept);
- a slash command typed with arguments (``<command-name>/compact</command-name> ...
  <command-args>and continue</command-args>``) is a prompt whose text is ``/compact and
  continue``; without arguments (``/mcp``) it is injected;
- injected lines that are not a human prompt become ``system`` messages: ``isMeta`` lines,
  ``<system-reminder>``, ``<local-command-stdout>``, ``<task-notification>``,
  ``[Request interrupted ...]``, ``Caveat:`` notes, compaction summaries (``isCompactSummary``),
  ``system/local_command`` lines, a sidechain's ``Warmup``;
- records that are not messages (``summary`` -- its text becomes the title --,
  ``file-history-snapshot``, ``progress`` -- which duplicates sub-agent messages and is not
  re-emitted --, ``queue-operation``, ``last-prompt``, other ``system`` subtypes) are counted;
- a conversation's ``project`` is the ``cwd`` of its records; one without a ``summary`` record
  (Claude Code 2.x writes none) is titled by its first prompt after loading;
- sidechains are conversations of their own, never folded into the session: sub-agent files
  (``agent-*.jsonl`` beside the session, v2.0.x, or ``<sessionId>/subagents/agent-*.jsonl``,
  v2.1.x), files of ``isSidechain`` records that share the session's ``sessionId`` (a v2.0.x
  ``Warmup``), and ``isSidechain`` records inside a session file. Each has
  ``parent_conversation_id`` = the session, ``agent_id`` = its ``agentId``, every message
  ``is_sidechain``, and turns of its own (its first prompt, written by the parent agent, is its
  user's). A compaction worker
  (``agent-acompact-*``) is one too, but its prompt is injected, like the session's compaction
  summary: it has no turn, so the summary it writes is not searched twice.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from convlab.loaders.base import CorpusBuilder
from convlab.loaders.blocks import BlockRow
from convlab.loaders.claude_code_lines import (
    INJECTED_PREFIXES,
    Block,
    Message,
    Record,
    block_rows,
    command_prompt,
    records,
    text_of,
)
from convlab.loaders.jsontext import TOO_DEEP, too_deep_reason
from convlab.loaders.registry import register_format
from convlab.loaders.times import parse_time

__all__ = ["ClaudeCodeReader", "command_prompt"]


@dataclass(slots=True)
class _Pending:
    """A message not yet handed to the builder (assistant lines are merged by message id)."""

    role: str
    blocks: list[BlockRow]
    line: int
    timestamp: datetime | None
    real: bool = False
    sidechain: bool = False
    external_id: str | None = None
    message_id: str | None = None
    followers: list[_Pending] = field(default_factory=list)


def _only_thinking(blocks: list[BlockRow]) -> bool:
    """Blocks that are all thinking (a record the default content policy leaves out)."""
    return all(b.block_type == "thinking" for b in blocks)


@register_format(priority=30)
class ClaudeCodeReader:
    """Reader for Claude Code session files and their sub-agent files."""

    name = "claude_code"

    def sniff(self, path: Path, head: bytes) -> bool:
        """A JSONL file whose first records carry Claude Code's fields."""
        if path.suffix.lower() != ".jsonl":
            return False
        text = head.decode("utf-8", "ignore")
        if '"sessionId"' in text and ('"parentUuid"' in text or '"uuid"' in text):
            return True
        first = text.lstrip().split("\n", 1)[0]
        return first.startswith('{"type":"summary"') or '"leafUuid"' in first

    def companion(self, path: Path) -> bool:
        """Claude Code has no side files that are read with a session."""
        return False

    def read(self, path: Path, builder: CorpusBuilder) -> int:
        """Read one session or sub-agent file; return the number of lines read."""
        return _FileReader(path, builder, self.name).read()


@dataclass(slots=True)
class _Conv:
    """One conversation fed by a file: the session itself, or one of its sidechains."""

    conversation_id: str
    sidechain: bool
    compaction: bool = False  # a compaction worker (agent-acompact-*): its prompt is injected
    pending: _Pending | None = None
    project: str | None = None


class _FileReader:
    """The state of reading one file: the conversations it feeds and their pending messages.

    Records of the session go to the session's conversation; sidechain records (every record of
    an ``agent-*.jsonl`` file, and ``isSidechain`` records elsewhere) go to a conversation of
    their own, one per ``agentId`` (see :meth:`_sidechain`), whose ``parent_conversation_id`` is
    the session.
    """

    def __init__(self, path: Path, builder: CorpusBuilder, format_name: str) -> None:
        self.path, self.builder, self.format_name = path, builder, format_name
        self.spath = str(path)  # one string for every row of this file
        self.agent_file = path.name.startswith("agent-")
        self.main: _Conv | None = None
        self.sides: dict[str | None, _Conv] = {}
        self.title: str | None = None  # of a summary record

    def read(self) -> int:
        lines = 0
        for number, rec in records(self.path, self.builder):
            lines = number
            self._record(number, rec)
        self._finish()
        return lines

    def _record(self, number: int, rec: Record) -> None:
        """Dispatch one record to the message it makes, or count it."""
        kind = rec.type
        if not isinstance(kind, str):
            self.builder.skip(self.path, number, "record without a type")
            return
        if kind == "summary":
            if self.title is None and isinstance(rec.summary, str):
                self.title = rec.summary
            self.builder.record()
            return
        if kind not in ("user", "assistant", "system"):
            self.builder.record()
            return
        conv = self._conversation(rec)
        if conv.project is None and isinstance(rec.cwd, str) and rec.cwd:
            conv.project = rec.cwd
        when = parse_time(rec.timestamp)
        uuid = rec.uuid if type(rec.uuid) is str else None
        if kind == "system":
            self._system(conv, number, rec, when, uuid)
            return
        found = self._blocks_of(number, rec, kind)
        if found is None:
            return
        msg, content, blocks = found
        if kind == "assistant":
            self._assistant(conv, number, msg, blocks, when, uuid)
        else:
            self._user(conv, number, rec, content, blocks, when, uuid)

    # -- conversations ------------------------------------------------------------------------
    def _conversation(self, rec: Record) -> _Conv:
        """The conversation a message record belongs to (opened on its first record)."""
        session = rec.sessionId if isinstance(rec.sessionId, str) and rec.sessionId else None
        if self.agent_file or bool(rec.isSidechain):
            agent = rec.agentId if isinstance(rec.agentId, str) and rec.agentId else None
            return self._sidechain(session, agent)
        if self.main is None:
            self.main = self._open(session or self.path.stem, sidechain=False)
        return self.main

    def _sidechain(self, session: str | None, agent: str | None) -> _Conv:
        """A sidechain's own conversation, with its parent session and agent id.

        Its id is ``{session}:{file stem}`` for an ``agent-*.jsonl`` file (the stem is
        ``agent-{agentId}``); elsewhere ``{session}:agent-{agentId}``, or without an agent id
        ``{session}:{file stem}`` (a sidechain file of its own) or ``{session}:sidechain``.
        """
        key = None if self.agent_file else agent
        conv = self.sides.get(key)
        if conv is not None:
            return conv
        path = self.path
        if self.agent_file:
            in_subagents = path.parent.name == "subagents"
            parent = session or (path.parent.parent.name if in_subagents else None)
            cid = f"{session or path.parent.name}:{path.stem}"
            agent = agent or path.stem.removeprefix("agent-")
        else:
            parent = session or (self.main.conversation_id if self.main else path.stem)
            if agent:
                cid = f"{parent}:agent-{agent}"
            elif parent != path.stem:
                cid = f"{parent}:{path.stem}"
            else:
                cid = f"{parent}:sidechain"
        conv = self.sides[key] = self._open(cid, sidechain=True, parent=parent, agent=agent)
        conv.compaction = (agent or "").startswith("acompact")
        return conv

    def _open(
        self, cid: str, *, sidechain: bool, parent: str | None = None, agent: str | None = None
    ) -> _Conv:
        self.builder.conversation(
            cid,
            source_format=self.format_name,
            source_path=self.path,
            kind="chat",
            parent_conversation_id=parent,
            agent_id=agent,
        )
        return _Conv(cid, sidechain)

    def _finish(self) -> None:
        """Hand the pending messages over; give each conversation its title and project.

        The title is the summary record's (older builds write one) for the session; one
        without is titled by its first prompt after loading
        (:func:`~convlab.loaders.corpus.titled_by_first_prompt`).
        """
        convs = [c for c in (self.main, *self.sides.values()) if c is not None]
        for conv in convs:
            self._flush(conv)
        summary_to = self.main or (convs[0] if len(convs) == 1 else None)
        for conv in convs:
            title = self.title if conv is summary_to else None
            self.builder.conversation(
                conv.conversation_id,
                source_format=self.format_name,
                source_path=self.path,
                title=title,
                project=conv.project,
            )
        if not convs and self.title:
            self.builder.record()

    # -- messages -----------------------------------------------------------------------------
    def _flush(self, conv: _Conv) -> None:
        """Hand ``conv``'s pending message (and the tool results that follow it) to the builder."""
        pending = conv.pending
        if pending is None:
            return
        for p in (pending, *pending.followers):
            self.builder.message_or_record(
                conv.conversation_id,
                p.role,
                p.blocks,
                source_path=self.spath,
                source_line=p.line,
                timestamp=p.timestamp,
                is_real_user=p.real,
                is_sidechain=p.sidechain,
                external_id=p.external_id,
            )
        conv.pending = None

    def _system(
        self, conv: _Conv, number: int, rec: Record, when: datetime | None, uuid: str | None
    ) -> None:
        """A ``system/local_command`` record is a system message; other subtypes are counted."""
        content = rec.content
        if rec.subtype == "local_command" and isinstance(content, str):
            self._flush(conv)
            conv.pending = _Pending(
                "system",
                [BlockRow("text", content)],
                number,
                when,
                sidechain=conv.sidechain,
                external_id=uuid,
            )
        else:
            self.builder.record()

    def _blocks_of(
        self, number: int, rec: Record, kind: str
    ) -> tuple[Message, list[Block], list[BlockRow]] | None:
        """The message, its content as blocks and its block rows; None when skipped."""
        msg = rec.message
        if not isinstance(msg, Message):
            self.builder.skip(self.path, number, f"{kind} record without a message object")
            return None
        content = msg.content
        if isinstance(content, str):
            content = [Block(type="text", text=content)]
        if not isinstance(content, list):
            reason = f"{kind} message content is not a string or a list"
            self.builder.skip(self.path, number, reason)
            return None
        try:
            junk = f"{kind} message"
            rows = block_rows(
                content, lambda why: self.builder.skip(self.path, number, f"{junk}: {why}")
            )
            return msg, content, rows
        except TOO_DEEP as exc:  # a tool input nested too deeply to write back as text
            self.builder.skip(self.path, number, too_deep_reason(exc))
            return None

    def _assistant(
        self,
        conv: _Conv,
        number: int,
        msg: Message,
        blocks: list[BlockRow],
        when: datetime | None,
        uuid: str | None,
    ) -> None:
        """An assistant line: merged into the pending message when it shares its message id."""
        mid = msg.id if type(msg.id) is str else None
        pending = conv.pending
        same = pending is not None and pending.role == "assistant" and pending.message_id == mid
        if mid and same and pending is not None:
            if _only_thinking(pending.blocks) and not _only_thinking(blocks):
                pending.line = number  # the message's line: its first record shown, not thinking
            pending.blocks.extend(blocks)
            self.builder.record()
            return
        self._flush(conv)
        conv.pending = _Pending(
            "assistant",
            blocks,
            number,
            when,
            sidechain=conv.sidechain,
            external_id=uuid,
            message_id=mid,
        )

    def _user(
        self,
        conv: _Conv,
        number: int,
        rec: Record,
        content: list[Block],
        blocks: list[BlockRow],
        when: datetime | None,
        uuid: str | None,
    ) -> None:
        """A user line: a tool-result carrier, an injected line, or a prompt.

        A slash command typed with arguments (``/compact and continue``) is a prompt whose text
        is the command and its arguments; one without arguments (``/mcp``) is injected.
        """
        side = conv.sidechain
        types = {b.block_type for b in blocks}
        if (
            "tool_result" in types
            and types <= {"tool_result", "image", "text"}
            and not (types & {"text"} and not types - {"text", "image"})
        ):
            carrier = _Pending("tool", blocks, number, when, sidechain=side, external_id=uuid)
            if conv.pending is not None and conv.pending.role == "assistant":
                conv.pending.followers.append(carrier)
            else:
                self._flush(conv)
                conv.pending = carrier
            return
        self._flush(conv)
        text = text_of(content).lstrip()
        command = None if rec.isMeta else command_prompt(text)
        if command is not None:
            blocks, text = [BlockRow("text", command)], command
        injected = command is None and (
            bool(rec.isMeta)
            or bool(rec.isCompactSummary)
            or text.startswith(INJECTED_PREFIXES)
            or (side and text.strip() == "Warmup")
            or conv.compaction
        )
        real = not injected and any(b.block_type == "text" for b in blocks)
        conv.pending = _Pending(
            "system" if injected else "user",
            blocks,
            number,
            when,
            real=real,
            sidechain=side,
            external_id=uuid,
        )
