"""Units per message and embedding cost per strategy, without embedding anything.

``python -m eval.unit_costs --data PATH [--strategies a,b] [--out FILE.json]`` chunks the data
once, makes every strategy's units (default: every registered strategy) and prints the table of
:func:`convlab.pipeline.unit_costs.unit_costs` (units, units per message with text, distinct
texts, tokens embedded, and ``all``), plus each strategy's units per assistant message (units
whose target is an assistant chunk: a long reply's cost; 0 for ``whole_turn``, whose units have no
target); ``--out`` writes the same rows as JSON. What an ``eval.run`` report tabulates
after embedding, known before it: e.g. on the LongMemEval oracle before a long run.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path

import polars as pl

from convlab.evaluation.compare import check_strategies
from convlab.evaluation.config import EvalConfig
from convlab.evaluation.datasets import load_labelled
from convlab.evaluation.report import markdown_table
from convlab.pipeline.chunks import chunks as make_chunks
from convlab.pipeline.unit_costs import messages_with_text, unit_costs
from convlab.pipeline.units import units as make_units
from convlab.strategies import STRATEGIES


def costs(data: str | None, strategies: Sequence[str]) -> pl.DataFrame:
    """The unit costs of ``strategies`` over ``data``, with units per assistant message."""
    corpus = load_labelled(data).corpus
    chunks = make_chunks(corpus, EvalConfig().policy)
    units = {s: make_units(chunks, s) for s in strategies}
    table = unit_costs(units, messages_with_text(chunks))
    replies = messages_with_text(chunks.filter(pl.col("role") == "assistant"))
    per_reply = [
        u.filter(pl.col("role") == "assistant").height / replies if replies else 0.0
        for u in units.values()
    ]
    return table.with_columns(
        pl.Series("units_per_assistant_message", [*per_reply, None], dtype=pl.Float64)
    )


def main(argv: Sequence[str] | None = None) -> int:
    """Print the table (and write ``--out``); 2 for unknown strategies."""
    p = argparse.ArgumentParser(prog="python -m eval.unit_costs", description=__doc__)
    p.add_argument("--data", default=None, help="as eval.run's --data (default: the sample)")
    p.add_argument("--strategies", default=",".join(STRATEGIES))
    p.add_argument("--out", default=None, help="a JSON file for the rows")
    args = p.parse_args(argv)
    try:
        strategies = check_strategies(args.strategies)
    except ValueError as exc:
        print(f"python -m eval.unit_costs: {exc}", file=sys.stderr)
        return 2
    table = costs(args.data, strategies)
    print(markdown_table(table))
    if args.out:
        Path(args.out).write_text(json.dumps(table.to_dicts(), indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
