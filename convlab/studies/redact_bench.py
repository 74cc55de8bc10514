"""Measure redaction: recall and false positives on labelled corpora, and speed on real texts.

The library of ``python -m eval.redact_bench``. The corpora live in a folder the caller names
(the repository's ``tests/fixtures/secrets``, each written by a seeded script beside it), but for
``gitleaks``, made at run time:

- ``labelled``: ``secrets.json`` (a realistic secret in the text a prompt, reply, thinking
  block, tool call, tool output or title would hold) and ``lookalikes.json`` (hashes, ids,
  lockfile strings, base64 images, ordinary code that must come out unchanged);
- ``field``: ``field_secrets.json`` and ``field_lookalikes.json``, the shapes a trial on real
  histories found stored (Twilio, Mailgun, Shopify, Discord, Datadog, Vault, Linear, New Relic,
  Postman, command-line passwords, keys wrapped or continued across lines) and their look-alikes;
- ``gitleaks``: a secret of every shape of the installed gitleaks' rules, generated from each
  rule's regex with a fixed seed (:mod:`convlab.studies.rule_corpus`), and the same texts
  with placeholders (empty where gitleaks is not installed);
- ``prose``: ``prose.json``, passwords said in prose and sentences about passwords (partial
  recall by design: measured, not promised);
- ``families`` and ``shapes``: the trial corpora, made at run time by a seeded generator
  (:mod:`convlab.studies.secret_corpus`): 40 families of stored secrets and 20 shapes of
  credentials known by where they stand, each in a user's prompt, a tool's output and a
  model's thinking, with 30 look-alikes each (also in the three places).

A secret counts as redacted when no 16-character window of any of its lines survives, so a key
cut in half is a miss. A look-alike counts as a false positive when its text changes at all.
:func:`bench` gathers every figure of one redactor, saved with its name and the exact inputs so
they can be traced.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

__all__ = [
    "CORPORA",
    "bench",
    "code_changes",
    "corpus_scores",
    "kingfisher_scores",
    "leaks",
    "load_corpus",
    "load_labelled",
    "redactor",
    "throughput",
    "transcript_texts",
]

Redactor = Callable[[str], str]
WINDOW = 16


def load_labelled(directory: str | Path) -> tuple[list[dict], list[dict]]:
    """The ``(secrets, lookalikes)`` records of a labelled corpus directory."""
    d = Path(directory)
    return (
        json.loads((d / "secrets.json").read_text(encoding="utf-8")),
        json.loads((d / "lookalikes.json").read_text(encoding="utf-8")),
    )


CORPORA = ("labelled", "field", "gitleaks", "prose", "families", "shapes")


def load_corpus(name: str, directory: str | Path) -> tuple[list[dict], list[dict]]:
    """The ``(secrets, lookalikes)`` records of one of :data:`CORPORA`."""
    d = Path(directory)

    def read(file: str) -> Any:
        return json.loads((d / file).read_text(encoding="utf-8"))

    if name == "labelled":
        return load_labelled(d)
    if name == "field":
        return read("field_secrets.json"), read("field_lookalikes.json")
    if name == "gitleaks":
        from convlab.studies.rule_corpus import build

        corpus = build()
        return corpus["positives"], corpus["negatives"]
    if name == "prose":
        prose = read("prose.json")
        said = [{**p, "kind": "prose_password", "where": "user"} for p in prose["said"]]
        none = [{**p, "kind": "prose", "where": "user"} for p in prose["none"]]
        return said, none
    if name in ("families", "shapes"):
        from convlab.studies.secret_corpus import build as build_trial

        return build_trial(name)
    raise ValueError(f"unknown corpus {name!r}; choose one of {', '.join(CORPORA)}")


_MARKER = re.compile(r"\[REDACTED:[^\]\n]*\]")


def leaks(secret: str, text: str, width: int = WINDOW) -> list[str]:
    """The pieces of ``secret`` still in ``text``: ``width``-character windows of each line.

    A redaction marker is not a leak, though its rule name may share a window with the secret
    (``bedrock-api-key-...`` in ``[REDACTED:aws-amazon-bedrock-api-key-short-lived]``).

    Example:
        >>> leaks("abcdefghijklmnopq", "key=abcdefghijklmnop[REDACTED]")
        ['abcdefghijklmnop']
    """
    text = _MARKER.sub("\0", text)
    pieces: set[str] = set()
    for line in (ln.strip() for ln in secret.splitlines()):
        if len(line) <= width:
            pieces.add(line)
        else:
            pieces.update(line[i : i + width] for i in range(len(line) - width + 1))
    return sorted(p for p in pieces if len(p) >= 6 and p in text)


def corpus_scores(
    redact: Redactor,
    secrets: Sequence[dict],
    lookalikes: Sequence[dict],
    *,
    covered: Iterable[str] | None = None,
) -> dict[str, Any]:
    """Recall and false positives of ``redact`` on a labelled corpus.

    Args:
        redact: the function under test.
        secrets: ``{id, kind, where, secret, text}`` records.
        lookalikes: ``{id, kind, where, text}`` records.
        covered: the ``where`` values the redaction runs on (a mode covering only tool
            calls and outputs: ``{"tool_input", "tool_output"}``); None = all.

    Returns:
        ``recall`` = secrets with nothing left / secrets; ``right_kind`` = those also marked
        ``[REDACTED:<kind>]``; ``false_positives`` = look-alikes changed; recall per kind and
        per place (``where``: a user's prompt, a tool's output, thinking...), look-alikes
        changed per place, and the ids of misses and false positives.
    """
    where = None if covered is None else set(covered)

    def run(item: dict) -> str:
        return redact(item["text"]) if where is None or item["where"] in where else item["text"]

    missed, wrong_kind = [], []
    per_kind: dict[str, list[int]] = {}
    per_where: dict[str, list[int]] = {}
    for item in secrets:
        out = run(item)
        ok = not leaks(item["secret"], out)
        per_kind.setdefault(item["kind"], [0, 0])[1] += 1
        per_where.setdefault(item["where"], [0, 0])[1] += 1
        if ok:
            per_kind[item["kind"]][0] += 1
            per_where[item["where"]][0] += 1
            if f"[REDACTED:{item['kind']}]" not in out:
                wrong_kind.append(item["id"])
        else:
            missed.append(item["id"])
    changed = [x["id"] for x in lookalikes if run(x) != x["text"]]
    likes_where: dict[str, list[int]] = {}
    for x in lookalikes:
        likes_where.setdefault(x["where"], [0, 0])[1] += 1
        likes_where[x["where"]][0] += x["id"] in changed
    n = len(secrets)
    return {
        "secrets": n,
        "kinds": len(per_kind),
        "redacted": n - len(missed),
        "recall": (n - len(missed)) / n if n else float("nan"),
        "right_kind": n - len(missed) - len(wrong_kind),
        "missed": missed,
        "wrong_kind": wrong_kind,
        "lookalikes": len(lookalikes),
        "false_positives": len(changed),
        "false_positive_ids": changed,
        "recall_by_kind": {k: f"{a}/{b}" for k, (a, b) in sorted(per_kind.items())},
        "recall_by_where": {k: f"{a}/{b}" for k, (a, b) in sorted(per_where.items())},
        "lookalikes_changed_by_where": {k: f"{a}/{b}" for k, (a, b) in sorted(likes_where.items())},
    }


def transcript_texts(paths: Iterable[str | Path]) -> list[str]:
    """Every text a store would redact, from the transcripts under ``paths``.

    Block texts, tool-call inputs and conversation titles, as :func:`convlab.load` reads them.
    """
    from convlab import load

    out: list[str] = []
    for p in paths:
        c = load(p)
        for column in (c.blocks["text"], c.blocks["tool_input"], c.conversations["title"]):
            out.extend(t for t in column.to_list() if t)
    return out


def throughput(redact: Redactor, texts: Sequence[str], *, min_seconds: float = 2.0) -> dict:
    """Texts/s and MB/s (UTF-8) of ``redact`` over ``texts``, repeated for at least ``min_seconds``.

    Also MB per CPU second of the fastest pass (``megabytes_per_cpu_second``), which other jobs on
    a shared machine move far less than the wall clock, and the texts changed in one pass, to
    review what fired on real data.
    """
    size = sum(len(t.encode("utf-8", "surrogatepass")) for t in texts)
    changed = sum(redact(t) != t for t in texts)
    passes, started, best_cpu = 0, time.perf_counter(), float("inf")
    while True:
        cpu = time.process_time()
        for t in texts:
            redact(t)
        best_cpu = min(best_cpu, time.process_time() - cpu)
        passes += 1
        elapsed = time.perf_counter() - started
        if elapsed >= min_seconds:
            break
    return {
        "texts": len(texts),
        "megabytes": size / 1e6,
        "passes": passes,
        "seconds": elapsed,
        "texts_per_second": passes * len(texts) / elapsed,
        "megabytes_per_second": passes * size / 1e6 / elapsed,
        "megabytes_per_cpu_second": size / 1e6 / best_cpu if best_cpu > 0 else float("inf"),
        "texts_changed": changed,
    }


def code_changes(redact: Redactor, root: str | Path, *, megabytes: float = 40.0) -> dict:
    """What ``redact`` changes in real code and docs that hold no live secret.

    Source and text files under ``root`` (a ``site-packages``, say) in a fixed shuffled order,
    up to ``megabytes``; every changed line is listed for review: a test key in a library is a
    true find, anything else a false positive. Also gives the speed on code (MB/s).
    """
    import random

    suffixes = {".py", ".md", ".rst", ".txt", ".cfg", ".toml", ".yaml", ".yml", ".ini"}
    files = sorted(p for p in Path(root).rglob("*") if p.suffix in suffixes and p.is_file())
    random.Random(0).shuffle(files)
    size, n, seconds, changes = 0, 0, 0.0, []
    for f in files:
        if size >= megabytes * 1e6:
            break
        try:
            text = f.read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError):
            continue
        n += 1
        size += len(text.encode("utf-8", "surrogatepass"))
        started = time.perf_counter()
        out = redact(text)
        seconds += time.perf_counter() - started
        if out != text:
            lines = [
                (a.strip()[:160], b.strip()[:160])
                for a, b in zip(text.splitlines(), out.splitlines(), strict=False)
                if a != b
            ]
            changes.append({"file": str(f.relative_to(root)), "lines": lines[:5]})
    return {
        "root": str(root),
        "files": n,
        "megabytes": size / 1e6,
        "seconds": seconds,
        "megabytes_per_second": size / 1e6 / seconds if seconds else float("nan"),
        "files_changed": len(changes),
        "changes": changes,
    }


def _detect_secrets(whole_lines: bool = False) -> Redactor:
    """detect-secrets (Yelp) with its default plugins and filters, as a redactor.

    Each line is scanned the way ``detect-secrets scan`` scans a file (with its false-positive
    filters), and every reported secret value is replaced by ``[REDACTED:<type>]``; with
    ``whole_lines``, every line with a finding is replaced instead (detect-secrets reports where
    a secret is, not always all of it: ``glpat`` for a GitLab token, a PEM block's header).
    """
    try:
        from detect_secrets.core.scan import _process_line_based_plugins
        from detect_secrets.settings import default_settings
    except ImportError:
        raise ImportError(
            "the detect-secrets comparison needs `pip install detect-secrets`"
        ) from None

    def redact(text: str) -> str:
        with default_settings():
            lines = list(enumerate(text.split("\n"), start=1))  # a last newline kept
            found = list(_process_line_based_plugins(lines=lines, filename="transcript.txt"))
        if whole_lines:
            hit = {s.line_number for s in found}
            return "\n".join("[REDACTED:line]" if n in hit else line for n, line in lines)
        for s in sorted(found, key=lambda s: -len(s.secret_value or "")):
            if s.secret_value:
                text = text.replace(s.secret_value, f"[REDACTED:{s.type}]")
        return text

    return redact


def redactor(name: str) -> Redactor:
    """``convlab``, ``detect-secrets`` (``-lines``: whole lines), or ``file:PATH`` (a redact.py)."""
    if name == "convlab":
        from convlab.pipeline.redact import redact

        return redact
    if name in ("detect-secrets", "detect-secrets-lines"):
        return _detect_secrets(whole_lines=name.endswith("-lines"))
    if name.startswith("file:"):
        spec = importlib.util.spec_from_file_location("_other_redact", name[5:])
        if spec is None or spec.loader is None:
            raise ValueError(f"cannot import {name[5:]}")
        module = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = module  # dataclasses look their module up there
        spec.loader.exec_module(module)
        return module.redact
    raise ValueError(
        f"unknown redactor {name!r}; choose convlab, detect-secrets, detect-secrets-lines or "
        "file:PATH"
    )


def kingfisher_scores(binary: Path) -> dict[str, Any]:
    """Kingfisher (MongoDB's secret scanner) on the trial corpora, scored as convlab is.

    Kingfisher scans files, one process per scan, so every text of the ``families`` and
    ``shapes`` corpora is written to its own file and all are scanned once (``--no-validate -c
    low``: nothing is sent anywhere, every finding kept); each finding's snippet is then
    replaced in its text and :func:`corpus_scores` scores the result. The ``kingfisher-bin``
    wheel ships the binary (``pip install --target DIR --no-deps kingfisher-bin``).
    """
    import subprocess
    import tempfile

    out: dict[str, Any] = {"redactor": f"kingfisher:{binary}"}
    for name in ("families", "shapes"):
        secrets, lookalikes = load_corpus(name, ".")
        records = [*secrets, *lookalikes]
        with tempfile.TemporaryDirectory() as folder:
            for r in records:
                Path(folder, f"{r['id']}.txt").write_text(r["text"], encoding="utf-8")
            found = Path(folder) / "findings.json"
            command = [str(binary), "scan", folder, "--no-validate", "-c", "low", "--no-dedup"]
            command += ["--no-rule-cache", "-f", "json", "-o", str(found)]
            subprocess.run(command, capture_output=True, check=False, timeout=600)
            findings = json.loads(found.read_text(encoding="utf-8").splitlines()[-1])["findings"]
        snippets: dict[str, list[str]] = {}
        for f in findings:
            snippet = f["finding"]["snippet"]
            snippets.setdefault(Path(f["finding"]["path"]).stem, []).append(snippet)
        ids = {r["text"]: r["id"] for r in records}

        def redact(
            text: str, snippets: dict[str, list[str]] = snippets, ids: dict[str, str] = ids
        ) -> str:
            for snippet in sorted(snippets.get(ids[text], []), key=len, reverse=True):
                text = text.replace(snippet, "[REDACTED:kingfisher]") if snippet else text
            return text

        out[name] = corpus_scores(redact, secrets, lookalikes)
    return out


def bench(
    name: str,
    corpus: Path,
    *,
    texts: Sequence[Path] = (),
    min_seconds: float = 2.0,
    code: Path | None = None,
    code_megabytes: float = 40.0,
) -> dict[str, Any]:
    """Every figure of the redactor ``name`` (:func:`redactor`): corpora, speed, code.

    Args:
        name: the redactor.
        corpus: the folder of the labelled corpora (``tests/fixtures/secrets``).
        texts: transcripts whose texts time the redactor (none: no ``throughput``).
        min_seconds: the least time the throughput is measured over.
        code: a tree of code to look for false positives in (none: no ``code``).
        code_megabytes: how much of it.
    """
    redact = redactor(name)
    secrets, lookalikes = load_labelled(corpus)
    result: dict[str, Any] = {
        "redactor": name,
        "corpus": str(corpus),
        "all_texts": corpus_scores(redact, secrets, lookalikes),
        "tool_calls_and_outputs_only": corpus_scores(
            redact, secrets, lookalikes, covered={"tool_input", "tool_output"}
        ),
    }
    for corpus_name in CORPORA[1:]:
        result[corpus_name] = corpus_scores(redact, *load_corpus(corpus_name, corpus))
    if texts:
        result["throughput"] = {
            "paths": [str(p) for p in texts],
            "cpu_count": os.cpu_count(),
            **throughput(redact, transcript_texts(texts), min_seconds=min_seconds),
        }
    if code:
        result["code"] = code_changes(redact, code, megabytes=code_megabytes)
    return result
