"""Embedding strategies: one module each, registered in :data:`STRATEGIES` by a decorator.

The contract is :class:`convlab.protocols.Strategy`; a new strategy is one module here with one
``@register_strategy`` class, imported below so that importing the package registers it.
"""

from convlab.strategies import (  # noqa: F401
    isolated,
    isolated_window,
    message,
    qa_pair,
    sequential,
    sequential_window,
    turn_pair,
    turn_pair_window,
    whole_turn,
)

# isort: split
# after the plain strategies: it registers their late variants
from convlab.strategies import late  # noqa: F401
from convlab.strategies.base import STRATEGIES, Chunk, get_strategy, register_strategy

__all__ = ["STRATEGIES", "Chunk", "get_strategy", "register_strategy"]
