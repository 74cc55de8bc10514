"""The top-level package: lazy names, offline model settings, a quick import."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

import convlab


def test_every_public_name_resolves_to_its_module_object():
    from convlab.loaders import load
    from convlab.pipeline.turns import turns

    assert set(convlab.__all__) == set(convlab._EXPORTS)
    for name in convlab.__all__:
        assert getattr(convlab, name) is not None
    assert convlab.load is load
    assert convlab.turns is turns
    assert convlab.evaluation.datasets.__name__ == "convlab.evaluation.datasets"


def test_unknown_attribute_raises_attribute_error():
    with pytest.raises(AttributeError, match="no_such_thing"):
        _ = convlab.no_such_thing  # type: ignore[attr-defined]


def test_import_sets_offline_and_leaves_heavy_libraries_unloaded():
    # a loader worker process imports convlab.loaders: it must not pay for scipy or FAISS
    code = (
        "import sys, os, convlab.loaders; "
        "print(os.environ['HF_HUB_OFFLINE'], "
        "sorted(m for m in ('scipy', 'faiss', 'torch', 'sentence_transformers') "
        "if m in sys.modules))"
    )
    env = {k: v for k, v in os.environ.items() if k != "HF_HUB_OFFLINE"}
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True
    )
    assert out.stdout.split() == ["1", "[]"]


def test_importing_a_submodule_keeps_the_function_of_the_same_name():
    code = (
        "import convlab.retrieval.search, convlab.evaluation.evaluate, convlab.pipeline.units, "
        "convlab.resurrection, convlab; "
        "print(*(type(getattr(convlab, n)).__name__ for n in "
        "('search', 'evaluate', 'units', 'turns', 'resurrect')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["function"] * 5
