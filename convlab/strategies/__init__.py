"""Embedding strategies: one module each, registered in :data:`STRATEGIES` by a decorator.

The contract is :class:`convlab.protocols.Strategy`; a new strategy is one module here with one
``@register_strategy`` class, imported below so that importing the package registers it.
"""

from convlab.strategies import isolated, message, qa_pair, sequential, turn_pair, whole_turn  # noqa: F401
from convlab.strategies.base import STRATEGIES, Chunk, get_strategy, register_strategy

__all__ = ["STRATEGIES", "Chunk", "get_strategy", "register_strategy"]
