"""Format detection: readers are tried by their registered priority, not by import order."""

from __future__ import annotations

from pathlib import Path

import pytest

from convlab.loaders import registry
from convlab.loaders.base import CorpusBuilder
from convlab.loaders.registry import detect, register_format
from convlab.registry import Registry


def _fake(format_name: str, accepts: bytes) -> type:
    class Fake:
        name = format_name

        def sniff(self, path: Path, head: bytes) -> bool:
            return head.startswith(accepts)

        def companion(self, path: Path) -> bool:
            return False

        def read(self, path: Path, builder: CorpusBuilder) -> int:
            return 0

    return Fake


def test_detection_follows_priority_not_registration_order(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(registry, "FORMATS", Registry("format"))
    # both sniffers accept a file starting "{"; the one registered second has the lower priority
    register_format(priority=20)(_fake("zz_broad", b"{"))
    register_format(priority=10)(_fake("zz_narrow", b"{"))
    register_format(priority=5)(_fake("zz_other", b"#"))
    both = tmp_path / "a.json"
    both.write_text('{"x": 1}')
    other = tmp_path / "b.md"
    other.write_text("# notes")
    assert detect(both) == "zz_narrow"
    assert detect(other) == "zz_other"
    assert [name for name, _ in registry.FORMATS.in_order()] == [
        "zz_other",
        "zz_narrow",
        "zz_broad",
    ]


def test_equal_priorities_are_tried_by_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(registry, "FORMATS", Registry("format"))
    register_format(priority=10)(_fake("zz_b", b"{"))
    register_format(priority=10)(_fake("zz_a", b"{"))
    f = tmp_path / "a.json"
    f.write_text("{}")
    assert detect(f) == "zz_a"


def test_a_reader_without_the_protocol_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(registry, "FORMATS", Registry("format"))

    class NotAReader:
        name = "zz_bad"

    with pytest.raises(TypeError, match="Reader protocol"):
        register_format(priority=1)(NotAReader)
    assert len(registry.FORMATS) == 0
