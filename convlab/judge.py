"""Judging: labelled queries for any history by TREC-style pooling.

For each query of an unlabelled queries file, the top ``depth`` docs of several systems are
pooled (Spärck Jones & van Rijsbergen, 1975; the TREC protocol), de-duplicated and shuffled with
a seed, so the assessor cannot tell which system found what, nor in which order. Each candidate
carries its resurrected context (:func:`convlab.resurrect.resurrect`: what its unit was embedded
with) and the query's terms, for highlighting.

Judgments are graded (relevant = 2, partly relevant = 1, not relevant = 0; ``skip`` = no grade)
and appended one JSON line at a time to a qrels file (``query_id, doc_id, grade, assessor,
time``), flushed and fsynced before the next candidate is shown: a killed session loses at most
the judgment being made. A torn last line (a write cut short) is reported and cut off when the
file is opened again; a bad line anywhere else is a :class:`convlab.loaders.LoadError` naming
file and line. Resuming skips what the assessor already judged (skips included).

Several assessors may judge the same pool; :func:`agreement` gives Cohen's kappa on the overlap.

Example:
    >>> pool = build_pool(data, systems, embedder=emb, depth=10)  # doctest: +SKIP
    >>> log = JudgmentLog("qrels.jsonl", assessor="ana")  # doctest: +SKIP
    >>> for c in log.pending(pool):  # doctest: +SKIP
    ...     log.record(c, "r")
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import warnings
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
import polars as pl

from convlab.loaders.base import LoadError

__all__ = [
    "GRADES",
    "KEYS",
    "Agreement",
    "Candidate",
    "Judgment",
    "JudgmentLog",
    "agreement",
    "build_pool",
    "judge_loop",
    "labels",
    "pool_hits",
    "query_terms",
    "read_judgments",
    "render",
    "shuffle_pool",
    "systems_from_names",
]

GRADES: dict[str, int | None] = {"relevant": 2, "partly": 1, "not": 0, "skip": None}
"""The judgments an assessor can make and their grades (``skip`` records no grade)."""

KEYS: dict[str, str] = {
    "r": "relevant",
    "p": "partly",
    "n": "not",
    "s": "skip",
    "1": "relevant",
    "2": "partly",
    "3": "not",
    "0": "skip",
}
"""Keyboard shortcuts: r/p/n/s or 1/2/3/0."""

_FIELDS = ("query_id", "doc_id", "grade", "assessor", "time")


class Judgment(NamedTuple):
    """One line of a qrels file."""

    query_id: str
    doc_id: str
    grade: int | None  # None: skipped
    assessor: str
    time: str  # ISO 8601, UTC


@dataclass(frozen=True, slots=True)
class Candidate:
    """A pooled doc as the assessor sees it (nothing says which system found it).

    Attributes:
        query_id, query: the query.
        doc_id, conversation_id: the doc.
        text: the doc's own text.
        context: ``(role, text, is_target)`` of the chunks its unit resurrects, in order.
        terms: the query's words to highlight.
        position, total: where it is in the query's pool (1-based) and the pool's size.
    """

    query_id: str
    query: str
    doc_id: str
    conversation_id: str
    text: str
    context: tuple[tuple[str, str, bool], ...]
    terms: tuple[str, ...]
    position: int = 1
    total: int = 1


def query_terms(query: str) -> tuple[str, ...]:
    """The words of ``query`` worth highlighting: three letters or more, not stopwords.

    Example:
        >>> query_terms("when did we fix the flaky Fixture")
        ('fix', 'fixture', 'flaky')
    """
    from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS

    words = {w for w in re.findall(r"\w{3,}", query.lower()) if w not in ENGLISH_STOP_WORDS}
    return tuple(sorted(words))


def pool_hits(hits: Mapping[str, pl.DataFrame], depth: int) -> pl.DataFrame:
    """The union of each system's top ``depth`` docs per query.

    Args:
        hits: system name -> ranked hits (``query_id, rank, doc_id, conversation_id, unit_id``).
        depth: the pool depth (docs taken from each system's ranking).

    Returns:
        One row per (query, doc): ``query_id, doc_id, conversation_id, unit_id`` (the unit of
        the first system, in the order given, that found it), ``systems`` (every system that
        found it) and ``best_rank``.

    Example:
        >>> a = pl.DataFrame({"query_id": ["q", "q"], "rank": [1, 2], "doc_id": ["x", "y"],
        ...                   "conversation_id": ["c", "c"], "unit_id": ["ux", "uy"]})
        >>> b = a.with_columns(pl.Series("doc_id", ["y", "z"]))
        >>> pool_hits({"A": a, "B": b}, depth=1)["doc_id"].to_list()
        ['x', 'y']
    """
    if depth < 1:
        raise ValueError("depth must be at least 1")
    if not hits:
        raise ValueError("pool at least one system's hits")
    frames = [
        h.filter(pl.col("rank") <= depth)
        .select("query_id", "doc_id", "conversation_id", "unit_id", "rank")
        .with_columns(pl.lit(name).alias("system"), pl.lit(i).alias("_order"))
        for i, (name, h) in enumerate(hits.items())
    ]
    allhits = pl.concat(frames).sort("_order", "query_id", "rank")
    return (
        allhits.group_by("query_id", "doc_id", maintain_order=True)
        .agg(
            pl.col("conversation_id").first(),
            pl.col("unit_id").first(),
            pl.col("system").unique(maintain_order=True).alias("systems"),
            pl.col("rank").min().alias("best_rank"),
        )
        .sort("query_id", "doc_id")
    )


def _query_seed(seed: int, query_id: str) -> int:
    digest = hashlib.sha256(f"{seed}\0{query_id}".encode()).digest()
    return int.from_bytes(digest[:8], "little")


def shuffle_pool(pool: pl.DataFrame, seed: int = 0) -> pl.DataFrame:
    """The pool in judging order: queries in order of first appearance, docs shuffled.

    Each query's docs are sorted by id, then permuted by a generator seeded with ``seed`` and the
    query id: the order depends on neither the systems' order nor their ranks, and one query's
    order does not change when another is added.
    """
    queries = pool["query_id"].unique(maintain_order=True).to_list()
    parts = []
    for q in queries:
        part = pool.filter(pl.col("query_id") == q).sort("doc_id")
        order = np.random.default_rng(_query_seed(seed, q)).permutation(part.height)
        parts.append(part[order.tolist()])
    if not parts:
        return pool
    return pl.concat(parts)


def build_pool(
    data: Any,
    systems: Sequence[Any],
    *,
    embedder: Any,
    depth: int = 10,
    seed: int = 0,
    scope: str = "corpus",
    budget: int = 256,
) -> list[Candidate]:
    """Pool the top ``depth`` docs of ``systems`` for ``data``'s queries, shuffled, with context.

    Args:
        data: a :class:`convlab.datasets.LabelledData` (its queries' labels are not used).
        systems: :class:`convlab.evaluate.System` s to pool from.
        embedder: the embedder (a cached one saves work across runs).
        depth: docs taken from each system per query.
        seed: the shuffling seed.
        scope: ``corpus`` or ``conversation`` (each query inside its ``conversation_id``).
        budget: token budget of each candidate's resurrected context.
    """
    from convlab.evaluate import EvalConfig, evaluate
    from convlab.resurrect import resurrect
    from convlab.sentences import sentences as make_sentences
    from convlab.turns import turns as make_turns

    config = EvalConfig(metrics=("recall@5",), budgets=(budget,), depth=depth, scope=scope)
    ev = evaluate(data, list(systems), embedder=embedder, config=config, progress=False)
    strategy_of = {s.name: s.strategy for s in systems}
    unit_strategy: dict[str, str] = {}
    for name, h in ev.hits.items():
        for u in h["unit_id"].to_list():
            unit_strategy.setdefault(u, strategy_of[name])
    pooled = shuffle_pool(pool_hits(ev.hits, depth), seed)
    corpus = data.corpus
    sents = make_sentences(corpus, config.policy, turns=make_turns(corpus))
    doc_text = _doc_texts(sents, set(pooled["doc_id"].to_list()))
    queries = dict(data.queries.select("query_id", "text").iter_rows())
    sizes = dict(pooled.group_by("query_id").len().iter_rows())
    seen: dict[str, int] = {}
    out = []
    for row in pooled.iter_rows(named=True):
        units = ev.units[unit_strategy[row["unit_id"]]].filter(pl.col("unit_id") == row["unit_id"])
        one = units.select("unit_id").with_columns(pl.lit(1, dtype=pl.Int32).alias("rank"))
        ctx = resurrect(one, budget, units=units, sentences=sents).context
        q = row["query_id"]
        seen[q] = seen.get(q, 0) + 1
        out.append(
            Candidate(
                query_id=q,
                query=queries[q],
                doc_id=row["doc_id"],
                conversation_id=row["conversation_id"],
                text=doc_text.get(row["doc_id"], ""),
                context=tuple(ctx.select("role", "text", "is_target").iter_rows()),
                terms=query_terms(queries[q]),
                position=seen[q],
                total=sizes[q],
            )
        )
    return out


def _doc_texts(sents: pl.DataFrame, docs: set[str]) -> dict[str, str]:
    """The text of each doc (a message ``c:mN`` or a turn ``c:tN``), its chunks joined."""
    msg = sents.with_columns(
        pl.format("{}:m{}", "conversation_id", "message_index").alias("_m"),
        pl.format("{}:t{}", "conversation_id", "turn_index").alias("_t"),
    )
    out: dict[str, str] = {}
    for key in ("_m", "_t"):
        part = msg.filter(pl.col(key).is_in(sorted(docs))).sort("conversation_id", "position")
        for d, text in part.group_by(key, maintain_order=True).agg(pl.col("text")).iter_rows():
            out[d] = "\n".join(text)
    return out


def read_judgments(path: str | Path) -> tuple[list[Judgment], str | None]:
    """Read a qrels JSONL file: its judgments, and the torn last line if there is one.

    A last line without its newline that is not a whole record is the judgment that was being
    written when a session was killed: it is returned (to be reported), not read.

    Raises:
        LoadError: naming file and line, for a bad record anywhere else.
    """
    p = Path(path)
    if not p.exists():
        return [], None
    raw = p.read_bytes()
    lines = raw.split(b"\n")
    torn = None
    if lines and lines[-1] == b"":
        lines.pop()
    elif lines:
        last = lines[-1]
        try:
            _parse(last.decode("utf-8"))
        except (ValueError, UnicodeDecodeError):
            torn = last.decode("utf-8", errors="replace")
            lines.pop()
    out = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            out.append(_parse(line.decode("utf-8")))
        except (ValueError, UnicodeDecodeError) as exc:
            raise LoadError(p, number, f"bad judgment: {exc}") from None
    return out, torn


def _parse(line: str) -> Judgment:
    rec = json.loads(line)
    if not isinstance(rec, dict) or set(rec) != set(_FIELDS):
        raise ValueError(f"expected an object with exactly {', '.join(_FIELDS)}")
    if not all(isinstance(rec[k], str) for k in ("query_id", "doc_id", "assessor", "time")):
        raise ValueError("query_id, doc_id, assessor and time are strings")
    if rec["grade"] not in (0, 1, 2, None) or isinstance(rec["grade"], bool):
        raise ValueError("grade is 0, 1, 2 or null (skipped)")
    return Judgment(*(rec[k] for k in _FIELDS))


@dataclass
class JudgmentLog:
    """An assessor's append-only qrels file (state: the open file and what is judged).

    Opening it reads what is there (a torn last line is cut off and kept in ``torn``, with a
    warning); :meth:`record` appends one judgment, flushed and fsynced.

    Args:
        path: the qrels JSONL file (created when missing).
        assessor: whose judgments are recorded; resuming skips only theirs.
    """

    path: Path
    assessor: str
    judgments: list[Judgment] = field(init=False)
    torn: str | None = field(init=False)

    def __init__(self, path: str | Path, *, assessor: str) -> None:
        if not assessor.strip():
            raise ValueError("the assessor needs a name")
        self.path = Path(path)
        self.assessor = assessor
        self.judgments, self.torn = read_judgments(self.path)
        if self.torn is not None:
            warnings.warn(
                f"{self.path}: the last line was torn (a session killed mid-write) and is "
                f"dropped: {self.torn[:80]!r}",
                stacklevel=2,
            )
            self._cut_torn()
        elif self.path.exists() and self.path.stat().st_size:
            with self.path.open("rb") as fh:
                fh.seek(-1, os.SEEK_END)
                whole = fh.read(1) == b"\n"
            if not whole:  # a whole last record without its newline: end the line first
                with self.path.open("ab") as fh:
                    fh.write(b"\n")
                    fh.flush()
                    os.fsync(fh.fileno())

    def _cut_torn(self) -> None:
        """Truncate the file after its last newline (the torn line is the lost judgment)."""
        data = self.path.read_bytes()
        keep = data.rfind(b"\n") + 1
        with self.path.open("r+b") as fh:
            fh.truncate(keep)
            fh.flush()
            os.fsync(fh.fileno())

    def judged(self) -> set[tuple[str, str]]:
        """(query_id, doc_id) this assessor has judged or skipped."""
        return {(j.query_id, j.doc_id) for j in self.judgments if j.assessor == self.assessor}

    def pending(self, candidates: Iterable[Candidate]) -> Iterator[Candidate]:
        """The candidates this assessor has not judged yet, in order."""
        done = self.judged()
        for c in candidates:
            if (c.query_id, c.doc_id) not in done:
                yield c

    def record(
        self, candidate: Candidate, judgment: str, *, now: datetime | None = None
    ) -> Judgment:
        """Append a judgment (``relevant``/``partly``/``not``/``skip`` or a key of :data:`KEYS`).

        Raises:
            ValueError: an unknown judgment, naming the valid ones.
        """
        name = KEYS.get(judgment, judgment)
        if name not in GRADES:
            valid = ", ".join([*GRADES, *KEYS])
            raise ValueError(f"unknown judgment {judgment!r}; valid: {valid}")
        when = (now or datetime.now(UTC)).isoformat(timespec="seconds")
        j = Judgment(candidate.query_id, candidate.doc_id, GRADES[name], self.assessor, when)
        line = json.dumps(j._asdict(), ensure_ascii=False) + "\n"
        with self.path.open("a", encoding="utf-8") as fh:
            fh.write(line)
            fh.flush()
            os.fsync(fh.fileno())
        self.judgments.append(j)
        return j


def _latest(judgments: Iterable[Judgment]) -> dict[tuple[str, str, str], int | None]:
    """The last grade per (assessor, query, doc): a re-judgment replaces the earlier one."""
    out: dict[tuple[str, str, str], int | None] = {}
    for j in judgments:
        out[(j.assessor, j.query_id, j.doc_id)] = j.grade
    return out


def labels(judgments: Iterable[Judgment], *, min_grade: int = 1) -> pl.DataFrame:
    """Graded judgments as qrels: ``query_id, doc_id, grade, relevant`` (skips left out).

    With several assessors a doc's grade is the mean of theirs, rounded half up; it is
    relevant when that grade is at least ``min_grade`` (default: partly relevant counts).
    """
    if min_grade not in (1, 2):
        raise ValueError("min_grade is 1 (partly counts) or 2 (only relevant)")
    rows = [(q, d, g) for (_, q, d), g in _latest(judgments).items() if g is not None]
    frame = pl.DataFrame(
        rows, schema={"query_id": pl.String, "doc_id": pl.String, "grade": pl.Int64}, orient="row"
    )
    return (
        frame.group_by("query_id", "doc_id", maintain_order=True)
        .agg((pl.col("grade").mean() + 0.5).floor().cast(pl.Int32).alias("grade"))
        .with_columns((pl.col("grade") >= min_grade).alias("relevant"))
        .sort("query_id", "doc_id")
    )


class Agreement(NamedTuple):
    """Agreement of two assessors on the docs both graded."""

    kappa: float  # Cohen's kappa (1 = perfect, 0 = chance)
    overlap: int  # (query, doc) pairs both graded
    observed: float  # share of the overlap with the same grade


def agreement(a: str | Path | Iterable[Judgment], b: str | Path | Iterable[Judgment]) -> Agreement:
    """Cohen's kappa between two qrels (files or judgments) on the docs both graded.

    kappa = (p_o - p_e) / (1 - p_e), p_o the observed agreement and p_e the agreement expected
    from each assessor's grade frequencies (Cohen, 1960; scikit-learn's ``cohen_kappa_score``).
    Skips are not grades; each file's last grade per (query, doc) counts.

    Raises:
        ValueError: the two share no graded doc.
    """
    from sklearn.metrics import cohen_kappa_score

    def grades(x: str | Path | Iterable[Judgment]) -> dict[tuple[str, str], int]:
        js = read_judgments(x)[0] if isinstance(x, str | Path) else list(x)
        return {(q, d): g for (_, q, d), g in _latest(js).items() if g is not None}

    ga, gb = grades(a), grades(b)
    both = sorted(set(ga) & set(gb))
    if not both:
        raise ValueError("the two qrels have no graded (query, doc) in common")
    ya = [ga[k] for k in both]
    yb = [gb[k] for k in both]
    observed = sum(x == y for x, y in zip(ya, yb, strict=True)) / len(both)
    # one grade throughout is full agreement (scikit-learn would give nan)
    kappa = 1.0 if len(set(ya) | set(yb)) == 1 else float(cohen_kappa_score(ya, yb))
    return Agreement(kappa, len(both), observed)


def systems_from_names(names: Sequence[str]) -> list[Any]:
    """Systems from names as reports spell them: ``turn_pair``, ``bm25:message``, ``hybrid:X``.

    Raises:
        ValueError: an unknown strategy, naming the valid ones.
    """
    from convlab.evaluate import System
    from convlab.strategies import STRATEGIES

    out = []
    for name in names:
        retrieval, _, strategy = name.rpartition(":")
        if strategy not in STRATEGIES:
            valid = ", ".join(sorted(STRATEGIES))
            raise ValueError(f"unknown strategy {strategy!r} in system {name!r}; valid: {valid}")
        out.append(System(name=name, strategy=strategy, retrieval=retrieval or "dense"))
    return out


def _mark(text: str, terms: Sequence[str], color: bool) -> str:
    if not terms:
        return text
    pattern = re.compile(r"\b(?:" + "|".join(re.escape(t) for t in terms) + r")\w*", re.I)
    on, off = ("\033[1;33m", "\033[0m") if color else ("[", "]")
    return pattern.sub(lambda m: f"{on}{m.group(0)}{off}", text)


def render(candidate: Candidate, *, color: bool = False, width: int = 1200) -> str:
    """A candidate as terminal text: the query, the doc, its context; query terms marked.

    Marked with ``[...]`` (or bold yellow when ``color``); the doc and each context chunk are cut
    to ``width`` characters.
    """

    def cut(t: str) -> str:
        t = " ".join(t.split())
        return t if len(t) <= width else t[: width - 1] + "…"

    c = candidate
    lines = [
        f"== {c.query_id} ({c.position} of {c.total}): {c.query}",
        f"-- doc {c.doc_id}",
        _mark(cut(c.text), c.terms, color),
    ]
    if c.context:
        lines.append("-- context (what its unit was embedded with; > the target)")
        for role, text, target in c.context:
            lines.append(f"{'>' if target else ' '} {role}: {_mark(cut(text), c.terms, color)}")
    return "\n".join(lines)


def judge_loop(
    candidates: Sequence[Candidate],
    log: JudgmentLog,
    *,
    read: Any = input,
    write: Any = print,
    color: bool = False,
) -> int:
    """Ask for a judgment of each pending candidate; returns how many were recorded.

    Keys: r/p/n/s (or 1/2/3/0), ``q`` to stop; an unknown key asks again. End of input stops
    too: what was recorded is on disk, and running again resumes.
    """
    pending = list(log.pending(candidates))
    done = len(candidates) - len(pending)
    recorded = 0
    for i, c in enumerate(pending, start=done + 1):
        write(f"\n[{i} of {len(candidates)}]")
        write(render(c, color=color))
        while True:
            try:
                key = read("relevant r/1, partly p/2, not n/3, skip s/0, quit q > ").strip().lower()
            except EOFError:
                key = "q"
            if key == "q":
                write(f"stopped: {recorded} judged now, {len(pending) - recorded} left")
                return recorded
            if key in KEYS:
                log.record(c, key)
                recorded += 1
                break
            write(f"unknown key {key!r}")
    write(f"done: {recorded} judged now; all {len(candidates)} candidates judged")
    return recorded
