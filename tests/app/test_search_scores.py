"""``convlab search``: what the scores are (``score_kind``, a last ``scores:`` line), ``--now``."""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from pathlib import Path

import pytest

from convlab.app.cli import main
from convlab.app.exits import EXIT_OK, EXIT_USAGE
from convlab.paths import sample_data_path
from tests.helpers import index_argv


@pytest.fixture(scope="module")
def sample_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The bundled sample indexed with the hash embedder."""
    out = tmp_path_factory.mktemp("scores") / "store"
    src = sample_data_path() / "transcripts"
    assert main(index_argv(src, str(out))) == EXIT_OK
    return out


def _hits(capsys: pytest.CaptureFixture[str], *argv: str) -> list[dict[str, object]]:
    assert main(["search", *argv, "--json"]) == EXIT_OK
    return [json.loads(line) for line in capsys.readouterr().out.splitlines()]


@pytest.mark.parametrize(
    ("flags", "kind"),
    [
        ((), "cosine"),
        (("--lexical",), "bm25"),
        (("--hybrid",), "rrf"),
        (("--hybrid", "--recency", "--density"), "rrf+recency+density"),
        (("--lexical", "--mmr", "0.7"), "mmr"),
    ],
)
def test_json_hits_say_which_score_they_show(
    sample_store: Path, capsys: pytest.CaptureFixture[str], flags: tuple[str, ...], kind: str
) -> None:
    hits = _hits(capsys, "faiss index", "--store", str(sample_store), "-k", "5", *flags)
    assert hits
    assert {h["score_kind"] for h in hits} == {kind}


def test_people_see_a_scores_line_and_mmr_scores_fall_with_rank(
    sample_store: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["search", "faiss index", "--store", str(sample_store), "-k", "8"]
    assert main([*argv, "--hybrid"]) == EXIT_OK
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("1. ")  # `| head -1` reads the first hit
    assert out[-1].startswith("scores: rrf (Weighted reciprocal rank fusion")
    # MMR's value when picked never rises, so the printed scores fall with rank
    hits = _hits(capsys, *argv[1:], "--hybrid", "--mmr", "0.5")
    scores = [float(str(h["score"])) for h in hits]
    assert len(scores) == 8
    assert scores == sorted(scores, reverse=True)


def test_recency_counts_age_from_now_or_the_given_time(
    sample_store: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["faiss index", "--store", str(sample_store), "-k", "3"]
    plain = _hits(capsys, *argv)
    hit = next(h for h in plain if h["timestamp"])
    when = datetime.fromisoformat(str(hit["timestamp"]))
    # the sample is older than 14 days: from today nothing is boosted
    today = {h["doc_id"]: h["score"] for h in _hits(capsys, *argv, "--recency")}
    assert today == {h["doc_id"]: h["score"] for h in plain}
    # from the hit's own time it is of age 0: x 1.2; from 7 days later, x 1.1
    at = {h["doc_id"]: h["score"] for h in _hits(capsys, *argv, "--recency", "--now", str(when))}
    assert at[hit["doc_id"]] == pytest.approx(float(str(hit["score"])) * 1.2, abs=2e-4)
    week = when + timedelta(days=7)
    later = _hits(capsys, *argv, "--recency", "--now", week.isoformat())
    got = {h["doc_id"]: h["score"] for h in later}
    assert got[hit["doc_id"]] == pytest.approx(float(str(hit["score"])) * 1.1, abs=2e-4)
    assert main(["search", *argv, "--recency", "--now", "soon"]) == EXIT_USAGE
    assert "--now" in capsys.readouterr().err
