"""Units per message and embedding cost per strategy, without embedding anything.

``python -m eval.unit_costs --data PATH [--strategies a,b] [--out FILE.json]`` chunks the data
once, makes every strategy's units (default: every registered strategy) and prints the table of
:func:`convlab.pipeline.unit_costs.corpus_unit_costs` (units, units per message with text,
distinct texts, tokens embedded, units per assistant message, and ``all``); ``--out`` writes the
same rows as JSON. What an ``eval.run`` report tabulates after embedding, known before it: e.g.
on the LongMemEval oracle before a long run.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path

from convlab.evaluation.compare import check_strategies
from convlab.evaluation.config import EvalConfig
from convlab.evaluation.datasets import load_labelled
from convlab.evaluation.report import markdown_table
from convlab.pipeline.unit_costs import corpus_unit_costs
from convlab.strategies import STRATEGIES


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
    corpus = load_labelled(args.data).corpus
    table = corpus_unit_costs(corpus, strategies, policy=EvalConfig().policy)
    print(markdown_table(table))
    if args.out:
        Path(args.out).write_text(json.dumps(table.to_dicts(), indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
