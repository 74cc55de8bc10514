"""Nothing but the store's own bookkeeping is ever deleted: forged, copied and linked markers.

On the code before (format 3), ``mkdir -p f/v2 f/v0099; echo thesis > f/v2/thesis.md;
echo '{"format":1,"id":"x"}' > f/convlab-store.json; convlab index T --store f`` exited 0 and
deleted ``f/v2`` and ``f/v0099``; so did a symlink to another store's marker, ``"format": true``,
``-7``, ``"id": ""`` and ``"created": 1e400``; ``"created": "abc"`` exited 3; a folder holding
only a ``.tmp-marker-*`` directory became a store. Each case here leaves the user's folder as it
was, byte for byte, and exits 2 with one line.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from convlab.app.cli import main
from convlab.app.exits import EXIT_OK, EXIT_USAGE
from convlab.paths import sample_data_path
from convlab.store import Store
from convlab.store.marker import MARKER, read_marker
from tests.helpers import tree

T = (
    sample_data_path()
    / "transcripts/amplifier/projects/-home-dev-amp-faiss-choice/sessions/amp-faiss-choice"
    / "transcript.jsonl"
)
GOOD_ID = "0123456789abcdef0123456789abcdef"


def _index(store: Path, *extra: str) -> int:
    return main(["index", str(T), "--store", str(store), "--embedder", "hash", *extra])


def _user_folder(root: Path) -> Path:
    """The issue's folder: ``f/v2/thesis.md`` and an empty ``f/v0099``."""
    (root / "v2").mkdir(parents=True)
    (root / "v2" / "thesis.md").write_text("thesis\n")
    (root / "v0099").mkdir()
    return root


def _refused(store: Path, capsys: pytest.CaptureFixture[str], says: str) -> None:
    before = tree(store)
    capsys.readouterr()
    assert _index(store) == EXIT_USAGE
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    assert says in err[0], err[0]
    assert err[0].startswith("convlab index: ")
    assert tree(store) == before  # nothing written, nothing removed
    assert (store / "v2" / "thesis.md").read_text() == "thesis\n"


@pytest.mark.parametrize(
    ("marker", "says"),
    [
        ('{"format":1,"id":"x"}', "id 'x', not 32 hex digits"),
        (f'{{"format": true, "id": "{GOOD_ID}", "created": 1.0}}', "format True, not 1"),
        (f'{{"format": -7, "id": "{GOOD_ID}", "created": 1.0}}', "format -7, not 1"),
        (f'{{"format": 1.0, "id": "{GOOD_ID}", "created": 1.0}}', "format 1.0, not 1"),
        ('{"format": 1, "id": "", "created": 1.0}', "id '', not 32 hex digits"),
        (f'{{"format": 1, "id": "{GOOD_ID}", "created": 1e400}}', "created inf, not a time"),
        (f'{{"format": 1, "id": "{GOOD_ID}", "created": "abc"}}', "created 'abc', not a time"),
        (f'{{"format": 1, "id": "{GOOD_ID}", "created": -5}}', "created -5, not a time"),
        (f'{{"format": 1, "id": "{GOOD_ID}"}}', "created None, not a time"),
        (f'{{"format": 1, "id": "{GOOD_ID}", "created": 1, "x": 0}}', "fields created, format"),
        (f'{{"format": 1, "id": "{GOOD_ID.upper()}", "created": 1}}', "not 32 hex digits"),
        ("[1]", "not a JSON object"),
        ("[" * 4000, "not a convlab store marker (RecursionError)"),
    ],
)
def test_a_forged_marker_is_refused_and_nothing_is_touched(
    marker: str, says: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    f = _user_folder(tmp_path / "f")
    (f / MARKER).write_text(marker)
    _refused(f, capsys, says)


def test_a_marker_over_its_size_limit_is_refused_unread(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    f = _user_folder(tmp_path / "f")
    with (f / MARKER).open("wb") as fh:  # sparse: 1 GiB on paper, no blocks written
        fh.truncate(1 << 30)
    _refused(f, capsys, "larger than")


def test_a_symlink_to_another_stores_marker_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    other = tmp_path / "other"
    assert _index(other, "-q") == EXIT_OK
    f = _user_folder(tmp_path / "f")
    (f / MARKER).symlink_to(other / MARKER)
    _refused(f, capsys, "a symlink, not the marker this store wrote")


def test_a_marker_copied_from_another_store_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    other = tmp_path / "other"
    assert _index(other, "-q") == EXIT_OK
    f = _user_folder(tmp_path / "f")
    (f / MARKER).write_bytes((other / MARKER).read_bytes())  # a valid marker: a real store's
    _refused(f, capsys, f"{f / 'v0099'}: not a version of this store")
    # beside another store's live version too: the id it records is not this marker's
    (f / "v0099").rmdir()
    (f / "v2" / "thesis.md").unlink()
    (f / "v2").rmdir()
    third = tmp_path / "third"
    assert _index(third, "-q") == EXIT_OK
    live = os.readlink(third / "current")
    os.symlink(third / live, f / "current")
    before = tree(f)
    capsys.readouterr()
    assert _index(f) == EXIT_USAGE
    err = capsys.readouterr().err
    assert f"but its live version {live} records" in err
    assert tree(f) == before


@pytest.mark.parametrize("what", ["current-file", "lock-with-content"])
def test_store_names_holding_other_things_are_refused(
    what: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    f = tmp_path / "f"
    assert _index(f, "-q") == EXIT_OK
    target = f / ("current" if what == "current-file" else ".lock")
    if target.is_symlink():
        target.unlink()
    target.write_text("my notes\n")
    (f / "v2").mkdir()
    (f / "v2" / "thesis.md").write_text("thesis\n")
    _refused(f, capsys, "copied from another store? nothing was touched")


def test_a_folder_holding_only_a_tmp_marker_directory_is_not_a_store(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    f = tmp_path / "f"
    tmp = f / f".tmp-marker-{GOOD_ID}"
    tmp.mkdir(parents=True)
    (tmp / "notes.md").write_text("mine\n")
    before = tree(f)
    assert _index(f) == EXIT_USAGE
    assert "is not empty and is not a convlab store" in capsys.readouterr().err
    assert tree(f) == before


def test_in_a_real_store_only_its_own_versions_are_removed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """User folders named like versions, another store's version copied in, a listed version
    that no longer checks out: all kept; the store's own old version removed."""
    store = tmp_path / "st"
    other = tmp_path / "other"
    assert _index(store, "-q") == EXIT_OK
    assert _index(other, "-q") == EXIT_OK
    first = Store(store).current
    assert first is not None
    _user_folder(store)  # v2/thesis.md and v0099, no manifest
    foreign = store / "v7"
    shutil.copytree(other / os.readlink(other / "current"), foreign)
    pinned = Store(store)
    pinned.manifest()  # a reader holds the first version: the next write cannot remove it
    assert _index(store, "-q", "--rebuild") == EXIT_OK
    second = Store(store).current
    assert second != first
    assert first is not None
    assert first.is_dir()
    listed = json.loads((store / "current" / "manifest.json").read_text())["previous"]
    assert listed == [first.name]  # the store's own, nothing else
    (first / "notes.txt").write_text("added by hand\n")  # no longer what the store wrote
    pinned.refresh()
    before = {p: tree(store / p) for p in ("v2", "v0099", "v7", first.name)}
    capsys.readouterr()
    assert _index(store) == EXIT_OK
    err = capsys.readouterr().err
    assert f"kept {first}: it holds notes.txt, which its manifest does not list" in err
    assert {p: tree(store / p) for p in before} == before
    (first / "notes.txt").unlink()  # whole again: the next index removes it
    assert _index(store, "-q") == EXIT_OK
    assert not first.exists()
    assert sorted(p.name for p in store.iterdir() if p.name.startswith("v")) == sorted(
        ["v2", "v0099", "v7", second.name if second else ""]
    )
    assert read_marker(store) is not None


def test_a_killed_runs_temporary_version_is_removed_only_with_the_stores_id(
    tmp_path: Path,
) -> None:
    store = tmp_path / "st"
    assert _index(store, "-q") == EXIT_OK
    mine = store / ".tmp-v5"
    mine.mkdir()
    (mine / ".owner").write_text(Store(store).store_id + "\n")
    (mine / "turns.parquet").write_bytes(b"half")
    (mine / f".index.tmp-{GOOD_ID}").mkdir()  # killed inside VectorIndex.save
    theirs = store / ".tmp-v6"
    theirs.mkdir()
    (theirs / "draft.md").write_text("mine\n")
    forged = store / ".tmp-v8"
    forged.mkdir()
    (forged / ".owner").write_text(Store(store).store_id + "\n")
    (forged / "draft.md").write_text("mine too\n")  # a name no version holds
    assert _index(store, "-q") == EXIT_OK
    assert not mine.exists()
    assert (theirs / "draft.md").read_text() == "mine\n"
    assert (forged / "draft.md").read_text() == "mine too\n"
