"""Shared fixtures: where the shared samples and LoCoMo are; the data they need must exist in CI."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from convlab.embed import MiniLMEmbedder
from convlab.paths import locomo_path, shared_dir


def _need(path: Path, what: str) -> Path:
    if path.exists():
        return path
    msg = f"{what} not found at {path}"
    if os.environ.get("CI"):
        pytest.fail(f"{msg}: CI must have it (../shared beside the clone)")
    pytest.skip(msg)


@pytest.fixture(scope="session")
def minilm() -> MiniLMEmbedder:
    """The real all-MiniLM-L6-v2 embedder (torch), loaded once per test session."""
    return MiniLMEmbedder()


@pytest.fixture(scope="session")
def shared() -> Path:
    """The shared folder (../shared), failing under CI when it is missing."""
    return _need(shared_dir(), "shared folder")


@pytest.fixture(scope="session")
def transcripts(shared: Path) -> Path:
    """The real transcript samples, per format."""
    return _need(shared / "transcripts", "transcript samples")


@pytest.fixture(scope="session")
def locomo_file() -> Path:
    """LoCoMo's locomo10.json, failing under CI when it is missing."""
    try:
        return locomo_path()
    except FileNotFoundError as exc:
        if os.environ.get("CI"):
            pytest.fail(str(exc))
        pytest.skip(str(exc))


@pytest.fixture(scope="session")
def longmemeval_oracle() -> Path:
    """LongMemEval's oracle file: ``CONVLAB_DATA`` (a datasets folder) or ../shared/datasets."""
    data = os.environ.get("CONVLAB_DATA")
    roots = [Path(data)] if data else []
    roots.append(shared_dir() / "datasets")
    for root in roots:
        if root.is_file() and root.name == "longmemeval_oracle.json":
            return root
        if (root / "longmemeval" / "longmemeval_oracle.json").is_file():
            return root / "longmemeval" / "longmemeval_oracle.json"
    return _need(roots[-1] / "longmemeval" / "longmemeval_oracle.json", "LongMemEval oracle")


# Test tiers (markers): a test that takes one of these fixtures is in its tier, marked or not, so
# `make test` can run the tiers in order (core, model, locomo, notebooks, browser).
_TIER_OF_FIXTURE = {"minilm": "model", "locomo_file": "locomo", "longmemeval_oracle": "locomo"}


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark every test by the tiers of the fixtures it takes."""
    for item in items:
        for fixture, tier in _TIER_OF_FIXTURE.items():
            if fixture in getattr(item, "fixturenames", ()):
                item.add_marker(tier)
