"""The FAISS index kinds, by name: :data:`INDEX_KINDS` (the ``--index`` choices).

One module per kind, each a class registered with ``@register_kind("name")`` (the contract is
:class:`IndexKind`), imported below so that importing the package registers it:

- ``flat``: exact inner product; scores are cosines (:mod:`~convlab.index.kinds.flat`).
- ``hnsw``: ``IndexHNSWFlat`` (:mod:`~convlab.index.kinds.hnsw`).
- ``ivf``: ``IndexIVFFlat`` (:mod:`~convlab.index.kinds.ivf`).
- ``ivfpq``: IVF-PQ, optionally OPQ, with exact re-scoring from float16 vectors on disk
  (:mod:`~convlab.index.kinds.ivfpq`).
"""

from convlab.index.kinds import flat, hnsw, ivf, ivfpq  # noqa: F401  (they register themselves)
from convlab.index.kinds.base import INDEX_KINDS, IndexKind, register_kind

__all__ = ["INDEX_KINDS", "IndexKind", "register_kind"]
