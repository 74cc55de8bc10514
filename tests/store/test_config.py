"""StoreConfig validates every field in ``__post_init__``, naming the valid choices."""

from __future__ import annotations

import pytest

from convlab.index import INDEX_KINDS
from convlab.pipeline.policy import ContentPolicy
from convlab.specs import IndexSpec, UnitSpec
from convlab.store import REDACT_CHOICES, StoreConfig
from convlab.strategies import STRATEGIES


def test_the_error_lists_every_valid_name() -> None:
    with pytest.raises(ValueError, match="not a view of a strategy") as e:
        StoreConfig(system="sentence")
    assert all(name in str(e.value) for name in STRATEGIES)
    with pytest.raises(ValueError, match="index_kind must be one of") as e:
        StoreConfig(index=IndexSpec("annoy"))
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


def test_the_units_and_settings_are_those_of_the_specs() -> None:
    # issue 24: the store's config holds UnitSpec's and IndexSpec's fields, not copies of them
    policy = ContentPolicy(thinking=True, text_format="date")
    config = StoreConfig(
        system="turn_pair", max_tokens=128, policy=policy, index=IndexSpec("hnsw", {"m": 16})
    )
    assert config.units() == [UnitSpec("turn_pair", 128, policy)]
    settings = config.settings()
    # only the policy fields that differ from the default are recorded
    assert settings.policy == {"thinking": True, "text_format": "date"}
    assert (settings.index_kind, settings.index_params) == ("hnsw", {"m": 16})
    assert (settings.strategies, settings.dense, settings.max_tokens) == (
        ["turn_pair"],
        ["turn_pair"],
        128,
    )
    assert StoreConfig().settings().policy == {}
