"""Routing, fusion weights per question type: ``python -m eval.routing RUN --data DATA --out DIR``.

On a run folder of data with question types (LoCoMo): the weights of the views' fusion chosen
per type by grouped cross-validation, held-out queries routed by their gold type and by the
type a classifier trained on the training folds predicts, tested against the folder's
``fusion:convex`` and ``bm25:message``
(:func:`convlab.studies.routing_study.routing_cv`). With ``--transfer-from LOCOMO_RUN
--transfer-data LOCOMO_JSON``: the routes and the classifier learned on all of LoCoMo, applied
unchanged to RUN's questions (:func:`convlab.studies.routing_study.transfer`). Writes
``routing.json``, ``routing.md`` and ``per_query.parquet`` (and ``choices.parquet``) into DIR.
``--resurrection 256,512,1024`` also routes the resurrection cell (system + policy) per type
at each budget, against the one-cell CV choice, from RUN's ``policy_budgets.parquet``
(:func:`convlab.studies.policy_routing.policy_routing`): ``policy_routing.json`` and
``policy_routing.md``. Beside them the study's ``config.json``, ``metrics.json``, ``report.md``
and ``groups.parquet`` (each query's group and fold; :func:`convlab.studies.routing_study.run`).
Exit 0, 2 on bad input.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path

from convlab.defaults import FOLDS
from convlab.studies.routing import Routing
from convlab.studies.routing_study import RoutingStudy, run
from convlab.systems.system import Tuning

PROG = "python -m eval.routing"


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    """The command line."""
    p = argparse.ArgumentParser(prog=PROG, description=__doc__)
    p.add_argument("folder", type=Path, help="an eval.run folder holding the fused views' runs")
    p.add_argument("--data", type=Path, required=True, help="the data the folder was run on")
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--transfer-from", type=Path, default=None, help="the source run folder")
    p.add_argument("--transfer-data", type=Path, default=None, help="the source's data")
    p.add_argument("--folds", type=int, default=FOLDS, help="10 = leave one conversation out")
    p.add_argument("--samples", type=int, default=64, help="weight settings drawn")
    p.add_argument(
        "--min-train",
        type=int,
        default=Routing().min_train,
        help="a type with fewer training queries takes the all-type choice",
    )
    p.add_argument(
        "--resurrection",
        default="",
        metavar="BUDGETS",
        help="also route the resurrection cell per type at these budgets (e.g. 256,512,1024)",
    )
    p.add_argument(
        "--resurrection-only", action="store_true", help="route the resurrection cell only"
    )
    return p.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the study and print where it wrote; 2 on bad input."""
    args = parse_args(argv)
    command = [*PROG.split(), *(sys.argv[1:] if argv is None else argv)]
    try:
        config = RoutingStudy(
            folder=args.folder,
            data=args.data,
            routing=Routing(
                tuning=Tuning(samples=args.samples, folds=args.folds), min_train=args.min_train
            ),
            transfer_from=args.transfer_from,
            transfer_data=args.transfer_data,
            resurrection=tuple(int(b) for b in args.resurrection.split(",") if b.strip()),
            resurrection_only=args.resurrection_only,
        )
        result = run(config, args.out, command=command)
    except (ValueError, FileNotFoundError) as exc:
        print(f"{PROG}: {exc}", file=sys.stderr)
        return 2
    if config.resurrection:
        print((args.out / "policy_routing.md").read_text(), end="")
    if not config.resurrection_only:
        print((args.out / "routing.md").read_text(), end="")
        seconds = json.loads((result.out / "routing.json").read_text())["seconds"]
        print(f"wrote {args.out}/routing.json in {seconds} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
