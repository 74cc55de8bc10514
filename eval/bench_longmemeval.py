"""Benchmark a LongMemEval file of the ``_s`` size: load it and evaluate one strategy in < 4 GB.

``python -m eval.bench_longmemeval --out DIR`` writes ``DIR/bench_longmemeval.json``.

The file is synthetic, in LongMemEval's published format, written by this benchmark (the real
one is never downloaded): 500 questions, each over a haystack of about 50 sessions (filler
sessions drawn from a shared pool, so haystacks overlap between questions as they do in
``longmemeval_s.json``, plus one or two answer sessions of its own holding a ``has_answer``
turn), about 115k tokens per question (counted with the model's tokenizer), 30 abstention
questions. The load and the evaluation run in a fresh process whose peak RSS is reported;
the embedder is :class:`convlab.embed.HashEmbedder` at the model's 384 dimensions (the vectors
take the memory real ones would; no model time), the search is scoped per question to its
haystack and scored with LongMemEval's measures at turn and session level.

**The cost curve** (``--oracle FILE``): haystacks of 1 to 50 sessions per question built from
LongMemEval's oracle file as LongMemEval builds them (:mod:`eval.lme_haystacks`: evidence plus
seeded filler from the other questions' evidence), for a seeded sample of ``--questions``
questions. For each point (sessions per question) and each strategy registered in
:data:`convlab.strategies.STRATEGIES` (read at run time), a fresh process loads the file, builds
the strategy's units and dense index through :func:`convlab.build.build_index` with an empty
embedding cache (**cold**), and searches each question in its haystack; a second fresh process
does the same with the cache filled (**warm**). Each reports units, units per message, distinct
texts, the units inside the questions' haystacks, build and search times and peak RSS.
``--embedder minilm`` is the real model (the cold build is model time); ``hash`` gives the full
curve of memory and of the costs that are not the model's. Figures land in
``DIR/bench_longmemeval.json`` under ``curves``, one entry per (embedder, questions, seed): a
run replaces its own entry and keeps the others.

The filler pool is the oracle's 940 evidence sessions, so the corpus stops growing once the
sample's haystacks have drawn most of them, while ``longmemeval_s.json``'s haystacks are nearly
disjoint: the build cost of S is ``haystack_units`` (the units of every question's haystack,
each haystack counted whole), the build cost of this file is ``units``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import resource
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import orjson

from eval.bench_load import sentence

TYPES = (
    "single-session-user",
    "single-session-assistant",
    "single-session-preference",
    "multi-session",
    "knowledge-update",
    "temporal-reasoning",
)
TOPICS = ("colour", "city", "dish", "band", "sport", "author", "plant", "game", "tool", "river")


def _message(rng: random.Random, sentences: int) -> str:
    return " ".join(sentence(rng) for _ in range(sentences))


def _date(rng: random.Random) -> str:
    month, day, hour, minute = rng.randint(1, 12), rng.randint(1, 28), rng.randint(0, 23), 0
    return f"2023/{month:02d}/{day:02d} (Mon) {hour:02d}:{minute:02d}"


def generate(
    path: Path,
    *,
    questions: int = 500,
    sessions: int = 50,
    pool: int = 10_000,
    messages: int = 10,
    sentences: int = 16,
    seed: int = 0,
) -> dict[str, Any]:
    """Write the synthetic file (to a temporary name, then renamed); return what it holds."""
    from convlab.pipeline.tokens import count_tokens

    rng = random.Random(seed)
    roles = ("user", "assistant")
    filler = [
        [{"role": roles[j % 2], "content": _message(rng, sentences)} for j in range(messages)]
        for _ in range(pool)
    ]
    filler_tokens = [sum(count_tokens([t["content"] for t in s])) for s in filler]
    dates = [_date(rng) for _ in range(pool)]
    per_question: list[int] = []
    tmp = path.with_name(path.name + ".tmp")
    with tmp.open("wb") as fh:
        fh.write(b"[")
        for q in range(questions):
            n_answers = 1 + (q % 3 == 0)
            picked = rng.sample(range(pool), sessions - n_answers)
            topic = TOPICS[q % len(TOPICS)]
            value = f"zq{q}x"
            answer_sessions = []
            for a in range(n_answers):
                turns: list[dict[str, Any]] = [
                    {"role": roles[j % 2], "content": _message(rng, sentences), "has_answer": False}
                    for j in range(messages)
                ]
                turns[2 * a]["content"] = (
                    f"My favourite {topic} is {value}. " + turns[2 * a]["content"]
                )
                turns[2 * a]["has_answer"] = True
                answer_sessions.append((f"answer_{q}_{a}", turns))
            ids = [f"pool_{i}" for i in picked] + [s for s, _ in answer_sessions]
            hay = [filler[i] for i in picked] + [t for _, t in answer_sessions]
            when = [dates[i] for i in picked] + [_date(rng) for _ in answer_sessions]
            order = list(range(len(ids)))
            rng.shuffle(order)
            qid = f"synth_{q:04d}" + ("_abs" if q % 17 == 0 and q < 17 * 30 else "")
            item = {
                "question_id": qid,
                "question_type": TYPES[q % len(TYPES)],
                "question": f"What is my favourite {topic}?",
                "answer": value,
                "question_date": "2024/01/01 (Mon) 12:00",
                "haystack_dates": [when[i] for i in order],
                "haystack_session_ids": [ids[i] for i in order],
                "haystack_sessions": [hay[i] for i in order],
                "answer_session_ids": [s for s, _ in answer_sessions],
            }
            answer_tokens = sum(
                sum(count_tokens([t["content"] for t in turns])) for _, turns in answer_sessions
            )
            per_question.append(sum(filler_tokens[i] for i in picked) + answer_tokens)
            fh.write((b"," if q else b"") + orjson.dumps(item))
        fh.write(b"]")
        fh.flush()
        os.fsync(fh.fileno())
    tmp.replace(path)
    return {
        "questions": questions,
        "sessions_per_question": sessions,
        "pool": pool,
        "messages_per_session": messages,
        "tokens_per_question_mean": round(sum(per_question) / len(per_question)),
        "tokens_per_question_min": min(per_question),
        "tokens_per_question_max": max(per_question),
        "file_bytes": path.stat().st_size,
        "seed": seed,
    }


def measure(path: Path, strategy: str) -> dict[str, Any]:
    """In this (fresh) process: load, evaluate one strategy; times, sizes and peak RSS."""
    from convlab.embed import HashEmbedder
    from convlab.evaluation.config import LONGMEMEVAL_METRICS, EvalConfig
    from convlab.evaluation.datasets import load_labelled
    from convlab.evaluation.evaluate import evaluate
    from convlab.systems.system import System

    t0 = time.perf_counter()
    data = load_labelled(path, strict=True)
    t_load = time.perf_counter() - t0
    rss_load = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    config = EvalConfig(
        scope="haystack",
        metrics=LONGMEMEVAL_METRICS,
        budgets=(512,),
        headline=("success@5", "session:success@5", "session:ndcg@10", "coverage@512"),
    )
    t1 = time.perf_counter()
    ev = evaluate(
        data,
        [System(name=strategy, strategy=strategy)],
        embedder=HashEmbedder(384),
        config=config,
        progress=False,
    )
    t_eval = time.perf_counter() - t1
    summary = {m: round(v, 4) for _, m, v, _ in ev.summary.rows()}
    return {
        "strategy": strategy,
        "embedder": "HashEmbedder(384)",
        "conversations": data.corpus.conversations.height,
        "messages": data.corpus.messages.height,
        "queries": data.queries.height,
        "haystack_rows": 0 if data.haystacks is None else data.haystacks.height,
        "units": ev.config["units"],
        "cleaning": data.cleaning,
        "load_seconds": round(t_load, 1),
        "evaluate_seconds": round(t_eval, 1),
        "peak_rss_mb_after_load": round(rss_load / 1024),
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
        "summary": summary,
    }


def _write(out: Path, update: dict[str, Any]) -> None:
    """Merge ``update`` into ``out/bench_longmemeval.json`` (written whole: temp and rename).

    A curve replaces the curve of the same embedder, questions and seed, and keeps the others.
    """
    from convlab.atomic import write_text_atomic

    path = out / "bench_longmemeval.json"
    try:
        old = json.loads(path.read_text()) if path.is_file() else {}
    except ValueError:
        old = {}
    merged = old if isinstance(old, dict) else {}
    for c in update.pop("curves", []):
        key = (c["embedder"], c["questions"], c["seed"])
        kept = [
            x for x in merged.get("curves", []) if (x["embedder"], x["questions"], x["seed"]) != key
        ]
        merged["curves"] = [*kept, c]
    merged.update(update)
    write_text_atomic(path, json.dumps(merged, indent=1))


def _run_curve(args: argparse.Namespace, out: Path) -> int:
    """The cost curve over haystacks made from the oracle (``--oracle``)."""
    from convlab.strategies import STRATEGIES
    from eval.lme_curve import curve

    strategies = args.strategies.split(",") if args.strategies else list(STRATEGIES.names())
    for s in strategies:
        STRATEGIES.get(s)  # an unknown name fails here, listing the valid ones
    machine = {"python": platform.python_version(), "cpus": os.cpu_count()}

    def save(record: dict[str, Any]) -> None:
        _write(out, {"curves": [{**record, "machine": machine | {"load": os.getloadavg()}}]})

    made = curve(
        Path(args.oracle),
        Path(args.work) if args.work else out / "lme_curve_work",
        questions=args.questions,
        points=[int(x) for x in args.points.split(",")],
        strategies=strategies,
        embedder=args.embedder,
        seed=args.seed,
        save=save,
    )
    save(made)
    print(f"{out / 'bench_longmemeval.json'}: {len(made['rows'])} points in {made['seconds']} s")
    return 0


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="python -m eval.bench_longmemeval",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--out", default="runs/bench")
    p.add_argument("--file", default=None, help="where the synthetic file goes (kept)")
    p.add_argument(
        "--questions", type=int, default=500, help="questions (the curve: a seeded sample)"
    )
    p.add_argument("--sessions", type=int, default=50)
    p.add_argument("--pool", type=int, default=10_000)
    p.add_argument("--strategy", default="message")
    p.add_argument("--oracle", default=None, help="longmemeval_oracle.json: measure the curve")
    p.add_argument("--points", default="1,2,5,10,20,35,50", help="sessions per question")
    p.add_argument("--strategies", default=None, help="comma-separated (default: all registered)")
    p.add_argument("--embedder", default="hash", choices=("hash", "minilm"))
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--work", default=None, help="the curve's haystack files and caches")
    p.add_argument("--measure", default=None, help=argparse.SUPPRESS)  # the child process
    p.add_argument("--point", default=None, help=argparse.SUPPRESS)  # a curve's child
    p.add_argument("--cache", default=None, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.measure:
        print(json.dumps(measure(Path(args.measure), args.strategy)))
        return 0
    if args.point:
        from eval.lme_curve import measure_point

        point = measure_point(Path(args.point), args.strategy, args.embedder, Path(args.cache))
        print(json.dumps(point))
        return 0
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    if args.oracle:
        return _run_curve(args, out)
    file = Path(args.file) if args.file else out / "longmemeval_s_synthetic.json"
    t0 = time.perf_counter()
    made = generate(file, questions=args.questions, sessions=args.sessions, pool=args.pool)
    made["generate_seconds"] = round(time.perf_counter() - t0, 1)
    child = subprocess.run(
        [
            sys.executable,
            *("-m", "eval.bench_longmemeval", "--measure", str(file)),
            *("--strategy", args.strategy),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    if child.returncode != 0:
        print(child.stderr[-3000:], file=sys.stderr)
        return 1
    result = {
        "file": made,
        "run": json.loads(child.stdout.strip().splitlines()[-1]),
        "limit_mb": 4096,
        "machine": {"python": platform.python_version(), "cpus": os.cpu_count()},
    }
    result["within_limit"] = result["run"]["peak_rss_mb"] < result["limit_mb"]
    _write(out, dict(result))
    print(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
