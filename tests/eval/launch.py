"""Run eval/ scripts as programs, in one process, with a stand-in for the model.

``python tests/eval/launch.py JOBS.json RESULTS.json [--model]`` runs each job
(``[module, [argv...]]``) as ``python -m module argv...`` would (:func:`runpy.run_module` as
``__main__``), in order, with ``convlab.embed.MiniLMEmbedder`` and ``minilm_embedder`` replaced
by a hash embedder of the model's width (384): no model is loaded, nothing is downloaded (with
``--model``, the real one). Writes one JSON list: per job its exit code, stdout, stderr (a
traceback counts as exit 99) and seconds. The scripts are run, never imported by a test: this
file is the program that runs them.
"""

from __future__ import annotations

import contextlib
import io
import json
import runpy
import sys
import time
import traceback
from pathlib import Path
from typing import Any

import convlab.embed
from convlab.embed import HashEmbedder


class FakeMiniLM(HashEmbedder):
    """A hash embedder that takes MiniLMEmbedder's options (and ignores them)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(384)


def _fake_minilm(backend: str = "torch", **options: Any) -> FakeMiniLM:
    return FakeMiniLM()


def run(module: str, argv: list[str]) -> dict[str, Any]:
    """One job: its exit code, stdout and stderr."""
    out, err = io.StringIO(), io.StringIO()
    sys.argv = [module, *argv]
    code = 0
    started = time.perf_counter()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            runpy.run_module(module, run_name="__main__", alter_sys=True)
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        except Exception:
            traceback.print_exc()
            code = 99
    return {
        "module": module,
        "argv": argv,
        "code": code,
        "out": out.getvalue(),
        "err": err.getvalue(),
        "seconds": round(time.perf_counter() - started, 2),
    }


def main() -> None:
    """Run the jobs of the JSON file named on the command line."""
    if "--model" not in sys.argv[3:]:
        convlab.embed.MiniLMEmbedder = FakeMiniLM  # type: ignore[misc,assignment]
        convlab.embed.minilm_embedder = _fake_minilm  # type: ignore[assignment]
    jobs, into = json.loads(Path(sys.argv[1]).read_text()), Path(sys.argv[2])
    results = []
    for module, argv in jobs:
        results.append(run(module, argv))
        into.write_text(json.dumps(results))  # what ran, should a job kill us


if __name__ == "__main__":
    main()
