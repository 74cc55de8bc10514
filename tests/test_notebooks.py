"""The notebooks run top to bottom on the bundled sample, and show what they promise."""

from __future__ import annotations

import json
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

NOTEBOOKS = sorted((Path(__file__).parent.parent / "notebooks").glob("*.ipynb"))


def test_notebooks_are_committed_without_outputs() -> None:
    assert [p.stem[:2] for p in NOTEBOOKS] == ["01", "02", "03", "04", "05"]
    for p in NOTEBOOKS:
        nb = json.loads(p.read_text())
        assert all(not c.get("outputs") for c in nb["cells"] if c["cell_type"] == "code"), p.name


def _run(path: Path) -> nbformat.NotebookNode:
    nb = nbformat.read(path, as_version=4)
    NotebookClient(
        nb, timeout=900, kernel_name="python3", resources={"metadata": {"path": str(path.parent)}}
    ).execute()
    return nb


def _text(cell: nbformat.NotebookNode) -> str:
    out = []
    for o in cell.get("outputs", []):
        if "text" in o:
            out.append(o["text"])
        for key in ("text/plain", "text/html"):
            if key in o.get("data", {}):
                out.append(o["data"][key])
    return "\n".join(out)


@pytest.mark.notebooks
@pytest.mark.model
@pytest.mark.slow
@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_runs(path: Path) -> None:
    nb = _run(path)
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert not any(o.get("output_type") == "error" for c in code for o in c.get("outputs", []))
    if path.stem.startswith("03"):
        table = _text(next(c for c in code if c.source.startswith("comparison")))
        for system in [
            "isolated",
            "message",
            "turn_pair",
            "sequential",
            "whole_turn",
            "qa_pair",
            "bm25:message",
            "hybrid:message",
            "bm25:sequential",
            "fusion:convex",
            "fusion:rrf",
        ]:
            assert system in table, system
        # the folds' choices of the cross-validated systems, and a fused system of one's own
        tuning = _text(next(c for c in code if c.source.startswith("ev.tuning")))
        assert "fusion:convex" in tuning
        assert "bm25+dense" in _text(code[-1])
    if path.stem.startswith("04"):  # the policy grid: its plot and the efficiency test
        grid = next(c for c in code if "plots.policy_grid" in c.source)
        assert any("image/png" in o.get("data", {}) for o in grid.get("outputs", []))
        efficiency = next(c for c in code if c.source.startswith("tests.filter"))
        assert "efficiency" in _text(efficiency)
    if path.stem.startswith("02"):
        images = [o for c in code for o in c.get("outputs", []) if "image/png" in o.get("data", {})]
        assert len(images) == 2  # unit lengths and the PCA map
    if path.stem.startswith("05"):
        assert "application/vnd.jupyter.widget-view+json" in json.dumps(code[-1].outputs)
