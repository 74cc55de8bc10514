"""The redaction benchmark as a study: one redactor's figures, as a standard run folder.

:func:`run` (a :class:`RedactBench`) gathers every figure of one redactor
(:func:`convlab.studies.redact_bench.bench`: recall and false positives on each corpus, speed on
real transcripts, changes in real code), or Kingfisher's on the trial corpora
(:func:`convlab.studies.redact_bench.kingfisher_scores`), and writes them whole as
``redact_bench.json`` (and as the JSON file ``figures`` when given), with the contract's
``config.json`` (what was read: the corpus folder with a fingerprint of its files, the
transcripts, the code), ``metrics.json`` (per corpus: secrets, recall, look-alikes, false
positives; the speed), ``corpora.parquet`` (the same per corpus) and ``report.md`` (the table):
:mod:`convlab.studies.contract`.

Example:
    >>> figures = {"redactor": "r", "labelled": {"secrets": 4, "redacted": 3, "recall": 0.75,
    ...            "right_kind": 2, "lookalikes": 5, "false_positives": 1}}
    >>> corpora(figures).select("corpus", "recall", "false_positives").row(0)
    ('labelled', 0.75, 1)
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import polars as pl

from convlab.atomic import write_text_atomic
from convlab.studies.contract import STUDIES, Study, StudyResult, write_study
from convlab.studies.redact_bench import bench, kingfisher_scores

__all__ = ["RedactBench", "corpora", "markdown", "run"]

COLUMNS = ("secrets", "redacted", "recall", "right_kind", "lookalikes", "false_positives")


@dataclass(frozen=True, slots=True, kw_only=True)
class RedactBench:
    """One redactor measured (:func:`run`; the arguments of :func:`~.redact_bench.bench`).

    Attributes:
        corpus: the folder of the labelled corpora (``tests/fixtures/secrets``).
        redactor: ``convlab``, ``detect-secrets``, ``detect-secrets-lines`` or ``file:PATH``.
        texts: transcripts whose texts time the redactor (none: no throughput).
        min_seconds: the least time the throughput is measured over.
        code: a tree of code to look for false positives in (none: no ``code``).
        code_megabytes: how much of it.
        kingfisher: a Kingfisher binary: score it on the trial corpora instead.
    """

    study: ClassVar[str] = "redact-bench"
    corpus: Path
    redactor: str = "convlab"
    texts: tuple[Path, ...] = ()
    min_seconds: float = 2.0
    code: Path | None = None
    code_megabytes: float = 40.0
    kingfisher: Path | None = None


def corpora(figures: dict[str, Any]) -> pl.DataFrame:
    """One row per corpus scored in ``figures``: ``corpus`` and :data:`COLUMNS`."""
    rows = [
        {"corpus": name, **{c: scores.get(c) for c in COLUMNS}}
        for name, scores in figures.items()
        if isinstance(scores, dict) and "recall" in scores
    ]
    schema = {"corpus": pl.String, **dict.fromkeys(COLUMNS, pl.Int64), "recall": pl.Float64}
    return pl.DataFrame(rows, schema=schema)


def markdown(figures: dict[str, Any], table: pl.DataFrame) -> str:
    """``report.md``: the redactor, each corpus's recall and false positives, speed, code."""
    lines = [f"# Redaction: `{figures['redactor']}`", ""]
    if "corpus" in figures:
        lines += [f"Corpora: `{figures['corpus']}`.", ""]
    lines += [
        "| corpus | secrets | redacted | recall | right kind | look-alikes | false positives |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in table.iter_rows(named=True):
        lines.append(
            f"| {r['corpus']} | {r['secrets']} | {r['redacted']} | {r['recall']:.3f} | "
            f"{r['right_kind']} | {r['lookalikes']} | {r['false_positives']} |"
        )
    if "throughput" in figures:
        t = figures["throughput"]
        lines += ["", f"Speed: {t['megabytes_per_second']:.2f} MB/s, "
                      f"{t['texts_per_second']:.0f} texts/s over {t['texts']} texts."]  # fmt: skip
    if "code" in figures:
        c = figures["code"]
        lines += ["", f"Code: {c['files_changed']} of {c['files']} files changed."]
    return "\n".join(lines) + "\n"


def _fingerprint(folder: Path) -> str:
    """SHA-256 over the folder's JSON files, by name then content; ``?`` for no folder."""
    if not folder.is_dir():
        return "?"
    digest = hashlib.sha256()
    for path in sorted(folder.glob("*.json")):
        digest.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


def run(
    config: RedactBench, out: Path, *, command: Sequence[str] = (), figures: Path | None = None
) -> StudyResult:
    """The redactor's figures as a standard run folder ``out`` (module doc).

    Raises:
        ValueError: an unknown redactor, or no Kingfisher binary where one is named.
        ImportError: a redactor whose package is not installed (detect-secrets).
    """
    if config.kingfisher:
        if not config.kingfisher.is_file():
            raise ValueError(f"no Kingfisher binary at {config.kingfisher}")
        result = kingfisher_scores(config.kingfisher)
    else:
        result = bench(
            config.redactor,
            config.corpus,
            texts=config.texts,
            min_seconds=config.min_seconds,
            code=config.code,
            code_megabytes=config.code_megabytes,
        )
    text = json.dumps(result, indent=1) + "\n"
    if figures is not None:
        figures.parent.mkdir(parents=True, exist_ok=True)
        write_text_atomic(figures, text)
    out.mkdir(parents=True, exist_ok=True)
    write_text_atomic(out / "redact_bench.json", text)
    table = corpora(result)
    metrics: dict[str, Any] = {
        "redactor": result["redactor"],
        "corpora": {r.pop("corpus"): r for r in table.to_dicts()},
    }
    if "throughput" in result:
        metrics["megabytes_per_second"] = result["throughput"]["megabytes_per_second"]
    data = {
        "name": config.corpus.name,
        "fingerprint": _fingerprint(config.corpus),
        "corpus": str(config.corpus),
        "texts": [str(p) for p in config.texts],
        "code": None if config.code is None else str(config.code),
    }
    return write_study(
        out,
        config,
        metrics=metrics,
        report=markdown(result, table),
        frames={"corpora": table},
        command=command,
        data=data,
    )


STUDIES.add("redact-bench", Study("redact-bench", RedactBench, run, "eval.redact_bench"))
