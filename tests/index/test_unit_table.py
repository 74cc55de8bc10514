"""A vector index's units on disk: mapped from Arrow IPC, rows read alone, old files refused."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from convlab import schema
from convlab.index import VectorIndex
from convlab.index.disk_rows import DiskRows
from convlab.index.unit_table import BATCH_ROWS, UNITS_FILE, UnitTable, write_unit_shards


def _units(n: int, start: int = 0) -> pl.DataFrame:
    return schema.frame(
        {
            "unit_id": [f"u{i}" for i in range(start, start + n)],
            "conversation_id": [f"c{i % 3}" for i in range(start, start + n)],
            "doc_ids": [[f"c{i % 3}:t{i}"] for i in range(start, start + n)],
            "text": [f"text {i}" for i in range(start, start + n)],
        },
        schema.UNITS,
    )


def _vectors(n: int) -> np.ndarray:
    v = np.random.default_rng(0).normal(size=(n, 8)).astype(np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def test_saved_index_maps_its_units(tmp_path: Path) -> None:
    """A saved index's units come back mapped; rows read alone equal the frame's rows."""
    units = _units(50)
    VectorIndex.build(units, _vectors(50), model_id="m").save(tmp_path / "ix")
    assert (tmp_path / "ix" / UNITS_FILE).is_file()
    assert not (tmp_path / "ix" / "units.parquet").exists()
    table = UnitTable.open(tmp_path / "ix")
    assert table.on_disk
    assert table.height == 50
    got = table.rows(np.array([7, 0, 49]))
    assert got["unit_id"].to_list() == ["u7", "u0", "u49"]
    assert got["doc_ids"].to_list() == [["c1:t7"], ["c0:t0"], ["c1:t49"]]
    assert table.rows([3], columns=["text"]).to_dicts() == [{"text": "text 3"}]
    index = VectorIndex.load(tmp_path / "ix")
    assert len(index) == 50
    assert index.unit_rows([2, 1])["unit_id"].to_list() == ["u2", "u1"]
    assert index.units.equals(units)


def test_rows_outside_are_refused(tmp_path: Path) -> None:
    """A row outside the units (the -1 of padding) is an error, not a wrapped-around row."""
    VectorIndex.build(_units(5), _vectors(5), model_id="m").save(tmp_path / "ix")
    index = VectorIndex.load(tmp_path / "ix")
    with pytest.raises(IndexError, match="row -1 is outside the 5 units"):
        index.unit_rows([0, -1])
    with pytest.raises(IndexError, match="row 5"):
        UnitTable(frame=_units(5)).rows([5])


def test_index_written_before_is_refused(tmp_path: Path) -> None:
    """An index written with ``units.parquet`` (before units.arrow) is refused in one line
    naming the repair; a folder with neither units file is not an index."""
    units = _units(20)
    VectorIndex.build(units, _vectors(20), model_id="m").save(tmp_path / "ix")
    old = tmp_path / "old"
    shutil.copytree(tmp_path / "ix", old)
    (old / UNITS_FILE).unlink()
    units.write_parquet(old / "units.parquet")
    with pytest.raises(ValueError, match=r"older convlab .*run `convlab index --rebuild`") as e:
        VectorIndex.load(old)
    assert "\n" not in str(e.value)
    (old / "units.parquet").unlink()
    with pytest.raises(FileNotFoundError, match=r"units\.arrow"):
        VectorIndex.load(old)


def test_shards_written_in_order(tmp_path: Path) -> None:
    """Shards' units are one file in shard order; a shard of other columns is named."""
    rows = write_unit_shards([_units(3), _units(2, start=3)], tmp_path)
    assert rows == 5
    table = UnitTable.open(tmp_path)
    assert table.frame()["unit_id"].to_list() == ["u0", "u1", "u2", "u3", "u4"]
    odd = pl.DataFrame({"unit_id": ["x"]})
    with pytest.raises(ValueError, match="shard 1"):
        write_unit_shards([_units(1), odd], tmp_path)
    assert not (tmp_path / UNITS_FILE).exists()


def test_rows_across_batches_and_shards(tmp_path: Path) -> None:
    """Shards that do not fill whole batches: rows on every side of a boundary come back right."""
    n = BATCH_ROWS + 188  # two shards of it: 1,400 rows with BATCH_ROWS = 512
    assert write_unit_shards([_units(n), _units(n, start=n)], tmp_path) == 2 * n
    table = UnitTable.open(tmp_path)
    assert table.height == 2 * n
    want = [2 * n - 1, 0, BATCH_ROWS - 1, BATCH_ROWS, n - 1, n, 2 * BATCH_ROWS, 0]
    got = table.rows(np.array(want), columns=["unit_id", "doc_ids"])
    assert got.columns == ["unit_id", "doc_ids"]
    assert got["unit_id"].to_list() == [f"u{r}" for r in want]
    assert got["doc_ids"].to_list() == [[f"c{r % 3}:t{r}"] for r in want]
    assert table.rows(np.array([], dtype=np.int64)).height == 0
    assert table.frame()["unit_id"].to_list() == [f"u{r}" for r in range(2 * n)]


def test_disk_rows_read_what_numpy_reads(tmp_path: Path) -> None:
    """Rows read with pread equal numpy's; runs, order and repeats kept; bad rows refused."""
    v = np.random.default_rng(1).normal(size=(300, 6)).astype(np.float16)
    np.save(tmp_path / "v.npy", v)
    rows = DiskRows(tmp_path / "v.npy")
    assert rows.shape == (300, 6)
    pick = np.array([5, 6, 7, 299, 0, 7, 100])
    assert np.array_equal(rows[pick], v[pick])
    assert np.array_equal(np.asarray(rows), v)
    with pytest.raises(IndexError):
        rows[np.array([300])]
    (tmp_path / "t.npy").write_bytes((tmp_path / "v.npy").read_bytes()[:-10])
    with pytest.raises(ValueError, match="truncated"):
        DiskRows(tmp_path / "t.npy")
