"""A store knows it is a store (issue 25, item 1): a folder that is not one is never written.

On the code before the marker (commit 14bdfb6), ``convlab index T --store notes`` on a folder
holding ``notes/v2/chapter.md`` deleted ``notes/v2`` with exit 0; ``--store /etc/passwd`` exited 3;
a ``{}`` manifest made ``stats`` exit 3 (``KeyError: 'model_id'``) and plain ``index`` refuse it.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from convlab.app.cli import main
from convlab.app.exits import EXIT_OK, EXIT_USAGE
from convlab.paths import sample_data_path
from convlab.store import NotAStore, Store, StoreConfig
from convlab.store.marker import MARKER, MARKER_FORMAT, claim, read_marker
from tests.helpers import tree

T = (
    sample_data_path()
    / "transcripts/amplifier/projects/-home-dev-amp-faiss-choice/sessions/amp-faiss-choice"
    / "transcript.jsonl"
)


def _index(store: Path | str, *extra: str) -> int:
    return main(["index", str(T), "--store", str(store), "--embedder", "hash", "-q", *extra])


def _one_line(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    return lines[0]


def test_a_folder_that_is_not_a_store_is_refused_and_untouched(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    notes = tmp_path / "notes"
    (notes / "v2").mkdir(parents=True)
    (notes / "v2" / "chapter.md").write_text("draft\n")
    (notes / "v7").mkdir()
    (notes / "current").symlink_to("v7")
    before = tree(notes)
    assert _index(notes) == EXIT_USAGE
    line = _one_line(capsys.readouterr().err)
    assert line.startswith(f"convlab index: {notes} is not empty and is not a convlab store")
    assert (notes / "v2" / "chapter.md").read_text() == "draft\n"
    assert tree(notes) == before  # no marker, no lock, no cache: nothing touched


def test_the_issue_reproduction(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """`mkdir -p notes/v2; echo draft > notes/v2/chapter.md; convlab index T --store notes`."""
    monkeypatch.chdir(tmp_path)
    Path("notes/v2").mkdir(parents=True)
    Path("notes/v2/chapter.md").write_text("draft\n")
    argv = ["index", str(T), "--store", "notes", "--embedder", "hash"]  # not quiet
    assert main(argv) == EXIT_USAGE
    assert _one_line(capsys.readouterr().err) == (
        "convlab index: notes is not empty and is not a convlab store (no convlab-store.json); "
        "give --store a new or empty folder"
    )
    assert Path("notes/v2/chapter.md").read_text() == "draft\n"
    assert sorted(os.listdir("notes")) == ["v2"]


def test_a_file_as_store_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert _index("/etc/passwd") == EXIT_USAGE
    assert _one_line(capsys.readouterr().err) == (
        "convlab index: /etc/passwd is not a folder; give --store a new or empty folder"
    )


def test_new_and_empty_folders_become_stores(tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    for store in (tmp_path / "new" / "deep", empty):
        assert _index(store) == EXIT_OK
        marker = read_marker(store)
        assert marker is not None
        assert marker.format == MARKER_FORMAT
        assert len(marker.id) == 32
        first = marker.id
        assert _index(store) == EXIT_OK  # the same store again: the id is kept
        assert read_marker(store) == marker
        assert first == marker.id


def test_a_store_without_its_marker_is_not_adopted(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # issue 24: stores written before markers are no longer adopted (older formats are refused)
    store = tmp_path / "old"
    assert _index(store) == EXIT_OK
    (store / MARKER).unlink()  # as the code before markers left it
    version = os.readlink(store / "current")
    capsys.readouterr()
    assert _index(store) == EXIT_USAGE
    assert "is not empty and is not a convlab store" in _one_line(capsys.readouterr().err)
    assert read_marker(store) is None
    assert os.readlink(store / "current") == version  # untouched


def test_a_damaged_marker_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    store = tmp_path / "st"
    assert _index(store) == EXIT_OK
    (store / MARKER).write_text('{"format": 99, "id": "x"}')
    assert _index(store) == EXIT_USAGE
    assert "a store of a newer convlab" in _one_line(capsys.readouterr().err)
    (store / MARKER).write_text("[]")
    with pytest.raises(NotAStore, match="not a convlab store marker"):
        claim(store)


def test_two_claims_of_one_empty_folder_agree(tmp_path: Path) -> None:
    assert claim(tmp_path) == claim(tmp_path)


def test_leftovers_are_removed_only_in_a_store(tmp_path: Path) -> None:
    from convlab.store.versions import remove_leftovers

    notes = tmp_path / "notes"
    (notes / "v2").mkdir(parents=True)
    (notes / ".tmp-v3").mkdir()
    remove_leftovers(notes, (notes / "v9",), store_id="0" * 32)
    assert sorted(os.listdir(notes)) == [".tmp-v3", "v2"]


@pytest.mark.parametrize("rebuild", [False, True])
def test_an_empty_manifest_is_refused_by_readers_and_repaired_by_index(
    rebuild: bool, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = tmp_path / "st"
    assert _index(store) == EXIT_OK
    units = Store(store).frame("units").height
    version = store / os.readlink(store / "current")
    (version / "manifest.json").write_text("{}")
    capsys.readouterr()
    for command in (["stats"], ["search", "faiss"], ["show", "amp-faiss-choice"]):
        assert main([*command, "--store", str(store)]) == EXIT_USAGE
        line = _one_line(capsys.readouterr().err)
        assert f"{version / 'manifest.json'}: not a convlab manifest (no format)" in line
        assert f"run `convlab index PATH --store {store} --rebuild` to repair" in line
    assert _index(store, *(["--rebuild"] if rebuild else [])) == EXIT_OK
    assert main(["stats", "--store", str(store), "--verify"]) == EXIT_OK
    assert Store(store).frame("units").height == units
    manifest = json.loads((store / "current" / "manifest.json").read_text())
    assert manifest["model_id"] == "hash-64"


def test_library_update_refuses_a_folder_that_is_not_a_store(tmp_path: Path) -> None:
    from convlab.embed import HashEmbedder

    (tmp_path / "v1").mkdir()
    with pytest.raises(NotAStore):
        Store(tmp_path).update([T], config=StoreConfig(), embedder=HashEmbedder())
    assert os.listdir(tmp_path) == ["v1"]


@pytest.mark.parametrize(
    ("manifest", "says"),
    [
        ({"format": 4, "model_id": 5, "config": {}}, "Expected `str`, got `int` - at `$.model_id`"),
        ({"format": 4, "model_id": "m", "config": []}, "got `array` - at `$.config`"),
        ({"format": "2", "model_id": "m", "config": {}, "counts": {}, "files": {}}, "format"),
        ([], "not a JSON object"),
        ("{", "unreadable (JSONDecodeError)"),
    ],
)
def test_other_damaged_manifests_exit_2(
    manifest: object, says: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = tmp_path / "st"
    assert _index(store) == EXIT_OK
    path = store / os.readlink(store / "current") / "manifest.json"
    path.write_text(manifest if isinstance(manifest, str) else json.dumps(manifest))
    capsys.readouterr()
    for command in (["stats"], ["search", "faiss"]):
        assert main([*command, "--store", str(store)]) == EXIT_USAGE
        line = _one_line(capsys.readouterr().err)
        assert f"{path}: " in line
        assert says in line
        assert line.endswith(f"run `convlab index PATH --store {store} --rebuild` to repair")
    assert _index(store) == EXIT_OK
    assert main(["stats", "--store", str(store)]) == EXIT_OK
