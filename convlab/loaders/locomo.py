"""LoCoMo-style dialogs (Maharana et al., 2024) and their family: two speakers, sessions, QA.

One conversation per sample (``conversation_id = sample_id``, else the file's stem;
``kind="dialog"``); every utterance is one message in session order: role ``user`` for the
first speaker and ``assistant`` for the second (``speaker`` keeps the name), ``session_index`` =
N of ``session_N``, the timestamp parsed from ``session_N_date_time`` ("1:56 pm on 8 May, 2023",
read as UTC; a per-utterance ``timestamp``/``date_time`` wins when a variant has one),
``external_id`` = ``dia_id``. An utterance that shares an image gets
`` [shares a photo: {blip_caption}]`` appended.

The QA list becomes labelled queries (``corpus.queries``): ``relevant`` holds the message ids of
the evidence ``dia_id``s, after :func:`clean_evidence`. Categories per LoCoMo's official code:
1 multi-hop, 2 temporal, 3 open-domain, 4 single-hop, 5 adversarial (whose answer is
``adversarial_answer``); relatives number theirs otherwise (REALTALK: 1 fact, 2 date,
3 inference), so outside LoCoMo's layout (samples under ``conversation``) a category is kept as
written.

Liberal in what it accepts from the family:

- the file is one sample or a list of them; a directory holds one sample per file
  (:func:`read_locomo`);
- the sessions sit under ``conversation`` or ``dialog``, or at the top level of the sample;
- the speakers are ``speaker_a``/``speaker_b``, or two names under ``name``/``names``/``speakers``
  (``{"speaker_1": ..., "speaker_2": ...}`` or a list); without them the first to speak is ``user``;
- the utterance text is ``text``, ``clean_text``, ``content`` or ``utterance``;
- dates are LoCoMo's, ISO 8601, or ``"29.12.2023, 22:42:04"`` (:data:`DATE_FORMATS`);
- evidence may be ranges (``"D1:3-D1:8"``), lists in one string (``"D8:6; D9:17"``), ids with
  stray punctuation or colons (``"D1:3."``, ``"D:11:26"``); each repair is counted.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from convlab import schema
from convlab.errors import LoadError
from convlab.files import DATASET
from convlab.loaders.base import CorpusBuilder, question_problem
from convlab.loaders.blocks import BlockRow
from convlab.loaders.corpus import Corpus
from convlab.loaders.files import load_json_file
from convlab.loaders.registry import register_format
from convlab.loaders.times import parse_time

__all__ = [
    "CATEGORIES",
    "DATE_FORMATS",
    "REPAIRS",
    "EvidenceCleaning",
    "clean_evidence",
    "parse_session_time",
    "read_locomo",
]

CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}
TEXT_FIELDS = ("text", "clean_text", "content", "utterance")
NAME_FIELDS = ("name", "names", "speakers")
DATE_FORMATS = (
    "%I:%M %p on %d %B, %Y",  # LoCoMo: 1:56 pm on 8 May, 2023
    "%I:%M %p on %d %b, %Y",
    "%I:%M%p on %d %B, %Y",
    "%d.%m.%Y, %H:%M:%S",  # 29.12.2023, 22:42:04
    "%d.%m.%Y, %H:%M",
    "%d.%m.%Y %H:%M:%S",
    "%d.%m.%Y",
    "%Y/%m/%d %H:%M",
)
REPAIRS = (
    "lists_split",
    "ranges_expanded",
    "punctuation_stripped",
    "ids_repaired",
    "duplicates_removed",
    "unknown_dropped",
    "malformed_dropped",
    "not_string_dropped",
)
"""The kinds of evidence repair :func:`clean_evidence` counts (the last four drop an id)."""
_EXPECTED = (
    "a LoCoMo-family sample: an object with session_N lists (under 'conversation' or 'dialog', "
    "or at its top level) of utterances with speaker and text, and a 'qa' list"
)
_EXACT = re.compile(r"D(\d+):(\d+)")
_LOOSE = re.compile(r"D\s*:?\s*(\d+)\s*:\s*(\d+)")
_SPLIT = re.compile(r"[;,\s]+")
_PUNCT = ".,;:!?()[]{}'\"`"
_SESSION = re.compile(r"session_(\d+)$")


@dataclass(frozen=True, slots=True)
class EvidenceCleaning:
    """Evidence ids after cleaning, the repairs made (counted by kind: :data:`REPAIRS`), notes."""

    ids: list[str]
    repairs: Counter[str] = field(default_factory=Counter)
    notes: list[str] = field(default_factory=list)

    @property
    def n_dropped(self) -> int:
        """Evidence items or ids dropped (unknown, malformed, not a string; not duplicates)."""
        return sum(self.repairs[k] for k in REPAIRS[5:])


def _canonical(token: str, repairs: Counter[str]) -> str | None:
    """``"D1:3"`` as is, ``"D:1:3"``/``"D1 : 3"`` repaired, anything else ``None``."""
    if _EXACT.fullmatch(token):
        return token
    m = _LOOSE.fullmatch(token)
    if m:
        repairs["ids_repaired"] += 1
        return f"D{m.group(1)}:{m.group(2)}"
    return None


def clean_evidence(raw: Sequence[Any], known: Sequence[str]) -> EvidenceCleaning:
    """Split, repair, expand and check evidence ids against the utterance ids ``known``.

    ``known`` is in utterance order, which is how a range is expanded: ``"D1:3-D1:5"`` stands for
    every utterance from D1:3 to D1:5 (``"D1:3-5"`` too). ``"D8:6; D9:17"`` is split, ``"D1:3."``
    loses its punctuation, ``"D:11:26"`` becomes ``"D11:26"``; ``"D"``, a non-string and an id that
    names no utterance are dropped; a repeated id is kept once. Every repair is counted by kind.

    Example:
        >>> out = clean_evidence(["D1:2; D1:3", "D", "D:1:4."], ["D1:2", "D1:3", "D1:4"])
        >>> out.ids, dict(out.repairs)  # doctest: +NORMALIZE_WHITESPACE
        (['D1:2', 'D1:3', 'D1:4'], {'lists_split': 1, 'malformed_dropped': 1,
         'punctuation_stripped': 1, 'ids_repaired': 1})
    """
    position = {d: i for i, d in enumerate(known)}
    ids: list[str] = []
    repairs: Counter[str] = Counter()
    notes: list[str] = []

    def add(d: str) -> None:
        if d not in position:
            repairs["unknown_dropped"] += 1
            notes.append(f"no such utterance: {d}")
        elif d in ids:
            repairs["duplicates_removed"] += 1
        else:
            ids.append(d)

    for item in raw:
        if not isinstance(item, str):
            repairs["not_string_dropped"] += 1
            notes.append(f"not a string: {item!r}")
            continue
        s = re.sub(r"\s*-\s*", "-", re.sub(r"\s*:\s*", ":", item.strip()))
        if s.strip(_PUNCT) != s:  # "D1:4." or "D2:2," (a separator with nothing after it)
            repairs["punctuation_stripped"] += 1
            s = s.strip(_PUNCT)
        tokens = [t for t in _SPLIT.split(s) if t]
        if len(tokens) > 1:
            repairs["lists_split"] += 1
            notes.append(f"split: {item!r}")
        for raw_token in tokens:
            token = raw_token.strip(_PUNCT)
            if token != raw_token:
                repairs["punctuation_stripped"] += 1
            if "-" in token:
                first, _, last = token.partition("-")
                a = _canonical(first, repairs)
                b = _canonical(last, repairs) if not last.isdigit() else None
                if a is not None and last.isdigit():
                    b = f"{a.split(':')[0]}:{last}"
                if a is None or b is None:
                    repairs["malformed_dropped"] += 1
                    notes.append(f"malformed range: {item!r}")
                elif a not in position or b not in position or position[b] < position[a]:
                    repairs["unknown_dropped"] += 1
                    notes.append(f"range names no utterances in order: {item!r}")
                else:
                    repairs["ranges_expanded"] += 1
                    for one in known[position[a] : position[b] + 1]:
                        add(one)
                continue
            found = _canonical(token, repairs)
            if found is None:
                repairs["malformed_dropped"] += 1
                notes.append(f"malformed: {item!r}")
            else:
                add(found)
    return EvidenceCleaning(ids, repairs, notes)


def parse_session_time(value: Any) -> datetime | None:
    """A date of the family (:data:`DATE_FORMATS`, or ISO 8601) as UTC; ``None`` if not one."""
    if not isinstance(value, str):
        return parse_time(value)
    s = " ".join(value.split())
    for fmt in DATE_FORMATS:
        try:
            return datetime.strptime(s, fmt).replace(tzinfo=UTC)
        except ValueError:
            continue
    return parse_time(s)


def _speakers(sample: dict[str, Any], conv: dict[str, Any]) -> tuple[str | None, str | None]:
    """The two speakers' names, wherever the variant keeps them."""
    for holder in (conv, sample):
        a, b = holder.get("speaker_a"), holder.get("speaker_b")
        if isinstance(a, str) and isinstance(b, str):
            return a, b
        for key in NAME_FIELDS:
            names = holder.get(key)
            if isinstance(names, dict):
                names = list(names.values())
            if (
                isinstance(names, list)
                and len(names) == 2
                and all(isinstance(n, str) for n in names)
            ):
                return names[0], names[1]
    return None, None


def _dialog(sample: dict[str, Any]) -> dict[str, Any] | None:
    """The object holding ``session_N`` lists: ``conversation``, ``dialog`` or the sample."""
    for key in ("conversation", "dialog"):
        if isinstance(sample.get(key), dict):
            return sample[key]
    return sample if any(_SESSION.match(k) for k in sample) else None


@register_format(priority=50)
class LocomoReader:
    """Reader for LoCoMo ``locomo10.json`` and datasets of its family."""

    name = "locomo"

    def sniff(self, path: Path, head: bytes) -> bool:
        """A JSON file with LoCoMo's utterance ids, or its speakers beside ``session_1``."""
        if path.suffix.lower() != ".json" or b'"haystack_session' in head:
            return False
        return b'"dia_id"' in head or (b'"speaker_a"' in head and b'"session_1"' in head)

    def companion(self, path: Path) -> bool:
        """LoCoMo has no side files."""
        return False

    def read(self, path: Path, builder: CorpusBuilder) -> int:
        """Read every sample of the file (the evidence report is :func:`read_locomo`'s)."""
        try:
            read_file(path, builder, Counter())
        except LoadError as exc:
            builder.skip(path, exc.line, exc.reason)  # raises again in strict mode
        return 1


def read_file(path: Path, builder: CorpusBuilder, totals: Counter[str]) -> None:
    """Read one file of the family into ``builder``, adding its evidence repairs to ``totals``.

    Raises:
        LoadError: the file is not JSON, or holds no sample of the family.
    """
    try:
        data = load_json_file(path, limit=DATASET)  # regular files only; deep nesting too
    except LoadError as exc:
        if not exc.reason.startswith("invalid JSON"):
            raise  # not a regular file, unreadable, nested too deep: said as it is
        raise LoadError(path, exc.line, f"{exc.reason}; expected {_EXPECTED}") from None
    samples = data if isinstance(data, list) else [data]
    usable = [s for s in samples if isinstance(s, dict) and _dialog(s) is not None]
    if not usable:
        raise LoadError(path, 1, f"no LoCoMo-family sample; expected {_EXPECTED}")
    for i, sample in enumerate(samples):
        if not isinstance(sample, dict) or _dialog(sample) is None:
            builder.skip(path, 1, f"sample {i} is not {_EXPECTED}")
            continue
        default_id = path.stem if len(samples) == 1 else f"{path.stem}-{i}"
        _sample(path, sample, default_id, builder, totals)


def _sample(
    path: Path,
    sample: dict[str, Any],
    default_id: str,
    builder: CorpusBuilder,
    totals: Counter[str],
) -> None:
    conv = _dialog(sample)
    if conv is None:  # checked by the caller; kept for the type checker
        return
    a, b = _speakers(sample, conv)
    cid = str(sample.get("sample_id") or sample.get("conversation_id") or default_id)
    if builder.has_conversation(cid):
        builder.skip(path, 1, f"conversation id {cid!r} was read already; sample left out")
        return
    builder.conversation(
        cid,
        source_format=LocomoReader.name,
        source_path=path,
        title=f"{a} & {b}" if a and b else None,
        kind="dialog",
    )
    sessions = sorted(
        (int(m.group(1)), k) for k in conv if (m := _SESSION.match(k)) and conv[k] is not None
    )
    ids: dict[str, str] = {}
    first: str | None = a
    for n, key in sessions:
        utterances = conv[key]
        if not isinstance(utterances, list):
            builder.skip(path, 1, f"{cid} {key} is not a list of utterances")
            continue
        session_time = parse_session_time(conv.get(f"{key}_date_time"))
        for u in utterances:
            if not isinstance(u, dict):
                builder.skip(path, 1, f"{cid} {key}: utterance is not an object")
                continue
            text = next((u[f] for f in TEXT_FIELDS if isinstance(u.get(f), str)), None)
            speaker = u.get("speaker")
            if text is None or not isinstance(speaker, str):
                builder.skip(path, 1, f"{cid} {key}: utterance without text or speaker")
                continue
            caption = u.get("blip_caption")
            if isinstance(caption, str) and caption.strip():
                text = f"{text} [shares a photo: {caption.strip()}]"
            first = first or speaker
            role = "user" if speaker == first else "assistant"
            raw_time = u.get("timestamp", u.get("date_time"))
            when = parse_session_time(raw_time)
            dia = u.get("dia_id")
            index = builder.message(
                cid,
                role,
                [BlockRow("text", text)],
                source_path=path,
                source_line=1,
                timestamp=when or session_time,
                is_real_user=role == "user",
                speaker=speaker,
                session_index=n,
                external_id=str(dia) if dia is not None else None,
            )
            if raw_time not in (None, "") and when is None:
                builder.skip(path, 1, f"{cid} {dia}: date {raw_time!r} not understood")
            if dia is not None:
                ids[str(dia).strip()] = schema.message_id(cid, index)
    qa = sample.get("qa")
    if qa is not None and not isinstance(qa, list):
        builder.skip(path, 1, f"{cid}: 'qa' is not a list")
        qa = []
    known = list(ids)
    locomo_layout = isinstance(sample.get("conversation"), dict)
    for q_i, q in enumerate(qa or []):
        if not isinstance(q, dict) or not isinstance(q.get("question"), str):
            builder.skip(path, 1, f"{cid} qa {q_i}: no question")
            continue
        if (problem := question_problem(q["question"])) is not None:
            builder.skip(path, 1, f"{cid} qa {q_i}: {problem}")
            continue
        evidence = q.get("evidence") or []
        if not isinstance(evidence, str | list):
            builder.skip(path, 1, f"{cid} qa {q_i}: 'evidence' is not a list of dialog ids")
            continue
        cleaned = clean_evidence([evidence] if isinstance(evidence, str) else evidence, known)
        totals["questions"] += 1
        totals["no_evidence"] += not cleaned.ids
        totals.update(cleaned.repairs)
        cat = q.get("category")
        if cat is not None:  # numbers carry LoCoMo's meanings only in LoCoMo's own layout
            cat = CATEGORIES.get(cat, str(cat)) if locomo_layout else str(cat)
        answer = q.get("answer", q.get("adversarial_answer"))
        builder.query(
            query_id=f"{cid}:q{q_i}",
            text=q["question"],
            conversation_id=cid,
            relevant=[ids[e] for e in cleaned.ids],
            category=cat,
            answer=None if answer is None else str(answer),
        )


def read_locomo(path: str | Path, *, strict: bool = False) -> tuple[Corpus, dict[str, int]]:
    """A LoCoMo-family file, or a directory of them (one or more samples per file).

    Returns the corpus (queries included) and the evidence-cleaning report: ``questions``,
    ``no_evidence`` (questions left without an evidence id: kept, not scored on retrieval) and
    the count of each repair in :data:`REPAIRS` (zeros included).

    Raises:
        LoadError: naming the file, for a file that is not of the family (always: a labelled
            set must not lose a file silently) or, in strict mode, for the first bad record.
    """
    root = Path(path)
    files = sorted(root.rglob("*.json")) if root.is_dir() else [root]
    if not files:
        raise LoadError(root, 0, f"no .json file in this directory; expected {_EXPECTED}")
    builder = CorpusBuilder(strict=strict)
    totals: Counter[str] = Counter()
    for file in files:
        read_file(file, builder, totals)
        builder.file_done(file, LocomoReader.name, 1)
    report = {"questions": totals["questions"], "no_evidence": totals["no_evidence"]}
    report.update({k: totals[k] for k in REPAIRS})
    return builder.build(), report
