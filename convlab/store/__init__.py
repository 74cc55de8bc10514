"""A store: an index of real histories on disk, updated incrementally and never half-written.

Layout of a store directory::

    DIR/
      convlab-store.json       the marker: this folder is a store (format, random store id)
      current -> v<N>          symlink to the live version, swapped atomically
      v<N>/manifest.json       the typed manifest (convlab.store.format.StoreManifest, format 4):
                               the store id, the version's name and the store's other versions,
                               settings, files seen (size, mtime, sha256), conversation
                               fingerprints, the detached conversations, size and sha256 of
                               every file of the version and a checksum of itself
      v<N>/.owner              the store id, written first (a killed run's leftover is known)
      v<N>/conversations.parquet, messages.parquet, turns.parquet, chunks.parquet,
           units.parquet       (messages: where each message is in its source file)
      v<N>/index/              convlab.index.VectorIndex (FAISS + units + its manifest) of the
                               first strategy held
      v<N>/bm25/               convlab.index.bm25.BM25Index over the same units (bm25s's files)
      v<N>/views/<strategy>/   the same for every other strategy of the store's system: index/
                               (when a view searches it densely) and bm25/
      v<N>/.readers            readers hold a shared lock on it: a version in use is not deleted
      cache/                   the embedding cache (shared by every version)
      .lock                    held while an indexer writes

An update (:meth:`Store.update`, :mod:`convlab.store.update`) reads only files whose size, mtime
or content hash changed, keeps the rows of conversations whose content fingerprint is unchanged,
rebuilds units for the others with the one build recipe (:func:`convlab.build.build_indexes`; the
embedding cache means only new texts are embedded: the idea of the design documents'
``last_embedded_turn_number`` and content hash, at the level of unit texts), keeps conversations
whose files went, shrank or were rewritten as detached history (:mod:`~convlab.store.history`;
``convlab prune`` removes them, :mod:`~convlab.store.prune`), and writes a new version beside
the old one before switching ``current`` to it with one atomic ``rename``. A run killed at any
point leaves the previous version live and valid; leftover temporary versions are removed by the
next run. Two indexers never write one store: the second waits (``wait=True``) or refuses with
:class:`StoreLocked`.

**One version per Store object.** The first read pins the live version: the manifest, every frame
and the index of one ``Store`` come from that one directory, however many writers switch
``current`` meanwhile (the pinned version holds a shared lock that keeps writers from deleting it);
:meth:`Store.update` re-pins to the version it wrote, :meth:`Store.refresh` to the live one.

**A self-checking store.** The manifest records the size and SHA-256 of every file of its version
and a checksum of itself. Opening a version checks the manifest's checksum and every file's size;
:meth:`Store.verify` (``convlab stats --verify``) and every ``update`` also check the hashes
(:data:`convlab.store.manifest.CHECK_ON_INDEX`); loading the index checks that its vectors are
unit length and a sample of blocks of the vectors and the FAISS file
(:func:`convlab.store.manifest.check_sample`). A damaged, missing or truncated file raises
:class:`StoreDamaged` with one line naming it, and the next ``update`` rebuilds the version from
the transcripts, its vectors from the embedding cache.

**Only a store is written, only its own versions removed.** :func:`convlab.store.marker.claim`
runs before anything is written: a folder that holds other things and no marker, a file, a
marker not as the store writes it, or one copied from another store
(:func:`convlab.store.owner.check_store`) is refused with :class:`NotAStore`. Only the versions
the live manifest lists, each checked to be the store's own and whole, are ever removed.
A full disk during an update raises :class:`StoreFull` (the previous version intact).

**Views of a system.** A store holds the views of the system ``convlab index --system`` chose
(:class:`StoreConfig`, default :func:`convlab.systems.default_system`): every strategy of its
views, chunked once, the units of dense views embedded in one pass, BM25 over each strategy;
``units.parquet`` holds every strategy's units. :meth:`Store.search` (``convlab search``, the
panel, :func:`open_store`) runs a system with
:func:`convlab.systems.search.search_system`, which ranks with the parts ``eval.run`` ranks with
(the views' options, a searcher per view, :func:`convlab.systems.hits.system_hits`);
``eval.run`` calls those parts itself (:mod:`convlab.evaluation.evaluate`).

**One format.** A version of an older format than
:data:`convlab.store.format.STORE_FORMAT` is refused with :class:`StoreOutdated`, one line
saying to run ``convlab index --rebuild`` (exit 2); ``update(rebuild=True)`` replaces it.

The modules: :mod:`~convlab.store.config` (:class:`StoreConfig`, :class:`IndexSummary`),
:mod:`~convlab.store.errors` (the errors), :mod:`~convlab.store.marker` (the store marker),
:mod:`~convlab.store.owner` (what the store owns), :mod:`~convlab.store.history` (history kept
when files change), :mod:`~convlab.store.prune` (removing what the user names),
:mod:`~convlab.store.format` (the typed manifest, encoded and decoded in one place),
:mod:`~convlab.store.manifest` (checksums of the version's files, checks),
:mod:`~convlab.store.versions` (writing, switching, pinning locks, removal),
:mod:`~convlab.store.scan` (which transcript files changed), :mod:`~convlab.store.update` (the
incremental update, through the store's public writer interface), :mod:`~convlab.store.store`
(the :class:`Store` object) and :mod:`~convlab.store.search` (searching with a system).
"""

from convlab.store.config import REDACT_CHOICES, IndexSummary, StoreConfig, default_history_paths
from convlab.store.errors import StoreDamaged, StoreFull, StoreLocked, StoreMismatch, StoreOutdated
from convlab.store.format import StoreManifest
from convlab.store.manifest import Verified
from convlab.store.marker import NotAStore
from convlab.store.store import Store, open_store

__all__ = [
    "REDACT_CHOICES",
    "IndexSummary",
    "NotAStore",
    "Store",
    "StoreConfig",
    "StoreDamaged",
    "StoreFull",
    "StoreLocked",
    "StoreManifest",
    "StoreMismatch",
    "StoreOutdated",
    "Verified",
    "default_history_paths",
    "open_store",
]
