"""A self-checking store (issue 16, defect 5): every kind of damage is detected and repaired.

Each kind is detected on open (``convlab stats``) or on ``convlab stats --verify`` with exit 2 and
one line naming the damaged file, and a plain ``update`` (what ``convlab index`` runs) repairs it
from the transcripts and the embedding cache, embedding 0 texts, to a store equal to a clean one.
On the code before the fix (commit 9d3fb91) none of this held: no hashes were recorded.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from convlab.app.cli import main
from convlab.embed import HashEmbedder
from convlab.store import Store, StoreConfig, StoreDamaged
from convlab.store import manifest as store_manifest
from tests.helpers import CountingHash, small_history
from tests.store.manifests import resign

CONFIG = StoreConfig(system="turn_pair")
FRAMES = ("conversations", "messages", "turns", "chunks", "units")


@pytest.fixture(scope="module")
def history(transcripts: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return small_history(transcripts, tmp_path_factory.mktemp("damage"))


@pytest.fixture(scope="module")
def clean(history: Path) -> Path:
    """A clean store of ``history``, copied by each test before it is damaged."""
    directory = history.parent / "clean"
    Store(directory).update([history], config=CONFIG, embedder=HashEmbedder())
    return directory


def _flip(rel: str, where: float = 0.5) -> Callable[[Path], None]:
    def damage(version: Path) -> None:
        path = version / rel
        data = bytearray(path.read_bytes())
        data[int(len(data) * where)] ^= 0xFF
        path.write_bytes(bytes(data))

    return damage


def _truncate(rel: str) -> Callable[[Path], None]:
    def damage(version: Path) -> None:
        path = version / rel
        path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])

    return damage


def _delete(version: Path, rel: str) -> None:
    (version / rel).unlink()


def _edit_manifest(version: Path) -> None:
    m = json.loads((version / "manifest.json").read_text())
    m["counts"]["units"] += 1
    (version / "manifest.json").write_text(json.dumps(m))


def _not_unit_norm(version: Path) -> None:
    """Vectors scaled by 3 and the manifest re-signed: only the unit-norm check can tell."""
    path = version / "index" / "vectors.npy"
    np.save(path, np.load(path) * 3, allow_pickle=False)
    resign(version)


def _dangling_current(version: Path) -> None:
    shutil.rmtree(version)


# (damage, file named in the error, detected on a plain open or only by --verify)
DAMAGE: dict[str, tuple[Callable[[Path], None], str, str]] = {
    "vectors flipped": (_flip("index/vectors.npy", 0.9), "vectors.npy", "verify"),
    "faiss flipped": (_flip("index/index.faiss"), "index.faiss", "verify"),
    "conversations flipped": (_flip("conversations.parquet"), "conversations.parquet", "open"),
    "turns flipped": (_flip("turns.parquet"), "turns.parquet", "verify"),
    "chunks flipped": (_flip("chunks.parquet"), "chunks.parquet", "verify"),
    "units flipped": (_flip("units.parquet"), "units.parquet", "open"),
    "index units flipped": (_flip("index/units.arrow"), "index/units.arrow", "verify"),
    "index manifest flipped": (_flip("index/manifest.json"), "index/manifest.json", "verify"),
    "vectors truncated": (_truncate("index/vectors.npy"), "vectors.npy", "open"),
    "faiss truncated": (_truncate("index/index.faiss"), "index.faiss", "open"),
    "units deleted": (lambda v: _delete(v, "units.parquet"), "units.parquet", "open"),
    "chunks zero-length": (
        lambda v: (v / "chunks.parquet").write_bytes(b""),
        "chunks.parquet",
        "open",
    ),
    "index manifest deleted": (
        lambda v: _delete(v, "index/manifest.json"),
        "index/manifest.json",
        "open",
    ),
    "manifest edited": (_edit_manifest, "manifest.json", "open"),
    "manifest truncated": (_truncate("manifest.json"), "manifest.json", "open"),
    "vectors not unit length": (_not_unit_norm, "vectors.npy", "verify"),
    "current dangling": (_dangling_current, "current", "open"),
    "bm25 vocabulary flipped": (_flip("bm25/vocab.index.json"), "vocab.index.json", "verify"),
    "bm25 scores truncated": (_truncate("bm25/data.csc.index.npy"), "data.csc.index.npy", "open"),
}


def _stats(directory: Path, capsys: pytest.CaptureFixture[str], *extra: str) -> tuple[int, str]:
    code = main(["stats", "--store", str(directory), *extra])
    out = capsys.readouterr()
    return code, out.err


@pytest.mark.parametrize("kind", sorted(DAMAGE))
def test_damage_is_detected_and_repaired(
    kind: str, history: Path, clean: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    damage, named, detected_on = DAMAGE[kind]
    directory = tmp_path / "store"
    shutil.copytree(clean, directory, symlinks=True)
    assert _stats(directory, capsys, "--verify")[0] == 0  # the copy is sound
    damage(Store(directory).version)

    code, err = _stats(directory, capsys)
    if detected_on == "open":
        assert code == 2
    else:
        assert code == 0, err  # sizes are right: only the hashes (or norms) can tell
        code, err = _stats(directory, capsys, "--verify")
        assert code == 2
    assert len(err.strip().splitlines()) == 1
    assert named in err
    assert "`convlab index" in err  # the repair is named

    emb = CountingHash()
    summary = Store(directory).update([history], config=CONFIG, embedder=emb)
    assert summary.repaired
    assert summary.wrote_version
    assert emb.texts == 0 == summary.texts_embedded
    assert _stats(directory, capsys, "--verify")[0] == 0
    repaired, reference = Store(directory), Store(clean)
    for name in FRAMES:
        assert repaired.frame(name).equals(reference.frame(name)), name
    a, b = repaired.index(), reference.index()
    assert a.units.equals(b.units)
    assert np.array_equal(a.vectors(np.arange(len(a))), b.vectors(np.arange(len(b))))
    lexical, lexical_ref = repaired.bm25(), reference.bm25()
    assert lexical is not None
    assert lexical_ref is not None
    query = " ".join(a.units["text"][0].split()[:6])
    assert lexical.scores(query).max() > 0
    assert np.array_equal(lexical.scores(query), lexical_ref.scores(query))


def test_damaged_frame_read_names_the_file(clean: Path, tmp_path: Path) -> None:
    directory = tmp_path / "store"
    shutil.copytree(clean, directory, symlinks=True)
    version = Store(directory).version
    _not_unit_norm(version)
    with pytest.raises(StoreDamaged, match=r"vectors\.npy: 1?\d+ vectors are not of unit length"):
        Store(directory).index()


def test_sampled_check_on_index_finds_a_flipped_block(tmp_path: Path) -> None:
    # a 20-block file: the sampled check always reads the first and the last block
    version = tmp_path / "v1"
    version.mkdir()
    (version / "big.bin").write_bytes(bytes(range(256)) * (20 * store_manifest.BLOCK // 256))
    files = store_manifest.version_files(version)
    assert len(files["big.bin"].blocks or []) == 20
    manifest = SimpleNamespace(version_files=files)  # what check_files reads of a manifest
    check = store_manifest.check_files
    assert check(tmp_path, version, manifest, check="sample").files == 1
    data = bytearray((version / "big.bin").read_bytes())
    data[-1] ^= 1  # in the last block
    (version / "big.bin").write_bytes(bytes(data))
    assert check(tmp_path, version, manifest, check="sizes").files == 1  # sizes cannot tell
    with pytest.raises(StoreDamaged, match=r"big\.bin: content does not match"):
        check(tmp_path, version, manifest, check="sample")
    with pytest.raises(StoreDamaged, match=r"big\.bin: content does not match"):
        check(tmp_path, version, manifest, check="full")
