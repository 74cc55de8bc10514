"""A Model Context Protocol server over a store: search, show and context tools for agents.

``convlab mcp --store DIR`` serves three tools over stdio with the official ``mcp`` SDK (the
``convlab-memory[mcp]`` extra):

- ``search(query, k, conversation, role, since, until, max_chars)``: ranked hits, described as
  ``convlab search --json`` describes them (where, when, the matching message and its file and
  line), with the search's ``confidence`` that something matched
  (:mod:`convlab.systems.confidence`);
- ``show(target, around)``: a hit's doc or message (a ``doc_id``, ``unit_id`` or message id
  from a search) and the ``around`` messages before and after it, with speaker, time and
  source line;
- ``context(query, budget, policy, k, max_chars)``: the context resurrection brings back for
  the query's hits within ``budget`` tokens, as prompt-ready text, best hit first, and per hit.

Each reply is one compact JSON text of at most ``max_chars`` characters
(:func:`convlab.app.mcp_reply.reply`), sent once: no structured copy of the same content.
``search`` and ``context`` draw :data:`~convlab.app.mcp_reply.MCP_K` hits by default.

The store, its index, BM25 and the query embedder are loaded once and kept warm; when
``convlab index`` switches the store to a new version, the next call reads that version.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import polars as pl

from convlab.app.exits import is_input_error, one_line
from convlab.app.mcp_reply import DEFAULT_MAX_CHARS, ranked_text, reply
from convlab.defaults import BUDGET, MCP_K, POLICY
from convlab.extras import require

if TYPE_CHECKING:
    from convlab.protocols import Embedder
    from convlab.store import Store
    from convlab.store.search import StoreSearch
    from convlab.systems.confidence import Verdict

__all__ = ["StoreTools", "build_server"]

INSTRUCTIONS = (
    "Search the user's past conversations with coding agents and chat assistants. Call search "
    "to find where something was discussed, show to read a hit with the messages around it, "
    "and context to get prompt-ready text for a question within a token budget."
)


class StoreTools:
    """The tools' work over one store, its index and embedder loaded once and kept warm.

    Args:
        directory: the store directory.
    """

    def __init__(self, directory: str | Path) -> None:
        from convlab.store import Store

        self.store: Store = Store(directory)
        self._lock = threading.Lock()
        self._loaded: Path | None = None
        self._searcher: StoreSearch | None = None
        self._embedder: Embedder | None = None

    def _fresh(self) -> StoreSearch:
        """The store's search, re-pinned (its views reloaded) when a new version went live."""
        from convlab.store.search import StoreSearch

        with self._lock:
            if self._loaded is not None and self.store.current != self._loaded:
                self.store.refresh()
            version = self.store.version
            if version != self._loaded or self._searcher is None:
                system = self.store.system()
                if self._embedder is None and any(v.retrieval.needs_vectors for v in system.views):
                    from convlab.app.cli.options import embedder_for_vectors

                    manifest = self.store.manifest()
                    self._embedder = embedder_for_vectors(manifest, None, None)
                self._searcher = StoreSearch(self.store, self._embedder)
                self._loaded = version
            return self._searcher

    def hits(
        self,
        query: str,
        k: int = MCP_K,
        conversation: str | None = None,
        role: str | None = None,
        since: str | None = None,
        until: str | None = None,
    ) -> pl.DataFrame:
        """The ranked hits of ``query`` under the store's system (:data:`convlab.schema.HITS`).

        The same search as ``convlab search``: the store's own system (by default the fusion
        chosen by cross-validation), run by :func:`convlab.systems.search.search_system`.

        Raises:
            ValueError: an empty query, ``k`` outside 1..10,000, a bad role or date, or a
                conversation (id or unique start of one) the store does not hold.
        """
        from convlab.app.cli.options import parse_date, resolve_conversation
        from convlab.app.cli.search import MAX_K
        from convlab.app.exits import UsageError
        from convlab.retrieval import Filters, SearchOptions

        if not query.strip():
            raise ValueError("the query is empty")
        if not 1 <= k <= MAX_K:
            raise ValueError(f"k must be at least 1 and at most {MAX_K:,}")
        searcher = self._fresh()
        if conversation:
            try:
                conversation = resolve_conversation(self.store, conversation)
            except UsageError as exc:
                raise ValueError(str(exc)) from None
        filters = Filters(
            conversations=(conversation,) if conversation else None,
            roles=(role,) if role else None,
            since=parse_date(since, "since"),
            until=parse_date(until, "until", end=True),
        )
        options = SearchOptions(k=k, filters=filters)
        return searcher.search(query, k=k, options=options)

    def judged_hits(
        self, query: str, k: int = MCP_K, **filters: Any
    ) -> tuple[pl.DataFrame, Verdict]:
        """The first ``k`` hits and the search's confidence (read from its first ten hits)."""
        from convlab.systems.confidence import HITS, verdict

        hits = self.hits(query, k=max(k, HITS), **filters)
        sure = verdict(query, hits, self.store.system().name)
        return hits.filter(pl.col("rank") <= k), sure

    def search(self, query: str, k: int = MCP_K, **filters: Any) -> dict[str, Any]:
        """Hits as ``convlab search --json`` describes them, and the search's confidence."""
        from convlab.app.display import describe_hits
        from convlab.retrieval import SearchOptions
        from convlab.systems.search import system_scoring

        hits, sure = self.judged_hits(query, k, **filters)
        scoring = system_scoring(self.store.system(), SearchOptions())
        rows = describe_hits(self.store, hits, query=query, scoring=scoring) if hits.height else []
        return {"query": query, **_sure(sure), "hits": [dict(r) for r in rows]}

    def show(self, target: str, around: int = 0) -> dict[str, Any]:
        """The doc ``target`` names (a doc or unit id) and ``around`` messages on each side.

        Raises:
            ValueError: nothing of that name, or ``around`` negative.
        """
        from convlab.app.cli.show import around as docs_around
        from convlab.app.cli.show import resolve

        if around < 0:
            raise ValueError("around must not be negative")
        self._fresh()
        store = self.store
        where = resolve(store, target)
        chunks = store.frame("chunks").filter(pl.col("conversation_id") == where.conversation)
        hit_docs: set[str] = set()
        if where.doc is not None:
            chunks, hit_docs = docs_around(chunks, where.doc, around)
        conv = store.frame("conversations").filter(pl.col("conversation_id") == where.conversation)
        return {
            "conversation_id": where.conversation,
            "title": conv["title"][0] if conv.height else None,
            "messages": _messages(store, where.conversation, chunks, hit_docs),
        }

    def context(
        self,
        query: str,
        budget: int = BUDGET,
        policy: str = POLICY,
        k: int = MCP_K,
        **filters: Any,
    ) -> dict[str, Any]:
        """The resurrected context of ``query``'s hits within ``budget`` tokens, best hit first.

        Raises:
            ValueError: a negative budget or an unknown policy (listing the valid ones).
        """
        from convlab.app.cli.search import resurrect_hits
        from convlab.resurrection import get_policy
        from convlab.resurrection.render import hit_contexts

        get_policy(policy)  # an unknown name fails before the search
        if budget < 0:
            raise ValueError("budget must not be negative")
        hits, sure = self.judged_hits(query, k, **filters)
        if hits.height == 0:
            return {"query": query, "budget": budget, "tokens_used": 0, "text": "", "hits": []}
        res = resurrect_hits(self.store, hits, budget, policy)
        per_hit = hit_contexts(res, hits.height)
        return {
            "query": query,
            **_sure(sure),
            "budget": budget,
            "policy": res.policy,
            "tokens_used": res.tokens_used,
            "text": ranked_text([c["pieces"] for c in per_hit]),
            "hits": [
                {"rank": r, "doc_id": d, "tokens": c["tokens"], "skipped": c["skipped"]}
                for r, d, c in zip(hits["rank"], hits["doc_id"], per_hit, strict=True)
            ],
        }


def _sure(sure: Verdict) -> dict[str, Any]:
    """The confidence fields of a reply: the value, the threshold and whether it is met."""
    value = None if sure.confidence is None else round(sure.confidence, 3)
    return {"confidence": value, "threshold": sure.threshold, "confident": sure.confident}


def _messages(
    store: Store, conversation: str, chunks: pl.DataFrame, hit_docs: set[str]
) -> list[dict[str, Any]]:
    """The shown chunks as messages: turn, role, speaker, time, source line, text, hit."""
    from convlab import schema

    try:
        messages = store.frame("messages").filter(pl.col("conversation_id") == conversation)
        sources = {
            m: (speaker, path, line)
            for m, speaker, path, line in messages.select(
                "message_index", "speaker", "source_path", "source_line"
            ).iter_rows()
        }
    except (FileNotFoundError, KeyError, ValueError):
        sources = {}
    out = []
    for (turn, msg, role), part in chunks.sort("position").group_by(
        "turn_index", "message_index", "role", maintain_order=True
    ):
        speaker, path, line = sources.get(msg, (None, None, None))
        when = part["timestamp"][0]
        docs = {schema.turn_id(conversation, turn), schema.message_id(conversation, msg)}
        out.append(
            {
                "turn": turn,
                "message_index": msg,
                "role": role,
                "speaker": speaker,
                "timestamp": when.isoformat() if when else None,
                "source_path": path,
                "source_line": line,
                "text": " ".join(part["text"].to_list()),
                "is_hit": bool(docs & hit_docs),
            }
        )
    return out


def _sdk() -> tuple[Any, type[Exception]]:
    """The SDK's server class and the error a tool raises for a failure it saw coming."""
    import importlib

    try:  # mcp 2
        server = importlib.import_module("mcp.server.mcpserver")
        errors = importlib.import_module("mcp.server.mcpserver.exceptions")
        return server.MCPServer, errors.ToolError
    except ImportError:  # mcp 1.x
        server = importlib.import_module("mcp.server.fastmcp")
        errors = importlib.import_module("mcp.server.fastmcp.exceptions")
        return server.FastMCP, errors.ToolError


def build_server(directory: str | Path) -> Any:
    """The MCP server (``mcp``'s ``MCPServer``, ``FastMCP`` before mcp 2) over one store.

    Raises:
        ImportError: the ``mcp`` SDK is missing (naming the ``convlab-memory[mcp]`` extra).
    """
    require("mcp", "mcp", feature="the MCP server")
    Server, ToolError = _sdk()
    tools = StoreTools(directory)
    server = Server("convlab", instructions=INSTRUCTIONS)

    def call(work: Callable[[], dict[str, Any]], max_chars: int) -> str:
        """Run ``work()`` and fit its reply to ``max_chars``; the caller's mistakes as one line.

        A bad argument or an unknown id comes back as the CLI prints it; anything else is the
        SDK's internal error.
        """
        try:
            return reply(work(), max_chars)
        except Exception as exc:
            if is_input_error(exc) or isinstance(exc, ValueError):
                raise ToolError(one_line(exc)) from exc
            raise

    @server.tool(structured_output=False)
    def search(
        query: str,
        k: int = MCP_K,
        conversation: str | None = None,
        role: str | None = None,
        since: str | None = None,
        until: str | None = None,
        max_chars: int = DEFAULT_MAX_CHARS,
    ) -> str:
        """Find where something was discussed: the best hit per turn (per message in dialogs).

        The reply's confidence (0..1) says how likely something matched; confident is false
        when it is below the threshold: the hits are then probably unrelated.

        Args:
            query: what to look for, in words.
            k: how many hits.
            conversation: only this conversation id.
            role: only hits of this role (user, assistant, system, tool).
            since: only hits on or after this date (2026-01-31 or an ISO time).
            until: only hits on or before this date.
            max_chars: the longest reply; long texts are clipped, then the last hits left out.
        """
        return call(
            lambda: tools.search(
                query, k=k, conversation=conversation, role=role, since=since, until=until
            ),
            max_chars,
        )

    @server.tool(structured_output=False)
    def show(target: str, around: int = 0, max_chars: int = DEFAULT_MAX_CHARS) -> str:
        """Read a hit: its turn or message (a doc_id or unit_id from search) and its neighbours.

        Args:
            target: a hit's doc_id or unit_id.
            around: how many messages before and after to include.
            max_chars: the longest reply; long texts are clipped, then the last messages left
                out.
        """
        return call(lambda: tools.show(target, around), max_chars)

    @server.tool(structured_output=False)
    def context(
        query: str,
        budget: int = BUDGET,
        policy: str = POLICY,
        k: int = MCP_K,
        conversation: str | None = None,
        max_chars: int = DEFAULT_MAX_CHARS,
    ) -> str:
        """Prompt-ready context for a question: what its hits bring back within a token budget.

        The text holds each hit's pieces, best hit first, with who, when and file:line.

        Args:
            query: the question.
            budget: model tokens the context may take.
            policy: what a hit brings back: unit (what was embedded with it), doc (its turn or
                message), window (and the turns or messages beside it), pair, unit+doc.
            k: how many hits to draw from, best first.
            conversation: only hits of this conversation id.
            max_chars: the longest reply; long texts are clipped, then the last hits left out.
        """
        return call(
            lambda: tools.context(
                query, budget=budget, policy=policy, k=k, conversation=conversation
            ),
            max_chars,
        )

    return server
