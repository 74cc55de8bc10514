"""Cross-validated fine-tuning: a MiniLM per fold, trained on its training conversations only.

For each fold of :func:`convlab.studies.finetune_pairs.conversation_folds`, the model is
fine-tuned on the training conversations' triples (:func:`training_triples`, checked by
:func:`check_no_leak`), then only the held-out conversations' units are embedded with it and only
their queries searched, by each dense view. The held-out runs of the folds, concatenated, cover
every query once: one run per view (``ft:message``, ``ft:sequential``, ``ft:turn_pair``), as
comparable with the base model's runs as a tuned fusion's held-out run is. Each fold's runs and
costs are written as soon as it ends (``folds/foldK/``), and a fold already written is read back,
not trained again: a killed run resumes. :func:`run` is the study (:mod:`convlab.studies.contract`):
the folds, or an ``eval.run`` folder made with the fine-tuned model (``transfer``), compared with
a base run folder (:func:`convlab.studies.finetune_study.compare_with_base`).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import polars as pl

from convlab.atomic import write_file_atomic
from convlab.defaults import BUDGET
from convlab.embed import CachedEmbedder, HashEmbedder
from convlab.embed.finetune import (
    FineTunedEmbedder,
    FineTuneRecipe,
    Triple,
    ensure_finetuned,
    finetuned_model_id,
)
from convlab.evaluation import folds as cv_folds
from convlab.evaluation.config import EvalConfig
from convlab.evaluation.datasets import LabelledData, load_labelled
from convlab.evaluation.evaluate import evaluate
from convlab.evaluation.provenance import fingerprint
from convlab.evaluation.queries import read_run, write_run
from convlab.evaluation.run_files import read_runs
from convlab.paths import locomo_path
from convlab.protocols import Embedder
from convlab.retrieval import Retrieval
from convlab.studies.contract import (
    STUDIES,
    Study,
    StudyResult,
    data_record,
    source_record,
    write_study,
)
from convlab.studies.finetune_pairs import (
    Fold,
    TrainingSet,
    check_no_leak,
    conversation_folds,
    training_triples,
)
from convlab.studies.finetune_study import FT_PREFIX, compare_with_base
from convlab.systems.system import System

__all__ = [
    "FT_PREFIX",
    "FineTuneCV",
    "Trainer",
    "all_data_model",
    "fold_runs",
    "lexical_pass",
    "run",
]

Trainer = Callable[[str, list[Triple]], Embedder]
"""A fold's training step: its model id and triples in, the encoder of its held-out part out
(default: :func:`convlab.embed.finetune.ensure_finetuned`, the fine-tuned MiniLM)."""
VIEWS = ("message", "sequential", "turn_pair")


@dataclass(frozen=True, slots=True)
class FineTuneCV:
    """What :func:`fold_runs` and :func:`run` do.

    Attributes:
        cache: the embedding cache folder.
        models: the models' cache root (None: :func:`convlab.embed.onnx.cache_root`).
        folds: folds by conversation (the number of conversations: leave one out).
        views: the dense views embedded with each fold's model.
        recipe: how each model is fine-tuned.
        only_folds: run only these folds (None: every one), for a partial run.
        data: the LoCoMo json trained and tested on (None: :func:`convlab.paths.locomo_path`).
        base: the base model's ``eval.run`` folder the ``ft:`` runs are compared with.
        weights: the fixed fusion (base run names), its dense views swapped for ``ft:`` ones.
        transfer: no training: an ``eval.run`` folder made with the fine-tuned model, whose
            dense views are the ``ft:`` runs (needs ``base``).
    """

    study: ClassVar[str] = "finetune-cv"
    cache: Path
    models: Path | None = None
    folds: int = 5
    views: tuple[str, ...] = ("message", "sequential", "turn_pair")
    recipe: FineTuneRecipe = field(default_factory=FineTuneRecipe)
    only_folds: tuple[int, ...] | None = None
    data: Path | None = None
    base: Path | None = None
    weights: Mapping[str, float] = field(default_factory=dict)
    transfer: Path | None = None

    def __post_init__(self) -> None:
        if self.transfer is not None and self.base is None:
            raise ValueError("--transfer needs --base (the base model's run folder)")


def _config() -> EvalConfig:
    return EvalConfig(metrics=("recall@5",), budgets=(BUDGET,), scope="conversation")


def lexical_pass(data: LabelledData) -> tuple[pl.DataFrame, pl.DataFrame]:
    """BM25 over the ``message`` units, each query in its conversation: (hits, units).

    Nothing is embedded but the queries, by the hashing embedder (BM25 never reads them).
    """
    system = System(name="bm25:message", strategy="message", retrieval=Retrieval.LEXICAL)
    ev = evaluate(data, [system], embedder=HashEmbedder(384), config=_config(), progress=False)
    return ev.hits["bm25:message"], ev.units["message"]


def _scored_ids(data: LabelledData) -> list[str]:
    """The queries with a relevant doc, in the data's order (those the grouped CV splits)."""
    scored = data.queries.filter(pl.col("relevant").list.len() > 0)
    return scored["query_id"].to_list()


def _fold_dir(out: Path, fold: Fold) -> Path:
    return out / "folds" / f"fold{fold.index}of{fold.folds}"


def _run_file(folder: Path, view: str) -> Path:
    return folder / f"{FT_PREFIX.rstrip(':')}_{view}.trec"


def _one_fold(
    data: LabelledData,
    fold: Fold,
    training: TrainingSet,
    cv: FineTuneCV,
    out: Path,
    data_fp: str,
    log: Callable[[str], None],
    train: Trainer | None,
) -> dict[str, Any]:
    """Train the fold's model (or find it), embed and search its held-out conversations."""
    model_id = finetuned_model_id(data_fp, cv.recipe, fold.index, fold.folds)
    stats = None
    if train is None:
        _, stats = ensure_finetuned(
            model_id, lambda: training.triples, cv.recipe, cache_dir=cv.models, log=log
        )
        model: Embedder = FineTunedEmbedder(model_id, cache_dir=cv.models)
    else:
        model = train(model_id, training.triples)
    held = data.select(list(fold.test))
    embedder = CachedEmbedder(model, cv.cache)
    systems = [System(name=v, strategy=v) for v in cv.views]
    started = time.perf_counter()
    ev = evaluate(held, systems, embedder=embedder, config=_config(), progress=False)
    seconds = round(time.perf_counter() - started, 1)
    folder = _fold_dir(out, fold)
    folder.mkdir(parents=True, exist_ok=True)
    for view in cv.views:
        write_run(ev.hits[view], _run_file(folder, view), f"{FT_PREFIX}{view}")
    record = {
        "fold": fold.index,
        "folds": fold.folds,
        "train_conversations": list(fold.train),
        "test_conversations": list(fold.test),
        "model_id": model_id,
        "triples": len(training.triples),
        "train_queries": len(set(training.query_ids)),
        "test_queries": held.queries.height,
        "training": None if stats is None else asdict(stats),
        "embed_search_seconds": seconds,
        "embedded": asdict(embedder.stats),
        "units": {v: ev.units[v].height for v in cv.views},
    }
    text = json.dumps(record, indent=1)
    write_file_atomic(folder / "fold.json", lambda t: t.write_text(text))
    return record


def fold_runs(
    data: LabelledData,
    cv: FineTuneCV,
    out: Path,
    *,
    log: Callable[[str], None] | None = None,
    train: Trainer | None = None,
) -> tuple[dict[str, pl.DataFrame], list[dict[str, Any]]]:
    """Every fold's held-out runs, concatenated per view, and each fold's record.

    ``out/folds/foldK/`` holds each fold's runs and ``fold.json``; ``train`` is the training
    step (:data:`Trainer`; default: the fine-tuned MiniLM).

    Returns:
        ``ft:VIEW`` -> ``query_id, doc_id, rank, score`` (the held-out queries of the folds run),
        and one record per fold (conversations, model id, triples, seconds).

    Raises:
        ValueError: a training set that holds anything of its test fold (never expected).
    """
    say = log or (lambda _line: None)
    ids = _scored_ids(data)
    folds = conversation_folds(ids, cv.folds)
    data_fp = fingerprint(data)
    hits, units = lexical_pass(data)
    records: list[dict[str, Any]] = []
    parts: dict[str, list[pl.DataFrame]] = {v: [] for v in cv.views}
    for fold in folds:
        if cv.only_folds is not None and fold.index not in cv.only_folds:
            continue
        folder = _fold_dir(out, fold)
        if (folder / "fold.json").is_file():
            record = json.loads((folder / "fold.json").read_text())
            say(f"fold {fold.index}: already run, read back")
        else:
            training = training_triples(data.queries, units, hits, fold.train)
            check_no_leak(training, fold, data.queries, units)
            say(f"fold {fold.index}: {len(training.triples)} triples, test {','.join(fold.test)}")
            record = _one_fold(data, fold, training, cv, out, data_fp, say, train)
        records.append(record)
        for view in cv.views:
            parts[view].append(read_run(_run_file(folder, view)))
    runs = {
        f"{FT_PREFIX}{v}": pl.concat(p).select("query_id", "doc_id", "rank", "score")
        for v, p in parts.items()
        if p
    }
    return runs, records


def all_data_model(
    data: LabelledData,
    recipe: FineTuneRecipe,
    *,
    models: Path | None = None,
    log: Callable[[str], None] | None = None,
) -> tuple[str, dict[str, Any] | None]:
    """The model fine-tuned on every query of ``data`` (the recipe unchanged), made if missing.

    What runs unchanged on other data (``eval.run --embedder minilm-ft``): no query of that data
    was seen. Returns its model id and its training stats (None when it was in the cache).
    """
    model_id = finetuned_model_id(fingerprint(data), recipe)
    convs: Sequence[str] = data.corpus.conversations["conversation_id"].to_list()

    def triples() -> list[Triple]:
        hits, units = lexical_pass(data)
        return training_triples(data.queries, units, hits, convs).triples

    _, stats = ensure_finetuned(
        model_id,
        triples,
        recipe,
        cache_dir=models,
        log=log,
    )
    return model_id, None if stats is None else asdict(stats)


def run(
    config: FineTuneCV,
    out: Path,
    *,
    command: Sequence[str] = (),
    log: Callable[[str], None] | None = None,
    train: Trainer | None = None,
) -> StudyResult:
    """The study as a standard run folder: the folds' ``ft:`` runs (or ``transfer``'s), compared.

    ``config.json`` keeps each fold's record (``fold_records``), the systems written and the
    folds' ``groups`` (``groups.parquet``: each scored query's conversation and fold);
    ``metrics.json`` the paired comparison with ``base`` (``comparison``, empty without a base)
    and the folds' held-out queries; ``report.md`` the comparison's table.
    """
    started = time.perf_counter()
    data = None
    if config.transfer is not None:
        ft = read_runs(config.transfer)
        runs = {f"{FT_PREFIX}{v}": ft[v] for v in VIEWS if v in ft}
        records: list[dict[str, Any]] = []
    else:
        data = load_labelled(locomo_path(config.data))
        runs, records = fold_runs(data, config, out, log=log, train=train)
    extra: dict[str, Any] = {}
    if data is not None:  # the folds' groups (transfer reads runs made elsewhere: no folds)
        ids = _scored_ids(data)
        frame = cv_folds.fold_frame(ids, cv_folds.groups(ids), config.folds)
        extra["groups"] = cv_folds.save(out, frame)
    names: list[str] = []
    table = "(no --base: the folds' runs only, under folds/)\n"
    family = pl.DataFrame()
    if config.base is not None:
        names, family, table = compare_with_base(out, config.base, runs, config.weights)
    read = [p for p in (config.transfer, config.base) if p is not None]
    return write_study(
        out,
        config,
        metrics={
            "comparison": family.to_dicts(),
            "fold_test_queries": [r["test_queries"] for r in records],
        },
        report=f"# Fine-tuned MiniLM by cross-validation\n\n{table}",
        command=command,
        data=data_record(data) if data is not None else source_record(*read),
        extra={
            "systems": [{"name": n} for n in names],
            "fold_records": records,
            "seconds": round(time.perf_counter() - started, 1),
            **extra,
        },
    )


STUDIES.add("finetune-cv", Study("finetune-cv", FineTuneCV, run, "eval.finetune_cv"))
