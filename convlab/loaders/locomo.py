"""LoCoMo-style dialog datasets (Maharana et al., 2024): two speakers, dated sessions, QA.

One conversation per sample (``conversation_id = sample_id``, ``kind="dialog"``); every utterance
is one message in session order: role ``user`` for ``speaker_a`` and ``assistant`` for
``speaker_b`` (``speaker`` keeps the name), ``session_index`` = N of ``session_N``, the timestamp
parsed from ``session_N_date_time`` ("1:56 pm on 8 May, 2023", read as UTC; a per-utterance
``timestamp``/``date_time`` wins when a variant has one), ``external_id`` = ``dia_id``. An
utterance that shares an image gets `` [shares a photo: {blip_caption}]`` appended to its text.

The QA list becomes labelled queries (``corpus.queries``): ``relevant`` holds the message ids of
the evidence ``dia_id``s, after :func:`clean_evidence` (malformed ids such as ``"D8:6; D9:17"``
or ``"D:11:26"`` are repaired, ids that name no utterance are dropped, and both are counted in
:data:`LAST_EVIDENCE_REPORT` and in :func:`evidence_report`). Categories per the official code:
1 multi-hop, 2 temporal, 3 open-domain, 4 single-hop, 5 adversarial (whose answer is
``adversarial_answer``).

Liberal in what it accepts from the same family: the utterance text may be ``text``,
``clean_text``, ``content`` or ``utterance``; the dialog may sit under ``conversation`` or
``dialog``; the file may be one sample or a list.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from convlab import schema
from convlab.loaders.base import BlockRow, CorpusBuilder, parse_time
from convlab.loaders.files import load_json_file
from convlab.loaders.registry import register_format

__all__ = ["CATEGORIES", "EvidenceCleaning", "clean_evidence", "evidence_report"]

CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}
TEXT_FIELDS = ("text", "clean_text", "content", "utterance")
_ID = re.compile(r"D\s*:?\s*(\d+)\s*:\s*(\d+)")
_SESSION = re.compile(r"session_(\d+)$")


@dataclass(frozen=True, slots=True)
class EvidenceCleaning:
    """Evidence ids after cleaning, and what was done to them."""

    ids: list[str]
    n_fixed: int = 0
    n_dropped: int = 0
    notes: list[str] = field(default_factory=list)


def clean_evidence(raw: list[Any], known: set[str]) -> EvidenceCleaning:
    """Split, repair and check evidence ids against the utterance ids ``known``.

    ``"D8:6; D9:17"`` and ``"D9:1 D4:4"`` are split (fixed), ``"D:11:26"`` becomes ``"D11:26"``
    (fixed), ``"D"`` or an id that names no utterance is dropped. Duplicates are kept once.

    Example:
        >>> clean_evidence(["D1:2; D1:3", "D", "D:1:4"], {"D1:2", "D1:3", "D1:4"}).ids
        ['D1:2', 'D1:3', 'D1:4']
    """
    ids: list[str] = []
    fixed = dropped = 0
    notes: list[str] = []
    for item in raw:
        if not isinstance(item, str):
            dropped += 1
            notes.append(f"not a string: {item!r}")
            continue
        found = [f"D{s}:{i}" for s, i in _ID.findall(item)]
        if not found:
            dropped += 1
            notes.append(f"malformed: {item!r}")
            continue
        if len(found) > 1 or found[0] != item.strip():
            fixed += 1
            notes.append(f"repaired: {item!r} -> {found}")
        for f in found:
            if f not in known:
                dropped += 1
                notes.append(f"no such utterance: {f}")
            elif f not in ids:
                ids.append(f)
    return EvidenceCleaning(ids, fixed, dropped, notes)


LAST_EVIDENCE_REPORT: dict[str, int] = {}
"""Totals of the last LoCoMo file read: questions, evidence ids fixed and dropped."""


def evidence_report() -> dict[str, Any]:
    """Totals of evidence cleaning for the last LoCoMo file read (see :func:`clean_evidence`)."""
    return dict(LAST_EVIDENCE_REPORT)


def parse_session_time(value: Any) -> datetime | None:
    """Parse LoCoMo's ``"1:56 pm on 8 May, 2023"`` (or ISO) as UTC."""
    if not isinstance(value, str):
        return parse_time(value)
    s = " ".join(value.split())
    for fmt in ("%I:%M %p on %d %B, %Y", "%I:%M %p on %d %b, %Y", "%I:%M%p on %d %B, %Y"):
        try:
            return datetime.strptime(s, fmt).replace(tzinfo=UTC)
        except ValueError:
            continue
    return parse_time(s)


@register_format
class LocomoReader:
    """Reader for LoCoMo ``locomo10.json`` and datasets of its family."""

    name = "locomo"

    def sniff(self, path: Path, head: bytes) -> bool:
        """A JSON file whose samples have ``qa`` and a ``conversation`` with speakers."""
        if path.suffix.lower() != ".json":
            return False
        text = head.decode("utf-8", "ignore")
        return '"speaker_a"' in text and ('"session_1"' in text or '"dia_id"' in text)

    def companion(self, path: Path) -> bool:
        """LoCoMo has no side files."""
        return False

    def read(self, path: Path, builder: CorpusBuilder) -> int:
        """Read every sample of the file."""
        data = load_json_file(path)  # LoadError naming the line, deep nesting included
        samples = data if isinstance(data, list) else [data]
        totals = {"questions": 0, "evidence_fixed": 0, "evidence_dropped": 0, "no_evidence": 0}
        for i, sample in enumerate(samples):
            if not isinstance(sample, dict):
                builder.skip(path, 1, f"sample {i} is not an object")
                continue
            self._sample(path, i, sample, builder, totals)
        LAST_EVIDENCE_REPORT.clear()
        LAST_EVIDENCE_REPORT.update(totals)
        return 1

    def _sample(
        self,
        path: Path,
        i: int,
        sample: dict[str, Any],
        builder: CorpusBuilder,
        totals: dict[str, int],
    ) -> None:
        conv = sample.get("conversation") or sample.get("dialog")
        if not isinstance(conv, dict):
            builder.skip(path, 1, f"sample {i} has no conversation")
            return
        a, b = conv.get("speaker_a"), conv.get("speaker_b")
        cid = str(sample.get("sample_id") or f"{path.stem}-{i}")
        builder.conversation(
            cid,
            source_format=self.name,
            source_path=path,
            title=f"{a} & {b}" if a and b else None,
            kind="dialog",
        )
        sessions = sorted((int(m.group(1)), k) for k in conv if (m := _SESSION.match(k)))
        ids: dict[str, str] = {}
        for n, key in sessions:
            utterances = conv.get(key)
            if not isinstance(utterances, list):
                builder.skip(path, 1, f"{cid} {key} is not a list")
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
                role = "user" if speaker == a or (a is None and not ids) else "assistant"
                when = parse_time(u.get("timestamp")) or parse_session_time(u.get("date_time"))
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
                if dia is not None:
                    ids[str(dia)] = schema.message_id(cid, index)
        qa = sample.get("qa") or []
        for q_i, q in enumerate(qa if isinstance(qa, list) else []):
            if not isinstance(q, dict) or not isinstance(q.get("question"), str):
                builder.skip(path, 1, f"{cid} qa {q_i}: no question")
                continue
            cleaned = clean_evidence(list(q.get("evidence") or []), set(ids))
            totals["questions"] += 1
            totals["evidence_fixed"] += cleaned.n_fixed
            totals["evidence_dropped"] += cleaned.n_dropped
            totals["no_evidence"] += not cleaned.ids
            cat = q.get("category")
            answer = q.get("answer", q.get("adversarial_answer"))
            builder.query(
                query_id=f"{cid}:q{q_i}",
                text=q["question"],
                conversation_id=cid,
                relevant=[ids[e] for e in cleaned.ids],
                category=CATEGORIES.get(cat, str(cat)) if cat is not None else None,
                answer=None if answer is None else str(answer),
            )
