"""Embedding strategies: one module each, registered in :data:`STRATEGIES` by a decorator."""

from convlab.strategies import isolated, message, qa_pair, sequential, turn_pair, whole_turn  # noqa: F401
from convlab.strategies.base import STRATEGIES, Chunk, Strategy, get_strategy, register_strategy

__all__ = ["STRATEGIES", "Chunk", "Strategy", "get_strategy", "register_strategy"]
