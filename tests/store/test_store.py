"""The store: incremental updates, atomic versions, the lock, and surviving SIGKILL."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest

from convlab.embed import HashEmbedder
from convlab.store import Store, StoreConfig, StoreLocked
from tests.helpers import small_history

CONFIG = StoreConfig(system="turn_pair")


class CountingHash(HashEmbedder):
    """HashEmbedder that counts the texts it embeds."""

    def __init__(self) -> None:
        super().__init__()
        self.calls = 0
        self.texts = 0

    def encode(self, texts):  # type: ignore[no-untyped-def]
        self.calls += 1
        self.texts += len(texts)
        return super().encode(texts)


@pytest.fixture
def history(transcripts: Path, tmp_path: Path) -> Path:
    """A small Claude Code history: three real sessions copied into a temp tree."""
    return small_history(transcripts, tmp_path)


def _content(store: Store) -> dict[str, pl.DataFrame]:
    return {n: store.frame(n) for n in ("conversations", "turns", "chunks", "units")}


def _check_valid(store: Store) -> None:
    manifest = store.manifest()
    units = store.frame("units")
    assert not units["unit_id"].is_duplicated().any()
    assert manifest.counts["units"] == units.height
    for strategy, embedded in store.strategies().items():  # every view: index, BM25, units
        mine = units.filter(pl.col("strategy") == strategy)
        assert mine.height
        bm25 = store.bm25(strategy)
        assert bm25 is not None
        assert bm25.n == mine.height
        if embedded:
            index = store.index(strategy)
            assert index.units["unit_id"].to_list() == mine["unit_id"].to_list()


def test_first_run_indexes_and_unchanged_rerun_embeds_nothing(
    history: Path, tmp_path: Path
) -> None:
    store = Store(tmp_path / "store")
    emb = CountingHash()
    first = store.update([history], config=CONFIG, embedder=emb)
    assert first.wrote_version
    assert first.conversations == store.frame("conversations").height >= 3
    assert first.texts_embedded == emb.texts > 0
    _check_valid(store)
    before = _content(store)
    version = store.current

    emb.texts = 0
    again = store.update([history], config=CONFIG, embedder=emb)
    assert not again.wrote_version
    assert again.texts_embedded == 0
    assert emb.texts == 0
    assert again.files_read == 0
    assert store.current == version
    after = _content(store)
    for name, frame in before.items():
        assert after[name].equals(frame), name


def test_append_embeds_only_the_new_texts(history: Path, tmp_path: Path) -> None:
    store = Store(tmp_path / "store")
    emb = CountingHash()
    store.update([history], config=CONFIG, embedder=emb)
    units_before = store.frame("units")
    target = history / "-home-u-app" / "sample_session.jsonl"
    conv = (
        store.frame("conversations")
        .filter(pl.col("source_path") == str(target.resolve()))["conversation_id"]
        .item()
    )
    last = json.loads(target.read_text().splitlines()[-1])
    session = last.get("sessionId", conv)
    new_lines = [
        {
            "type": "user",
            "uuid": "u-new-1",
            "parentUuid": last.get("uuid"),
            "sessionId": session,
            "timestamp": "2031-01-01T10:00:00Z",
            "message": {"role": "user", "content": "Can we also add a retry with backoff?"},
        },
        {
            "type": "assistant",
            "uuid": "a-new-1",
            "parentUuid": "u-new-1",
            "sessionId": session,
            "timestamp": "2031-01-01T10:00:05Z",
            "message": {
                "id": "msg_new_1",
                "role": "assistant",
                "content": [
                    {"type": "text", "text": "Yes. Exponential backoff with jitter fits here."}
                ],
            },
        },
    ]
    with target.open("a") as fh:
        for line in new_lines:
            fh.write(json.dumps(line) + "\n")
    emb.texts = 0
    summary = store.update([history], config=CONFIG, embedder=emb)
    assert summary.files_read == 1
    assert summary.conversations_changed == 1
    assert 0 < summary.texts_embedded == emb.texts
    # only texts that did not exist before were embedded
    units_after = store.frame("units")
    new_texts = set(units_after["text"]) - set(units_before["text"])
    assert emb.texts <= len(new_texts)
    assert any("backoff" in t for t in new_texts)
    # other conversations keep their units untouched
    others = pl.col("conversation_id") != conv
    assert units_after.filter(others).equals(units_before.filter(others))
    _check_valid(store)


def test_rewrite_in_place_with_same_content_writes_no_version(
    history: Path, tmp_path: Path
) -> None:
    store = Store(tmp_path / "store")
    store.update([history], config=CONFIG, embedder=HashEmbedder())
    version = store.current
    f = history / "-home-u-app" / "short.jsonl"
    f.write_bytes(f.read_bytes())  # Amplifier-style rewrite: new mtime, same bytes
    os.utime(f, ns=(1, 1))
    summary = store.update([history], config=CONFIG, embedder=HashEmbedder())
    assert not summary.wrote_version
    assert store.current == version


def test_a_deleted_transcript_keeps_its_conversation_detached(
    history: Path, tmp_path: Path
) -> None:
    store = Store(tmp_path / "store")
    store.update([history], config=CONFIG, embedder=HashEmbedder())
    before = _content(store)
    gone = (history / "-home-u-app" / "short.jsonl").resolve()
    conv = store.frame("conversations").filter(pl.col("source_path") == str(gone))
    assert conv.height == 1
    gone.unlink()
    summary = store.update([history], config=CONFIG, embedder=HashEmbedder())
    assert (summary.conversations_detached, summary.conversations_removed) == (1, 0)
    cid = conv["conversation_id"].item()
    detached = store.manifest().detached
    assert list(detached) == [cid]
    assert (detached[cid].reason, detached[cid].source) == ("gone", str(gone))
    for name, frame in before.items():  # every row kept
        assert _content(store)[name].equals(frame), name
    _check_valid(store)


def test_second_indexer_is_refused_while_the_lock_is_held(history: Path, tmp_path: Path) -> None:
    store = Store(tmp_path / "store")
    with store.lock(), pytest.raises(StoreLocked, match="another `convlab index`"):
        store.update([history], config=CONFIG, embedder=HashEmbedder())
    assert not store.exists()


def test_other_settings_need_rebuild(history: Path, tmp_path: Path) -> None:
    store = Store(tmp_path / "store")
    store.update([history], config=CONFIG, embedder=HashEmbedder())
    with pytest.raises(ValueError, match="rebuild"):
        store.update([history], config=StoreConfig(system="isolated"), embedder=HashEmbedder())
    summary = store.update(
        [history], config=StoreConfig(system="isolated"), embedder=HashEmbedder(), rebuild=True
    )
    assert summary.wrote_version
    assert set(store.frame("units")["strategy"]) == {"isolated"}


def _index_cmd(history: Path, store: Path, crash: str | None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "CONVLAB_CRASH_AT"}
    if crash:
        env["CONVLAB_CRASH_AT"] = crash
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "convlab.app.cli",
            "index",
            str(history),
            "--store",
            str(store),
            "--embedder",
            "hash",
            "--quiet",
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


@pytest.mark.slow
@pytest.mark.parametrize(
    "crash", ["after_load", "after_embed", "during_write", "before_switch", "after_switch"]
)
def test_sigkill_at_any_point_leaves_a_valid_store(
    history: Path, tmp_path: Path, crash: str
) -> None:
    clean = tmp_path / "clean"
    assert _index_cmd(history, clean, None).returncode == 0
    reference = Store(clean).frame("units").sort("unit_id")

    store = tmp_path / "store"
    # a first complete run, then new data, then a run killed at `crash`
    held = tmp_path / "held.jsonl"
    shutil.move(history / "-home-u-app" / "tool_heavy.jsonl", held)
    assert _index_cmd(history, store, None).returncode == 0
    shutil.move(held, history / "-home-u-app" / "later.jsonl")  # a session that is new here
    killed = _index_cmd(history, store, crash)
    assert killed.returncode == -9, killed.stderr
    _check_valid(Store(store))  # the previous (or the new) version is live and whole
    rerun = _index_cmd(history, store, None)
    assert rerun.returncode == 0, rerun.stderr
    s = Store(store)
    _check_valid(s)
    assert not [p for p in store.iterdir() if p.name.startswith(".tmp-")]
    # complete: the same units as a clean build of the same files, no duplicates
    units = s.frame("units").sort("unit_id")
    assert units["unit_id"].to_list() == reference["unit_id"].to_list()
    assert units["text"].to_list() == reference["text"].to_list()
