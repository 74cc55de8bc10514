"""A lever against its own baseline (issue 23): delta, paired p, Holm and categories by hand.

Four queries, categories x, x, y, y; recall@5 of ``a`` 1, 1, 0, 1, of ``b`` 0, 1, 0, 0, of ``c``
the same as ``b``. ``a`` against ``b``: means 0.75 and 0.25, delta 0.5; the differences 1, 0, 0,
1 have two non-zero signs, and |mean| >= 0.5 only when both flips agree: p = 1/2 (up to the
permutation sample). ``c`` against ``b``: no difference, p = 1. Holm over the two: 0.5 * 2 = 1,
then max(1, 1 * 1) = 1. Category x: ``a`` 1.0, ``b`` 0.5; y: ``a`` 0.5, ``b`` 0.0.
On the code before this change :mod:`convlab.evaluation.levers` did not exist.
"""

from __future__ import annotations

import polars as pl
import pytest

from convlab.evaluation.levers import lever_rows

VALUES = {"a": [1.0, 1.0, 0.0, 1.0], "b": [0.0, 1.0, 0.0, 0.0], "c": [0.0, 1.0, 0.0, 0.0]}


def _per_query() -> pl.DataFrame:
    rows = [
        {"system": s, "query_id": f"q{i}", "category": "xxyy"[i], "metric": "recall@5", "value": v}
        for s, values in VALUES.items()
        for i, v in enumerate(values)
    ]
    return pl.DataFrame(rows)


def test_pairs_by_hand() -> None:
    rows = lever_rows(_per_query(), [("a", "b"), ("c", "b")], "recall@5", categories=["x", "y"])
    first, second = rows.to_dicts()
    assert (first["baseline_mean"], first["lever_mean"], first["delta"]) == (0.25, 0.75, 0.5)
    assert first["p"] == pytest.approx(0.5, abs=0.02)
    assert second["delta"] == 0.0
    assert second["p"] == 1.0
    assert rows["holm_p"].to_list() == [1.0, 1.0]
    assert (first["x:lever"], first["x:baseline"], first["y:lever"], first["y:baseline"]) == (
        1.0,
        0.5,
        0.5,
        0.0,
    )


def test_unknown_system_is_named() -> None:
    with pytest.raises(ValueError, match="no system 'z' with recall@5"):
        lever_rows(_per_query(), [("z", "b")], "recall@5")


def test_a_choice_by_cv_never_reads_its_test_fold() -> None:
    """Four conversations, one query each; X scores 1, 1, 0, 0 and Y 0, 0, 1, 1 (a, b, c, d).

    Four folds, each holding out one conversation: held out a (or b), the training queries
    favour Y (X 1/3, Y 2/3), whose value on a is 0; held out c (or d) they favour X, 0 there
    too. Every held-out value is 0; a choice that read its test query would score 1 each.
    """
    from convlab.evaluation.levers import chosen_by_cv

    rows = [
        {"system": s, "query_id": f"{g}:q0", "category": "x", "metric": "recall@5", "value": v}
        for s, values in {"X": [1.0, 1.0, 0.0, 0.0], "Y": [0.0, 0.0, 1.0, 1.0]}.items()
        for g, v in zip("abcd", values, strict=True)
    ]
    per_query = pl.DataFrame(rows)
    held, folds = chosen_by_cv(per_query, ["X", "Y"], "recall@5", folds=4)
    assert held["system"].unique().to_list() == ["cv(X|Y)"]
    assert held.sort("query_id")["value"].to_list() == [0.0, 0.0, 0.0, 0.0]
    chosen = dict(zip(folds["test_groups"], folds["setting"], strict=True))
    assert chosen == {"a": "Y", "b": "Y", "c": "X", "d": "X"}
    # by query, the same here (one query per conversation)
    by_query, _ = chosen_by_cv(per_query, ["X", "Y"], "recall@5", grouping="query", folds=4)
    assert by_query["value"].to_list() == [0.0, 0.0, 0.0, 0.0]
    with pytest.raises(ValueError, match="grouping 'day' is not one of conversation, query"):
        chosen_by_cv(per_query, ["X", "Y"], "recall@5", grouping="day")
