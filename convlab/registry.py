"""One generic registry for every pluggable part.

Formats, strategies, rankers, index kinds, embedding backends, engines, fusions and resurrection
policies each have one.
A :class:`Registry` maps a name to a value (a class, a factory or an instance), refuses a name
registered twice, lists the valid names in every error, and feeds ``argparse`` choices, so the
CLI's help, its errors and the code cannot drift apart. Parts register themselves with the
decorator where they are defined: one file and one decorator per part, and each package's
``__init__`` imports its part modules by name, so importing the package registers them all.
Where order means something (format detection), each part is registered with an explicit
``priority``: :meth:`Registry.in_order` sorts by it, never by the order modules were imported.

Example:
    >>> RANKERS: Registry[Callable[..., object]] = Registry("ranker")
    >>> @RANKERS.register("identity")
    ... def identity(candidates, context):
    ...     return candidates
    >>> RANKERS.names()
    ('identity',)
    >>> RANKERS.get("nope")
    Traceback (most recent call last):
    ...
    ValueError: unknown ranker 'nope'; valid: identity
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Generic, TypeVar

__all__ = ["Registry"]

T = TypeVar("T")
V = TypeVar("V")


class Registry(Generic[T]):
    """Names to registered values of one kind of part.

    Args:
        kind: what the values are ("strategy", "index kind", ...), used in error messages.
    """

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self._items: dict[str, T] = {}
        self._priority: dict[str, int] = {}

    def add(self, name: str, value: T, *, priority: int = 0) -> T:
        """Register ``value`` under ``name`` and return it.

        ``priority`` places it in :meth:`in_order` (lower first).

        Raises:
            ValueError: ``name`` is empty or registered already.
        """
        if not name:
            raise ValueError(f"a {self.kind} needs a non-empty name")
        if name in self._items:
            raise ValueError(f"{self.kind} {name!r} is registered twice")
        self._items[name] = value
        self._priority[name] = priority
        return value

    def register(self, name: str, *, priority: int = 0) -> Callable[[V], V]:
        """Decorator form of :meth:`add`: ``@REGISTRY.register("name")``."""

        def deco(value: V) -> V:
            self.add(name, value, priority=priority)  # type: ignore[arg-type]
            return value

        return deco

    def get(self, name: str) -> T:
        """The value registered under ``name``.

        Raises:
            ValueError: unknown name, listing the valid ones.
        """
        try:
            return self._items[name]
        except KeyError:
            raise ValueError(
                f"unknown {self.kind} {name!r}; valid: {', '.join(self.names()) or '(none)'}"
            ) from None

    def names(self) -> tuple[str, ...]:
        """The registered names, sorted (argparse ``choices``)."""
        return tuple(sorted(self._items))

    def items(self) -> list[tuple[str, T]]:
        """``(name, value)`` pairs, sorted by name."""
        return sorted(self._items.items())

    def in_order(self) -> list[tuple[str, T]]:
        """``(name, value)`` pairs by priority (lower first), then name, where order matters.

        Format detection tries readers in this order; the order modules are imported in plays
        no part.

        Example:
            >>> r: Registry[int] = Registry("reader")
            >>> _ = r.add("late", 1, priority=20), r.add("early", 2, priority=10)
            >>> [name for name, _ in r.in_order()]
            ['early', 'late']
        """
        return sorted(self._items.items(), key=lambda kv: (self._priority[kv[0]], kv[0]))

    def __contains__(self, name: object) -> bool:
        return name in self._items

    def __getitem__(self, name: str) -> T:
        return self.get(name)

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())

    def __len__(self) -> int:
        return len(self._items)

    def __repr__(self) -> str:
        return f"Registry({self.kind!r}: {', '.join(self.names())})"
