"""The generic registry: names, errors listing the valid ones, and order by priority."""

from __future__ import annotations

import pytest

from convlab.registry import Registry


def test_in_order_sorts_by_priority_then_name_not_by_registration() -> None:
    r: Registry[str] = Registry("part")
    r.add("c", "third", priority=30)
    r.add("b", "second", priority=10)
    r.add("a", "first", priority=10)
    r.add("d", "unprioritised")  # priority 0: first
    assert [name for name, _ in r.in_order()] == ["d", "a", "b", "c"]
    assert r.names() == ("a", "b", "c", "d")


def test_register_carries_the_priority() -> None:
    r: Registry[object] = Registry("part")

    @r.register("late", priority=2)
    def late() -> None: ...

    @r.register("early", priority=1)
    def early() -> None: ...

    assert [v for _, v in r.in_order()] == [early, late]


def test_a_name_twice_and_an_unknown_name_are_refused() -> None:
    r: Registry[int] = Registry("part")
    r.add("x", 1)
    with pytest.raises(ValueError, match="'x' is registered twice"):
        r.add("x", 2, priority=5)
    with pytest.raises(ValueError, match="unknown part 'y'; valid: x"):
        r.get("y")


PART_PACKAGES = (
    "convlab.embed",
    "convlab.engines",
    "convlab.fusion",
    "convlab.index.kinds",
    "convlab.loaders",
    "convlab.resurrection",
    "convlab.retrieval.rankers",
    "convlab.strategies",
)


def _registering_modules(package: str) -> list[str]:
    """The modules of ``package`` that register a part with a decorator (``@...register...``)."""
    import importlib.util
    import pkgutil
    import re
    from pathlib import Path

    spec = importlib.util.find_spec(package)
    assert spec is not None
    assert spec.submodule_search_locations
    out = []
    for m in pkgutil.iter_modules(spec.submodule_search_locations):
        source = (Path(spec.submodule_search_locations[0]) / f"{m.name}.py").read_text("utf-8")
        if re.search(r"^@[\w.]*register", source, re.MULTILINE):
            out.append(f"{package}.{m.name}")
    return out


@pytest.mark.parametrize("package", PART_PACKAGES)
def test_importing_a_package_imports_every_part_module_it_holds(package: str) -> None:
    import importlib
    import sys

    importlib.import_module(package)
    modules = _registering_modules(package)
    assert modules, f"{package} registers no part"
    missing = [m for m in modules if m not in sys.modules]
    assert not missing, f"{package}/__init__.py does not import {missing}"
