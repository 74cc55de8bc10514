"""Labelled data sets as corpus + queries: the LoCoMo family, LongMemEval, labelled folders.

:func:`load_labelled` picks the reader from the data: a LongMemEval file, a LoCoMo-family file
or directory of files, or a folder with ``queries.jsonl`` (the bundled sample's layout). The
name reports give a data set is taken from the data (the file's stem or the folder's name).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import polars as pl

from convlab import schema
from convlab.evaluation.config import PROTOCOLS
from convlab.evaluation.judgments import labels, read_judgments
from convlab.evaluation.queries import read_queries
from convlab.files import CONFIG, DATASET, open_regular, read_text_regular
from convlab.loaders import Corpus, LoadError, load
from convlab.loaders.locomo import LocomoReader, read_locomo
from convlab.loaders.longmemeval import LongMemEvalLabels, LongMemEvalReader, read_longmemeval
from convlab.paths import locomo_path, sample_data_path
from convlab.pipeline.turns import message_turns
from convlab.systems.names import escaped, shown

if TYPE_CHECKING:
    from convlab.evaluation.lme_official import OfficialLabels

__all__ = ["LabelledData", "check_scorable", "load_labelled", "locomo", "longmemeval", "sample"]

_SNIFF_BYTES = 64 * 1024
_EXPECTED = (
    "a LongMemEval JSON file, a LoCoMo-family JSON file or a directory of them, "
    "or a folder with queries.jsonl"
)


@dataclass(frozen=True, slots=True)
class LabelledData:
    """A corpus and its labelled queries, with notes on how the labels were cleaned.

    Attributes:
        name: the data set's name in reports (from the data: a file's stem, a folder's name).
        corpus: the conversations.
        queries: :data:`convlab.schema.QUERIES`; ``relevant`` are doc ids.
        cleaning: counts of what was repaired or left out while reading the labels.
        haystacks: per-query scopes, when each query has its own (LongMemEval):
            ``query_id, conversation_id``, one row per conversation of the query's haystack.
        sessions: session-level relevance (``query_id, relevant`` conversation ids), when the
            data gives it (LongMemEval's ``answer_session_ids``).
        judged: every judged doc, relevant or not (``query_id, doc_id, grade, relevant``), when
            the labels come from pooled judgments (:mod:`convlab.judge`): what ``judged@k`` and
            ``bpref`` need.
        official: LongMemEval's official keys and gold, when the data is read under its
            protocol (:func:`longmemeval` with ``protocol="longmemeval"``); the keys carry the
            ``doc_id`` that stands for each.
    """

    name: str
    corpus: Corpus
    queries: pl.DataFrame
    cleaning: dict[str, Any] = field(default_factory=dict)
    haystacks: pl.DataFrame | None = None
    sessions: pl.DataFrame | None = None
    judged: pl.DataFrame | None = None
    official: OfficialLabels | None = None

    def select(self, conversations: list[str] | None) -> LabelledData:
        """Only these conversations and the queries scoped to them.

        With per-query haystacks, a query is kept when its whole haystack was selected.
        """
        if not conversations:
            return self
        missing = set(conversations) - set(self.corpus.conversations["conversation_id"])
        if missing:
            raise ValueError(f"no such conversations in {self.name}: {sorted(missing)}")
        if self.haystacks is None:
            keep = self.queries.filter(pl.col("conversation_id").is_in(conversations))["query_id"]
        else:
            outside = self.haystacks.filter(~pl.col("conversation_id").is_in(conversations))
            left_out = outside["query_id"].unique().to_list()
            keep = self.queries.filter(~pl.col("query_id").is_in(left_out))["query_id"]
        return self._keeping(
            keep.to_list(), self.corpus.filter_conversations(conversations), self.cleaning
        )

    def every(self, n: int) -> LabelledData:
        """Every ``n``-th query and only the conversations they search.

        The 1st, the ``n+1``-th, ... query in the data's order: a fixed, reproducible subset for
        a costly run (``eval.run --every N``).

        Raises:
            ValueError: ``n`` below 1.
        """
        if n < 1:
            raise ValueError(f"every needs n >= 1, not {n}")
        if n == 1:
            return self
        keep = self.queries["query_id"].gather_every(n).to_list()
        if self.haystacks is not None:
            scoped = self.haystacks.filter(pl.col("query_id").is_in(keep))
        else:
            scoped = self.queries.filter(pl.col("query_id").is_in(keep))
        convs = scoped["conversation_id"].drop_nulls().unique(maintain_order=True).to_list()
        corpus = self.corpus.filter_conversations(convs) if convs else self.corpus
        return self._keeping(keep, corpus, {**self.cleaning, "every": n})

    def _keeping(self, keep: list[str], corpus: Corpus, cleaning: dict[str, Any]) -> LabelledData:
        """These queries (ids) over ``corpus``: every per-query frame filtered to them."""
        by_query = pl.col("query_id").is_in(keep)
        return LabelledData(
            self.name,
            corpus,
            self.queries.filter(by_query),
            cleaning,
            None if self.haystacks is None else self.haystacks.filter(by_query),
            None if self.sessions is None else self.sessions.filter(by_query),
            None if self.judged is None else self.judged.filter(by_query),
            None if self.official is None else self.official.select(keep),
        )


def check_scorable(data: LabelledData, source: str | Path) -> None:
    """Refuse labelled data on which no retrieval figure can be computed.

    At least one query must have a relevant doc: a LoCoMo file whose every evidence id points
    at no utterance, a LongMemEval file whose every question was left out (lists of different
    lengths, say), or a ``--conversations`` that selects nothing, would otherwise fail deep
    inside the evaluation.

    Raises:
        LoadError: naming ``source``, how many queries it has, and the first record at fault
            (the first skipped record, or the first query without a relevant doc).
    """
    queries = data.queries
    if queries.filter(pl.col("relevant").list.len() > 0).height:
        return
    skipped = data.corpus.report.skipped
    first = (
        f"; the first record left out: {escaped(skipped['reason'][0])}" if skipped.height else ""
    )
    if not queries.height:
        raise LoadError(source, 0, f"no labelled query to evaluate{first}")
    qid = shown(queries["query_id"][0])
    raise LoadError(
        source,
        0,
        f"none of its {queries.height} queries has a relevant doc (query {qid}: no evidence "
        f"of it points at a message of the corpus){first}",
    )


def locomo(path: str | Path | None = None, *, strict: bool = False) -> LabelledData:
    """A LoCoMo-family data set: LoCoMo's 1,986 questions over 5,882 utterances, or a relative.

    ``path`` is a file or a directory of files (one conversation per file is fine); ``None`` finds
    LoCoMo (:func:`convlab.paths.locomo_path`). Docs are messages. ``cleaning`` counts the
    questions, those left without evidence (kept, not scored on retrieval) and each kind of
    evidence repair (:data:`convlab.loaders.locomo.REPAIRS`).

    Raises:
        LoadError: naming a file that is not of the family (or, strict, the first bad record).
    """
    # a path that is there is read as given (a FIFO or device is refused by name), never swapped
    p = Path(path) if path is not None and os.path.lexists(path) else locomo_path(path)
    corpus, report = read_locomo(p, strict=strict)
    queries = corpus.queries if corpus.queries is not None else schema.empty(schema.QUERIES)
    return LabelledData(_name(p), corpus, queries, report)


def longmemeval(
    path: str | Path, *, strict: bool = False, protocol: str = "convlab"
) -> LabelledData:
    """LongMemEval's questions, each scoped to its own haystack of sessions.

    ``protocol="convlab"`` (convlab's own): docs are turns (a user message and the reply:
    :mod:`convlab.pipeline.turns`); a query's relevant docs are the turns holding a
    ``has_answer`` message of either role, its relevant sessions (``sessions``) its
    ``answer_session_ids``; its ``evidence`` (:data:`convlab.schema.QUERY_EVIDENCE`) the
    ``has_answer`` messages themselves, so that resurrection's coverage asks for them and not for
    the other half of their turn. ``protocol="longmemeval"`` (the official one: :func:`official`):
    docs are user messages, relevant as the official code rules. Abstention questions
    (``_abs``) are kept without relevant docs.

    Raises:
        LoadError: naming the file (see :func:`convlab.loaders.longmemeval.read_longmemeval`).
        ValueError: an unknown protocol.
    """
    p = Path(path)
    corpus, labels = read_longmemeval(p, strict=strict)
    if protocol == "longmemeval":
        return official(p, corpus, labels)
    if protocol != "convlab":
        raise ValueError(f"unknown protocol {protocol!r}; valid: {', '.join(PROTOCOLS)}")
    turn_of = (
        message_turns(corpus)
        .filter(pl.col("turn_index").is_not_null())
        .select(schema.message_id_expr(), schema.turn_id_expr())
    )
    relevant = (
        labels.queries.select("query_id", pl.col("relevant").alias("message_id"))
        .explode("message_id")
        .join(turn_of, on="message_id", how="inner")
        .group_by("query_id", maintain_order=True)
        .agg(pl.col("turn_id").unique(maintain_order=True).alias("turns"))
    )
    queries = (
        labels.queries.join(relevant, on="query_id", how="left")
        .with_columns(pl.col("turns").fill_null(pl.lit([], dtype=pl.List(pl.String))))
        .with_columns(pl.col("relevant").alias("evidence"), pl.col("turns").alias("relevant"))
        .select(*schema.QUERIES, *schema.QUERY_EVIDENCE)
    )
    queries = _with_times(queries, labels)
    return LabelledData(_name(p), corpus, queries, labels.report, labels.haystacks, labels.sessions)


def _with_times(queries: pl.DataFrame, labels: LongMemEvalLabels) -> pl.DataFrame:
    """The queries with a last column ``time``, when each was asked (what the search reads)."""
    if labels.times is None:
        return queries
    return queries.join(labels.times, on="query_id", how="left", maintain_order="left")


def official(path: Path, corpus: Corpus, labels: LongMemEvalLabels) -> LabelledData:
    """A LongMemEval file under its official protocol (:mod:`convlab.evaluation.lme_official`).

    Docs are messages (``doc_kind="message"``): the evaluation embeds only user text
    (:class:`~convlab.evaluation.config.EvalConfig` under this protocol), so each user message,
    the official turn key, is a doc. A query's relevant docs are its gold user messages, its
    relevant sessions the official gold sessions; abstention questions get none.
    ``official`` holds the keys (with the doc that stands for each) for the official measures.
    ``cleaning`` adds: ``official_turn_keys``, ``official_gold_turns``,
    ``official_gold_without_doc`` (a gold message the loader left out), ``strict_questions``
    and ``non_abstention_questions``.
    """
    from convlab.evaluation.lme_official import read_official, with_doc_ids

    keys = with_doc_ids(read_official(path), corpus.messages)
    asked = keys.questions.filter(~pl.col("abstention")).select("query_id")
    gold = keys.turns.filter(pl.col("gold")).join(asked, on="query_id", how="semi")
    turns = (
        gold.filter(pl.col("doc_id").is_not_null())
        .group_by("query_id")
        .agg(pl.col("doc_id").alias("_rel"))
    )
    sessions = (
        keys.sessions.filter(pl.col("gold"))
        .join(asked, on="query_id", how="semi")
        .group_by("query_id")
        .agg(pl.col("session_id").alias("_rel"))
    )
    empty = pl.lit([], dtype=pl.List(pl.String))

    def relevant(frame: pl.DataFrame, rel: pl.DataFrame) -> pl.DataFrame:
        return frame.join(rel, on="query_id", how="left").with_columns(
            pl.col("_rel").fill_null(empty).alias("relevant")
        )

    queries = _with_times(relevant(labels.queries, turns).select(list(schema.QUERIES)), labels)
    session_gold = relevant(labels.sessions, sessions).select("query_id", "relevant")
    cleaning = {
        **labels.report,
        "official_turn_keys": keys.turns.height,
        "official_gold_turns": gold.height,
        "official_gold_without_doc": gold.filter(pl.col("doc_id").is_null()).height,
        "strict_questions": keys.strict().height,
        "non_abstention_questions": asked.height,
    }
    return LabelledData(
        _name(path),
        corpus.with_doc_kind("message"),
        queries,
        cleaning,
        labels.haystacks,
        session_gold,
        official=keys,
    )


def sample(path: str | Path | None = None) -> LabelledData:
    """A labelled folder: its transcripts and ``queries.jsonl``.

    Transcripts are read from ``transcripts/`` when present, else from the folder itself; by
    default the folder is the bundled sample (``data/sample``). A folder whose transcripts live
    outside the repository names them in ``sources.json`` (:func:`_sources`). With a
    ``qrels.jsonl`` of pooled judgments (:mod:`convlab.judge`), a query's relevant docs are those
    judged at least partly relevant, and every judged doc is kept in ``judged``.
    """
    root = Path(path) if path is not None else sample_data_path()
    if os.path.lexists(root / "sources.json"):  # a FIFO or device there is refused, by name
        corpus = _sources(root / "sources.json")
    else:
        corpus = load(root / "transcripts" if (root / "transcripts").is_dir() else root)
    queries = read_queries(root / "queries.jsonl")
    judged = None
    if os.path.lexists(root / "qrels.jsonl"):
        judgments, torn = read_judgments(root / "qrels.jsonl")
        if torn is not None:
            raise LoadError(
                root / "qrels.jsonl",
                0,
                "the last line is torn; open it with convlab judge to repair it",
            )
        judged = labels(judgments).filter(pl.col("query_id").is_in(queries["query_id"].to_list()))
        rel = (
            judged.filter(pl.col("relevant"))
            .group_by("query_id", maintain_order=True)
            .agg(pl.col("doc_id").alias("_rel"))
        )
        queries = (
            queries.join(rel, on="query_id", how="left")
            .with_columns(
                pl.col("_rel").fill_null(pl.lit([], dtype=pl.List(pl.String))).alias("relevant")
            )
            .select(list(schema.QUERIES))
        )
    return LabelledData(_name(root), corpus, queries, judged=judged)


def _sources(path: Path) -> Corpus:
    """The corpus a ``sources.json`` names: transcripts outside the repository.

    ``{"transcripts": [...], "docs": "message"}``: each path is relative to the shared folder
    (:func:`convlab.paths.shared_dir`: ``CONVLAB_SHARED`` or ``../shared``); ``docs: message``
    makes every message a doc (each conversation's ``doc_kind`` is ``"message"``), which a long
    coding session needs: it holds few turns and hundreds of messages.

    Raises:
        FileNotFoundError: naming every missing folder and how to point convlab at them.
        LoadError: a malformed ``sources.json``.
    """
    import json

    from convlab.paths import shared_dir

    text = read_text_regular(path, limit=CONFIG)
    try:
        spec = json.loads(text)
        paths = spec["transcripts"]
        docs = spec.get("docs", "turn")
        if not isinstance(paths, list) or not all(isinstance(x, str) for x in paths):
            raise ValueError("'transcripts' is a list of paths")
        if docs not in ("turn", "message"):
            raise ValueError("'docs' is 'turn' or 'message'")
    except (ValueError, KeyError, TypeError) as exc:
        raise LoadError(path, 0, f"bad sources file: {exc}") from None
    base = shared_dir()
    folders = [base / x for x in paths]
    missing = [str(f) for f in folders if not f.exists()]
    if missing:
        raise FileNotFoundError(
            f"{path} names transcripts that are not here: {', '.join(missing)}; they live in "
            "the shared folder beside the repository (set CONVLAB_SHARED to where it is)"
        )
    corpus = Corpus.concat([load(f) for f in folders])
    return corpus.with_doc_kind(docs)


def load_labelled(
    path: str | Path | None, *, strict: bool = False, protocol: str = "convlab"
) -> LabelledData:
    """Labelled data from a path, the kind read from the data itself.

    - ``None``: the bundled sample;
    - a folder with ``queries.jsonl``: transcripts and queries (:func:`sample`);
    - a folder holding ``locomo10.json`` (or ``locomo/locomo10.json``): LoCoMo;
    - a LongMemEval file: :func:`longmemeval`;
    - a LoCoMo-family file, or a folder of them: :func:`locomo`.

    ``protocol`` (:data:`~convlab.evaluation.config.PROTOCOLS`): ``convlab`` reads any of
    these; ``longmemeval``, LongMemEval's own protocol, only a LongMemEval file.

    Raises:
        LoadError: naming the file or folder and what was expected, when it is none of these,
            or not a LongMemEval file under the ``longmemeval`` protocol.
        FileNotFoundError: ``path`` does not exist.
        ValueError: an unknown protocol.
    """
    if protocol not in PROTOCOLS:
        raise ValueError(f"unknown protocol {protocol!r}; valid: {', '.join(PROTOCOLS)}")
    if path is None and protocol == "convlab":
        return sample()
    p = Path(path).expanduser() if path is not None else sample_data_path()
    if not p.exists():
        raise FileNotFoundError(f"no such file or directory: {p}")
    if protocol == "longmemeval":
        if p.is_dir() or _kind(p) != "longmemeval":
            raise LoadError(
                p,
                0,
                "the longmemeval protocol is LongMemEval's own: it needs a LongMemEval "
                "question file (longmemeval_s.json, _m or _oracle), and this is not one",
            )
        return longmemeval(p, strict=strict, protocol=protocol)
    if p.is_dir():
        if os.path.lexists(p / "queries.jsonl"):
            return sample(p)
        if (p / "locomo" / "locomo10.json").is_file() or (p / "locomo10.json").is_file():
            return locomo(locomo_path(p), strict=strict)
        files = sorted(p.rglob("*.json"))
        if not files:
            raise LoadError(p, 0, f"no labelled data here; expected {_EXPECTED}")
        for f in files:
            if _kind(f) != "locomo":
                raise LoadError(f, 0, f"not a LoCoMo-family file; expected {_EXPECTED}")
        return locomo(p, strict=strict)
    kind = _kind(p)
    if kind == "longmemeval":
        return longmemeval(p, strict=strict)
    if kind == "locomo":
        return locomo(p, strict=strict)
    raise LoadError(p, 0, f"unrecognised labelled data; expected {_EXPECTED}")


def _kind(path: Path) -> str | None:
    """Which labelled format a file is in, judged from its first bytes."""
    with open_regular(path, limit=DATASET) as fh:
        head = fh.read(_SNIFF_BYTES)
    for reader in (LongMemEvalReader(), LocomoReader()):
        if reader.sniff(path, head):
            return reader.name
    return None


def _name(path: Path) -> str:
    """A data set's name: the folder's name, or the file's stem."""
    return path.name if path.is_dir() else path.stem
