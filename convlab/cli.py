"""The ``convlab`` command: index real histories, search them, show a turn, stats, eval.

Exit codes: 0 success, 1 no results, 2 usage or input error (one line on stderr, no traceback).

Examples::

    convlab index ~/.claude/projects --store ~/.convlab/store
    convlab search "when did we fix the double fetch" --store ~/.convlab/store -k 5
    convlab search "nginx websockets" --store ~/.convlab/store --json
    convlab show SESSION_ID --turn 3 --budget 512 --store ~/.convlab/store
    convlab stats --store ~/.convlab/store
    convlab judge queries.jsonl --data ~/.claude/projects --qrels qrels.jsonl --assessor ana
    convlab judge agreement qrels-ana.jsonl qrels-bo.jsonl
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import polars as pl

__all__ = ["main"]

EXIT_OK, EXIT_NO_RESULTS, EXIT_USAGE = 0, 1, 2
DEFAULT_STORE = Path("~/.convlab/store")


class UsageError(Exception):
    """A user error: reported as one line with exit code 2."""


def _embedder(name: str) -> Any:
    from convlab.embed import HashEmbedder, MiniLMEmbedder

    if name == "minilm":
        return MiniLMEmbedder()
    if name == "hash":  # a fast fake, for tests of the command itself
        return HashEmbedder()
    raise UsageError(f"unknown embedder {name!r}")


def _parser() -> argparse.ArgumentParser:
    from convlab.strategies import STRATEGIES

    p = argparse.ArgumentParser(
        prog="convlab",
        description="Index coding-agent and chat histories, search them, measure retrieval.",
    )
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def store_arg(sp: argparse.ArgumentParser) -> None:
        sp.add_argument(
            "--store", type=Path, default=DEFAULT_STORE, help="store directory (%(default)s)"
        )

    ix = sub.add_parser(
        "index",
        help="load transcripts, build units, embed and write the store (incremental)",
        description="Load every supported transcript under PATHs (default: the usual homes of "
        "Claude Code, Codex and Amplifier histories on this machine), build units, embed "
        "only what is new or changed, and write the store atomically.",
    )
    ix.add_argument("paths", nargs="*", type=Path, metavar="PATH")
    store_arg(ix)
    ix.add_argument(
        "--strategy", default="turn_pair", choices=sorted(STRATEGIES), help="(%(default)s)"
    )
    ix.add_argument("--budget", type=int, default=256, help="unit token budget (%(default)s)")
    ix.add_argument("--index", dest="index_kind", default="flat", choices=["flat", "hnsw", "ivf"])
    ix.add_argument(
        "--redact",
        default="tool-output",
        choices=["tool-output", "all", "none"],
        help="replace secret-shaped strings before embedding or storing (%(default)s)",
    )
    ix.add_argument("--rebuild", action="store_true", help="start the store from scratch")
    ix.add_argument("--wait", action="store_true", help="wait for another indexer to finish")
    ix.add_argument(
        "--embedder", default="minilm", choices=["minilm", "hash"], help=argparse.SUPPRESS
    )
    ix.add_argument("--quiet", action="store_true", help="no progress bars")

    se = sub.add_parser("search", help="search a store", description="Search a store.")
    se.add_argument("query")
    store_arg(se)
    se.add_argument("-k", type=int, default=10, help="results (%(default)s)")
    se.add_argument("--hybrid", action="store_true", help="fuse dense and BM25 ranks (RRF)")
    se.add_argument("--conversation", help="only this conversation id")
    se.add_argument("--since", help="only turns on or after this date (YYYY-MM-DD)")
    se.add_argument("--json", action="store_true", help="JSON lines for scripts and agents")
    se.add_argument("--embedder", default=None, choices=["minilm", "hash"], help=argparse.SUPPRESS)

    sh = sub.add_parser(
        "show", help="print a turn with its resurrected context", description="Print a turn."
    )
    sh.add_argument("conversation")
    store_arg(sh)
    sh.add_argument("--turn", type=int, default=None, help="turn index (default: all turns)")
    sh.add_argument("--budget", type=int, default=None, help="resurrection budget in tokens")

    st = sub.add_parser("stats", help="what a store holds", description="Store statistics.")
    store_arg(st)
    st.add_argument("--json", action="store_true")

    ev = sub.add_parser(
        "eval",
        help="run the strategy comparison (see python -m eval.run --help)",
        description="Run the evaluation harness; arguments are passed to eval.run.",
    )
    ev.add_argument("args", nargs=argparse.REMAINDER)
    _judge_parser(sub)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``convlab`` command; returns the exit code."""
    parser = _parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse already printed usage
        return EXIT_OK if exc.code == 0 else EXIT_USAGE
    handlers = {
        "index": _index,
        "search": _search,
        "show": _show,
        "stats": _stats,
        "eval": _eval,
        "judge": _judge,
    }
    try:
        return handlers[args.command](args)
    except (UsageError, FileNotFoundError, ValueError) as exc:
        print(f"convlab {args.command}: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except Exception as exc:
        from convlab.loaders import LoadError
        from convlab.store import StoreLocked

        if isinstance(exc, LoadError | StoreLocked):
            print(f"convlab {args.command}: {exc}", file=sys.stderr)
            return EXIT_USAGE
        raise


def _index(args: argparse.Namespace) -> int:
    from convlab.store import Store, StoreConfig, default_history_paths

    paths = list(args.paths) or default_history_paths()
    if not paths:
        raise UsageError(
            "no PATH given and no Claude Code, Codex or Amplifier history found in the usual places"
        )
    config = StoreConfig(
        strategy=args.strategy, budget=args.budget, index_kind=args.index_kind, redact=args.redact
    )
    store = Store(args.store)
    summary = store.update(
        paths,
        config=config,
        embedder=_embedder(args.embedder),
        rebuild=args.rebuild,
        wait=args.wait,
        progress=None if not args.quiet else False,
    )
    for line in summary.lines():
        print(line)
    print(f"store: {store.directory}")
    return EXIT_OK


def _parse_date(text: str | None) -> datetime | None:
    if text is None:
        return None
    try:
        d = datetime.fromisoformat(text)
    except ValueError:
        raise UsageError(f"--since expects a date like 2026-01-31, got {text!r}") from None
    return d.replace(tzinfo=UTC) if d.tzinfo is None else d


def _search(args: argparse.Namespace) -> int:
    from convlab.search import SearchOptions, search
    from convlab.store import Store

    if not args.query.strip():
        raise UsageError("the query is empty")
    if args.k < 1:
        raise UsageError("-k must be at least 1")
    store = Store(args.store)
    manifest = store.manifest()
    index = store.index()
    embedder = _embedder(args.embedder or _embedder_name(manifest))
    options = SearchOptions(
        k=args.k,
        hybrid=args.hybrid,
        conversations=(args.conversation,) if args.conversation else None,
        since=_parse_date(args.since),
    )
    bm25 = None
    if args.hybrid:
        from convlab.lexical import BM25Index

        bm25 = BM25Index.build(index.units)
    hits = search(index, args.query, embedder=embedder, options=options, bm25=bm25)
    if hits.height == 0:
        print("no results", file=sys.stderr)
        return EXIT_NO_RESULTS
    rows = _describe_hits(store, hits)
    if args.json:
        for r in rows:
            print(json.dumps(r, ensure_ascii=False, default=str))
    else:
        for r in rows:
            when = r["date"] or "undated"
            print(f"{r['rank']:>2}. {r['score']:.3f}  {r['title'] or r['conversation_id']}  {when}")
            print(f"    Q: {_clip(r['question'], 160)}")
            print(f"    match: {_clip(r['text'], 160)}")
            print(f"    at: {r['location']}")
    return EXIT_OK


def _embedder_name(manifest: dict[str, Any]) -> str:
    return "hash" if "hash" in str(manifest.get("model_id", "")).lower() else "minilm"


def _clip(text: str | None, n: int) -> str:
    t = " ".join((text or "").split())
    return t if len(t) <= n else t[: n - 1] + "…"


def _describe_hits(store: Any, hits: pl.DataFrame) -> list[dict[str, Any]]:
    convs = store.frame("conversations").select("conversation_id", "title", "source_path")
    sents = store.frame("sentences")
    questions = (
        sents.filter(pl.col("role") == "user")
        .sort("position")
        .group_by("conversation_id", "turn_index", maintain_order=True)
        .agg(pl.col("text").str.join(" ").alias("question"))
    )
    turns = store.frame("turns").select(
        "conversation_id", "turn_index", "started_at", "first_message_index"
    )
    units = store.frame("units").select("unit_id", pl.col("text").alias("unit_text"))
    h = (
        hits.join(convs, on="conversation_id", how="left")
        .join(questions, on=["conversation_id", "turn_index"], how="left")
        .join(turns, on=["conversation_id", "turn_index"], how="left")
        .join(units, on="unit_id", how="left")
        .sort("rank")
    )
    out = []
    for r in h.iter_rows(named=True):
        started = r.get("started_at")
        out.append(
            {
                "rank": r["rank"],
                "score": round(float(r["score"]), 4),
                "conversation_id": r["conversation_id"],
                "title": r.get("title"),
                "turn": r["turn_index"],
                "date": started.date().isoformat() if started else None,
                "question": r.get("question"),
                "text": r.get("unit_text"),
                "source_path": r.get("source_path"),
                "location": f"{r.get('source_path')} (session {r['conversation_id']}, "
                f"turn {r['turn_index']})",
            }
        )
    return out


def _show(args: argparse.Namespace) -> int:
    from convlab.store import Store

    store = Store(args.store)
    sents = store.frame("sentences").filter(pl.col("conversation_id") == args.conversation)
    if sents.height == 0:
        raise UsageError(f"no conversation {args.conversation!r} in {store.directory}")
    if args.turn is not None:
        sents = sents.filter(pl.col("turn_index") == args.turn)
        if sents.height == 0:
            raise UsageError(f"conversation {args.conversation!r} has no turn {args.turn}")
    for (turn,), part in sents.sort("position").group_by("turn_index", maintain_order=True):
        print(f"== turn {turn}")
        for (msg, role), m in part.group_by("message_index", "role", maintain_order=True):
            print(f"[{role} #{msg}] {' '.join(m['text'].to_list())}")
    if args.budget is not None:
        from convlab.resurrect import resurrect

        units = store.frame("units").filter(pl.col("conversation_id") == args.conversation)
        if args.turn is not None:
            units = units.filter(pl.col("turn_index") == args.turn)
        hits = units.with_row_index("rank", offset=1).with_columns(pl.col("rank").cast(pl.Int32))
        res = resurrect(hits, args.budget, units=units, sentences=store.frame("sentences"))
        print(f"== resurrected context: {res.tokens_used}/{args.budget} tokens")
        for r in res.context.iter_rows(named=True):
            mark = "*" if r["is_target"] else " "
            print(f"{mark} [{r['role']} t{r['turn_index']}] {r['text']}")
    return EXIT_OK


def _stats(args: argparse.Namespace) -> int:
    from convlab.store import Store

    store = Store(args.store)
    m = store.manifest()
    units = store.frame("units")
    info = {
        "store": str(store.directory),
        "model_id": m["model_id"],
        "config": m["config"],
        "counts": m["counts"],
        "files": len(m["files"]),
        "unit_tokens_mean": float(units["n_tokens"].cast(pl.Float64).mean() or 0.0),  # type: ignore[arg-type]
        "units_by_role": dict(units.group_by("role").len().sort("role").iter_rows()),
    }
    if args.json:
        print(json.dumps(info, indent=1, default=str))
    else:
        for k, v in info.items():
            print(f"{k}: {v}")
    return EXIT_OK


def _eval(args: argparse.Namespace) -> int:
    from convlab.paths import REPO_ROOT

    if (REPO_ROOT / "eval" / "run.py").is_file() and str(REPO_ROOT) not in sys.path:
        sys.path.insert(0, str(REPO_ROOT))
    try:
        from eval.run import main as run_main  # the harness lives in the repo's eval/ package
    except ImportError:
        raise UsageError("the evaluation harness (eval/run.py) is not importable here") from None
    return int(run_main(args.args) or 0)


# --- judge: pooled relevance judgments (convlab.judge) -------------------------------------------

DEFAULT_JUDGE_SYSTEMS = "message,turn_pair,whole_turn,bm25:message,hybrid:message"


def _judge_parser(sub: Any) -> None:
    ju = sub.add_parser(
        "judge",
        help="judge pooled candidates for a queries file, or: judge agreement A B",
        description="Pool the top docs of several systems for each query of QUERIES (JSONL: "
        "query_id, text, optional conversation_id), shuffled, and ask for a judgment of each: "
        "r/1 relevant, p/2 partly, n/3 not, s/0 skip, q quit. Each judgment is appended to "
        "--qrels at once; running again resumes. `convlab judge agreement A B` prints Cohen's "
        "kappa of two qrels files.",
    )
    ju.add_argument("target", nargs="+", metavar="QUERIES | agreement A B")
    ju.add_argument("--data", type=Path, help="transcripts (a file or folder) or a labelled folder")
    ju.add_argument("--systems", default=DEFAULT_JUDGE_SYSTEMS, help="(%(default)s)")
    ju.add_argument("--depth", type=int, default=10, help="pool depth per system (%(default)s)")
    ju.add_argument("--seed", type=int, default=0, help="shuffling seed (%(default)s)")
    ju.add_argument("--docs", default="turn", choices=["turn", "message"], help="(%(default)s)")
    ju.add_argument("--qrels", type=Path, help="the qrels JSONL file judgments are appended to")
    ju.add_argument("--assessor", help="your name, recorded with each judgment")
    ju.add_argument("--cache", default="runs/cache", help="embedding cache (%(default)s)")
    ju.add_argument(
        "--embedder", default="minilm", choices=["minilm", "hash"], help=argparse.SUPPRESS
    )


def _judge(args: argparse.Namespace) -> int:
    from convlab import judge

    if args.target[0] == "agreement":
        if len(args.target) != 3:
            raise UsageError("usage: convlab judge agreement QRELS_A QRELS_B")
        a = judge.agreement(Path(args.target[1]), Path(args.target[2]))
        print(
            f"Cohen's kappa {a.kappa:.3f} on {a.overlap} docs graded by both "
            f"(same grade on {a.observed:.1%})"
        )
        return EXIT_OK
    if len(args.target) != 1:
        raise UsageError("give one queries file (or: agreement A B)")
    missing = [f"--{n}" for n in ("data", "qrels", "assessor") if getattr(args, n) is None]
    if missing:
        raise UsageError(f"judging needs {', '.join(missing)}")
    data = _judge_data(Path(args.target[0]), args.data, args.docs)
    systems = judge.systems_from_names([s for s in args.systems.split(",") if s])
    from convlab.embed import CachedEmbedder

    embedder = CachedEmbedder(_embedder(args.embedder), args.cache)
    pool = judge.build_pool(
        data, systems, embedder=embedder, depth=args.depth, seed=args.seed, scope="conversation"
    )
    log = judge.JudgmentLog(args.qrels, assessor=args.assessor)
    if log.torn is not None:
        print(f"note: the last line of {args.qrels} was torn and was cut off", file=sys.stderr)
    judge.judge_loop(pool, log, color=sys.stdout.isatty())
    return EXIT_OK


def _judge_data(queries: Path, data: Path, docs: str) -> Any:
    """Unlabelled queries over transcripts (or a labelled folder's corpus)."""
    from dataclasses import replace

    from convlab.datasets import LabelledData, load_labelled
    from convlab.loaders import load
    from convlab.queries import read_queries

    if data.is_dir() and ((data / "sources.json").is_file() or (data / "queries.jsonl").is_file()):
        corpus = load_labelled(data).corpus
    else:
        corpus = load(data)
    if docs == "message":
        kinds = corpus.conversations.with_columns(pl.lit("dialog").alias("kind"))
        corpus = replace(corpus, conversations=kinds)
    return LabelledData(queries.stem, corpus, read_queries(queries))


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
