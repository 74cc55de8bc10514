"""``eval.frontier``: the page and plot from two tiny hand-made run folders, refusals.

The runs hold ``d`` (today's default) and ``near`` (0.005 recall@5 below on A, equal on B, a
tenth of the CPU-seconds): the page must choose ``near`` and say why.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import polars as pl

ROOT = Path(__file__).resolve().parents[2]
SHA = "0123456789abcdef0123456789abcdef01234567"


def _frontier(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "eval.frontier", *argv],
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
        cwd=ROOT,
    )


def _run_folder(tmp: Path, name: str, near: list[float], *, costs: bool = True) -> Path:
    run = tmp / name
    run.mkdir()
    values = {"d": [1.0, 1.0, 0.0, 0.0], "near": near}
    rows = [
        (s, f"q{i}", "x", m, v)
        for s, vs in values.items()
        for m in ("recall@5", "ndcg@10")
        for i, v in enumerate(vs)
    ]
    schema = ["system", "query_id", "category", "metric", "value"]
    pl.DataFrame(rows, schema=schema, orient="row").write_parquet(run / "per_query.parquet")
    config: dict[str, object] = {"command": f"python -m eval.run --out {name}", "commit": SHA}
    if costs:
        config["system_costs"] = [
            {"system": "d", "text_tokens": 100, "tokens_embedded": 500,
             "tokens_per_text_token": 5.0, "cpu_seconds": 40.0},
            {"system": "near", "text_tokens": 100, "tokens_embedded": 100,
             "tokens_per_text_token": 1.0, "cpu_seconds": 4.0},
        ]  # fmt: skip
    (run / "config.json").write_text(json.dumps(config))
    return run


def test_the_page_and_plot_choose_the_cheaper_system_that_holds(tmp_path: Path) -> None:
    a = _run_folder(tmp_path, "a", [1.0, 0.98, 0.0, 0.0])
    b = _run_folder(tmp_path, "b", [1.0, 1.0, 0.0, 0.0])
    out = tmp_path / "site" / "frontier.md"
    folder = tmp_path / "study"
    done = _frontier("--run", f"A={a}", "--run", f"B={b}", "--default", "d", "--out", str(out),
                     "--folder", str(folder))  # fmt: skip
    assert done.returncode == 0, done.stderr
    page = out.read_text()
    assert page.startswith("# The frontier")
    assert f"python -m eval.frontier --run A={a} --run B={b} --default d --out {out}" in page
    assert f"made by `python -m eval.run --out a` at commit `{SHA}`" in page
    assert "**near** replaces d" in page
    assert "| `near` | 0.495 (-0.005, 1) | 0.495 (-0.005, 1) | 1.00 | 4.0 |" in page
    assert "![recall@5 against embedding cost](frontier.png)" in page
    assert (out.parent / "frontier.png").read_bytes().startswith(b"\x89PNG")
    assert (folder / "report.md").read_text() == page
    assert json.loads((folder / "metrics.json").read_text())["chosen"] == "near"


def test_a_run_without_costs_or_provenance_is_refused(tmp_path: Path) -> None:
    bare = _run_folder(tmp_path, "bare", [1.0, 1.0, 0.0, 0.0], costs=False)
    done = _frontier("--run", f"A={bare}", "--default", "d", "--out", str(tmp_path / "f.md"),
                     "--folder", str(tmp_path / "study"))  # fmt: skip
    assert done.returncode == 2
    assert done.stderr.strip().endswith("no system_costs (run it again with this eval.run)")
    assert not (tmp_path / "f.md").exists()
    assert not (tmp_path / "study").exists()
    done = _frontier("--run", "nothing", "--out", str(tmp_path / "f.md"))
    assert done.returncode == 2
    assert "DATA=RUN_FOLDER" in done.stderr
