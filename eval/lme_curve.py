"""The LongMemEval cost curve behind ``python -m eval.bench_longmemeval --oracle FILE``.

Per point (sessions per question) and strategy, two fresh processes (cold: empty embedding
cache; warm: the cache the cold one filled) load the haystack file, build the strategy's units
and dense index (:func:`convlab.build.build_index`) and search every question in its haystack
(:func:`convlab.retrieval.search_haystacks`). See :mod:`eval.bench_longmemeval` for what is
reported and :mod:`eval.lme_haystacks` for how the haystacks are made.
"""

from __future__ import annotations

import json
import random
import resource
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import orjson

from convlab.evaluation.lme_haystacks import build_haystacks, write_haystacks

__all__ = ["POINTS", "curve", "measure_point", "sample_questions"]

POINTS = (1, 2, 5, 10, 20, 35, 50)
"""Sessions per question measured by default."""

HASH_DIMENSION = 384
"""The hash embedder's dimension: the model's, so vectors weigh what real ones do."""


def _embedder(name: str) -> Any:
    from convlab.embed import make_embedder

    if name == "hash":
        return make_embedder("hash", dimension=HASH_DIMENSION)
    return make_embedder(name)


def _peak_mb() -> int:
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)


def measure_point(path: Path, strategy: str, embedder: str, cache: Path) -> dict[str, Any]:
    """In this (fresh) process: load ``path``, build ``strategy`` through the cache, search.

    Returns:
        Counts (messages, units, distinct texts, haystack units), the embedding cache's counts,
        times (load, model load, build with its derive/embed/index parts, search per question)
        and peak RSS after the load, the build and the search.
    """
    import polars as pl

    from convlab.build import build_index
    from convlab.embed import CachedEmbedder
    from convlab.evaluation.datasets import load_labelled
    from convlab.retrieval import search_haystacks

    t = time.perf_counter()
    data = load_labelled(path, strict=True)
    load_s = time.perf_counter() - t
    rss_load = _peak_mb()
    t = time.perf_counter()
    inner = _embedder(embedder)
    inner.encode(["load the model before the clock starts"])
    model_s = time.perf_counter() - t
    cached = CachedEmbedder(inner, cache)
    t = time.perf_counter()
    built = build_index(data.corpus, strategy, embedder=cached, lexical=False)
    build_s = time.perf_counter() - t
    rss_build = _peak_mb()
    if data.haystacks is None:
        raise ValueError(f"{path} has no haystacks: not a LongMemEval file")
    t = time.perf_counter()
    hits = search_haystacks(built.index, data.queries, data.haystacks, embedder=inner)
    search_s = time.perf_counter() - t
    units, messages = built.units, data.corpus.messages
    per_conv = units.group_by("conversation_id").len("units")
    msg_conv = messages.group_by("conversation_id").len("messages")
    hay = data.haystacks.join(per_conv, on="conversation_id", how="left").join(
        msg_conv, on="conversation_id", how="left"
    )
    hay_units = int(hay["units"].fill_null(0).sum())
    hay_messages = int(hay["messages"].fill_null(0).sum())
    questions = data.queries.height
    embedding: dict[str, float] = dict(built.manifest.embedding)
    embed_s = float(built.manifest.seconds.get("embed", 0.0))
    if embedding.get("embedded") and embed_s > 0:
        embedding["texts_per_second"] = round(embedding["embedded"] / embed_s, 1)
    return {
        "strategy": strategy,
        "embedder": inner.model_id,
        "questions": questions,
        "sessions": data.corpus.conversations.height,
        "messages": messages.height,
        "units": units.height,
        "units_per_message": round(units.height / max(messages.height, 1), 3),
        "distinct_texts": int(units["text"].n_unique()),
        "haystack_sessions": data.haystacks.height,
        "haystack_messages": hay_messages,
        "haystack_units": hay_units,
        "haystack_units_per_question": round(hay_units / max(questions, 1), 1),
        "unit_tokens_mean": round(float(units["n_tokens"].mean() or 0), 1),  # type: ignore[arg-type]
        "unit_tokens_max": int(units["n_tokens"].max() or 0),  # type: ignore[arg-type]
        "embedding": embedding,
        "hits": hits.height,
        "hit_questions": int(hits["query_id"].n_unique()) if hits.height else 0,
        "load_seconds": round(load_s, 2),
        "model_load_seconds": round(model_s, 2),
        "build_seconds": round(build_s, 2),
        "build_parts_seconds": {k: round(float(v), 2) for k, v in built.manifest.seconds.items()},
        "search_seconds": round(search_s, 3),
        "search_ms_per_question": round(1000 * search_s / max(questions, 1), 2),
        "peak_rss_mb_after_load": rss_load,
        "peak_rss_mb_after_build": rss_build,
        "peak_rss_mb": _peak_mb(),
        "polars": pl.__version__,
    }


def sample_questions(items: Sequence[dict[str, Any]], questions: int, seed: int) -> list[str]:
    """``questions`` question ids drawn with ``seed`` (all of them when that many or more)."""
    ids = sorted(str(i["question_id"]) for i in items)
    if questions >= len(ids):
        return ids
    return sorted(random.Random(seed).sample(ids, questions))


def _child(argv: list[str]) -> dict[str, Any]:
    """Run one measurement in a fresh process; its last stdout line is the JSON."""
    run = subprocess.run(
        [sys.executable, "-m", "eval.bench_longmemeval", *argv],
        capture_output=True,
        text=True,
        check=False,
    )
    if run.returncode != 0:
        raise RuntimeError(f"measurement {' '.join(argv)} failed:\n{run.stderr[-3000:]}")
    return dict(json.loads(run.stdout.strip().splitlines()[-1]))


def curve(
    oracle: Path,
    work: Path,
    *,
    questions: int,
    points: Sequence[int],
    strategies: Sequence[str],
    embedder: str,
    seed: int = 0,
    log: Callable[[str], None] = print,
    save: Callable[[dict[str, Any]], None] | None = None,
) -> dict[str, Any]:
    """Every (point, strategy): a cold and a warm fresh process; the curve as one record.

    ``save`` gets the record so far after each row (``complete`` false until the last), so a
    run stopped early keeps the points it measured.
    """
    items = orjson.loads(oracle.read_bytes())
    keep = set(sample_questions(items, questions, seed))
    work.mkdir(parents=True, exist_ok=True)
    rows: list[dict[str, Any]] = []
    started = time.perf_counter()
    record: dict[str, Any] = {
        "embedder": embedder,
        "questions": len(keep),
        "question_ids": sorted(keep),
        "seed": seed,
        "oracle": str(oracle),
        "points": list(points),
        "strategies": list(strategies),
        "rows": rows,
        "complete": False,
    }
    for n in points:
        made = build_haystacks(items, sessions=n, seed=seed)
        made = [q for q in made if q["question_id"] in keep]
        path = work / f"lme_{n}.json"
        write_haystacks(made, path)
        for strategy in strategies:
            cache = work / f"cache-{embedder}-{strategy}-{n}"
            shutil.rmtree(cache, ignore_errors=True)
            argv = ["--point", str(path), "--strategy", strategy, "--embedder", embedder]
            try:
                cold = _child([*argv, "--cache", str(cache)])
                warm = _child([*argv, "--cache", str(cache)])
            finally:
                shutil.rmtree(cache, ignore_errors=True)
            rows.append({"sessions_per_question": n, "cold": cold, "warm": warm})
            log(
                f"n={n} {strategy}: {cold['units']} units, cold {cold['build_seconds']} s, "
                f"warm {warm['build_seconds']} s, search {cold['search_ms_per_question']} "
                f"ms/q, peak {cold['peak_rss_mb']} MB"
            )
            record["seconds"] = round(time.perf_counter() - started, 1)
            if save is not None:
                save(record)
        path.unlink()
    record["complete"] = True
    return record
