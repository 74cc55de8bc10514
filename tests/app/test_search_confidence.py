"""``convlab search``: no confident match says so and exits 1; ``--min-confidence``; JSON."""

from __future__ import annotations

import json
import math
from pathlib import Path

import msgspec
import pytest

from convlab.app.cli import main
from convlab.app.exits import EXIT_NO_RESULTS, EXIT_OK, EXIT_USAGE
from convlab.paths import sample_data_path
from convlab.systems.confidence import FEATURES, ConfidenceModel, load_model
from tests.helpers import index_argv

ANSWERED = "IndexHNSWFlat efConstruction"  # both terms are in the FAISS session
NOWHERE = "kafka tenant sharding"  # none of them is anywhere in the sample


@pytest.fixture(scope="module")
def sample_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The bundled sample indexed with the hash embedder (the default system)."""
    out = tmp_path_factory.mktemp("confidence") / "store"
    argv = index_argv(sample_data_path() / "transcripts", str(out), system="default")
    assert main(argv) == EXIT_OK
    return out


@pytest.fixture
def model(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> ConfidenceModel:
    """A model reading only the share of query terms in the first hit: sigmoid(2 m - 1)."""
    m = ConfidenceModel(
        system="fusion:convex",
        features=FEATURES,
        mean=(0.0,) * 6,
        scale=(1.0,) * 6,
        coef=(0.0, 0.0, 0.0, 2.0, 0.0, 0.0),
        intercept=-1.0,
        threshold=0.5,
    )
    path = tmp_path / "confidence.json"
    path.write_bytes(msgspec.json.encode(m))
    monkeypatch.setattr("convlab.systems.confidence.MODEL_FILE", path)
    assert load_model() == m
    return m


def test_a_confident_search_prints_its_hits(
    sample_store: Path, model: ConfidenceModel, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["search", ANSWERED, "--store", str(sample_store), "-k", "2", "--json"]) == EXIT_OK
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert len(rows) == 2
    # both terms are in the first hit: sigmoid(2 * 1 - 1)
    assert {r["confidence"] for r in rows} == {round(1 / (1 + math.exp(-1)), 3)}


def test_no_confident_match_says_so_and_exits_1(
    sample_store: Path, model: ConfidenceModel, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["search", NOWHERE, "--store", str(sample_store)]) == EXIT_NO_RESULTS
    out, err = capsys.readouterr()
    assert out == ""
    low = 1 / (1 + math.exp(1))  # nothing matched: sigmoid(-1) = 0.27
    assert err == (
        f"convlab search: no confident match for {NOWHERE!r} (confidence {low:.2f}, below "
        "0.50); --min-confidence 0 shows the closest hits\n"
    )
    # --json still prints the hits, each with the confidence, and exits 1 too
    assert main(["search", NOWHERE, "--store", str(sample_store), "--json"]) == EXIT_NO_RESULTS
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert rows
    assert {r["confidence"] for r in rows} == {round(low, 3)}
    # a lower threshold, or none, keeps the search
    for least in ("0.2", "0"):
        argv = ["search", NOWHERE, "--store", str(sample_store), "--min-confidence", least]
        assert main(argv) == EXIT_OK
        assert capsys.readouterr().out


def test_min_confidence_is_refused_outside_0_1_and_for_another_system(
    sample_store: Path, model: ConfidenceModel, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["search", NOWHERE, "--store", str(sample_store)]
    assert main([*argv, "--min-confidence", "1.5"]) == EXIT_USAGE
    assert "within 0..1" in capsys.readouterr().err
    assert main([*argv, "--lexical", "--min-confidence", "0.3"]) == EXIT_USAGE
    assert "fitted for the system 'fusion:convex'" in capsys.readouterr().err
    # another system has no confidence: its hits are shown, the confidence null
    argv = ["search", ANSWERED, "--store", str(sample_store)]
    assert main([*argv, "--lexical", "--json"]) == EXIT_OK
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert rows
    assert {r["confidence"] for r in rows} == {None}
