"""Small builders shared by tests."""

from __future__ import annotations

import shutil
from datetime import UTC, datetime, timedelta
from pathlib import Path

import polars as pl

from convlab import schema
from convlab.embed import HashEmbedder
from convlab.loaders.base import CorpusBuilder
from convlab.loaders.blocks import BlockRow
from convlab.loaders.corpus import Corpus

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def corpus(convs: dict[str, list[tuple]], kind: str = "chat") -> Corpus:
    """Conversations of (role, text[, is_real_user[, speaker]]) messages."""
    b = CorpusBuilder(strict=True)
    for cid, msgs in convs.items():
        b.conversation(cid, source_format="test", source_path="test", kind=kind)
        for i, m in enumerate(msgs):
            role, text = m[0], m[1]
            real = m[2] if len(m) > 2 else role == "user"
            speaker = m[3] if len(m) > 3 else None
            blocks = text if isinstance(text, list) else [BlockRow("text", text)]
            b.message(
                cid,
                role,
                blocks,
                source_path="test",
                source_line=i + 1,
                timestamp=T0 + timedelta(minutes=i),
                is_real_user=real,
                speaker=speaker,
            )
    return b.build()


def chunks_frame(rows: list[tuple], doc_kind: str = "turn", cid: str = "c") -> pl.DataFrame:
    """Chunks of conversation ``cid`` from (turn, message, role, sentence_index,
    sentence_in_message, text, n_tokens), its docs of ``doc_kind``."""
    out = []
    for pos, (turn, msg, role, si, sim, text, n) in enumerate(rows):
        out.append(
            {
                "chunk_id": schema.chunk_id(cid, turn, role, si),
                "conversation_id": cid,
                "turn_index": turn,
                "message_index": msg,
                "block_index": 0,
                "role": role,
                "sentence_index": si,
                "sentence_in_message": sim,
                "position": pos,
                "timestamp": T0,
                "text": text,
                "n_tokens": n,
                "doc_kind": doc_kind,
            }
        )
    return schema.frame(out, schema.CHUNKS)


def small_history(transcripts: Path, base: Path) -> Path:
    """Three real Claude Code sessions copied under ``base/history``; returns that folder."""
    root = base / "history" / "-home-u-app"
    root.mkdir(parents=True)
    for name in ("short.jsonl", "tool_heavy.jsonl"):
        shutil.copy(transcripts / "claude_code" / "spotter_real" / name, root / name)
    shutil.copy(
        transcripts / "claude_code" / "simonw_synthetic" / "sample_session.jsonl",
        root / "sample_session.jsonl",
    )
    return root.parent


class CountingHash(HashEmbedder):
    """HashEmbedder that counts (``texts``) and keeps (``seen``) the texts it embeds."""

    def __init__(self, dimension: int = 64) -> None:
        super().__init__(dimension)
        self.texts = 0
        self.seen: list[str] = []

    def encode(self, texts):  # type: ignore[no-untyped-def]
        self.texts += len(texts)
        self.seen += list(texts)
        return super().encode(texts)


def locomo_file(
    path: Path,
    utterances: list[tuple[str, str]],
    qa: list[dict[str, object]] | None = None,
    sample_id: str = "d1",
) -> Path:
    """A one-session LoCoMo file: Ann and Bo at ``1:56 pm on 8 May, 2023``, ids ``D1:1``..."""
    import json

    sample = {
        "sample_id": sample_id,
        "conversation": {
            "speaker_a": "Ann",
            "speaker_b": "Bo",
            "session_1_date_time": "1:56 pm on 8 May, 2023",
            "session_1": [
                {"speaker": who, "dia_id": f"D1:{i}", "text": text}
                for i, (who, text) in enumerate(utterances, start=1)
            ],
        },
        "qa": qa or [],
    }
    path.write_text(json.dumps(sample), encoding="utf-8")
    return path


def index_argv(src: Path, store: Path | str, system: str = "turn_pair") -> list[str]:
    """``convlab index SRC --store STORE`` with the hash embedder, quiet, one system's views.

    The tests of one behaviour (context, scores, old columns) index one view; the default
    system's several views are tested on their own (``tests/systems``, ``tests/store``).
    """
    return [
        "index",
        str(src),
        "--store",
        str(store),
        "--embedder",
        "hash",
        "-q",
        "--system",
        system,
    ]


def tree(root: Path) -> dict[str, str]:
    """Every entry under ``root``: files with their bytes (hex), links with their target."""
    import os

    out = {}
    for p in sorted(root.rglob("*")):
        rel = p.relative_to(root).as_posix()
        if p.is_symlink():
            out[rel] = "-> " + os.readlink(p)
        elif p.is_file():
            out[rel] = p.read_bytes().hex()
        else:
            out[rel] = "/"
    return out
