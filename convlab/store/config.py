"""What a store is built with (:class:`StoreConfig`) and what an update did (IndexSummary)."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import cast

from convlab.model import MAX_TOKENS
from convlab.pipeline.policy import ContentPolicy
from convlab.pipeline.redact import REDACT_MODES
from convlab.protocols import Embedder
from convlab.specs import IndexSpec, UnitSpec
from convlab.store.errors import StoreMismatch
from convlab.store.format import StoreManifest, StoreSettings
from convlab.systems.system import System

__all__ = [
    "REDACT_CHOICES",
    "IndexSummary",
    "StoreConfig",
    "check_settings",
    "default_history_paths",
]

REDACT_CHOICES: tuple[str, ...] = tuple(REDACT_MODES)


def default_history_paths() -> list[Path]:
    """The usual homes of Claude Code, Codex and Amplifier histories that exist on this machine."""
    home = Path.home()
    codex_home = Path(os.environ.get("CODEX_HOME", home / ".codex"))
    candidates = [
        home / ".claude" / "projects",
        codex_home / "sessions",
        codex_home / "archived_sessions",
        home / ".amplifier" / "projects",
    ]
    return [p for p in candidates if p.is_dir()]


@dataclass(frozen=True, slots=True, kw_only=True)
class StoreConfig:
    """What a store is built with; changing any of these needs ``rebuild=True``.

    The unit and index fields are those of :class:`convlab.specs.UnitSpec` and
    :class:`convlab.specs.IndexSpec` (one spec per strategy held: :meth:`units`).

    Attributes:
        system: the system the store is searched with by default, whose views it holds: a
            :class:`convlab.systems.system.System` of fixed weights or a name
            :func:`convlab.systems.resolve_system` knows (``"default"``, a view such as
            ``"turn_pair"``, an experiment file). The store holds every strategy of its views
            (:attr:`strategies`), with BM25 over each and vectors for those searched densely
            (:attr:`dense`; the first strategy always).
        max_tokens: the unit's token limit, [CLS] and [SEP] included (see ``UnitSpec``).
        policy: the :class:`ContentPolicy` (what text each block contributes).
        index: the index kind and its parameters (``flat`` exact, ``hnsw``, ``ivf``, ``ivfpq``).
        redact: a key of :data:`convlab.pipeline.redact.REDACT_MODES`: ``all`` (every text stored or
            embedded, titles included; the default), ``tool-output`` or ``none``.

    Raises:
        ValueError: an unknown system (or a system whose weights are still to be chosen by
            cross-validation), index kind or redaction mode (listing the valid names), or a
            max_tokens :class:`UnitSpec` refuses.
    """

    system: System | str = "default"
    max_tokens: int = MAX_TOKENS
    policy: ContentPolicy = field(default_factory=ContentPolicy)
    index: IndexSpec = field(default_factory=IndexSpec)
    redact: str = "all"

    def __post_init__(self) -> None:
        from convlab.index import INDEX_KINDS
        from convlab.systems import resolve_system

        system = resolve_system(self.system)
        if system.tuning is not None:
            raise ValueError(
                f"system {system.name!r} has no fixed weights (tuning): index with a run's "
                "systems.chosen.toml instead"
            )
        object.__setattr__(self, "system", system)
        embedders = {v.embedder for v in system.views if v.retrieval.needs_vectors}
        if len(embedders) > 1:
            named = ", ".join(v.name for v in system.views if v.retrieval.needs_vectors)
            raise ValueError(
                f"system {system.name!r}: a store holds one embedder's vectors, and its dense "
                f"views ({named}) name several"
            )
        if self.index.kind not in INDEX_KINDS:
            raise ValueError(f"index_kind must be one of {', '.join(INDEX_KINDS)}")
        if self.redact not in REDACT_CHOICES:
            raise ValueError(f"redact must be one of {', '.join(REDACT_CHOICES)}")
        self.units()  # UnitSpec's checks of max_tokens (ValueError)

    @property
    def strategies(self) -> tuple[str, ...]:
        """The strategies held: those searched densely first, then the others (view order)."""
        views = self.resolved_system().views
        dense = [v.strategy for v in views if v.retrieval.needs_vectors]
        return tuple(dict.fromkeys([*dense, *(v.strategy for v in views)]))

    @property
    def dense(self) -> tuple[str, ...]:
        """The strategies whose units are embedded: those of dense views, else the first."""
        views = self.resolved_system().views
        dense = tuple(dict.fromkeys(v.strategy for v in views if v.retrieval.needs_vectors))
        return dense or self.strategies[:1]

    @property
    def view_embedder(self) -> str | None:
        """The embedder the dense views name (``static`` for ``static:sequential``), else None."""
        views = self.resolved_system().views
        return next((v.embedder for v in views if v.retrieval.needs_vectors), None)

    def held(self) -> dict[str, bool]:
        """Per strategy held, whether its units are embedded (every one has BM25)."""
        return {s: s in self.dense for s in self.strategies}

    def units(self) -> list[UnitSpec]:
        """One :class:`UnitSpec` per strategy held, in :attr:`strategies` order."""
        return [UnitSpec(s, self.max_tokens, self.policy) for s in self.strategies]

    def settings(self) -> StoreSettings:
        """What must match for an update to build on a store (its manifest's ``config``)."""
        default = ContentPolicy().as_dict()
        return StoreSettings(
            strategies=list(self.strategies),
            dense=list(self.dense),
            max_tokens=self.max_tokens,
            policy={k: v for k, v in self.policy.as_dict().items() if v != default[k]},
            index_kind=self.index.kind,
            index_params=dict(self.index.params),
            redact=self.redact,
        )

    def resolved_system(self) -> System:
        """The system (a name given is resolved when the config is made)."""
        return cast("System", self.system)  # resolved in __post_init__


@dataclass(slots=True)
class IndexSummary:
    """What one ``update`` did."""

    conversations: int = 0
    turns: int = 0
    units: int = 0
    files_read: int = 0
    files_unchanged: int = 0
    conversations_added: int = 0
    conversations_changed: int = 0
    conversations_detached: int = 0
    conversations_removed: int = 0
    texts_embedded: int = 0
    texts_from_cache: int = 0
    skipped: list[tuple[str, int, str]] = field(default_factory=list)
    seconds: float = 0.0
    wrote_version: bool = False
    repaired: str = ""
    reread: str = ""

    def lines(self) -> list[str]:
        """A human-readable closing summary."""
        out = [
            f"{self.conversations} conversations, {self.turns} turns, {self.units} units",
            f"files: {self.files_read} read, {self.files_unchanged} unchanged",
            f"conversations: {self.conversations_added} added, {self.conversations_changed} "
            f"changed, {self.conversations_detached} detached, {self.conversations_removed} "
            "removed",
            f"texts: {self.texts_embedded} embedded, {self.texts_from_cache} from cache",
            f"skipped records: {len(self.skipped)}",
        ]
        reasons: dict[str, int] = {}
        for _, _, reason in self.skipped:
            reasons[reason] = reasons.get(reason, 0) + 1
        out += [f"  {n} x {r}" for r, n in sorted(reasons.items(), key=lambda kv: -kv[1])[:10]]
        if self.repaired:
            out.append(f"repaired: {self.repaired}")
        if self.reread:
            out.append(f"every file read again: {self.reread}")
        out.append(f"time: {self.seconds:.1f} s" + ("" if self.wrote_version else " (unchanged)"))
        return out


def check_settings(
    directory: Path, manifest: StoreManifest, config: StoreConfig, embedder: Embedder
) -> None:
    """Refuse to update a store built with another model or other settings.

    Raises:
        StoreMismatch: naming the model or the settings that differ.
    """
    if manifest.model_id != embedder.model_id:
        raise StoreMismatch(
            f"{directory} was built with model {manifest.model_id!r}, not "
            f"{embedder.model_id!r}; pass --rebuild to start over"
        )
    old, new = manifest.config, config.settings()
    if old != new:
        diff = [f for f in new.__struct_fields__ if getattr(old, f) != getattr(new, f)]
        held = ""
        if "strategies" in diff or "dense" in diff:
            held = (
                f": it holds {_held_text(old)}, system "
                f"{config.resolved_system().name!r} needs {_held_text(new)}"
            )
        raise StoreMismatch(
            f"{directory} was built with other settings ({', '.join(diff)}){held}; "
            "pass --rebuild to start over"
        )


def _held_text(settings: StoreSettings) -> str:
    return ", ".join(
        f"{s}{'' if s in settings.dense else ' (BM25 only)'}" for s in settings.strategies
    )
