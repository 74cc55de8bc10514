"""The registry of transcript formats and :func:`load`, which walks paths and detects formats.

A format is one module with one reader class decorated by :func:`register_format`; the
``format=`` choices and the error that lists them are built from this registry, so they cannot
drift from what exists.
"""

from __future__ import annotations

import functools
import gc
import io
import multiprocessing
import os
import tempfile
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Protocol, TypeVar, runtime_checkable

import polars as pl

from convlab.errors import LoadError
from convlab.files import Found, check, open_regular, walk
from convlab.loaders.base import CorpusBuilder
from convlab.loaders.corpus import (
    Corpus,
    corpus_from_frames,
    corpus_from_ipc,
    merge_parts,
    part_frames,
    titled_by_first_prompt,
)
from convlab.registry import Registry

__all__ = [
    "FORMATS",
    "NamedEngine",
    "PartLoader",
    "Reader",
    "detect",
    "load",
    "load_files",
    "register_format",
]

SNIFF_BYTES = 64 * 1024
PARALLEL_MIN_BYTES = 64 * 1024 * 1024
"""Below this many bytes of input, ``workers=None`` loads in this process (start-up would cost
more than it saves)."""


@runtime_checkable
class Reader(Protocol):
    """A transcript format.

    Attributes:
        name: the format's key in :data:`FORMATS` (``"claude_code"``, ``"codex"``, ...).
    """

    name: str

    def sniff(self, path: Path, head: bytes) -> bool:
        """Whether ``path`` is in this format, judged from its name and first bytes ``head``."""
        ...

    def companion(self, path: Path) -> bool:
        """Whether ``path`` is a side file this format reads with another (e.g. metadata.json).

        Companion files are listed in the report but not read on their own and not skipped.
        """
        ...

    def read(self, path: Path, builder: CorpusBuilder) -> int:
        """Read one file into ``builder``; return the number of lines read.

        Record-level problems go through ``builder.skip`` (which raises in strict mode);
        a file that cannot be read at all raises :class:`LoadError` (which :func:`load` turns
        into a skip in lenient mode). Files are opened with
        :func:`convlab.files.open_regular` and whole-file JSON parsed with
        :func:`convlab.loaders.files.load_json_file`; a record holding JSON nested too deeply
        (:data:`convlab.loaders.jsontext.TOO_DEEP`) is skipped with its line.
        """
        ...


class NamedEngine(Protocol):
    """Where work runs (a :class:`convlab.engines.Engine`), as the loaders see it: its name."""

    name: str


@runtime_checkable
class PartLoader(NamedEngine, Protocol):
    """An engine that also reads chunks of files where it runs (``load(..., engine=...)``).

    The loaders own this contract and pass the engine their worker body, so the engines need
    nothing of the loaders and the loaders nothing of the engines:
    :class:`convlab.engines.ray.RayEngine` has these two methods.
    """

    def load_slots(self) -> int:
        """How many chunks it reads at once (its CPUs): ``workers=None`` makes 4 chunks each."""
        ...

    def load_parts(
        self,
        chunks: Sequence[Sequence[Found]],
        read: Callable[[Sequence[Found]], dict[str, bytes]],
    ) -> list[dict[str, bytes]]:
        """Each chunk of files read by ``read`` where the engine runs it, in chunk order.

        ``read`` returns a chunk's frames as Arrow IPC bytes by name; a strict-mode
        :class:`convlab.errors.LoadError` reaches the caller as it is.
        """
        ...


FORMATS: Registry[Reader] = Registry("format")
"""The transcript formats by name; detection tries them by priority (:meth:`Registry.in_order`)."""

R = TypeVar("R")
F = TypeVar("F")


def register_format(*, priority: int) -> Callable[[Callable[[], R]], Callable[[], R]]:
    """Class decorator: instantiate the reader and register it under its ``name``.

    ``priority`` is where detection tries it (lower first, then by name): a format whose files
    another's sniffer might also accept goes first. The shipped readers are 10 apart (amplifier
    10 ... sharegpt 90), so a new one fits between any two. ``ValueError``: a name taken.
    """

    def deco(cls: Callable[[], R]) -> Callable[[], R]:
        reader = cls()
        if not isinstance(reader, Reader):
            raise TypeError(f"{cls!r} does not implement the Reader protocol")
        FORMATS.add(reader.name, reader, priority=priority)
        return cls

    return deco


def detect(path: str | Path) -> str | None:
    """The name of the format ``path`` is in, judged from its content, or ``None``.

    Raises:
        LoadError: ``path`` is not a readable regular file (a FIFO or a device is not opened).
    """
    p = Path(path)
    with open_regular(p) as fh:
        head = fh.read(SNIFF_BYTES)
    for name, reader in FORMATS.in_order():
        if reader.sniff(p, head):
            return name
    return None


def load(
    path: str | Path,
    format: str | None = None,
    strict: bool = False,
    *,
    workers: int | None = None,
    engine: NamedEngine | None = None,
) -> Corpus:
    """Load transcripts from a file or a directory tree into a :class:`Corpus`.

    Args:
        path: a transcript file, or a directory walked recursively (e.g. ``~/.claude/projects``,
            an Amplifier ``projects`` tree, a Codex ``sessions`` tree, a LoCoMo json).
        format: force one format (a key of :data:`FORMATS`) instead of detecting it per file.
        strict: raise :class:`LoadError` naming file and line at the first bad record or file;
            by default bad records and files not read (unrecognised, unreadable, FIFOs,
            devices, dangling or looping symlinks: see :func:`convlab.files.walk`) are
            skipped and listed in ``corpus.report.skipped``.
        workers: processes that read files in parallel (see :func:`load_files`).
        engine: where the parallel reading runs (see :func:`load_files`); ``None`` or the
            ``local`` engine is this machine's process pool.

    Returns:
        The corpus with its conversations, messages, blocks and load report.

    Raises:
        FileNotFoundError: ``path`` does not exist.
        LoadError: in strict mode, the first bad record or file.

    Example:
        >>> corpus = load("data/sample")  # doctest: +SKIP
        >>> corpus.messages.filter(pl.col("is_real_user")).height  # doctest: +SKIP
    """
    import convlab.loaders  # noqa: F401 - registers the formats

    root = Path(path).expanduser()
    if not os.path.lexists(root):
        raise FileNotFoundError(f"no such file or directory: {root}")
    return _load_found(list(walk(root)), format, strict, workers, engine)


def load_files(
    files: Sequence[str | Path],
    format: str | None = None,
    strict: bool = False,
    *,
    workers: int | None = None,
    engine: NamedEngine | None = None,
) -> Corpus:
    """Load an explicit list of files into one corpus (see :func:`load` for the arguments).

    Files of one conversation (a session copied into two files on resume, say) merge into one
    conversation, as they do when a directory is loaded.

    ``workers``: with more than one, consecutive chunks of the file list are read in that many
    processes and merged in file order (:func:`convlab.loaders.corpus.merge_parts`): the corpus is
    the same as a serial load's, a strict-mode :class:`LoadError` reaches the caller as it is.
    ``None`` uses every CPU when the files hold at least :data:`PARALLEL_MIN_BYTES`, else one.

    ``engine``: a :class:`PartLoader` such as ``convlab.engines.get_engine("ray")`` (a
    :class:`convlab.engines.ray.RayEngine`) reads the same chunks as Ray tasks
    (:meth:`~convlab.engines.ray.RayEngine.load_parts`) and merges them the same way, so the
    corpus is the same again; ``workers=None`` then makes chunks for every CPU of the Ray
    cluster, whatever the input's size. The engine is left running for its caller, who made it.

    A path that is not a readable regular file (see :func:`convlab.files.check`) is
    never opened: it is skipped and reported (strict mode: a :class:`LoadError` naming it).
    """
    found = [Found(Path(f), check(f)) for f in files]
    return _load_found(found, format, strict, workers, engine)


def _load_found(
    found: Sequence[Found],
    format: str | None,
    strict: bool,
    workers: int | None,
    engine: NamedEngine | None = None,
) -> Corpus:
    """Read the files found, reporting those with a problem; see :func:`load_files`.

    Untitled chats are titled by their first prompt once all files are read
    (:func:`~convlab.loaders.corpus.titled_by_first_prompt`): a title in a later file of the
    same conversation wins over its prompt.
    """
    return titled_by_first_prompt(_read_found(found, format, strict, workers, engine))


def _read_found(
    found: Sequence[Found],
    format: str | None,
    strict: bool,
    workers: int | None,
    engine: NamedEngine | None = None,
) -> Corpus:
    """The files found, read serially, by worker processes or on ``engine``."""
    import convlab.loaders  # noqa: F401 - registers the formats

    if format is not None:
        FORMATS.get(format)  # an unknown format fails here (naming the valid ones), not in a worker
    paths = list(found)
    sizes = _sizes(paths)
    if isinstance(engine, str):  # the loaders do not import the engines to look a name up
        raise ValueError(
            f"engine={engine!r}: pass an engine, convlab.engines.get_engine({engine!r})"
        )
    if engine is not None and engine.name != "local":
        return _load_on_engine(paths, sizes, format, strict, workers, engine)
    n = _workers(sizes, workers)
    if n > 1:
        chunks = _chunks(paths, sizes, 4 * n)
        k = len(chunks)
        ctx = multiprocessing.get_context("spawn")  # no fork of polars' or torch's threads
        with (
            tempfile.TemporaryDirectory(prefix="convlab-load-") as tmp,
            ProcessPoolExecutor(max_workers=n, mp_context=ctx) as pool,
        ):
            outs = [os.path.join(tmp, f"part{i}") for i in range(k)]
            parts = [
                _read_part(out)
                for out in pool.map(_load_part, chunks, [format] * k, [strict] * k, outs)
            ]
        return merge_parts(parts)
    return _load_serial(paths, format, strict)


def _load_on_engine(
    paths: Sequence[Found],
    sizes: Sequence[int],
    format: str | None,
    strict: bool,
    workers: int | None,
    engine: NamedEngine,
) -> Corpus:
    """The chunks of :func:`_chunks` read by ``engine.load_parts`` and merged in file order."""
    if not isinstance(engine, PartLoader):
        raise ValueError(f"the {engine.name!r} engine cannot load transcripts")
    n = _workers(sizes, engine.load_slots() if workers is None else workers)
    read = functools.partial(load_chunk_ipc, format=format, strict=strict)
    blobs = engine.load_parts(_chunks(paths, sizes, 4 * n), read)
    return merge_parts([corpus_from_ipc(b) for b in blobs])


def load_chunk_ipc(
    files: Sequence[Found | Path], format: str | None, strict: bool
) -> dict[str, bytes]:
    """Read ``files`` in this process; the corpus's frames as Arrow IPC bytes, by name.

    What a remote task (a Ray task) returns: bytes cross any transport and read back into the
    very frames (dtypes included) that :func:`_load_part`'s Arrow files give.
    """
    out = {}
    for name, frame in part_frames(_load_serial(files, format, strict)).items():
        buf = io.BytesIO()
        frame.write_ipc(buf)
        out[name] = buf.getvalue()
    return out


def _as_found(file: Found | str | Path) -> Found:
    """A walked file as it is; a bare path checked (see :func:`load_files`)."""
    return file if isinstance(file, Found) else Found(Path(file), check(file))


def _sizes(found: Sequence[Found | Path]) -> list[int]:
    """Bytes of each file (1 for an empty one or one not read: the reader reports it)."""
    out = []
    for path, problem in map(_as_found, found):
        try:
            out.append(1 if problem else max(path.stat().st_size, 1))
        except OSError:
            out.append(1)
    return out


def _workers(sizes: Sequence[int], workers: int | None) -> int:
    if workers is not None:
        if workers < 1:
            raise ValueError("workers must be at least 1")
        return max(1, min(workers, len(sizes)))
    if len(sizes) < 2 or sum(sizes) < PARALLEL_MIN_BYTES:
        return 1
    return min(os.cpu_count() or 1, len(sizes))


def _chunks(paths: Sequence[F], sizes: Sequence[int], n: int) -> list[list[F]]:
    """Consecutive runs of ``paths`` of about ``1/n`` of the bytes each (about ``n`` runs)."""
    target = sum(sizes) / max(1, min(n, len(paths)))
    chunks: list[list[F]] = [[]]
    acc = 0.0
    for p, size in zip(paths, sizes, strict=True):
        if chunks[-1] and acc + size > target * 1.05:
            chunks.append([])
            acc = 0.0
        chunks[-1].append(p)
        acc += size
    return chunks


def _load_serial(files: Sequence[Found | Path], format: str | None, strict: bool) -> Corpus:
    """Read ``files`` in this process, in order, into one corpus."""
    import convlab.loaders  # noqa: F401 - registers the formats (a fresh worker process)

    forced = FORMATS.get(format) if format is not None else None
    builder = CorpusBuilder(strict=strict)
    # Parsing makes millions of short-lived dicts and no reference cycles worth collecting:
    # the cyclic GC would only rescan the growing column lists (eval/bench_load.py: 91k -> 98k
    # messages/s at a million messages).
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        for file, problem in map(_as_found, files):
            if problem is not None:
                builder.skip(file, 0, problem)
                builder.file_done(file, "unknown", 0)
            else:
                _load_file(file, forced, builder)
    finally:
        if was_enabled:
            gc.enable()
    return builder.build()


def _load_part(files: Sequence[Found | Path], format: str | None, strict: bool, out: str) -> str:
    """In a worker: read ``files`` and leave the corpus as Arrow IPC files named ``out.*``.

    Arrow files are written and read back several times faster than the frames pickle through
    the pool's pipe (a 125,000-message chunk of ``eval/bench_load.py``'s corpus: 0.1 s to write
    and read, 0.25-0.3 s to pickle and unpickle before the pipe), and the main process is not
    kept busy unpickling while the workers read.
    """
    for name, frame in part_frames(_load_serial(files, format, strict)).items():
        frame.write_ipc(f"{out}.{name}.arrow")
    return out


def _read_part(out: str) -> Corpus:
    """The corpus :func:`_load_part` wrote under ``out``, read into memory (the files can go)."""
    names = ("conversations", "messages", "blocks", "files", "skipped", "queries")
    return corpus_from_frames(
        {
            name: pl.read_ipc(Path(f"{out}.{name}.arrow").read_bytes())
            for name in names
            if Path(f"{out}.{name}.arrow").exists()
        }
    )


def _load_file(file: Path, forced: Reader | None, builder: CorpusBuilder) -> None:
    companion = next((r for _, r in FORMATS.in_order() if r.companion(file)), None)
    if companion is not None:
        builder.file_done(file, companion.name, 0)
        return
    try:
        size = file.stat().st_size
    except OSError as exc:
        builder.skip(file, 0, f"cannot read file ({exc.strerror})")
        builder.file_done(file, "unknown", 0)
        return
    if size == 0:
        builder.skip(file, 0, "empty file")
        builder.file_done(file, "unknown", 0)
        return
    try:
        name = forced.name if forced is not None else detect(file)
    except LoadError as exc:  # replaced by a FIFO or made unreadable since it was walked
        builder.skip(exc.path, exc.line, exc.reason)
        builder.file_done(file, "unknown", 0)
        return
    if name is None:
        builder.skip(file, 0, "unrecognised format")
        builder.file_done(file, "unknown", 0)
        return
    try:
        lines = FORMATS[name].read(file, builder)
    except LoadError as exc:  # the file as a whole (or its side file) could not be read
        if builder.strict:
            raise
        builder.skip(exc.path, exc.line, exc.reason)
        lines = 0
    except OSError as exc:  # e.g. an I/O error, or a file removed while it was read
        builder.skip(file, 0, f"cannot read file ({exc.strerror or exc})")
        lines = 0
    except (ValueError, KeyError, TypeError, AttributeError, IndexError, RecursionError) as exc:
        # A reader bug or a file shape nobody foresaw: never let it escape as anything but a
        # LoadError naming the file (strict) or a counted skip (lenient).
        builder.skip(file, 0, f"{type(exc).__name__}: {exc}"[:200])
        lines = 0
    builder.file_done(file, name, lines)
