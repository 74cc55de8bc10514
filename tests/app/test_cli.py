"""The convlab command: its output for people and scripts, filters, skips, show, stats.

The exit-code contract has its own file (tests/test_cli_exits.py).
"""

from __future__ import annotations

import json
import shutil
from datetime import datetime
from pathlib import Path

import pytest

from convlab.app.cli import main
from convlab.app.display import hit_lines, skip_report, with_skip_report
from convlab.app.exits import EXIT_NO_RESULTS, EXIT_OK, EXIT_USAGE
from convlab.app.text import columns, short_path
from convlab.paths import sample_data_path
from tests.helpers import locomo_file

FAISS = "amplifier/projects/-home-dev-amp-faiss-choice/sessions/amp-faiss-choice/transcript.jsonl"


@pytest.fixture(scope="module")
def sample_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The bundled sample (20 conversations) indexed with the hash embedder."""
    out = tmp_path_factory.mktemp("cli") / "store"
    src = sample_data_path() / "transcripts"
    argv = ["index", str(src), "--store", str(out), "--embedder", "hash", "-q"]
    assert main([*argv, "--system", "turn_pair"]) == EXIT_OK  # one view: turn_pair, BM25 beside
    return out


@pytest.fixture(scope="module")
def store(transcripts: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("cli")
    hist = root / "history"
    hist.mkdir()
    for name in ("short.jsonl", "tool_heavy.jsonl"):
        shutil.copy(transcripts / "claude_code" / "spotter_real" / name, hist / name)
    out = root / "store"
    code = main(["index", str(hist), "--store", str(out), "--embedder", "hash", "--quiet"])
    assert code == EXIT_OK
    return out


def _json_hits(capsys: pytest.CaptureFixture[str]) -> list[dict[str, object]]:
    return [json.loads(line) for line in capsys.readouterr().out.splitlines()]


def test_index_prints_a_closing_summary(
    transcripts: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    src = transcripts / "claude_code" / "spotter_real" / "short.jsonl"
    code = main(
        ["index", str(src), "--store", str(tmp_path / "s"), "--embedder", "hash", "--quiet"]
    )
    out = capsys.readouterr().out
    assert code == EXIT_OK
    assert "1 conversations" in out
    assert "texts:" in out
    assert "skipped: 0" in out


def test_search_json_carries_file_line_message_and_time(
    sample_store: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Worked out by reading the file: line 5 of the FAISS transcript is its fifth record, the
    # assistant's answer "Use IndexHNSWFlat ..." (message 4: lines 1-4 are messages 0-3),
    # stamped 2026-04-10T09:04:00Z, in turn 1 (the second real user question is on line 3).
    argv = ["search", "IndexHNSWFlat efConstruction efSearch", "--store", str(sample_store)]
    argv += ["--conversation", "amp-faiss-choice", "--role", "assistant", "-k", "1", "--json"]
    assert main(argv) == EXIT_OK
    (hit,) = _json_hits(capsys)
    assert set(hit) == {
        "rank",
        "score",
        "unit_id",
        "doc_id",
        "conversation_id",
        "title",
        "turn",
        "message_index",
        "role",
        "timestamp",
        "source_path",
        "source_line",
        "question",
        "snippet",
        "score_kind",
        "match",
        "confidence",  # null: this store's system is not the default one the model was fitted for
    }
    assert hit["score_kind"] == "cosine"
    assert str(hit["source_path"]).endswith(FAISS)
    assert hit["source_line"] == 5
    assert hit["message_index"] == 4
    assert hit["timestamp"] == "2026-04-10T09:04:00+00:00"
    assert hit["turn"] == 1
    assert hit["title"] == "Choosing a FAISS index"
    assert hit["doc_id"] == "amp-faiss-choice:t1"
    assert str(hit["unit_id"]).startswith("turn_pair:amp-faiss-choice:t1:assistant:")
    assert hit["question"] == "We do need low latency. How do we set up HNSW?"
    assert "IndexHNSWFlat" in str(hit["snippet"])
    line = Path(str(hit["source_path"])).read_text().splitlines()[4]
    assert "IndexHNSWFlat with M around 32" in line


def test_every_hit_points_at_a_line_of_its_file(
    sample_store: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["search", "cache", "--store", str(sample_store), "-k", "20", "--json"]) == 0
    hits = _json_hits(capsys)
    assert len(hits) == 20
    assert [h["rank"] for h in hits] == list(range(1, 21))
    for h in hits:
        lines = Path(str(h["source_path"])).read_text().splitlines()
        assert 1 <= int(str(h["source_line"])) <= len(lines)
        record = json.loads(lines[int(str(h["source_line"])) - 1])
        stamp = record.get("timestamp")
        if stamp and h["role"] == "user":  # a user record carries its own time
            assert datetime.fromisoformat(str(stamp)) == datetime.fromisoformat(str(h["timestamp"]))


@pytest.mark.parametrize(
    ("flags", "check"),
    [
        (["--role", "user"], lambda h: h["role"] == "user"),
        (["--role", "assistant"], lambda h: h["role"] == "assistant"),
        # a bare --until date keeps that whole day; --since starts at its midnight
        (["--until", "2026-03-31"], lambda h: h["timestamp"] < "2026-04-01"),
        (["--since", "2026-04-10"], lambda h: h["timestamp"] >= "2026-04-10"),
        (
            ["--since", "2026-04-10", "--until", "2026-04-10"],
            lambda h: h["timestamp"].startswith("2026-04-10"),
        ),
    ],
)
def test_search_filters(
    sample_store: Path, capsys: pytest.CaptureFixture[str], flags: list[str], check: object
) -> None:
    assert main(["search", "the", "--store", str(sample_store), "-k", "50", "--json", *flags]) == 0
    hits = _json_hits(capsys)
    assert hits
    assert all(check(h) for h in hits)  # type: ignore[operator]


def test_until_counts_the_whole_day(sample_store: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # the FAISS conversation runs on 2026-04-10 from 09:01 to 09:05: --until that day finds it,
    # --until the day before does not
    base = ["search", "HNSW", "--store", str(sample_store), "--conversation", "amp-faiss-choice"]
    assert main([*base, "--until", "2026-04-10", "--json"]) == EXIT_OK
    assert {h["conversation_id"] for h in _json_hits(capsys)} == {"amp-faiss-choice"}
    assert main([*base, "--until", "2026-04-09"]) == EXIT_NO_RESULTS
    err = capsys.readouterr().err.strip()
    assert err == (
        "convlab search: no results for 'HNSW' with --conversation amp-faiss-choice "
        "--until 2026-04-09"
    )


def test_since_after_until_is_a_usage_error(
    sample_store: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["search", "x", "--store", str(sample_store), "--since", "2026-05-01"]
    assert main([*argv, "--until", "2026-04-01"]) == EXIT_USAGE
    assert capsys.readouterr().err.strip() == (
        "convlab search: --since 2026-05-01 is after --until 2026-04-01"
    )


def test_search_human_output_is_aligned_and_clipped(
    sample_store: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "72")
    assert main(["search", "cache", "--store", str(sample_store), "-k", "12"]) == EXIT_OK
    *lines, scores = capsys.readouterr().out.splitlines()
    assert scores.startswith("scores: cosine (")  # the hits, then what the scores are
    assert max(len(line) for line in lines) <= 72
    starts = [i for i, line in enumerate(lines) if not line.startswith("    ")]
    assert len(starts) == 12
    hits = [lines[a:b] for a, b in zip(starts, [*starts[1:], len(lines)], strict=True)]
    # a header, Q on one to three lines, the match on one to five, and at
    assert all(4 <= len(h) <= 10 for h in hits)
    headers = [h[0] for h in hits]
    assert [h[:3] for h in headers[:2]] == [" 1.", " 2."]  # ranks right-aligned to "12."
    assert headers[-1].startswith("12. ")
    assert {len(h) for h in headers} == {72}  # the date and turn columns end at the edge
    assert all(" turn " in h[-10:] for h in headers)
    assert all(h[1].startswith("    Q:     ") for h in hits)
    match = [next(i for i, line in enumerate(h) if line.startswith("    match: [")) for h in hits]
    assert all(i in (2, 3, 4) for i in match)
    assert all(line.startswith(" " * 11) for h in hits for line in h[2:-1] if "match:" not in line)
    at = [h[-1] for h in hits]
    assert all(line.startswith("    at:    ") and ".jsonl:" in line for line in at)


def test_show_wraps_to_the_terminal(
    sample_store: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "60")
    argv = ["show", "amp-faiss-choice", "--turn", "1", "--store", str(sample_store)]
    assert main(argv) == EXIT_OK
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "amp-faiss-choice: Choosing a FAISS index"
    assert lines[1].startswith("source: ")
    assert lines[2] == "project: /home/dev/amp-faiss-choice"  # its metadata's working_dir
    assert lines[3] == "== turn 1 · 2026-04-10 09:03"
    # wrapped at 60 columns, continuation lines under the text, not under the role
    assert lines[4] == "  user       #2  We do need low latency. How do we set up"
    assert lines[5] == " " * 17 + "HNSW?"
    assert lines[6].startswith("  assistant  #4  Use IndexHNSWFlat with M around 32")
    assert max(len(line) for line in lines) <= 60


def test_show_and_stats(store: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["stats", "--store", str(store), "--json"]) == EXIT_OK
    stats = json.loads(capsys.readouterr().out)
    assert stats["counts"]["units"] > 0
    from convlab.store import Store

    conv = Store(store).frame("turns")["conversation_id"][0]
    assert main(["show", conv, "--turn", "0", "--budget", "64", "--store", str(store)]) == EXIT_OK
    out = capsys.readouterr().out
    assert out.splitlines()[2] == "project: /home/marco/projects/spotter"  # both files' cwd
    assert out.splitlines()[3].startswith("== turn 0")
    assert "resurrected context:" in out
    used = int(out.split("resurrected context: ")[1].split("/")[0])
    assert used <= 64


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    from convlab._version import __version__

    assert main(["--version"]) == EXIT_OK
    assert capsys.readouterr().out.strip() == f"convlab {__version__}"


@pytest.mark.parametrize("command", ["index", "search", "show", "stats", "eval"])
def test_every_subcommand_has_an_example(command: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main([command, "--help"]) == EXIT_OK
    out = capsys.readouterr().out
    example = out.split("example:\n", 1)[1].strip()
    assert example.startswith(f"convlab {command}")
    for flag in ("--quiet", "--verbose", "--debug"):
        assert flag in out


def _history_with_skips(root: Path) -> Path:
    hist = root / "history"
    (hist / "deep" / "er").mkdir(parents=True)
    good = sample_data_path() / "transcripts" / "claude_code" / "-home-dev-cc-makefile"
    shutil.copy(good / "cc-makefile.jsonl", hist / "good.jsonl")
    lines = (good / "cc-makefile.jsonl").read_text().splitlines()
    bad = [lines[0], "{not json", lines[1], "[1, 2", *lines[2:]]
    (hist / "deep" / "er" / "broken.jsonl").write_text("\n".join(bad) + "\n")
    (hist / "notes.txt").write_text("just some notes, not a transcript\n")
    return hist


def test_index_names_skipped_files(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    hist = _history_with_skips(tmp_path)
    argv = ["index", str(hist), "--store", str(tmp_path / "s"), "--embedder", "hash", "-q"]
    assert main(argv) == EXIT_OK
    out = capsys.readouterr().out.splitlines()
    head = out.index("skipped: 3 in 2 files (--verbose lists each)")
    named = out[head + 1 : head + 3]
    assert any(line.endswith("broken.jsonl: 2 records (invalid JSON: 2)") for line in named), named
    assert any(line.endswith("notes.txt: unrecognised format") for line in named), named


def test_verbose_lists_every_skip(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    hist = _history_with_skips(tmp_path)
    argv = ["index", str(hist), "--store", str(tmp_path / "s"), "--embedder", "hash", "-v"]
    assert main(argv) == EXIT_OK
    out = capsys.readouterr().out.splitlines()
    head = out.index("skipped: 3 in 2 files")
    broken = (hist / "deep" / "er" / "broken.jsonl").resolve()
    notes = (hist / "notes.txt").resolve()
    listed = sorted(out[head + 1 : head + 4])
    assert listed[0].startswith(f"  {broken}:2: invalid JSON (")
    assert listed[1].startswith(f"  {broken}:4: invalid JSON (")
    assert listed[2] == f"  {notes}: unrecognised format"


def test_quiet_silences_progress(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = sample_data_path() / "transcripts" / "claude_code"
    argv = ["index", str(src), "--store", str(tmp_path / "s"), "--embedder", "hash"]
    assert main([*argv, "--quiet"]) == EXIT_OK
    assert capsys.readouterr().err == ""
    assert main(argv) == EXIT_OK  # progress goes to stderr, the summary to stdout
    err = capsys.readouterr().err
    assert err.startswith(f"convlab index: indexing 1 path into {tmp_path / 's'}")


def test_skip_report_by_hand() -> None:
    skipped = [("/d/a.jsonl", 3, "bad"), ("/d/a.jsonl", 9, "bad"), ("/d/a.jsonl", 12, "odd")]
    skipped += [(f"/d/f{i}", 0, "unrecognised format") for i in range(6)]
    lines = skip_report(skipped, verbose=False)
    assert lines[0] == "skipped: 9 in 7 files (--verbose lists each)"
    assert lines[1] == "  /d/a.jsonl: 3 records (bad: 2, odd: 1)"
    assert lines[2:6] == [f"  /d/f{i}: unrecognised format" for i in range(4)]
    assert lines[6] == "  … and 2 more files"
    assert len(lines) == 7
    assert skip_report([], verbose=True) == ["skipped: 0"]
    assert skip_report(skipped[:1], verbose=True) == ["skipped: 1 in 1 file", "  /d/a.jsonl:3: bad"]


def test_the_skip_report_replaces_the_stores_skip_lines() -> None:
    lines = ["2 conversations", "skipped records: 3", "  2 x bad", "  1 x odd", "time: 1.0 s"]
    report = ["skipped: 3 in 1 file (--verbose lists each)", "  /d/a: 3 records"]
    assert with_skip_report(lines, report) == ["2 conversations", *report, "time: 1.0 s"]
    assert with_skip_report(["time: 1.0 s"], report) == ["time: 1.0 s", *report]


def test_short_path_by_hand(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", "/home/ann")
    assert short_path("/home/ann/p/x.jsonl") == "~/p/x.jsonl"
    assert short_path("/home/anna/x.jsonl") == "/home/anna/x.jsonl"  # not under the home
    long = "/srv/" + "/".join(["abcdefghij"] * 8) + "/s.jsonl"
    # "…/" + two 11-character parts + "s.jsonl" is 31 characters; a third part would make 42
    assert short_path(long, 40) == "…/abcdefghij/abcdefghij/s.jsonl"
    assert len(short_path(long, 40)) <= 40


def test_hits_of_a_store_without_messages_fall_back_to_the_file(
    sample_store: Path,
) -> None:
    import polars as pl

    from convlab.app.display import describe_hits
    from convlab.store import Store

    real = Store(sample_store)

    class OldStore:  # a store written before messages.parquet was kept
        def frame(self, name: str) -> pl.DataFrame:
            if name == "messages":
                raise FileNotFoundError(name)
            return real.frame(name)

    units = real.frame("units").filter(pl.col("conversation_id") == "amp-faiss-choice")
    hits = units.head(1).select(
        pl.lit(1, dtype=pl.Int32).alias("rank"),
        pl.lit(0.5).alias("score"),
        "unit_id",
        pl.format("{}:t{}", "conversation_id", "turn_index").alias("doc_id"),
        "conversation_id",
        "turn_index",
        "message_index",
        "text",
        "role",
        "timestamp",
    )
    (hit,) = describe_hits(OldStore(), hits)
    assert hit["source_line"] is None
    assert str(hit["source_path"]).endswith(FAISS)


def test_terminal_escapes_in_transcripts_are_shown_not_obeyed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # a title and a message carrying an escape that would retitle the terminal and one that
    # would turn it red, and a wide (CJK) title: shown as text, headers still aligned
    src = sample_data_path() / "transcripts" / "claude_code" / "-home-dev-cc-makefile"
    text = (src / "cc-makefile.jsonl").read_text()
    text = text.replace("A Makefile for a Python project", "Makefile 日本語 \\u001b]0;pwned\\u0007")
    text = text.replace('"content":"', '"content":"\\u001b[31mred ', 2)
    hist = tmp_path / "h"
    hist.mkdir()
    (hist / "cc-makefile.jsonl").write_text(text)
    store = str(tmp_path / "s")
    assert main(["index", str(hist), "--store", store, "--embedder", "hash", "-q"]) == EXIT_OK
    capsys.readouterr()
    monkeypatch.setenv("COLUMNS", "70")
    argv = ["search", "make test target", "--store", store, "-k", "3", "--min-confidence", "0"]
    assert main(argv) == EXIT_OK
    assert main(["show", "cc-makefile", "--store", store]) == EXIT_OK
    out = capsys.readouterr().out
    assert "\x1b" not in out
    assert "\x07" not in out
    assert "Makefile 日本語 \\x1b]0;pwned\\x07" in out
    assert "[31mred " in out  # the message's escape (the loaders already drop the ESC itself)
    headers = [line for line in out.splitlines() if line[:3] in (" 1.", " 2.", " 3.", "1. ")]
    assert headers
    assert {columns(h) for h in headers} == {70}  # the wide title counts two columns a char


def test_hit_lines_by_hand() -> None:
    row = {
        "rank": 1,
        "score": 0.5,
        "title": "日本語",
        "conversation_id": "c",
        "timestamp": "2026-04-10T09:04:00+00:00",
        "turn": 2,
        "question": "why?",
        "role": "user",
        "snippet": "because",
        "source_path": "/x/a.jsonl",
        "source_line": 7,
        "message_index": 3,
    }
    lines = hit_lines([row], 60)
    assert lines == [
        "1. 0.500  日本語" + " " * 18 + "  2026-04-10 09:04  turn 2",
        "   Q:     why?",
        "   match: [user] because",
        "   at:    /x/a.jsonl:7 (message 3)",
    ]
    assert columns(lines[0]) == 60


def test_lexical_search_finds_exactly_the_turns_holding_the_term(
    sample_store: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import polars as pl

    from convlab.store import Store

    # BM25 leaves out rows without a query term, so --lexical returns exactly the turns whose
    # text holds it (counted here from the stored chunks), while dense search fills k
    sents = Store(sample_store).frame("chunks")
    holding = sents.filter(pl.col("text").str.to_lowercase().str.contains("indexhnswflat"))
    expected = {f"{c}:t{t}" for c, t in holding.select("conversation_id", "turn_index").rows()}
    argv = ["search", "IndexHNSWFlat", "--store", str(sample_store), "-k", "10", "--json"]
    assert main([*argv, "--lexical"]) == EXIT_OK
    lexical = _json_hits(capsys)
    assert {h["doc_id"] for h in lexical} == expected
    assert main(argv) == EXIT_OK
    assert len(_json_hits(capsys)) == 10
    assert main([*argv, "--hybrid"]) == EXIT_OK
    hybrid = _json_hits(capsys)
    # RRF: the doc first in both rankings scores 2/61, more than any other can
    assert hybrid[0]["doc_id"] in expected
    assert main([*argv, "--hybrid", "--lexical"]) == EXIT_USAGE  # one mode at a time


def test_show_budget_resurrects_the_turns_units(
    sample_store: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import polars as pl

    from convlab.store import Store

    store = Store(sample_store)
    units = store.frame("units").filter(
        (pl.col("conversation_id") == "amp-faiss-choice") & (pl.col("turn_index") == 1)
    )
    chunks = set(units["chunk_ids"].explode().to_list())
    sents = store.frame("chunks").filter(pl.col("chunk_id").is_in(sorted(chunks)))
    total = int(sents["n_tokens"].sum())  # every chunk once: a budget this size fits them all
    argv = ["show", "amp-faiss-choice", "--turn", "1", "--store", str(sample_store)]
    assert main([*argv, "--budget", str(total)]) == EXIT_OK
    out = capsys.readouterr().out
    assert f"== resurrected context: {total}/{total} tokens" in out
    assert main([*argv, "--budget", "0"]) == EXIT_USAGE  # a budget of nothing is a mistake
    assert "--budget must be at least 1 token" in capsys.readouterr().err


def test_index_text_format_writes_dialogs_in_that_format(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from convlab.store import Store

    src = locomo_file(tmp_path / "d1.json", [("Ann", "Hi there."), ("Bo", "Yo.")])
    out = tmp_path / "s"
    argv = ["index", str(src), "--store", str(out), "--embedder", "hash", "-q"]
    argv += ["--system", "turn_pair"]
    assert main([*argv, "--text-format", "locomo"]) == EXIT_OK
    store = Store(out)
    ann, bo = (
        '(1:56 pm on 8 May, 2023) Ann said, "Hi there."',
        '(1:56 pm on 8 May, 2023) Bo said, "Yo."',
    )
    assert store.frame("chunks")["text"].to_list() == [ann, bo]
    # turn_pair (the default strategy) embeds each of the two messages with the other
    assert store.frame("units")["text"].to_list() == [f"{ann} {bo}", f"{ann} {bo}"]
    assert store.manifest().config.policy == {"text_format": "locomo"}
    capsys.readouterr()
    # the default writes no policy, so a store built before --text-format keeps matching it;
    # another format is another setting
    assert main([*argv, "--text-format", "speaker"]) == EXIT_USAGE
    assert "other settings (policy)" in capsys.readouterr().err
    default = ["index", str(src), "--store", str(tmp_path / "d"), "--embedder", "hash", "-q"]
    assert main(default) == EXIT_OK
    assert Store(tmp_path / "d").manifest().config.policy == {}
    assert Store(tmp_path / "d").frame("chunks")["text"].to_list() == [
        "Ann: Hi there.",
        "Bo: Yo.",
    ]
