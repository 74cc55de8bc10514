"""One progress display for a run: one bar over every text to embed, across cache segments."""

from __future__ import annotations

import io
import re
from pathlib import Path
from typing import Any

import numpy as np

from convlab.embed import CachedEmbedder, HashEmbedder
from convlab.progress import BarProgress, LineProgress, NullProgress, current, using

_STATE = re.compile(r"(\w+): +\d+%\|[^|]*\| (\d+)/(\d+)")


def states(drawn: str) -> list[tuple[str, int, int]]:
    """Every (phase, done, total) a tqdm bar drew into ``drawn``."""
    return [(m[1], int(m[2]), int(m[3])) for m in _STATE.finditer(drawn)]


def test_one_bar_covers_every_segment(tmp_path: Path) -> None:
    # 10 new texts in segments of 4: three model calls, one phase of 10, counting up to 10
    buf = io.StringIO()
    cached = CachedEmbedder(HashEmbedder(8), tmp_path, segment_texts=4)
    with using(BarProgress(buf, mininterval=0)):
        cached.encode([f"text {i}" for i in range(10)])
    got = states(buf.getvalue())
    assert cached.stats.model_calls == 3
    assert {(name, total) for name, _, total in got} == {("embed", 10)}
    done = [n for _, n, _ in got]
    assert done == sorted(done)  # never restarts
    assert done[0] == 0
    assert done[-1] == 10
    assert {4, 8} <= set(done)  # it moved at each segment


class _FakeModel:
    """Stands in for the SentenceTransformer: records how it was called."""

    def __init__(self) -> None:
        self.calls: list[dict[str, Any]] = []

    def encode(self, texts: list[str], **kwargs: Any) -> np.ndarray:
        self.calls.append({"n": len(texts), **kwargs})
        return np.ones((len(texts), 384), dtype=np.float32) / np.sqrt(384)


def test_the_models_own_bar_is_off_and_the_run_bar_moves_per_step(tmp_path: Path) -> None:
    from convlab.embed import MiniLMEmbedder

    model = _FakeModel()
    emb = MiniLMEmbedder(batch_size=8, show_progress=True)  # its own bar asked for
    emb._model = model
    buf = io.StringIO()
    with using(BarProgress(buf, mininterval=0)):
        CachedEmbedder(emb, tmp_path, segment_texts=50).encode([f"t{i}" for i in range(120)])
    # segments of 50, 50 and 20 texts; the model called in steps of 8 * 4 = 32 texts
    assert [c["n"] for c in model.calls] == [32, 18, 32, 18, 20]
    assert {c["show_progress_bar"] for c in model.calls} == {False}
    got = states(buf.getvalue())
    assert {total for _, _, total in got} == {120}
    done = [n for _, n, _ in got]
    assert done == sorted(done)
    assert {32, 50, 82, 100, 120} <= set(done)
    assert "Batches" not in buf.getvalue()


def test_outside_a_display_the_model_keeps_its_own_setting() -> None:
    from convlab.embed import MiniLMEmbedder

    model = _FakeModel()
    emb = MiniLMEmbedder(show_progress=True)
    emb._model = model
    emb.encode(["a", "b"])
    assert [(c["n"], c["show_progress_bar"]) for c in model.calls] == [(2, True)]


def test_line_progress_names_phases_of_known_size_and_null_shows_nothing() -> None:
    lines: list[str] = []
    with using(LineProgress(lines.append)) as p:
        p.phase("load")
        current().phase("embed", total=3)
        current().advance(3)
        assert current().done == 3
    assert lines == ["embed: 3"]
    assert isinstance(current(), NullProgress)  # the block is over
    assert current().active is False


def test_a_phase_of_unknown_size_shows_its_name_not_the_last_total(tmp_path: Path) -> None:
    buf = io.StringIO()
    with using(BarProgress(buf, mininterval=0)) as p:
        p.phase("embed", total=4)
        p.advance(4)
        p.phase("index")
    drawn = buf.getvalue()
    assert "\rindex [00:00]" in drawn
    assert [s for s in states(drawn) if s[0] == "index"] == []
