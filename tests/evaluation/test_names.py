"""System names are text, never paths: run files named by slug and hash, names escaped."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import convlab.embed
from convlab.app.cli import main
from convlab.embed import HashEmbedder
from convlab.evaluation.config import EvalConfig
from convlab.evaluation.datasets import load_labelled
from convlab.evaluation.evaluate import evaluate
from convlab.evaluation.runfolder import run_path, save_run
from convlab.paths import sample_data_path
from convlab.systems.names import check_name, escaped, file_stem, markdown, markdown_code
from convlab.systems.system import System

HOSTILE_NAMES = [
    "../../../x",
    "/etc/passwd",
    "..",
    ".",
    "/",
    "a/b/../../c",
    "C:\\Windows\\x",
    "a\x1b[31mred",
    "nul\x00byte",
    "new\nline",
    "\u202eevil",
    "\udcff",
    "x" * 1000,
    "bm25:message",
    "bm25_message",  # the slug of the one above: a different file all the same
]


def test_a_stem_is_the_slug_and_the_first_8_hex_digits_of_sha256() -> None:
    # sha256(b"bm25:message") = e830a8d6...; ':' is not a safe character, so it becomes '_'
    assert file_stem("bm25:message") == "bm25_message-e830a8d6"
    # every '.' and '/' of ../../../x is unsafe or stripped: only 'x' is left of the slug
    assert file_stem("../../../x").startswith("x-")
    assert file_stem("..") == file_stem("..")[-8:]  # nothing safe left: the hash alone


@pytest.mark.parametrize("name", HOSTILE_NAMES)
def test_every_stem_is_one_plain_file_name_inside_the_run_folder(name: str, tmp_path: Path) -> None:
    stem = file_stem(name)
    assert re.fullmatch(r"[A-Za-z0-9+][A-Za-z0-9._+-]{0,59}-[0-9a-f]{8}|[0-9a-f]{8}", stem), stem
    path = run_path(tmp_path, name)
    assert path.parent == tmp_path / "runs"
    assert path.resolve().is_relative_to(tmp_path.resolve())


def test_distinct_names_get_distinct_files() -> None:
    assert len({file_stem(n) for n in HOSTILE_NAMES}) == len(HOSTILE_NAMES)


def test_a_legacy_run_file_is_still_found_but_never_through_a_hostile_name(tmp_path: Path) -> None:
    (tmp_path / "runs").mkdir()
    (tmp_path / "runs" / "bm25_message.trec").write_text("")
    assert run_path(tmp_path, "bm25:message") == tmp_path / "runs" / "bm25_message.trec"
    (tmp_path / "x.trec").write_text("")
    assert run_path(tmp_path, "../x").name == f"{file_stem('../x')}.trec"


@pytest.mark.parametrize(
    ("name", "reason"),
    [
        ("", "empty"),
        (" ", "empty"),
        ("a\x1bb", "\\x1b"),
        ("a\u2066", "\\u2066"),
        ("n" * 201, "201"),
    ],
)
def test_check_name_refuses(name: str, reason: str) -> None:
    with pytest.raises(ValueError, match=re.escape(reason)):
        check_name(name)


def test_text_is_escaped_for_terminals_and_markdown() -> None:
    assert escaped("a\x1b[2Jb\n") == "a\\x1b[2Jb\\x0a"
    assert escaped("\u202eabc") == "\\u202eabc"
    assert markdown("a|b <img src=x> [l](http://e)") == "a\\|b \\<img src=x\\> \\[l\\](http://e)"
    assert markdown_code("a`b|c") == "``a`b\\|c``"
    assert markdown_code("x") == "`x`"


def _tree(root: Path) -> set[Path]:
    return {p for p in root.rglob("*")}


def test_hostile_names_in_an_experiment_file_stay_inside_out(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(
        convlab.embed, "minilm_embedder", lambda backend="torch", **_: HashEmbedder(32)
    )  # options (the device) have no effect
    absolute = tmp_path / "abs"
    absolute.mkdir()
    out = tmp_path / "a" / "b" / "out"
    names = ["../../../x", str(absolute / "y"), "isolated"]
    experiment = tmp_path / "hostile.toml"
    experiment.write_text(
        "".join(f"[[systems]]\nname = '{n}'\nstrategy = 'isolated'\n" for n in names)
    )
    before = _tree(tmp_path)
    argv = ["eval", "--systems", str(experiment), "--out", str(out), "--strategies", "isolated"]
    argv += ["--cache", str(out / "cache"), "--budgets", "128", "--baseline", "isolated"]
    assert main(argv) == 0
    printed = capsys.readouterr().out
    assert "../../../x" in printed  # the name is shown as it is, a name and not a path
    new = {p for p in _tree(tmp_path) - before if not p.is_relative_to(out)}
    assert new == {tmp_path / "a", tmp_path / "a" / "b"}  # the folders of --out, nothing else
    runs = sorted(p.name for p in (out / "runs").iterdir())
    assert runs == sorted(f"{file_stem(n)}.trec" for n in names)
    assert not list(absolute.iterdir())


def test_report_md_escapes_every_name(tmp_path: Path) -> None:
    data = load_labelled(str(sample_data_path()))
    hostile = [
        "a|b",
        "<img src=x onerror=alert(1)>",
        "[click](http://evil.example)",
        "red\x1b[31m`tick`",
    ]
    systems = [System(name=n, strategy="isolated") for n in hostile]
    ev = evaluate(data, systems, embedder=HashEmbedder(32), config=EvalConfig(budgets=(128,)))
    report = save_run(ev, tmp_path).read_text(encoding="utf-8")
    assert "\x1b" not in report
    assert not re.search(r"(?<!\\)<img", report)  # not HTML
    assert not re.search(r"(?<!\\)\]\(http://evil", report)  # not a link
    tables = [b.splitlines() for b in report.split("\n\n") if b.startswith("| system |")]
    assert tables
    for table in tables:  # every row of a table has as many cells as its header
        widths = {len(re.split(r"(?<!\\)\|", row.strip())) for row in table}
        assert len(widths) == 1, table
    rows = [row for table in tables for row in table]
    for name in hostile:
        assert any(markdown(name) in row for row in rows), name
    assert markdown_code("a|b") in report  # the baseline, in a code span
    assert {p.parent for p in (tmp_path / "runs").iterdir()} == {tmp_path / "runs"}
