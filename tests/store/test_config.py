"""StoreConfig validates every field in ``__post_init__``, naming the valid choices."""

from __future__ import annotations

import pytest

from convlab.index import INDEX_KINDS
from convlab.pipeline.policy import ContentPolicy
from convlab.store import REDACT_CHOICES, StoreConfig
from convlab.strategies import STRATEGIES


def test_the_error_lists_every_valid_name() -> None:
    with pytest.raises(ValueError, match="not a view of a strategy") as e:
        StoreConfig(system="sentence")
    assert all(name in str(e.value) for name in STRATEGIES)
    with pytest.raises(ValueError, match="index_kind must be one of") as e:
        StoreConfig(index_kind="annoy")
    assert all(name in str(e.value) for name in INDEX_KINDS)
    with pytest.raises(ValueError, match="redact must be one of") as e:
        StoreConfig(redact="some")
    assert all(name in str(e.value) for name in REDACT_CHOICES)


@pytest.mark.parametrize("max_tokens", [7, 0, -256, 257, 1024])
def test_a_max_tokens_outside_8_to_256_tokens_is_refused(max_tokens: int) -> None:
    # before issue 12 a budget (now max_tokens) over 256 passed here and failed at units()
    with pytest.raises(ValueError, match="max_tokens must be between 8 and 256 tokens"):
        StoreConfig(max_tokens=max_tokens)


@pytest.mark.parametrize("max_tokens", ["256", 256.0, True])
def test_a_max_tokens_that_is_not_an_integer_is_refused(max_tokens: object) -> None:
    with pytest.raises(ValueError, match="max_tokens must be an integer"):
        StoreConfig(max_tokens=max_tokens)  # type: ignore[arg-type]


def test_a_policy_field_that_does_not_exist_is_named() -> None:
    with pytest.raises(ValueError, match=r"unknown field\(s\) thinkng; valid: user_text, "):
        StoreConfig(policy={"thinkng": True})


def test_a_policy_value_the_policy_refuses_is_a_value_error() -> None:
    with pytest.raises(ValueError, match="tool_call_value_chars must be at least 1"):
        StoreConfig(policy={"tool_call_value_chars": 0})


def test_the_content_policy_is_the_one_described() -> None:
    assert StoreConfig().content_policy() == ContentPolicy()
    assert StoreConfig(policy={"thinking": True}).content_policy() == ContentPolicy(thinking=True)
    assert (StoreConfig(max_tokens=8).max_tokens, StoreConfig(max_tokens=256).max_tokens) == (
        8,
        256,
    )
