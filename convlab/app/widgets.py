"""The ipywidgets search panel: ask "when did we discuss X?" and see the moment.

The panel is state (a built index, the widgets), so it is a class; it searches with a *system*
(:func:`convlab.systems.search.search_system`, as ``convlab search`` does; it ranks with the
parts ``eval.run`` ranks with) and everything it shows comes from that search and
:func:`convlab.resurrect`. All transcript text is HTML-escaped before it reaches an ``HTML``
widget, so a transcript holding ``<script>`` or ``<img onerror=...>`` shows as text.

Example:
    >>> panel = SearchPanel.from_data("data/sample")  # doctest: +SKIP
    >>> panel  # doctest: +SKIP
"""

from __future__ import annotations

import html
import time
from collections.abc import Mapping
from datetime import UTC, date, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import polars as pl

from convlab.app.display import describe_hits
from convlab.app.panel_data import PanelData
from convlab.defaults import BUDGET
from convlab.model import MAX_TOKENS
from convlab.systems.search import OnceEmbedder

if TYPE_CHECKING:
    from convlab.index import VectorIndex
    from convlab.index.bm25 import BM25Index
    from convlab.pipeline.policy import ContentPolicy
    from convlab.protocols import Embedder
    from convlab.retrieval import SearchOptions
    from convlab.retrieval.search import Searcher

__all__ = ["PanelData", "SearchPanel", "marked_html"]


MATCH_CHARS = 400
"""Characters of a hit's matching message the panel shows, around the query's terms."""


def _cut(text: str, query: str) -> str:
    """``text`` cut to :data:`MATCH_CHARS` around ``query``'s terms."""
    from convlab.highlight import excerpt, query_terms, term_spans

    return excerpt(text, term_spans(text, query_terms(query)), MATCH_CHARS)[0]


def marked_html(text: str, query: str) -> str:
    """HTML of ``text`` (escaped) with the query's words marked where a word starts with them.

    Query words of three letters or more count, except English stopwords (scikit-learn's list),
    so "what did we decide about the cache" marks *decide* and *cache*, not every *the*; a word
    matches at the start of a text word, so *cache* also marks *caches* and *cached*
    (:func:`convlab.highlight.prefix_spans`, marked by :func:`convlab.highlight.highlight`).

    Example:
        >>> marked_html("Use <b>flock</b> here", "the flock")
        'Use &lt;b&gt;<mark>flock</mark>&lt;/b&gt; here'
        >>> marked_html("Tom & Jerry", "amp")
        'Tom &amp; Jerry'
    """
    from convlab.highlight import highlight, prefix_spans, query_words

    spans = prefix_spans(text, query_words(query))
    return highlight(text, spans, "<mark>", "</mark>", escape=html.escape)


class SearchPanel:
    """A search box over built indexes: a system choice, filters, rankers and a context view.

    Args:
        data: the indexes and frames (see :meth:`from_data` to build them from transcripts).
    """

    def __init__(self, data: PanelData | None) -> None:
        import ipywidgets as w

        from convlab.fusion import FUSIONS
        from convlab.retrieval import RetrievalOptions

        self.data = data
        self._bm25_of: dict[str, BM25Index | None] = dict(data.bm25) if data is not None else {}
        self._systems = data.systems() if data is not None else {}
        # kept between searches: each view's searcher and the query vectors (search_system)
        self._searchers: dict[str, Searcher] = {}
        self._embedder = OnceEmbedder(data.embedder) if data is not None else None
        # the value reaches Python on Enter (or when the box loses focus), and a new value searches
        self.query = w.Text(
            placeholder="when did we discuss ...", description="Query", continuous_update=False
        )
        self.query.add_class("convlab-query")
        self.system = w.Dropdown(
            options=list(self._systems),
            value=next(iter(self._systems), None),
            description="System",
        )
        # how a hybrid view fuses its dense and BM25 rankings: every method FUSIONS holds
        self.fusion = w.Dropdown(
            options=FUSIONS.names(), value=RetrievalOptions().fusion, description="Fusion"
        )
        self.k = w.BoundedIntText(value=10, min=1, max=100, description="k")
        self.recency = w.Checkbox(value=False, description="recency boost")
        self.density = w.Checkbox(value=False, description="density boost")
        self.mmr = w.Checkbox(value=False, description="MMR diversity")
        convs = [] if data is None else sorted(data.conversations["conversation_id"].to_list())
        self.conversation = w.Dropdown(options=["(all)", *convs], description="Conversation")
        self.role = w.Dropdown(options=["(any)", "user", "assistant"], description="Role")
        self.since = w.DatePicker(description="Since")
        self.until = w.DatePicker(description="Until")
        self.budget = w.BoundedIntText(value=BUDGET, min=16, max=8192, description="Budget")
        self.button = w.Button(description="Search", button_style="primary")
        self.button.add_class("convlab-search")
        self.status = w.HTML(value="")
        self.status.add_class("convlab-status")
        self.results = w.VBox([])
        self.results.add_class("convlab-results")
        self.query.observe(lambda _: self.run(), names="value")
        self.button.on_click(lambda _: self.run())
        controls = w.VBox(
            [
                w.HBox([self.query, self.button]),
                w.HBox([self.system, self.fusion, self.k, self.budget]),
                w.HBox([self.recency, self.density, self.mmr]),
                w.HBox([self.conversation, self.role, self.since, self.until]),
            ]
        )
        self.widget = w.VBox([controls, self.status, self.results])
        self.widget.add_class("convlab-panel")
        self.last_hits: pl.DataFrame | None = None
        if data is None:
            self._message("No index is built yet: build one with SearchPanel.from_data(PATH).")

    @classmethod
    def from_data(
        cls,
        path: str | Path,
        *,
        strategies: tuple[str, ...] | None = None,
        embedder: Embedder | None = None,
        cache_dir: str | Path = "runs/cache",
        policy: ContentPolicy | None = None,
        max_tokens: int = MAX_TOKENS,
        kind: str = "flat",
    ) -> SearchPanel:
        """Load transcripts, build an index per strategy and open a panel on them.

        The indexes are built by :func:`convlab.build.build_indexes` (the one build recipe, BM25
        included): the transcripts are chunked once and embedded in one pass.

        Args:
            path: a transcript file or folder (anything :func:`convlab.load` reads).
            strategies: the strategies to build (None: those of the default system, which is
                selected at start; else the first strategy, searched densely).
            embedder: the embedder (default MiniLM), cached under ``cache_dir``.
            cache_dir: the embedding cache root.
            policy: what text each block contributes (default :class:`ContentPolicy`).
            max_tokens: the unit's token limit, [CLS] and [SEP] included.
            kind: the index kind (a key of :data:`convlab.index.INDEX_KINDS`).
        """
        from convlab.build import build_indexes
        from convlab.embed import CachedEmbedder, MiniLMEmbedder
        from convlab.loaders import load
        from convlab.pipeline.policy import ContentPolicy
        from convlab.specs import IndexSpec, UnitSpec
        from convlab.systems import default_system, resolve_system

        system = default_system() if strategies is None else None
        if strategies is None:
            strategies = tuple(dict.fromkeys(v.strategy for v in default_system().views))
        if not strategies:
            raise ValueError("pass at least one strategy")
        corpus = load(path)
        emb = CachedEmbedder(embedder or MiniLMEmbedder(), cache_dir)
        policy = policy or ContentPolicy()
        built = build_indexes(
            corpus,
            [UnitSpec(s, max_tokens, policy) for s in strategies],
            embedder=emb,
            index=IndexSpec(kind),
            lexical=strategies,
        )
        first = built[strategies[0]]
        data = PanelData(
            {s: b.index for s, b in built.items()},
            first.chunks,
            corpus.conversations,
            first.turns,
            emb,
            bm25={s: b.bm25 for s, b in built.items()},
            system=system or resolve_system(strategies[0]),
            messages=corpus.messages,
        )
        return cls(data)

    @classmethod
    def from_store(cls, directory: str | Path, *, embedder: Embedder | None = None) -> SearchPanel:
        """Open a panel on a store written by ``convlab index``: its views, frames and system.

        Args:
            directory: the store directory.
            embedder: the query embedder (default: the one for the store's model).
        """
        from convlab.store import Store
        from convlab.store.search import StoreSearch

        store = Store(directory)
        found = StoreSearch(store, embedder)
        held = found.held(list(store.strategies()))
        data = PanelData(
            {s: h.vector_index for s, h in held.items()},
            store.frame("chunks"),
            store.frame("conversations"),
            store.frame("turns"),
            found.embedder(),
            bm25={s: h.bm25 for s, h in held.items()},
            dense={s: h.dense for s, h in held.items()},
            system=store.system(),
            messages=store.frame("messages"),
        )
        return cls(data)

    def _ipython_display_(self) -> None:
        from IPython.display import display

        display(self.widget)

    # -- actions ------------------------------------------------------------------------------
    def _message(self, text: str, *, error: bool = False) -> None:
        color = "#b00020" if error else "#555"
        self.status.value = f'<span style="color:{color}">{html.escape(text)}</span>'
        self.results.children = ()

    def options(self) -> SearchOptions:
        """The :class:`convlab.retrieval.search.SearchOptions` the controls describe."""
        from convlab.retrieval import SearchOptions

        def day(d: date | None, end: bool = False) -> datetime | None:
            if d is None:
                return None
            t = datetime(d.year, d.month, d.day, tzinfo=UTC)
            return t.replace(hour=23, minute=59, second=59) if end else t

        conv = self.conversation.value
        role = self.role.value
        return SearchOptions.of(  # the controls are the flat options' keys
            k=int(self.k.value),
            recency=bool(self.recency.value),
            density=bool(self.density.value),
            mmr=0.7 if self.mmr.value else None,
            fusion=str(self.fusion.value),
            conversations=None if conv == "(all)" else (conv,),
            roles=None if role == "(any)" else (role,),
            since=day(self.since.value),
            until=day(self.until.value, end=True),
        )

    def run(self) -> pl.DataFrame | None:
        """Search with the current controls and render the hits; returns them (or None)."""
        query = self.query.value.strip()
        if self.data is None:
            self._message("No index is built yet: build one with SearchPanel.from_data(PATH).")
            return None
        if not query:
            self._message("Type a query, then press Enter.")
            return None
        from convlab.systems.search import HeldView, search_system

        if self._embedder is None:
            return None

        system = self._systems[self.system.value]
        options = self.options()
        started = time.perf_counter()
        try:
            held = {
                s: HeldView(self.data.indexes[s], self._bm25(s), self.data.dense.get(s, True))
                for s in dict.fromkeys(v.strategy for v in system.views)
            }
            queries = pl.DataFrame({"query_id": ["q"], "text": [query]})
            hits = search_system(
                held,
                queries,
                system,
                embedder=self._embedder,
                k=options.k,
                options=options,
                searchers=self._searchers,
            )
        except ValueError as exc:  # a bad filter combination, say
            self._message(f"Search failed: {exc}", error=True)
            return None
        ms = (time.perf_counter() - started) * 1000
        self.last_hits = hits
        from convlab.systems.search import system_scoring

        name = html.escape(system.name)
        scoring = html.escape(system_scoring(system, options))
        self.status.value = (
            f"{hits.height} hits in {ms:.0f} ms &middot; system {name} &middot; scores: {scoring}"
        )
        self.results.children = tuple(self._render(hits, query))
        return hits

    def _bm25(self, strategy: str) -> BM25Index | None:
        """The strategy's BM25: from the built data, else built once on first use."""
        from convlab.index.bm25 import BM25Index

        if strategy not in self._bm25_of and self.data is not None:
            units = self.data.indexes[strategy].units
            self._bm25_of[strategy] = BM25Index.build(units) if units.height else None
        return self._bm25_of.get(strategy)

    def index_of(self, hit: Mapping[str, object]) -> VectorIndex:
        """The index whose units hold ``hit``'s unit (its strategy's)."""
        if self.data is None:
            raise ValueError("the panel has no data")
        return self.data.indexes[str(hit["unit_id"]).split(":", 1)[0]]

    def _render(self, hits: pl.DataFrame, query: str) -> list[Any]:
        import ipywidgets as w

        if self.data is None:
            return []
        rows = []
        for h in describe_hits(self.data, hits, query):
            title = h["title"] or h["conversation_id"]
            when = (h["timestamp"] or "")[:10] or "undated"
            m = h["match"]
            at = f"{h['source_path'] or h['conversation_id']}"
            at += f":{h['source_line']}" if h["source_line"] else ""
            head = (
                f'<div class="convlab-hit" data-doc="{html.escape(h["doc_id"])}">'
                f"<b>#{h['rank']}</b> &nbsp; {h['score']:.3f} &nbsp; "
                f"<b>{html.escape(str(title))}</b> &middot; turn {h['turn']}"
                f" &middot; {when}<br>"
                f"<i>{html.escape(m['role'] or 'turn')}</i>: "
                f'<span class="convlab-snippet">{marked_html(_cut(m["text"], query), query)}'
                f"</span><br>"
                f'<small class="convlab-at">{html.escape(at)} (message {m["message_index"]})'
                "</small></div>"
            )
            context = w.Output()
            toggle = w.ToggleButton(value=False, description="context", icon="chevron-down")
            toggle.add_class("convlab-expand")
            toggle.observe(
                lambda ch, h=h, out=context: self._toggle(ch, h, out, self.index_of(h)),
                names="value",
            )
            rows.append(w.VBox([w.HTML(head), toggle, context]))
        return rows

    def _toggle(
        self, change: Mapping[str, Any], hit: Mapping[str, object], out: Any, index: VectorIndex
    ) -> None:
        from IPython.display import HTML, display

        out.clear_output()
        if not change["new"]:
            return
        with out:
            display(HTML(self.context_html(hit, index)))

    def context_html(self, hit: Mapping[str, object], index: VectorIndex) -> str:
        """HTML of the chunks a hit resurrects (what its unit was embedded with), target marked."""
        from convlab.resurrection import resurrect

        if self.data is None:
            raise ValueError("the panel has no data to resurrect from")
        unit = str(hit["unit_id"])
        units = index.units.filter(pl.col("unit_id") == unit)
        res = resurrect([unit], int(self.budget.value), units=units, chunks=self.data.chunks)
        lines = [f'<div class="convlab-context"><i>{res.tokens_used} tokens of {res.budget}</i>']
        for c in res.context.iter_rows(named=True):
            style = "background:#fff3c4" if c["is_target"] else ""
            cls = "convlab-target" if c["is_target"] else "convlab-chunk"
            lines.append(
                f'<div class="{cls}" style="{style}"><b>{html.escape(c["role"])}</b> '
                f"(turn {c['turn_index']}, {c['n_tokens']} tokens): "
                f"{html.escape(c['text'])}</div>"
            )
        lines.append("</div>")
        return "".join(lines)
