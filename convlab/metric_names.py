"""The metric table: every metric a run, a tuning or a threshold names is a row of :data:`METRICS`.

A row names a metric family, says whether its name takes a cutoff (``recall@5``) or not
(``mrr``), which ir_measures measure computes it and what it is; the name parser
(:func:`parse_metric`), the measure (:meth:`Metric.measure`) and the error listing the valid
names are all made from the table, so adding a metric is adding a row. Names are
case-insensitive; a ``session:`` prefix scores the same measure at session level. The values
are computed by :mod:`convlab.evaluation.metrics`; this module needs no evaluation library, so
a :class:`convlab.systems.system.Tuning` checks its metric's name when it is made.

Example:
    >>> parse_metric("Session:nDCG@10").name
    'session:ndcg@10'
    >>> [f.form for f in METRICS][:2]
    ['recall@k', 'success@k']
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from convlab.extras import require

__all__ = ["LEVELS", "METRICS", "Metric", "MetricFamily", "parse_metric"]

LEVELS = ("doc", "session")
"""Where a metric judges: the docs (turns or messages) or the sessions (conversations)."""


@dataclass(frozen=True, slots=True)
class MetricFamily:
    """One row of the metric table.

    Attributes:
        name: the family's name, e.g. ``recall``.
        cutoff: whether the name takes a cutoff ``@k``.
        measure: the name of the ir_measures measure that computes it (``R``, ``nDCG``, ...).
        description: what it is: its formula and citation.
        all_of: the value is 1 when the measure is 1 and 0 otherwise (``recall_all``).
    """

    name: str
    cutoff: bool
    measure: str
    description: str
    all_of: bool = False

    @property
    def form(self) -> str:
        """How a name of this family is written, e.g. ``recall@k`` or ``mrr``."""
        return f"{self.name}@k" if self.cutoff else self.name


METRICS = (
    MetricFamily(
        "recall",
        True,
        "R",
        "|R ∩ {d_1..d_k}| / |R| (LoCoMo's recall; ir_measures R@k)",
    ),
    MetricFamily(
        "success",
        True,
        "Success",
        "1 if any d_i (i <= k) is in R, else 0 (LongMemEval's recall_any; Success@k)",
    ),
    MetricFamily(
        "recall_all",
        True,
        "R",
        "1 if R ⊆ {d_1..d_k}, else 0 (LongMemEval's recall_all: R@k == 1)",
        all_of=True,
    ),
    MetricFamily(
        "ndcg",
        True,
        "nDCG",
        "DCG@k / IDCG@k with DCG@k = Σ_{i<=k} rel_i / log2(i + 1), binary gains, IDCG@k the "
        "DCG of |R| relevant docs ranked first (Järvelin & Kekäläinen, 2002; nDCG@k)",
    ),
    MetricFamily(
        "judged",
        True,
        "Judged",
        "share of d_1..d_k that were judged at all, relevant or not (Judged@k)",
    ),
    MetricFamily(
        "mrr",
        False,
        "RR",
        "1 / rank of the first relevant doc (RR)",
    ),
    MetricFamily(
        "bpref",
        False,
        "Bpref",
        "1/|R| Σ_{r ∈ R} (1 - |n ranked above r| / min(|R|, |N|)), n ranging over the judged "
        "non-relevant docs N; unjudged docs are ignored, so it holds up under incomplete "
        "judgments (Buckley & Voorhees, SIGIR 2004; Bpref)",
    ),
)
"""The metrics, one row each, in the order the error text lists them."""

_FAMILIES = {f.name: f for f in METRICS}
if len(_FAMILIES) != len(METRICS):  # pragma: no cover - a row written twice
    raise ValueError("a metric family is in METRICS twice")


def _alternatives(names: Sequence[str]) -> str:
    return "|".join(re.escape(n) for n in names)


_NAME = re.compile(
    rf"^(?:({_alternatives(LEVELS[1:])}):)?"
    rf"(?:({_alternatives([f.name for f in METRICS if f.cutoff])})@(\d+)"
    rf"|({_alternatives([f.name for f in METRICS if not f.cutoff])}))$"
)
_PREFIXES = " or ".join(f"'{level}:'" for level in LEVELS[1:])
_VALID = f"valid: {', '.join(f.form for f in METRICS)}, each optionally prefixed {_PREFIXES}"


@dataclass(frozen=True, slots=True)
class Metric:
    """A parsed metric name: its family and cutoff."""

    family: str
    k: int | None
    level: str = "doc"

    @property
    def name(self) -> str:
        """The canonical name, e.g. ``recall@5`` or ``session:ndcg@10``."""
        base = self.family if self.k is None else f"{self.family}@{self.k}"
        return base if self.level == "doc" else f"{self.level}:{base}"

    @property
    def row(self) -> MetricFamily:
        """Its row of :data:`METRICS`."""
        return _FAMILIES[self.family]

    def measure(self) -> Any:
        """The ir_measures measure that computes it (R@k for recall_all).

        ir_measures is the ``convlab-memory[eval]`` extra, imported here, when a metric is
        measured: parsing a name needs only the table.
        """
        measure = getattr(require("ir_measures", "eval"), self.row.measure)
        return measure if self.k is None else measure @ self.k


def parse_metric(name: str) -> Metric:
    """Parse ``"recall@5"``, ``"ndcg@10"``, ``"mrr"``, ``"session:success@5"`` ...

    Raises:
        ValueError: naming the valid forms; a cutoff of 0 (a metric over no hit) too.
    """
    m = _NAME.match(name.strip().lower())
    if not m:
        raise ValueError(f"unknown metric {name!r}; {_VALID}")
    level = m.group(1) or "doc"
    if m.group(4):
        return Metric(m.group(4), None, level)
    if int(m.group(3)) < 1:
        raise ValueError(f"metric {name!r}: the cutoff after @ must be at least 1")
    return Metric(m.group(2), int(m.group(3)), level)
