"""The contract every study keeps: a typed config in, a standard run folder out.

A study is a frozen dataclass config (its class names the study: ``study: ClassVar[str]``) and
a function ``run(config, out) -> StudyResult`` registered in :data:`STUDIES` as a
:class:`Study`. ``run`` writes the *standard run folder* through :func:`write_study`:

- ``config.json``: ``study`` (the registered name), ``config`` (the typed config as JSON),
  ``command``, ``commit`` and ``commit_state`` (the command line that made it and the source's
  commit: :func:`convlab.evaluation.runfolder.provenance_fields`), ``data`` (what it read: a
  labelled set's name and fingerprint, :func:`data_record`, or the run folder it read and that
  folder's data, :func:`source_record`) and ``versions``
  (:func:`convlab.evaluation.provenance.versions`);
- ``metrics.json``: the headline numbers;
- ``NAME.parquet``: the frames behind them;
- ``report.md``: the page (``python -m eval.pages`` makes a docs page of it, as of an
  ``eval.run`` folder).

A study may write files of its own beside them (``fusion.json``, ``choices.parquet``, ...).
Each file is written whole or not at all (:mod:`convlab.atomic`). A program in ``eval/`` parses
its command line into the config and calls ``run``; nothing else.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Generic, Protocol, TypeVar

from convlab.atomic import write_file_atomic, write_text_atomic
from convlab.evaluation.provenance import fingerprint, versions
from convlab.evaluation.runfolder import provenance_fields
from convlab.files import CONFIG, read_text_regular
from convlab.registry import Registry

if TYPE_CHECKING:
    import polars as pl

    from convlab.evaluation.datasets import LabelledData

__all__ = [
    "STUDIES",
    "Study",
    "StudyConfig",
    "StudyResult",
    "config_record",
    "data_record",
    "source_record",
    "write_study",
]


class StudyConfig(Protocol):
    """A study's typed config: a frozen dataclass whose class names its study."""

    study: ClassVar[str]
    __dataclass_fields__: ClassVar[dict[str, Any]]


C = TypeVar("C", bound=StudyConfig)


@dataclass(frozen=True, slots=True)
class StudyResult:
    """What a study wrote: its run folder, its headline numbers and its page."""

    out: Path
    metrics: Mapping[str, Any]
    report: Path


@dataclass(frozen=True, slots=True)
class Study(Generic[C]):
    """A registered study: its name, its config's type, and the function that runs it.

    Attributes:
        name: the registered name (``config.study``).
        config: the config's class.
        run: ``run(config, out) -> StudyResult``, writing the standard run folder ``out``.
        program: the thin program in ``eval/`` that runs it (``eval.fuse_runs``).
    """

    name: str
    config: type[C]
    run: Callable[[C, Path], StudyResult]
    program: str


STUDIES: Registry[Study[Any]] = Registry("study")
"""Every study, by name (complete once :mod:`convlab.studies.catalog` is imported)."""


def config_record(config: object) -> Any:
    """``config`` as plain JSON data: dataclasses as objects, paths as text, tuples as lists."""
    if dataclasses.is_dataclass(config) and not isinstance(config, type):
        return {f.name: config_record(getattr(config, f.name)) for f in dataclasses.fields(config)}
    if isinstance(config, Mapping):
        return {str(k): config_record(v) for k, v in config.items()}
    if isinstance(config, (list, tuple)):
        return [config_record(v) for v in config]
    if config is None or isinstance(config, (bool, int, float, str)):
        return config
    return str(config)


def data_record(data: LabelledData) -> dict[str, Any]:
    """What a study read, when it read labelled data: name, fingerprint, sizes."""
    return {
        "name": data.name,
        "fingerprint": fingerprint(data),
        "conversations": data.corpus.conversations.height,
        "queries": data.queries.height,
    }


def source_record(*folders: Path) -> dict[str, Any]:
    """What a study read, when it read run folders: each folder with its data and commit.

    ``name`` and ``fingerprint`` are the first folder's data's (``config.json`` of an
    ``eval.run`` folder), ``?`` where it records none; ``sources`` lists every folder.
    """
    sources = []
    for folder in folders:
        path = folder / "config.json"
        record: dict[str, Any] = {}
        if path.is_file():
            loaded = json.loads(read_text_regular(path, limit=CONFIG))
            record = loaded if isinstance(loaded, dict) else {}
        data = record.get("data") or {}
        sources.append(
            {
                "folder": str(folder),
                "name": data.get("name", "?"),
                "fingerprint": data.get("fingerprint", "?"),
                "commit": record.get("commit"),
            }
        )
    first = sources[0] if sources else {"name": "?", "fingerprint": "?"}
    return {"name": first["name"], "fingerprint": first["fingerprint"], "sources": sources}


def write_study(
    out: Path,
    config: StudyConfig,
    *,
    metrics: Mapping[str, Any],
    report: str,
    frames: Mapping[str, pl.DataFrame] | None = None,
    command: Sequence[str] = (),
    data: Mapping[str, Any] | None = None,
    extra: Mapping[str, Any] | None = None,
) -> StudyResult:
    """Write the standard run folder ``out`` (created when missing) of one study.

    Args:
        out: the run folder.
        config: the study's typed config (``config.json``'s ``config``).
        metrics: the headline numbers (``metrics.json``).
        report: the page (``report.md``).
        frames: name -> frame, each written as ``NAME.parquet``.
        command: the command line that made the run (``command``, ``commit``,
            ``commit_state``); none from a library call.
        data: what the study read (:func:`data_record`, :func:`source_record`).
        extra: more of ``config.json`` (``seconds``, ``baseline``, ...).
    """
    out.mkdir(parents=True, exist_ok=True)
    record: dict[str, Any] = {"study": config.study, "config": config_record(config)}
    if command:
        record |= provenance_fields(command)
    record |= {"data": dict(data or {}), "versions": versions(), **(extra or {})}
    write_text_atomic(out / "config.json", json.dumps(record, indent=1, default=str) + "\n")
    write_text_atomic(out / "metrics.json", json.dumps(metrics, indent=1, default=str) + "\n")
    for name, frame in (frames or {}).items():
        write_file_atomic(out / f"{name.removesuffix('.parquet')}.parquet", frame.write_parquet)
    write_text_atomic(out / "report.md", report)
    return StudyResult(out=out, metrics=metrics, report=out / "report.md")
