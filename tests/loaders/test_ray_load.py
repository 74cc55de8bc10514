"""Loading on Ray tasks gives the corpus a local load gives, and a bad line is still named."""

from __future__ import annotations

import shutil
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from polars.testing import assert_frame_equal

from convlab.loaders import LoadError, load
from convlab.loaders.corpus import Corpus, corpus_from_ipc
from convlab.loaders.registry import load_chunk_ipc
from convlab.paths import sample_data_path


def _assert_same(a: Corpus, b: Corpus) -> None:
    for name in ("conversations", "messages", "blocks"):
        assert_frame_equal(getattr(a, name), getattr(b, name), check_exact=True)
    assert_frame_equal(a.report.files, b.report.files)
    assert_frame_equal(a.report.skipped, b.report.skipped)
    assert (a.queries is None) == (b.queries is None)
    if a.queries is not None and b.queries is not None:
        assert_frame_equal(a.queries, b.queries, check_exact=True)


def _tree_with_a_bad_line(tmp_path: Path) -> tuple[Path, Path, int]:
    """The sample transcripts with an invalid JSON line appended to the last session file."""
    shutil.copytree(sample_data_path() / "transcripts", tmp_path / "t")
    bad = sorted((tmp_path / "t").rglob("*.jsonl"))[-1]
    with bad.open("a") as fh:
        fh.write("{not json\n")
    return tmp_path / "t", bad, len(bad.read_text().splitlines())


class _EmbedOnly:
    """An engine without ``load_parts``: it cannot load."""

    name = "embed-only"

    def embed(self, texts: Sequence[str], embedder: Any) -> np.ndarray:
        return np.zeros((len(texts), 1), dtype=np.float32)

    def close(self) -> None:
        """Nothing to close."""

    def describe(self) -> dict[str, Any]:
        return {"name": self.name}


def test_a_chunk_as_ipc_bytes_reads_back_as_the_corpus(locomo_file: Path) -> None:
    # the Ray task's return value; LoCoMo's part carries queries too
    for root in (sample_data_path() / "transcripts", locomo_file):
        files = sorted(p for p in root.rglob("*") if p.is_file()) if root.is_dir() else [root]
        _assert_same(corpus_from_ipc(load_chunk_ipc(files, None, False)), load(root))


def test_an_engine_without_load_parts_is_refused() -> None:
    with pytest.raises(ValueError, match="'embed-only' engine cannot load transcripts"):
        load(sample_data_path() / "transcripts", engine=_EmbedOnly())


def test_an_engine_name_is_refused_naming_the_call_that_makes_the_engine() -> None:
    with pytest.raises(ValueError, match=r"pass an engine, convlab\.engines\.get_engine\('ray'\)"):
        load(sample_data_path() / "transcripts", engine="ray")  # type: ignore[arg-type]


def test_the_local_engine_loads_in_this_machines_processes() -> None:
    from convlab.engines import get_engine

    transcripts = sample_data_path() / "transcripts"
    _assert_same(load(transcripts, engine=get_engine("local"), workers=2), load(transcripts))


# -- on a local Ray instance ----------------------------------------------------------------------
@pytest.fixture(scope="module")
def ray_engine() -> Iterator[Any]:
    pytest.importorskip("ray", reason="the ray extra is not installed")
    from convlab.engines.ray import RayEngine

    engine = RayEngine(actors=2)
    yield engine
    engine.close()


@pytest.mark.slow
def test_ray_load_equals_the_local_load(ray_engine: Any, transcripts: Path) -> None:
    local = load(transcripts, workers=1)
    assert local.report.files.height > 10  # several chunks: 4 per worker
    _assert_same(load(transcripts, engine=ray_engine, workers=2), local)
    # made by name, the engine joins the running instance (and would close one it started)
    from convlab.engines import get_engine

    by_name = get_engine("ray")
    try:
        _assert_same(load(transcripts, engine=by_name, workers=3), local)
    finally:
        by_name.close()


@pytest.mark.slow
def test_ray_load_merges_a_conversation_split_across_chunks(
    ray_engine: Any, locomo_file: Path, tmp_path: Path
) -> None:
    # one file per chunk: LoCoMo, then the samples; merge_parts renumbers nothing here but the
    # queries frame must come through the object store too
    files = [locomo_file, *sorted((sample_data_path() / "transcripts").rglob("*.jsonl"))]
    from convlab.loaders import load_files

    _assert_same(
        load_files(files, engine=ray_engine, workers=len(files)), load_files(files, workers=1)
    )


@pytest.mark.slow
def test_ray_load_names_the_bad_file_and_line(ray_engine: Any, tmp_path: Path) -> None:
    root, bad, line = _tree_with_a_bad_line(tmp_path)
    with pytest.raises(LoadError) as info:
        load(root, strict=True, engine=ray_engine, workers=2)
    assert (info.value.path, info.value.line) == (str(bad), line)
    lenient = load(root, engine=ray_engine, workers=2)
    skipped = lenient.report.skipped.select("source_path", "source_line").rows()
    assert skipped == [(str(bad), line)]
    _assert_same(lenient, load(root, workers=1))
