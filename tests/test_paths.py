"""Where convlab finds the sample, the shared folder and LoCoMo, in a checkout and installed."""

from __future__ import annotations

from pathlib import Path

import pytest

from convlab import paths


@pytest.fixture
def installed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The package seen as installed: the folder above it is site-packages, no checkout."""
    site = tmp_path / "site-packages"
    (site / "convlab").mkdir(parents=True)
    monkeypatch.setattr(paths, "REPO_ROOT", site)
    for name in ("CONVLAB_SAMPLE", "CONVLAB_SHARED", "CONVLAB_DATA"):
        monkeypatch.delenv(name, raising=False)
    return site


def _sample(folder: Path) -> Path:
    (folder / "transcripts").mkdir(parents=True)
    return folder


def test_the_checkout_is_recognised_by_its_pyproject() -> None:
    assert paths.repo_root() == Path(paths.__file__).resolve().parent.parent
    assert (paths.sample_data_path() / "queries.jsonl").is_file()


def test_installed_has_no_checkout(installed: Path) -> None:
    assert paths.repo_root() is None


def test_the_sample_of_an_installed_package_comes_from_convlab_sample(
    installed: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    sample = _sample(tmp_path / "mine")
    monkeypatch.setenv("CONVLAB_SAMPLE", str(sample))
    assert paths.sample_data_path() == sample


def test_an_explicit_sample_path_comes_before_the_variable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CONVLAB_SAMPLE", str(_sample(tmp_path / "env")))
    assert paths.sample_data_path(_sample(tmp_path / "given")) == tmp_path / "given"


def test_no_sample_names_every_place_looked_at(
    installed: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with pytest.raises(FileNotFoundError, match="nowhere: convlab is installed") as info:
        paths.sample_data_path()
    assert "CONVLAB_SAMPLE" in str(info.value)
    empty = tmp_path / "empty"
    empty.mkdir()
    monkeypatch.setenv("CONVLAB_SAMPLE", str(empty))
    with pytest.raises(FileNotFoundError, match=f"looked at {empty}\\)"):
        paths.sample_data_path()


def test_a_checkout_whose_sample_is_gone_names_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "pyproject.toml").write_text("")
    monkeypatch.setattr(paths, "REPO_ROOT", tmp_path)
    monkeypatch.delenv("CONVLAB_SAMPLE", raising=False)
    with pytest.raises(FileNotFoundError, match=str(tmp_path / "data" / "sample")):
        paths.sample_data_path()


def test_shared_dir_in_a_checkout_is_beside_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CONVLAB_SHARED", raising=False)
    assert paths.shared_dir() == paths.REPO_ROOT.parent / "shared"


def test_shared_dir_of_an_installed_package(
    installed: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with pytest.raises(FileNotFoundError, match="set CONVLAB_SHARED"):
        paths.shared_dir()
    monkeypatch.setenv("CONVLAB_SHARED", str(tmp_path / "shared"))
    assert paths.shared_dir() == tmp_path / "shared"
    assert paths.shared_dir(tmp_path / "other") == tmp_path / "other"


def test_locomo_of_an_installed_package_without_any_setting(installed: Path) -> None:
    with pytest.raises(FileNotFoundError, match="looked at nowhere: no path, no CONVLAB_DATA"):
        paths.locomo_path()


def test_locomo_through_convlab_data(
    installed: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "datasets" / "locomo" / "locomo10.json"
    target.parent.mkdir(parents=True)
    target.write_text("[]")
    monkeypatch.setenv("CONVLAB_DATA", str(tmp_path / "datasets"))
    assert paths.locomo_path() == target
