"""The search confidence, fitted and judged: ``python -m eval.confidence --out DIR``.

Searches every query of LoCoMo, the LongMemEval oracle and the real sessions with the default
system (:func:`convlab.studies.confidence_study.study_frame`), then:

- judges the confidence by grouped cross-validation over the three data sets pooled (each
  fold's model and threshold fitted on the other folds) and reports, per data set, AUROC
  (answerable against no-answer queries) and the default operating point: the share of
  answerable queries kept and of no-answer queries flagged;
- judges transfer: fitted on one data set, applied to each other;
- fits the shipped model on every query and writes it (``--model``, by default the package's
  ``convlab/systems/confidence.json``) with this command in it.

Writes ``DIR/features.parquet`` and ``DIR/features.command``, the command that searched (reused
by ``--features FILE``, which reads ``FILE``'s ``.command`` beside it: no search again),
``DIR/held_out.parquet``, ``DIR/summary.json``, ``DIR/confidence.md`` and the page ``--page``
(``docs/site_src/results/confidence.md``). Exit 0, 2 on bad input.
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path

import msgspec
import polars as pl

from convlab.evaluation.datasets import LabelledData
from convlab.evaluation.provenance import source_commit
from convlab.paths import REPO_ROOT
from convlab.studies.confidence_study import (
    ConfidenceConfig,
    cross_validated,
    fit_model,
    study_frame,
    summarise,
    transfer,
)
from convlab.systems.confidence import MODEL_FILE, ConfidenceModel

PROG = "python -m eval.confidence"


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    """The command line."""
    p = argparse.ArgumentParser(prog=PROG, description=__doc__)
    p.add_argument(
        "--data",
        action="append",
        default=None,
        help="labelled data to search, repeatable (default: LoCoMo, the LongMemEval oracle and "
        "data/real_sessions from $CONVLAB_SHARED)",
    )
    p.add_argument("--out", type=Path, required=True, help="folder for the study's files")
    p.add_argument("--features", type=Path, default=None, help="a features.parquet to reuse")
    p.add_argument("--model", type=Path, default=MODEL_FILE, help="where the model goes")
    p.add_argument("--page", type=Path, default=None, help="the results page to write")
    p.add_argument("--cache", type=Path, default=Path("runs/cache"), help="embedding cache")
    p.add_argument("--backend", default="onnx-int8", help="the embedder's backend")
    p.add_argument("--embedder", default="minilm", help="the embedder (hash: tests)")
    p.add_argument(
        "--lme-every",
        type=int,
        default=1,
        metavar="N",
        help="LongMemEval: every abstention question and every N-th other one (%(default)s)",
    )
    p.add_argument(
        "--locomo-conversations",
        type=int,
        default=None,
        metavar="N",
        help="LoCoMo: its first N conversations (default: all)",
    )
    p.add_argument("--folds", type=int, default=5, help="folds of the grouped CV")
    p.add_argument("--keep", type=float, default=0.95, help="answerable share kept")
    p.add_argument("--c", type=float, default=1.0, help="inverse regularisation")
    return p.parse_args(argv)


def _default_data() -> list[str]:
    from convlab.paths import shared_dir

    shared = shared_dir()
    return [
        str(shared / "datasets" / "locomo" / "locomo10.json"),
        str(shared / "datasets" / "longmemeval" / "longmemeval_oracle.json"),
        str(REPO_ROOT / "data" / "real_sessions"),
    ]


def features(args: argparse.Namespace) -> pl.DataFrame:
    """Every query's features, searched with the default system (or read from ``--features``)."""
    if args.features is not None:
        return pl.read_parquet(args.features)
    from convlab.embed import CachedEmbedder, make_embedder
    from convlab.evaluation.datasets import load_labelled
    from convlab.systems import default_system

    inner = make_embedder(args.embedder, args.backend if args.embedder == "minilm" else None)
    embedder = CachedEmbedder(inner, args.cache)
    system = default_system()
    frames = []
    for path in args.data or _default_data():
        data = _subset(load_labelled(path), args)
        print(f"{data.name}: {data.queries.height} queries", file=sys.stderr)
        frames.append(study_frame(data, system, embedder=embedder))
    return pl.concat(frames)


def _subset(data: LabelledData, args: argparse.Namespace) -> LabelledData:
    """What of ``data`` is searched: ``--lme-every`` of haystacks, ``--locomo-conversations``."""
    from convlab.studies.confidence_study import no_answer

    if data.haystacks is not None and args.lme_every > 1:
        q = data.queries.with_columns(no_answer(data.queries), pl.int_range(pl.len()).alias("i"))
        keep = q.filter(pl.col("no_answer") | (pl.col("i") % args.lme_every == 0))["query_id"]
        convs = data.haystacks.filter(pl.col("query_id").is_in(keep.implode()))
        return data.select(convs["conversation_id"].unique(maintain_order=True).to_list())
    if data.haystacks is None and args.locomo_conversations and data.name.startswith("locomo"):
        ids = data.corpus.conversations["conversation_id"].to_list()
        return data.select(ids[: args.locomo_conversations])
    return data


def _table(frame: pl.DataFrame, first: Sequence[str] = ()) -> str:
    cols = [*first, "dataset", "queries", "no_answer", "auroc", "kept", "flagged"]
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for row in frame.select(cols).iter_rows(named=True):
        cells = [
            f"{v:.3f}" if isinstance(v, float) else ("-" if v is None else str(v))
            for v in row.values()
        ]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def page(
    command: str,
    commit: str,
    held: pl.DataFrame,
    moved: pl.DataFrame,
    model: ConfidenceModel,
    keep: float,
) -> str:
    """The results page: the command, the held-out table, transfer and the shipped model."""
    coefs = ", ".join(f"{n} {c:+.3f}" for n, c in zip(model.features, model.coef, strict=True))
    return "\n".join(
        [
            "# Search confidence: no-answer queries flagged",
            "",
            f"Generated by `{command}` at commit `{commit}`.",
            "",
            "The confidence (`convlab.systems.confidence`) is a logistic regression over the",
            "default system's scores of a query's first ten hits and the query's terms found in",
            "them. No-answer queries: LongMemEval's abstention questions (`_abs`), LoCoMo's",
            "adversarial category, the judged no-answer queries of the real sessions.",
            "",
            "## Held out: grouped cross-validation over the three data sets pooled",
            "",
            "Each query's confidence comes from a model fitted on the other folds (groups: a",
            "conversation, or a query of its own haystack or of no conversation), and its",
            f"threshold keeps {keep:.0%} of the fold's answerable",
            "training queries. `kept`: answerable queries at or above the threshold (target",
            ">= 0.95); `flagged`: no-answer queries below it.",
            "",
            _table(held),
            "",
            "## Transfer: fitted on one data set, applied to another",
            "",
            "The model and its threshold fitted on all of `fitted_on`, judged on `dataset`.",
            "",
            _table(moved, ("fitted_on",)) if moved.height else "(no data set to fit on alone)",
            "",
            "## The shipped model",
            "",
            f"Fitted on every query above for `{model.system}`: threshold {model.threshold},",
            f"coefficients on standardised features: {coefs}; intercept {model.intercept:+.3f}.",
            "",
        ]
    )


def main(argv: Sequence[str] | None = None) -> int:
    """Fit and judge the confidence; write the model, the tables and the page."""
    args = parse_args(argv)
    try:
        config = ConfidenceConfig(folds=args.folds, keep=args.keep, c=args.c)
    except ValueError as exc:
        print(f"{PROG}: {exc}", file=sys.stderr)
        return 2
    command = f"{PROG} {shlex.join(sys.argv[1:] if argv is None else argv)}".strip()
    frame = features(args)
    made_by = command
    if args.features is not None:  # the searches were made by the command beside the file
        sidecar = args.features.with_suffix(".command")
        if not sidecar.exists():
            print(f"{PROG}: {sidecar} is missing: which command searched?", file=sys.stderr)
            return 2
        made_by = f"{sidecar.read_text().strip()} (searches); {command} (fit)"
    args.out.mkdir(parents=True, exist_ok=True)
    frame.write_parquet(args.out / "features.parquet")
    (args.out / "features.command").write_text(made_by.split(" (searches); ")[0] + "\n")
    judged = cross_validated(frame, config)
    judged.write_parquet(args.out / "held_out.parquet")
    held, moved = summarise(judged), transfer(frame, config)
    from convlab.systems import default_system

    model = fit_model(frame, config, system=default_system().name, command=made_by)
    args.model.write_bytes(msgspec.json.format(msgspec.json.encode(model)) + b"\n")
    commit, state = source_commit()
    text = page(made_by, commit or state, held, moved, model, config.keep)
    (args.out / "confidence.md").write_text(text)
    if args.page is not None:
        args.page.write_text(text)
    summary = {
        "config": asdict(config),
        "held_out": held.to_dicts(),
        "transfer": moved.to_dicts(),
        "model": msgspec.to_builtins(model),
    }
    (args.out / "summary.json").write_text(json.dumps(summary, indent=1) + "\n")
    print(held)
    return 0


if __name__ == "__main__":
    sys.exit(main())
