"""Policies named with their parameters (``window:n=2``) and the ``adaptive`` policy, by hand.

The conversations are those of ``test_policies``. The dialog ``d``'s docs are messages, with
their tokens: m0 (A1 A2) 30, m1 (B1) 30, m2 (C1) 40, m3 (C2) 45, m4 (D1 D2) 110, m5 (E1) 70;
the chat ``c``'s docs are turns: t0 (Q R0 R1 R2) 110, t1 (Q2 S0) 40.
"""

from __future__ import annotations

import pytest

from convlab.evaluation.config import EvalConfig
from convlab.resurrection import POLICIES, get_policy
from convlab.resurrection.adaptive import AdaptivePolicy
from convlab.resurrection.policies import parse_spec
from convlab.resurrection.window import WindowPolicy
from convlab.systems.system import System
from tests.resurrection.test_policies import run


def test_a_spec_sets_a_policys_integer_parameters() -> None:
    assert parse_spec("window:n=2") == ("window", {"n": 2})
    assert parse_spec("adaptive:short=8:long=32:n=0") == (
        "adaptive",
        {"short": 8, "long": 32, "n": 0},
    )
    assert get_policy("window:n=2") == WindowPolicy(n=2)
    assert get_policy("window") == WindowPolicy(n=1)
    # d:m5 (E1) with two docs on each side: m3 m4 m5
    assert run(["tp:d:E1"], 1000, "window:n=2") == (["C2", "D1", "D2", "E1"], 225)
    assert run(["tp:d:D2"], 1000, "window:n=0") == run(["tp:d:D2"], 1000, "doc")


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("window:n", r"a parameter is key=integer, got 'n'"),
        ("window:n=two", r"a parameter is key=integer, got 'n=two'"),
        ("window:n=1:n=2", r"'n' given twice"),
        ("window:m=2", r"'window' takes no parameter 'm'; it takes: n"),
        ("unit:n=1", r"'unit' takes no parameter 'n'; it takes: none"),
        ("window:n=-1", r"window n must be an int >= 0, got -1"),
        ("turn:n=1", r"unknown resurrection policy 'turn'; valid: adaptive, doc"),
    ],
)
def test_bad_specs_are_refused_naming_what_is_wrong(spec: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        get_policy(spec)


def test_experiment_files_and_eval_run_name_a_window_by_its_n() -> None:
    assert EvalConfig(resurrection=("unit", "window", "window:n=2")).resurrection[2] == "window:n=2"
    assert System(name="s", strategy="message", resurrection="window:n=3").resurrection == (
        "window:n=3"
    )
    with pytest.raises(ValueError, match="takes no parameter 'k'"):
        EvalConfig(resurrection=("window:k=2",))
    with pytest.raises(ValueError, match="window n must be an int >= 0"):
        System(name="s", strategy="message", resurrection="window:n=-2")


def test_adaptive_is_registered_with_defaults_fixed_in_advance() -> None:
    assert "adaptive" in POLICIES.names()
    assert get_policy("adaptive") == AdaptivePolicy(short=20, long=60, n=1, cap=0)


def test_adaptive_takes_a_window_the_pair_or_the_doc_by_the_docs_length() -> None:
    spec = "adaptive:short=35:long=100"
    # m0 (30 < 35): the window of one doc on each side, m0 m1 (A1 A2 B1: 60)
    assert run(["tp:d:A1"], 1000, spec) == (["A1", "A2", "B1"], 60)
    # m3 (45): its pair, the first assistant message after it in its turn, m4 (C2 D1 D2: 155)
    assert run(["tp:d:C2"], 1000, spec) == (["C2", "D1", "D2"], 155)
    # m4 (110 >= 100): alone (D1 D2: 110)
    assert run(["tp:d:D2"], 1000, spec) == (["D1", "D2"], 110)
    # a unit of two docs: m1 (30) takes m0 m1 m2, m2 (40) takes its pair m4: 210 in all
    assert run(["win:d:w0"], 1000, spec) == (["A1", "A2", "B1", "C1", "D1", "D2"], 210)
    # in a chat the pair of a turn is the turn: t0 (110) alone below long, t0 t1 when short
    assert run(["tp:c:R2"], 1000, "adaptive:short=35:long=200") == (["Q", "R0", "R1", "R2"], 110)
    assert run(["tp:c:R2"], 1000, "adaptive:short=200:long=200") == (
        ["Q", "R0", "R1", "R2", "Q2", "S0"],
        150,
    )


def test_adaptive_thresholds_are_inclusive_of_the_longer_side() -> None:
    # m3 has 45 tokens: short=45 makes it middling (its pair), short=46 short (its window)
    assert run(["tp:d:C2"], 1000, "adaptive:short=45:long=46") == (["C2", "D1", "D2"], 155)
    assert run(["tp:d:C2"], 1000, "adaptive:short=46:long=46") == (
        ["C1", "C2", "D1", "D2"],
        195,
    )
    assert run(["tp:d:C2"], 1000, "adaptive:short=10:long=45") == (["C2"], 45)
    # the window fits whole or the hit is skipped
    assert run(["tp:d:C2"], 194, "adaptive:short=46:long=46") == ([], 0)


def test_adaptive_refuses_bad_thresholds() -> None:
    with pytest.raises(ValueError, match=r"long \(5\) must not be below short \(10\)"):
        AdaptivePolicy(short=10, long=5)
    with pytest.raises(ValueError, match="adaptive short must be an int >= 0"):
        AdaptivePolicy(short=-1)
    with pytest.raises(ValueError, match="adaptive n must be an int >= 0"):
        get_policy("adaptive:n=-1")


def test_adaptive_cap_brings_back_the_unit_alone_for_a_doc_past_it() -> None:
    # c:t0 has 110 tokens: with cap=100 the unit tp:c:R2 alone (Q R0 R2: 60), not the turn
    assert run(["tp:c:R2"], 1000, "adaptive:short=20:long=60:cap=100") == (["Q", "R0", "R2"], 60)
    assert run(["tp:c:R2"], 1000, "adaptive:short=20:long=60:cap=111") == (
        ["Q", "R0", "R1", "R2"],
        110,
    )
    # d:m4 (110) past the cap: the unit tp:d:D2 (C1 D1 D2: 150), more than the doc here
    assert run(["tp:d:D2"], 1000, "adaptive:short=35:long=100:cap=110") == (
        ["C1", "D1", "D2"],
        150,
    )
    # a unit of two docs (m1 30, m2 40): one past the cap makes the whole hit its unit (B1 C1)
    assert run(["win:d:w0"], 1000, "adaptive:short=35:long=35:cap=40") == (["B1", "C1"], 70)
    with pytest.raises(ValueError, match=r"cap \(50\) must be 0 or not below long \(60\)"):
        get_policy("adaptive:cap=50")
