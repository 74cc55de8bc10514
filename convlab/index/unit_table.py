"""A vector index's units on disk: one Arrow IPC file of fixed-size batches, read batch by batch.

An index of 10M units serves from its FAISS file (0.57 GB at 10M, ``ivfpq``) and float16 vectors
on disk; reading its units frame whole made +1.7 GB more (README, 2026-11-24). So an index keeps
its units in ``units.arrow`` (Arrow IPC file format, zstd per buffer) written in batches of
:data:`BATCH_ROWS` rows (the last may be shorter): row ``r`` is in batch ``r // BATCH_ROWS``.
Opening reads the footer and the last batch; a search reads only the batches of its hits
(:meth:`UnitTable.rows`), with plain reads, not a memory map, so the pages read do not stay in
the process's resident set; the whole frame is made only when a caller asks for it
(:meth:`UnitTable.frame`: the searches over many rows at once, the notebooks). Each batch read
is validated whole (offsets, lengths, UTF-8) before any of it is used, so a damaged file raises
``ValueError`` or ``OSError``, never a crash.

An index written before ``units.arrow`` (its units in ``units.parquet``) is refused with one line
naming the repair: ``convlab index --rebuild``.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

__all__ = [
    "BATCH_ROWS",
    "UNITS_FILE",
    "UnitTable",
    "write_unit_shards",
    "write_units",
]

UNITS_FILE = "units.arrow"
_OLD_UNITS_FILE = "units.parquet"
BATCH_ROWS = 512
"""Rows per batch of ``units.arrow``: what one hit costs to read (its whole batch)."""
_ARROW = pl.CompatLevel.oldest()
"""Plain Arrow types (``large_string``, not ``string_view``): pyarrow's ``take`` reads them."""
_KEY = b"convlab_batch_rows"


def write_units(units: pl.DataFrame, directory: Path) -> None:
    """Write ``units`` as ``directory/units.arrow``."""
    write_unit_shards([units], directory)


def write_unit_shards(shards: Iterable[pl.DataFrame], directory: Path) -> int:
    """Write the shards' units, in order, as one ``units.arrow``, one shard in memory at a time.

    Returns:
        The rows written.

    Raises:
        ValueError: a shard whose columns or types differ from the first's (naming it).
    """
    import pyarrow as pa

    path = directory / UNITS_FILE
    writer: Any = None
    schema: Any = None
    pending: Any = None
    rows = 0
    try:
        with pa.OSFile(str(path), "wb") as sink:
            for i, frame in enumerate(shards):
                table = frame.to_arrow(compat_level=_ARROW)
                if writer is None:
                    schema = table.schema.with_metadata({_KEY: str(BATCH_ROWS).encode()})
                    writer = pa.ipc.new_file(sink, schema, options=_options())
                elif not table.schema.equals(schema.remove_metadata()):
                    raise ValueError(
                        f"shard {i}: its units' columns {table.schema.names} or their types "
                        "differ from shard 0's"
                    )
                table = table.replace_schema_metadata(schema.metadata)
                # one chunk, so that every batch written holds BATCH_ROWS rows
                pending = table if pending is None else pa.concat_tables([pending, table])
                pending = pending.combine_chunks()
                full = pending.num_rows - pending.num_rows % BATCH_ROWS
                if full:
                    writer.write_table(pending.slice(0, full), max_chunksize=BATCH_ROWS)
                    pending = pending.slice(full)
                rows += table.num_rows
            if writer is None:
                schema = (
                    pl.DataFrame().to_arrow().schema.with_metadata({_KEY: str(BATCH_ROWS).encode()})
                )
                writer = pa.ipc.new_file(sink, schema, options=_options())
            if pending is not None and pending.num_rows:
                writer.write_table(pending.combine_chunks(), max_chunksize=BATCH_ROWS)
            writer.close()
    except BaseException:
        path.unlink(missing_ok=True)
        raise
    return rows


class UnitTable:
    """The units of an index, row i <-> vector i: in memory, or read from its file on demand.

    Args:
        frame: the units in memory (an index being built).
        reader: an open ``pyarrow`` IPC file reader of ``units.arrow``.

    Example:
        >>> t = UnitTable(frame=pl.DataFrame({"unit_id": ["a", "b", "c"]}))
        >>> t.height, t.rows(np.array([2, 0]))["unit_id"].to_list()
        (3, ['c', 'a'])
    """

    def __init__(self, *, frame: pl.DataFrame | None = None, reader: Any = None) -> None:
        if (frame is None) == (reader is None):
            raise ValueError("a UnitTable holds a frame or a file reader, one of the two")
        self._frame = frame
        self._reader = reader
        if frame is not None:
            self._height = frame.height
            self._batch = 0
        else:
            meta = reader.schema.metadata or {}
            self._batch = int(meta.get(_KEY, b"0"))
            n = reader.num_record_batches
            last = _batch(reader, n - 1).num_rows if n else 0
            self._height = (n - 1) * self._batch + last if n else 0

    @classmethod
    def open(cls, directory: Path) -> UnitTable:
        """The units of the index in ``directory``, read from its ``units.arrow`` on demand.

        Raises:
            FileNotFoundError: no ``units.arrow`` there.
            ValueError: a ``units.arrow`` not written in batches of a known size, or an index
                written before ``units.arrow`` (run ``convlab index --rebuild``).
        """
        path = directory / UNITS_FILE
        if not path.is_file():
            if (directory / _OLD_UNITS_FILE).is_file():
                raise ValueError(
                    f"{directory}: an index written by an older convlab ({_OLD_UNITS_FILE}, not "
                    f"{UNITS_FILE}); run `convlab index --rebuild`"
                )
            raise FileNotFoundError(f"no {UNITS_FILE} in {directory}")
        import pyarrow as pa

        reader = pa.ipc.open_file(pa.OSFile(str(path), "rb"))
        if _KEY not in (reader.schema.metadata or {}):
            raise ValueError(f"{path}: not written by convlab (no batch size recorded)")
        return cls(reader=reader)

    @property
    def height(self) -> int:
        """Rows."""
        return self._height

    @property
    def on_disk(self) -> bool:
        """Whether rows are read from the file on demand (not held in memory)."""
        return self._frame is None

    def frame(self) -> pl.DataFrame:
        """Every row as one frame (read on the first call, then kept)."""
        if self._frame is None:
            table = self._reader.read_all()
            table.validate(full=True)
            self._frame = _frame(table.replace_schema_metadata(None))
        return self._frame

    def rows(
        self, rows: np.ndarray | Sequence[int], columns: Sequence[str] | None = None
    ) -> pl.DataFrame:
        """These rows, in this order (from a file, only their batches are read).

        Raises:
            IndexError: a row outside ``[0, height)``.
        """
        idx = np.asarray(rows, dtype=np.int64).reshape(-1)
        if idx.size and (idx.min() < 0 or idx.max() >= self._height):
            bad = int(idx[(idx < 0) | (idx >= self._height)][0])
            raise IndexError(f"row {bad} is outside the {self._height} units")
        if self._frame is not None:
            frame = self._frame if columns is None else self._frame.select(columns)
            return frame[idx]
        import pyarrow as pa

        names = list(columns) if columns is not None else self._reader.schema.names
        if not idx.size:
            empty = self._reader.schema.empty_table().select(names)
            return _frame(empty.replace_schema_metadata(None))
        order = np.argsort(idx, kind="stable")
        sorted_idx = idx[order]
        batches = sorted_idx // self._batch
        parts = []
        for b in np.unique(batches):
            batch = _batch(self._reader, int(b))
            if b < self._reader.num_record_batches - 1 and batch.num_rows != self._batch:
                raise ValueError(
                    f"{UNITS_FILE}: batch {b} holds {batch.num_rows} rows, not {self._batch}"
                )
            batch = batch.select(names)
            local = sorted_idx[batches == b] - b * self._batch
            parts.append(batch.take(pa.array(local)))
        table = pa.Table.from_batches(parts).replace_schema_metadata(None)
        back = np.empty_like(order)
        back[order] = np.arange(order.size)
        return _frame(table.take(pa.array(back)))


def _batch(reader: Any, b: int) -> Any:
    """Batch ``b`` of ``reader``, validated whole before use.

    Raises:
        ValueError: the batch is not valid Arrow (pyarrow's ``ArrowInvalid``).
        OSError: it cannot be read or decompressed.
    """
    batch = reader.get_batch(b)
    batch.validate(full=True)
    return batch


def _options() -> Any:
    """Buffers compressed with zstd, a batch decompressed when read (sample: 21 KB, not 116)."""
    import pyarrow as pa

    return pa.ipc.IpcWriteOptions(compression="zstd")


def _frame(table: Any) -> pl.DataFrame:
    frame = pl.from_arrow(table)
    if not isinstance(frame, pl.DataFrame):  # pragma: no cover - a Table gives a frame
        raise TypeError("the units file does not hold a table")
    return frame
