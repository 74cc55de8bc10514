"""Rows of an ``.npy`` matrix on disk, read with ``pread``: nothing of the file is mapped.

An ``ivfpq`` index re-scores each query's candidates from its float16 vectors on disk. Read
through a memory map, every page a query touches (and the neighbours the kernel maps around it)
stays in the process's resident set: after 1,000 queries on a 1M index the mapped vectors made
0.92 GB of file-backed RSS (eval/bench_ivfpq.py, 2026-11-26). Read with ``pread``, the rows come
through the page cache into a small array per query, and the resident set stays what the
process itself allocates.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["DiskRows"]


class DiskRows:
    """A 2-D ``.npy`` array whose rows are read on demand (``rows_of[int_array]``).

    Example:
        >>> import tempfile; p = Path(tempfile.mkdtemp()) / "v.npy"
        >>> np.save(p, np.arange(6, dtype=np.float16).reshape(3, 2))
        >>> DiskRows(p)[np.array([2, 0])].tolist()
        [[4.0, 5.0], [0.0, 1.0]]
    """

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        with self.path.open("rb") as fh:
            major, _ = np.lib.format.read_magic(fh)
            read = (
                np.lib.format.read_array_header_1_0
                if major == 1
                else np.lib.format.read_array_header_2_0
            )
            shape, fortran, dtype = read(fh)
            self._offset = fh.tell()
        if len(shape) != 2 or fortran or dtype.hasobject:
            raise ValueError(f"{self.path}: not a C-ordered 2-D numeric array")
        self.shape: tuple[int, int] = (int(shape[0]), int(shape[1]))
        self.dtype = np.dtype(dtype)
        self.ndim = 2
        self._row = self.shape[1] * self.dtype.itemsize
        expected = self._offset + self.shape[0] * self._row
        if self.path.stat().st_size < expected:
            raise ValueError(f"{self.path}: truncated ({self.path.stat().st_size} < {expected})")
        self._fd = os.open(self.path, os.O_RDONLY)

    def __len__(self) -> int:
        return self.shape[0]

    def __del__(self) -> None:
        fd = getattr(self, "_fd", None)
        if fd is not None:
            os.close(fd)

    def _read(self, first: int, count: int) -> np.ndarray:
        data = os.pread(self._fd, count * self._row, self._offset + first * self._row)
        if len(data) != count * self._row:
            raise OSError(f"{self.path}: short read at row {first}")
        return np.frombuffer(data, dtype=self.dtype).reshape(count, self.shape[1])

    def __getitem__(self, rows: Any) -> np.ndarray:
        """The rows of an integer array (runs of consecutive rows are read in one call)."""
        idx = np.asarray(rows, dtype=np.int64).reshape(-1)
        if idx.size and (idx.min() < 0 or idx.max() >= self.shape[0]):
            raise IndexError(f"{self.path}: a row outside [0, {self.shape[0]})")
        out = np.empty((idx.size, self.shape[1]), dtype=self.dtype)
        if idx.size == 0:
            return out
        # runs of consecutive rows: one read each
        breaks = np.flatnonzero(np.diff(idx) != 1) + 1
        for start, stop in zip(
            np.concatenate([[0], breaks]), np.concatenate([breaks, [idx.size]]), strict=True
        ):
            out[start:stop] = self._read(int(idx[start]), int(stop - start))
        return out

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        """Every row (what saving the index writes)."""
        whole = self._read(0, self.shape[0]) if self.shape[0] else np.empty(self.shape, self.dtype)
        return whole if dtype is None else whole.astype(dtype)
