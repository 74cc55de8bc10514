"""What a ``convlab serve`` process keeps between searches: the store, its views, the model.

``convlab search`` opens its store and its search through :func:`open_store` and
:func:`store_search`. In a one-shot process they make new ones, exactly as before; inside a
server, which runs each request under :func:`keeping`, they return the ones the previous
search loaded: the pinned version's indexes, BM25 and the query embedder stay in memory. When
``convlab index`` switches the store to a new version, the next search drops what was held
for the old one (releasing its pin) and loads the new one.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Hashable, Iterator
from contextvars import ContextVar
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from convlab.protocols import Embedder
    from convlab.store import Store
    from convlab.store.search import StoreSearch

__all__ = ["Warm", "keeping", "open_store", "store_search"]


class Warm:
    """Stores, their searches and query embedders, kept between the searches of one server."""

    def __init__(self) -> None:
        self._stores: dict[str, Store] = {}
        self._searches: dict[tuple[str, Path, Hashable], StoreSearch] = {}
        self._embedders: dict[Hashable, Embedder] = {}

    def store(self, directory: str | Path) -> Store:
        """The store at ``directory``: the one held, unless a new version went live since."""
        from convlab.store import Store

        key = os.path.realpath(os.path.expanduser(os.fspath(directory)))
        held = self._stores.get(key)
        if held is not None and not _still_live(held):
            held.refresh()  # release the old version's pin
            self._searches = {k: v for k, v in self._searches.items() if k[0] != key}
            held = None
        if held is None:
            held = self._stores[key] = Store(directory)
        return held

    def search(
        self, store: Store, embedder: tuple[Hashable, Callable[[], Embedder]] | None
    ) -> StoreSearch:
        """The search of ``store``'s pinned version with the embedder named by its key."""
        from convlab.store.search import StoreSearch

        key = (os.path.realpath(store.directory), store.version, embedder and embedder[0])
        found = self._searches.get(key)
        if found is None:
            made = None
            if embedder is not None:
                name, make = embedder
                made = self._embedders.get(name)
                if made is None:
                    made = self._embedders[name] = make()
            found = self._searches[key] = StoreSearch(store, made)
        return found


def _still_live(store: Store) -> bool:
    """Whether ``store``'s pinned version is the live one (False when it cannot be read)."""
    try:
        return store.current == store.version
    except Exception:  # a store removed or damaged since: open it again, and fail as a new one
        return False


_WARM: ContextVar[Warm | None] = ContextVar("convlab_warm", default=None)


@contextlib.contextmanager
def keeping(warm: Warm) -> Iterator[Warm]:
    """Run the block's searches with ``warm``'s stores and searches (a server's requests)."""
    token = _WARM.set(warm)
    try:
        yield warm
    finally:
        _WARM.reset(token)


def open_store(directory: str | Path) -> Store:
    """The store at ``directory``: a new :class:`~convlab.store.Store`, or a server's warm one."""
    warm = _WARM.get()
    if warm is None:
        from convlab.store import Store

        return Store(directory)
    return warm.store(directory)


def store_search(
    store: Store, embedder: tuple[Hashable, Callable[[], Embedder]] | None
) -> StoreSearch:
    """The search of ``store``: a new one, or a server's warm one.

    Args:
        store: the store (from :func:`open_store`).
        embedder: the query embedder's key (what names it: embedder and backend) and how to
            make it; None for a system without a dense view.
    """
    warm = _WARM.get()
    if warm is None:
        from convlab.store.search import StoreSearch

        return StoreSearch(store, embedder[1]() if embedder is not None else None)
    return warm.search(store, embedder)
