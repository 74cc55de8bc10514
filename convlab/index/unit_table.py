"""A vector index's units on disk: one Arrow IPC file, memory-mapped, read row by row.

An index of 10M units serves from its FAISS file (0.57 GB at 10M, ``ivfpq``) and float16 vectors
mapped from disk; reading its units frame whole made +1.7 GB more (README, 2026-11-24). So an
index keeps its units in ``units.arrow`` (Arrow IPC, uncompressed: the file's bytes are the
columns' buffers) and opens it memory-mapped: opening reads the schema and the footer, a search
reads only its hits' rows (:meth:`UnitTable.rows`), and the whole frame is made only when a caller
asks for it (:meth:`UnitTable.frame`: the searches over many rows at once, the notebooks).

An index written before (``units.parquet``) is read whole when opened, as it always was.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

__all__ = ["LEGACY_UNITS_FILE", "UNITS_FILE", "UnitTable", "write_unit_shards", "write_units"]

UNITS_FILE = "units.arrow"
LEGACY_UNITS_FILE = "units.parquet"
_ARROW = pl.CompatLevel.oldest()
"""Plain Arrow types (``large_string``, not ``string_view``): pyarrow's ``take`` reads them."""


def write_units(units: pl.DataFrame, directory: Path) -> None:
    """Write ``units`` as ``directory/units.arrow`` (Arrow IPC, uncompressed)."""
    units.write_ipc(directory / UNITS_FILE, compression="uncompressed", compat_level=_ARROW)


def write_unit_shards(shards: Iterable[pl.DataFrame], directory: Path) -> int:
    """Write the shards' units, in order, as one ``units.arrow``, one shard in memory at a time.

    Returns:
        The rows written.

    Raises:
        ValueError: a shard whose columns or types differ from the first's (naming it).
    """
    import pyarrow as pa

    writer = schema = None
    rows = 0
    try:
        with pa.OSFile(str(directory / UNITS_FILE), "wb") as sink:
            for i, frame in enumerate(shards):
                table = frame.to_arrow(compat_level=_ARROW)
                if writer is None:
                    schema = table.schema
                    writer = pa.ipc.new_file(sink, schema)
                elif table.schema != schema:
                    raise ValueError(
                        f"shard {i}: its units' columns {table.schema.names} or their types "
                        "differ from shard 0's"
                    )
                writer.write_table(table)
                rows += table.num_rows
            if writer is None:
                writer = pa.ipc.new_file(sink, pl.DataFrame().to_arrow().schema)
            writer.close()
    except BaseException:
        (directory / UNITS_FILE).unlink(missing_ok=True)
        raise
    return rows


class UnitTable:
    """The units of an index, row i <-> vector i: in memory, or memory-mapped from its file.

    Args:
        frame: the units in memory (an index being built, or read from ``units.parquet``).
        table: the units mapped from ``units.arrow`` (a ``pyarrow.Table`` over the mapping).

    Example:
        >>> t = UnitTable(frame=pl.DataFrame({"unit_id": ["a", "b", "c"]}))
        >>> t.height, t.rows(np.array([2, 0]))["unit_id"].to_list()
        (3, ['c', 'a'])
    """

    def __init__(self, *, frame: pl.DataFrame | None = None, table: Any = None) -> None:
        if (frame is None) == (table is None):
            raise ValueError("a UnitTable holds a frame or a mapped table, one of the two")
        self._frame = frame
        self._table = table
        self._height = frame.height if frame is not None else int(table.num_rows)

    @classmethod
    def open(cls, directory: Path) -> UnitTable:
        """The units of the index in ``directory``: mapped from ``units.arrow``, else read whole.

        Raises:
            FileNotFoundError: neither file is there.
        """
        path = directory / UNITS_FILE
        if path.is_file():
            import pyarrow as pa

            reader = pa.ipc.open_file(pa.memory_map(str(path), "r"))
            return cls(table=reader.read_all())  # zero-copy: buffers point into the mapping
        legacy = directory / LEGACY_UNITS_FILE
        if not legacy.is_file():
            raise FileNotFoundError(f"no {UNITS_FILE} in {directory}")
        return cls(frame=pl.read_parquet(legacy, glob=False))

    @property
    def height(self) -> int:
        """Rows."""
        return self._height

    @property
    def mapped(self) -> bool:
        """Whether the rows are read from the mapped file (not held in memory)."""
        return self._frame is None

    def frame(self) -> pl.DataFrame:
        """Every row as one frame (made from the mapping on the first call, then kept)."""
        if self._frame is None:
            frame = pl.from_arrow(self._table)
            if not isinstance(frame, pl.DataFrame):  # pragma: no cover - a Table gives a frame
                raise TypeError("the units file does not hold a table")
            self._frame = frame
        return self._frame

    def rows(
        self, rows: np.ndarray | Sequence[int], columns: Sequence[str] | None = None
    ) -> pl.DataFrame:
        """These rows, in this order (only they are read from a mapped file).

        Raises:
            IndexError: a row outside ``[0, height)``.
        """
        idx = np.asarray(rows, dtype=np.int64)
        if idx.size and (idx.min() < 0 or idx.max() >= self._height):
            bad = int(idx[(idx < 0) | (idx >= self._height)][0])
            raise IndexError(f"row {bad} is outside the {self._height} units")
        if self._frame is not None:
            frame = self._frame if columns is None else self._frame.select(columns)
            return frame[idx]
        table = self._table if columns is None else self._table.select(list(columns))
        out = pl.from_arrow(table.take(idx))
        if not isinstance(out, pl.DataFrame):  # pragma: no cover
            raise TypeError("the units file does not hold a table")
        return out
