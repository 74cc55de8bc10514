"""A run folder's TREC runs as frames, and BM25 runs over other strategies' units.

:func:`read_runs` reads every ``runs/*.trec`` of an ``eval.run`` folder by system name;
:func:`lexical_runs` makes (and saves) BM25 runs over the units of other strategies, without a
model. Both feed the fusion study (:mod:`convlab.studies.fusion_study`).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import polars as pl

from convlab.defaults import BUDGET
from convlab.evaluation.queries import read_run, write_run
from convlab.evaluation.runfolder import run_path
from convlab.files import CONFIG, read_text_regular

__all__ = ["lexical_runs", "read_runs"]


def _names(folder: Path) -> dict[str, str]:
    """TREC file stem -> system name (``bm25_message`` -> ``bm25:message``)."""
    config = folder / "config.json"
    if not config.exists():
        return {}
    systems = json.loads(read_text_regular(config, limit=CONFIG)).get("systems", [])
    return {s["name"].replace(":", "_"): s["name"] for s in systems}


def read_runs(folder: Path) -> dict[str, pl.DataFrame]:
    """Every ``*.trec`` of ``folder/runs`` as ``query_id, doc_id, rank, score``, by system name."""
    names = {run_path(folder, name).stem: name for name in _names(folder).values()}
    files = sorted((folder / "runs").glob("*.trec"))
    if not files:
        raise FileNotFoundError(f"no TREC runs under {folder / 'runs'}")
    return {
        names.get(f.stem, f.stem.replace("_", ":", 1) if f.stem.startswith("bm25_") else f.stem): (
            read_run(f).select("query_id", "doc_id", "rank", "score")
        )
        for f in files
    }


def lexical_runs(
    locomo: Path, out: Path, strategies: Sequence[str], metrics: Sequence[str]
) -> dict[str, pl.DataFrame]:
    """BM25 over each of ``strategies``' units, per conversation, scored per message (``metrics``).

    Uses :func:`convlab.evaluation.evaluate.evaluate` with BM25-only systems: nothing is embedded
    but the queries, with :class:`convlab.embed.HashEmbedder` (lexical search never reads the
    query vectors). Each run is written to ``out/runs/bm25_<strategy>.trec`` atomically.
    """
    from convlab.embed import HashEmbedder
    from convlab.evaluation.config import EvalConfig
    from convlab.evaluation.datasets import load_labelled
    from convlab.evaluation.evaluate import evaluate
    from convlab.retrieval import Retrieval
    from convlab.systems.system import System

    data = load_labelled(locomo)
    systems = [
        System(name=f"bm25:{s}", strategy=s, retrieval=Retrieval.LEXICAL) for s in strategies
    ]
    ev = evaluate(
        data,
        systems,
        embedder=HashEmbedder(384),
        config=EvalConfig(metrics=tuple(metrics), budgets=(BUDGET,), scope="conversation"),
        progress=False,
    )
    (out / "runs").mkdir(parents=True, exist_ok=True)
    runs = {}
    for name, hits in ev.hits.items():
        path = run_path(out, name)
        write_run(hits, path, path.stem)  # written whole or not at all
        runs[name] = hits.select("query_id", "doc_id", "rank", "score")
    return runs
