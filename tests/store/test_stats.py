"""``convlab stats``: a readable summary of one pinned store version, with --verify."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from convlab.app.cli import main
from convlab.embed import HashEmbedder
from convlab.store import Store, StoreConfig

# one session, two turns on two days, and one line that is not JSON (a skipped record)
SESSION = """\
{"type":"user","uuid":"u1","sessionId":"s1","timestamp":"2026-02-01T09:00:00Z",\
"message":{"role":"user","content":"How do I rotate the nginx logs?"}}
{"type":"assistant","uuid":"a1","parentUuid":"u1","sessionId":"s1",\
"timestamp":"2026-02-01T09:00:05Z","message":{"id":"m1","role":"assistant",\
"content":[{"type":"text","text":"Use logrotate with a daily rule."}]}}
this line is not json
{"type":"user","uuid":"u2","parentUuid":"a1","sessionId":"s1","timestamp":"2026-02-03T10:00:00Z",\
"message":{"role":"user","content":"And compress them?"}}
{"type":"assistant","uuid":"a2","parentUuid":"u2","sessionId":"s1",\
"timestamp":"2026-02-03T10:00:04Z","message":{"id":"m2","role":"assistant",\
"content":[{"type":"text","text":"Add the compress directive."}]}}
"""


@pytest.fixture
def store(tmp_path: Path) -> Path:
    history = tmp_path / "history" / "-home-u-app"
    history.mkdir(parents=True)
    (history / "s1.jsonl").write_text(SESSION)
    directory = tmp_path / "store"
    Store(directory).update(
        [history.parent], config=StoreConfig(system="turn_pair"), embedder=HashEmbedder()
    )
    return directory


def test_stats_prints_a_readable_summary(store: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["stats", "--store", str(store)]) == 0
    out = capsys.readouterr().out
    assert "holds: 1 conversations, 2 turns, " in out
    assert "messages: 2026-02-01 .. 2026-02-03" in out
    assert "system turn_pair (turn_pair), max tokens 256, index flat, embedder hash-64" in out
    assert "transcripts: 1 files indexed, 1 with skipped records (1 records skipped)" in out
    assert "checked: the manifest and every file's size" in out
    assert f"version {Store(store).version.name}, updated " in out


def test_stats_json_counts_bytes_on_disk(store: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["stats", "--store", str(store), "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    version = Store(store).version
    on_disk = sum(p.stat().st_size for p in version.rglob("*") if p.is_file())
    cache = sum(p.stat().st_size for p in (store / "cache").rglob("*") if p.is_file())
    assert (info["bytes_version"], info["bytes_cache"]) == (on_disk, cache)
    assert info["bytes_total"] == on_disk + cache
    assert (info["messages_from"], info["messages_to"]) == ("2026-02-01", "2026-02-03")
    assert (info["files"], info["files_with_skips"], info["skipped_records"]) == (1, 1, 1)


def test_stats_verify_hashes_every_file(store: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["stats", "--store", str(store), "--verify"]) == 0
    out = capsys.readouterr().out
    version = Store(store).version
    hashed = [
        p for p in version.rglob("*") if p.is_file() and p.name not in ("manifest.json", ".readers")
    ]
    hashed.append(version / "index" / "manifest.json")  # the index's own manifest is hashed
    n = len(set(hashed))
    # 5 frames (messages included); index: units, vectors, FAISS file, its manifest; and the
    # 5 files of the BM25 index bm25s writes (saved with the store since issue 12); the
    # version's .owner (the store's id, written first)
    assert n == 15
    assert sorted(p.name for p in (version / "bm25").iterdir()) == [
        "data.csc.index.npy",
        "indices.csc.index.npy",
        "indptr.csc.index.npy",
        "params.index.json",
        "vocab.index.json",
    ]
    total = sum(p.stat().st_size for p in set(hashed))
    assert f"verified: all {n} files OK ({total:,} bytes hashed)" in out


def test_stats_names_the_redaction_rules_that_redacted_the_store(
    store: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from convlab.pipeline.redact import RULES_VERSION

    assert main(["stats", "--store", str(store)]) == 0
    out = capsys.readouterr().out
    assert f"redaction rules: {RULES_VERSION}\n" in out
    assert "+ gitleaks" in RULES_VERSION  # gitleaks' version, or that it is not installed
    assert main(["stats", "--store", str(store), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["redact_rules"] == RULES_VERSION


def test_stats_give_units_per_message_and_embedding_cost(
    store: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # four one-sentence messages in two turns: turn_pair makes one unit per message, and a
    # turn's two units are one text (user S0 + assistant S0 either way): two distinct texts
    units = Store(store).frame("units")
    tokens = units.unique("text")["n_tokens"].sum()
    assert main(["stats", "--store", str(store), "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    row = {"units": 4, "units_per_message": 1.0, "distinct_texts": 2, "tokens_embedded": tokens}
    assert info["unit_costs"] == [{"strategy": "turn_pair", **row}, {"strategy": "all", **row}]
    assert info["last_embedding"]["embedded"] == 2
    assert info["last_embedding"]["from_cache"] == 0
    assert list(info)[-1] == "bytes_total"
    assert main(["stats", "--store", str(store)]) == 0
    out = capsys.readouterr().out
    line = f"  turn_pair: 4 units, 1.00 per message, 2 distinct texts, {tokens} tokens embedded"
    assert line in out.splitlines()
    assert "last update: 2 texts embedded, 0 from the cache, in " in out
