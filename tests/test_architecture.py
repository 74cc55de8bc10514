"""ARCHITECTURE.md's table of parts is true: each count is its registry's, one file per part."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from convlab.embed import BACKENDS, EMBEDDERS
from convlab.engines import ENGINES
from convlab.fusion import FUSIONS
from convlab.index.kinds import INDEX_KINDS
from convlab.loaders.registry import FORMATS
from convlab.metric_names import METRICS
from convlab.resurrection import POLICIES
from convlab.retrieval.rankers import RANKERS
from convlab.strategies import STRATEGIES

ARCHITECTURE = Path(__file__).resolve().parent.parent / "ARCHITECTURE.md"
REGISTRIES: dict[str, Any] = {
    "FORMATS": FORMATS,
    "STRATEGIES": STRATEGIES,
    "RANKERS": RANKERS,
    "FUSIONS": FUSIONS,
    "POLICIES": POLICIES,
    "INDEX_KINDS": INDEX_KINDS,
    "EMBEDDERS": EMBEDDERS,
    "BACKENDS": BACKENDS,
    "ENGINES": ENGINES,
}


def _rows() -> list[list[str]]:
    text = ARCHITECTURE.read_text(encoding="utf-8")
    table = text[text.index("| new part | one file |") :].split("\n\n", 1)[0]
    return [[c.strip() for c in line.strip("|").split("|")] for line in table.splitlines()[2:]]


def _size(name: str) -> int:
    if name == "METRICS":
        return len(METRICS)
    return len(list(REGISTRIES[name].names()))


def _module(registry: Any, name: str) -> str:
    value = registry.get(name)
    return getattr(value, "__module__", None) or type(value).__module__


def test_every_count_in_the_table_is_its_registrys() -> None:
    claims = [
        (int(n), reg) for row in _rows() for n, reg in re.findall(r"(\d+) in `([A-Z_]+)`", row[3])
    ]
    assert {reg for _, reg in claims} == {*REGISTRIES, "METRICS"}
    for n, reg in claims:
        assert n == _size(reg), (
            f"ARCHITECTURE.md says {n} in {reg}; the registry holds {_size(reg)}"
        )


@pytest.mark.parametrize(
    "row", [r for r in _rows() if r[3].endswith("one file each")], ids=lambda r: r[0]
)
def test_a_part_said_to_be_one_file_is_one_module_of_its_folder(row: list[str]) -> None:
    folder = re.match(r"`convlab/([a-z_/]+)/<", row[1])
    assert folder, row[1]
    (reg,) = re.findall(r"in `([A-Z_]+)`", row[3])
    registry = REGISTRIES[reg]
    modules = [_module(registry, n) for n in registry.names()]
    package = "convlab." + folder.group(1).replace("/", ".") + "."
    assert all(m.startswith(package) for m in modules), modules
    assert len(set(modules)) == len(modules), f"{reg}: two parts share a module: {modules}"


def test_the_layers_shown_are_the_layers_checked() -> None:
    """ARCHITECTURE.md's layer diagram is pyproject.toml's import-linter contract, top first."""
    import tomllib

    pyproject = ARCHITECTURE.parent / "pyproject.toml"
    contracts = tomllib.loads(pyproject.read_text(encoding="utf-8"))["tool"]["importlinter"]
    (layers,) = [c["layers"] for c in contracts["contracts"] if c.get("containers") == ["convlab"]]
    text = ARCHITECTURE.read_text(encoding="utf-8")
    block = text[text.index("## Layers") :].split("```")[1].strip().splitlines()
    shown = [re.sub(r"\s{2,}\(.*\)$", "", line).strip() for line in block]
    assert shown == layers
