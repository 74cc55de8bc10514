"""The search panel without a browser: messages, escaping, context (the browser test covers JS)."""

from __future__ import annotations

from pathlib import Path

import pytest

from convlab.app.widgets import SearchPanel, marked_html
from convlab.embed import HashEmbedder
from convlab.paths import sample_data_path


def test_highlight_escapes_html_and_marks_terms() -> None:
    out = marked_html('<img src=x onerror="alert(1)"> the cache key', "cache keys")
    assert out.startswith("&lt;img src=x onerror=&quot;alert(1)&quot;&gt;")
    assert "<mark>cache</mark>" in out
    assert "<img" not in out


def test_highlight_skips_stopwords_and_marks_word_starts() -> None:
    out = marked_html("The caches were cached; a recache later", "what about the cache")
    assert out == "The <mark>cache</mark>s were <mark>cache</mark>d; a recache later"


@pytest.mark.parametrize(
    ("text", "query", "expected"),
    [
        ("Tom & Jerry", "amp", "Tom &amp; Jerry"),  # "amp" is only in the entity
        ('say "quote" here', "quot", "say &quot;<mark>quot</mark>e&quot; here"),
        ("AT&T amplifier", "amp", "AT&amp;T <mark>amp</mark>lifier"),
        ("it's gt39", "x27 gt39", "it&#x27;s <mark>gt39</mark>"),
    ],
)
def test_a_mark_never_splits_an_entity(text: str, query: str, expected: str) -> None:
    assert marked_html(text, query) == expected


def test_panel_without_an_index_says_so() -> None:
    panel = SearchPanel(None)
    assert "No index is built yet" in panel.status.value
    panel.query.value = "anything"
    assert panel.run() is None


def test_empty_query_and_a_real_search(tmp_path: Path) -> None:
    panel = SearchPanel.from_data(
        sample_data_path() / "transcripts",
        strategies=("turn_pair",),
        embedder=HashEmbedder(256),
        cache_dir=tmp_path,
    )
    panel.query.value = "   "
    assert panel.run() is None
    assert "Type a query" in panel.status.value
    # a new value (Enter in the browser) searches by itself
    panel.query.value = "postgres index concurrently without locking"
    assert "hits in" in panel.status.value
    assert panel.last_hits is not None
    hits = panel.run()
    assert hits is not None
    assert hits["doc_id"][0] == "cc-pg-index:t0"
    assert "hits in" in panel.status.value
    assert len(panel.results.children) == hits.height
    html = panel.context_html(hits.row(0, named=True), panel.index_of(hits.row(0, named=True)))
    assert "convlab-target" in html
    assert "tokens of 512" in html
    panel.conversation.value = "amp-sqlite-wal"
    hits = panel.run()
    assert hits is not None
    assert set(hits["conversation_id"]) == {"amp-sqlite-wal"}


def test_panel_shows_hits_as_describe_hits_describes_them(tmp_path: Path) -> None:
    import html as html_lib

    from convlab.app.display import describe_hits
    from convlab.app.widgets import MATCH_CHARS
    from convlab.highlight import excerpt, query_terms, term_spans

    panel = SearchPanel.from_data(
        sample_data_path() / "transcripts",
        strategies=("turn_pair",),
        embedder=HashEmbedder(256),
        cache_dir=tmp_path,
    )
    query = "postgres index concurrently without locking"
    panel.query.value = query
    hits = panel.last_hits
    assert hits is not None
    assert panel.data is not None
    # the CLI's description, from the panel's frames
    rows = describe_hits(panel.data, hits, query)
    heads = [box.children[0].value for box in panel.results.children]
    assert len(heads) == len(rows) == hits.height
    for head, row in zip(heads, rows, strict=True):
        # the matching message (short ones whole) and its file and line, as the CLI shows them
        text = row["match"]["text"]
        shown = excerpt(text, term_spans(text, query_terms(query)), MATCH_CHARS)[0]
        assert marked_html(shown, query) in head
        assert html_lib.escape(str(row["title"] or row["conversation_id"])) in head
        assert f"turn {row['turn']}" in head
        assert f"{row['source_path']}:{row['source_line']} (message {row['message_index']})" in (
            html_lib.unescape(head)
        )
    assert panel.data.frame("messages").height  # every hit has its message's line
    assert all(r["source_line"] for r in rows)


def test_the_panel_builds_with_the_callers_policy_and_budget(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # issue 12: the panel used ContentPolicy() and budget 256 whatever the caller wanted
    from convlab.build import build_index
    from convlab.index.bm25 import BM25Index
    from convlab.pipeline.policy import ContentPolicy
    from convlab.specs import UnitSpec

    source = sample_data_path() / "transcripts"
    policy = ContentPolicy(tool_calls=False)
    panel = SearchPanel.from_data(
        source,
        strategies=("whole_turn",),
        embedder=HashEmbedder(64),
        cache_dir=tmp_path,
        policy=policy,
        max_tokens=64,
    )
    assert panel.data is not None
    units = panel.data.indexes["whole_turn"].units
    want = build_index(
        source, UnitSpec("whole_turn", 64, policy), embedder=HashEmbedder(64), cache_dir=tmp_path
    ).units
    assert units.equals(want)
    assert units["n_tokens"].max() <= 64
    default = build_index(source, "whole_turn", embedder=HashEmbedder(64), cache_dir=tmp_path)
    assert default.units["n_tokens"].max() > 64  # so the max_tokens above made a difference
    assert default.chunks["text"].str.contains("command:").any()  # tool calls by default
    assert not panel.data.chunks["text"].str.contains("command:").any()  # and none here

    def refuse(cls, units):  # type: ignore[no-untyped-def]
        raise AssertionError("BM25 was built by the panel, not taken from the build")

    monkeypatch.setattr(BM25Index, "build", classmethod(refuse))
    panel.system.value = "hybrid:whole_turn"
    panel.query.value = "postgres index concurrently"
    assert panel.last_hits is not None
    assert panel.last_hits["conversation_id"][0] == "cc-pg-index"


def test_a_panel_on_a_store(tmp_path: Path) -> None:
    from convlab.store import Store, StoreConfig

    store = Store(tmp_path / "store")
    store.update(
        [sample_data_path() / "transcripts"],
        config=StoreConfig(system="isolated"),
        embedder=HashEmbedder(256),
    )
    panel = SearchPanel.from_store(store.directory, embedder=HashEmbedder(256))
    assert panel.system.value == "isolated"  # the store's own system first
    assert list(panel.system.options) == ["isolated", "bm25:isolated", "hybrid:isolated"]
    panel.system.value = "hybrid:isolated"
    hits = panel.run()
    assert hits is None  # no query yet
    panel.query.value = "postgres index concurrently without locking"
    assert panel.last_hits is not None
    assert panel.last_hits["doc_id"][0] == "cc-pg-index:t0"
