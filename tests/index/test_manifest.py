"""An index's manifest: a typed record through the index folder, anything else refused."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from convlab._version import __version__
from convlab.index import IndexManifest, VectorIndex
from convlab.specs import IndexSpec

KEYS = [  # the keys of manifest.json, in order, as indexes have written them
    "model_id",
    "embedder",
    "dimension",
    "kind",
    "params",
    "strategy",
    "policy",
    "corpus_fingerprint",
    "convlab_version",
    "units",
    "created",
]


def _saved(tmp_path: Path) -> tuple[VectorIndex, Path]:
    units = pl.DataFrame({"unit_id": ["a", "b", "c"], "text": ["x", "y", "z"]})
    index = VectorIndex.build(
        units,
        np.eye(3, dtype=np.float32),
        model_id="hash-3",
        spec=IndexSpec("hnsw", {"hnsw_m": 8}),
        strategy="isolated",
        policy={"tool_results": True},
        corpus_fingerprint="abc",
        embedder="hash",
    )
    index.save(tmp_path / "ix")
    return index, tmp_path / "ix"


def _refusal(directory: Path, reason: str) -> str:
    """The whole line, as a pattern: nothing before it, nothing after."""
    line = (
        f"{directory}: an index written by an older convlab (manifest.json: {reason}); "
        "run `convlab index --rebuild`"
    )
    return f"^{re.escape(line)}$"


def test_the_manifest_round_trips_through_the_index_folder_as_a_struct(tmp_path: Path) -> None:
    built, directory = _saved(tmp_path)
    back = VectorIndex.load(directory, model_id="hash-3", dimension=3)
    assert isinstance(back.manifest, IndexManifest)
    assert back.manifest == built.manifest
    m = back.manifest
    assert (m.model_id, m.embedder, m.dimension, m.kind) == ("hash-3", "hash", 3, "hnsw")
    assert (m.strategy, m.corpus_fingerprint) == ("isolated", "abc")
    assert m.policy == {"tool_results": True}
    assert (m.params["hnsw_m"], m.units, m.convlab_version) == (8, 3, __version__)
    on_disk = json.loads((directory / "manifest.json").read_text())
    assert list(on_disk) == KEYS  # the file keeps its keys
    assert on_disk["params"]["hnsw_m"] == 8


def test_a_manifest_with_an_unknown_field_is_refused_in_one_line(tmp_path: Path) -> None:
    _, directory = _saved(tmp_path)
    path = directory / "manifest.json"
    path.write_text(json.dumps(json.loads(path.read_text()) | {"shards": 2}))
    refusal = _refusal(directory, "Object contains unknown field `shards`")
    with pytest.raises(ValueError, match=refusal):
        VectorIndex.load(directory)


def test_a_manifest_of_the_old_format_is_refused_in_one_line(tmp_path: Path) -> None:
    _, directory = _saved(tmp_path)
    path = directory / "manifest.json"
    old = json.loads(path.read_text())
    del old["embedder"]  # indexes written before the embedder was recorded
    path.write_text(json.dumps(old))
    refusal = _refusal(directory, "Object missing required field `embedder`")
    with pytest.raises(ValueError, match=refusal):
        VectorIndex.load(directory)


def test_a_manifest_with_a_wrong_type_is_refused_in_one_line(tmp_path: Path) -> None:
    _, directory = _saved(tmp_path)
    path = directory / "manifest.json"
    path.write_text(json.dumps(json.loads(path.read_text()) | {"dimension": "3"}))
    refusal = _refusal(directory, "Expected `int`, got `str` - at `$.dimension`")
    with pytest.raises(ValueError, match=refusal):
        VectorIndex.load(directory)


def test_a_manifest_that_is_not_json_is_refused_in_one_line(tmp_path: Path) -> None:
    _, directory = _saved(tmp_path)
    (directory / "manifest.json").write_text('{"model_id": ')
    line = f"{directory / 'manifest.json'}: not JSON (Input data was truncated); "
    with pytest.raises(ValueError, match=f"^{re.escape(line)}run `convlab index --rebuild`$"):
        VectorIndex.load(directory)
