"""``convlab stats``: what a store holds, when it was updated, its size; ``--verify`` checks it.

It counts the detached conversations (kept after their transcripts went, shrank or were
rewritten: :mod:`convlab.store.history`), which ``convlab prune`` removes.

It also gives each strategy's units per message and embedding cost
(:mod:`convlab.pipeline.unit_costs`) and what the last update embedded, in how long.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypedDict

import msgspec
import polars as pl

from convlab.app.cli.options import add_store
from convlab.app.exits import EXIT_OK, EXIT_USAGE

if TYPE_CHECKING:
    from convlab.store import Store

NAME = "stats"
EXAMPLE = "convlab stats --store ~/.convlab/store"


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> argparse.ArgumentParser:
    """Add ``stats`` to the subcommands ``sub``."""
    st: argparse.ArgumentParser = sub.add_parser(
        NAME,
        help="what a store holds",
        description="What a store holds, when it was updated, its size; --verify checks every "
        "file's SHA-256 (exit 2 naming a damaged file).",
    )
    add_store(st)
    st.add_argument("--json", action="store_true")
    st.add_argument(
        "--verify", action="store_true", help="check the content hash of every file of the store"
    )
    return st


def run(args: argparse.Namespace) -> int:
    """Print what ``args.store`` holds (JSON with ``--json``); exit 2 on a damaged store."""
    from convlab.store import Store, StoreDamaged

    store = Store(args.store)
    try:
        info = store_info(store, verify=args.verify)
    except StoreDamaged as exc:
        print(f"convlab stats: {exc}", file=sys.stderr)
        return EXIT_USAGE
    if args.json:
        print(json.dumps(info, indent=1, default=str))
        return EXIT_OK
    c, cfg = info["counts"], info["config"]
    first, last = info["messages_from"], info["messages_to"]
    print(f"store: {info['store']} (version {info['version']}, updated {info['updated']})")
    print(
        f"holds: {c.get('conversations', 0)} conversations, {c.get('turns', 0)} turns, "
        f"{c.get('units', 0)} units (mean {info['unit_tokens_mean']:.0f} tokens per unit)"
    )
    print(f"messages: {first or 'undated'} .. {last or 'undated'}")
    print(
        f"built with: system {info['system']} ({_held(cfg)}), max tokens "
        f"{cfg['max_tokens']}, index "
        f"{cfg['index_kind']}, embedder {info['model_id']}, redact {cfg['redact']}"
    )
    if cfg["redact"] != "none" and info["redact_rules"]:
        print(f"redaction rules: {info['redact_rules']}")
    print(
        f"transcripts: {info['files']} files indexed, {info['files_with_skips']} with skipped "
        f"records ({info['skipped_records']} records skipped)"
    )
    print(_detached_line(info["detached"], info["store"]))
    print(
        f"size on disk: {_size(info['bytes_total'])} (version {_size(info['bytes_version'])}, "
        f"embedding cache {_size(info['bytes_cache'])})"
    )
    print(info["verify"])
    for line in _cost_lines(info):
        print(line)
    return EXIT_OK


def _detached_line(detached: dict[str, int], store: str) -> str:
    """How many conversations are kept although their transcripts changed or went, and why."""
    n = sum(detached.values())
    if not n:
        return "detached: none (every conversation is in its transcript as stored)"
    why = ", ".join(f"{k} {v}" for k, v in sorted(detached.items()))
    return (
        f"detached: {n} conversations kept after their transcripts changed or went ({why}); "
        f"`convlab prune --store {store} --detached` removes them"
    )


def _cost_lines(info: StoreInfo) -> list[str]:
    """Each strategy's units and embedding cost, and what the last update embedded."""
    lines = ["units per strategy (per message with text; tokens embedded: of the distinct texts):"]
    for r in info["unit_costs"]:
        lines.append(
            f"  {r['strategy']}: {r['units']} units, {r['units_per_message']:.2f} per message, "
            f"{r['distinct_texts']} distinct texts, {r['tokens_embedded']} tokens embedded"
        )
    e = info["last_embedding"]
    if e is not None:
        lines.append(
            f"last update: {e.get('embedded', 0)} texts embedded, {e.get('from_cache', 0)} "
            f"from the cache, in {float(e.get('seconds', 0.0)):.1f} s"
        )
    return lines


class StoreInfo(TypedDict):
    """What ``convlab stats --json`` prints (``config`` and ``counts`` as the manifest has them)."""

    store: str
    version: str
    model_id: str
    config: dict[str, Any]
    system: str  # the system the store is searched with by default
    counts: dict[str, int]
    files: int
    files_with_skips: int
    skipped_records: int
    messages_from: str | None
    messages_to: str | None
    updated: str | None
    bytes_version: int
    bytes_cache: int
    unit_tokens_mean: float
    units_by_role: dict[str, int]
    verify: str
    redact_rules: str | None
    unit_costs: list[dict[str, Any]]  # convlab.pipeline.unit_costs, one row per strategy + all
    last_embedding: dict[str, Any] | None  # the last update's embedding pass (None: not kept)
    detached: dict[str, int]  # conversations kept after their transcripts changed, per reason
    bytes_total: int


def _size(n: int) -> str:
    """``n`` bytes for people: ``1.2 MB``."""
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if n >= scale:
            return f"{n / scale:.1f} {unit}"
    return f"{n} B"


def _bytes_under(root: Path) -> int:
    """The size of every file under ``root`` (0 when it is no folder)."""
    return sum(p.stat().st_size for p in root.rglob("*") if p.is_file()) if root.is_dir() else 0


def _mean(values: pl.Series) -> float:
    """The mean of ``values`` (0.0 for none)."""
    mean = values.cast(pl.Float64).mean()
    return float(mean) if isinstance(mean, int | float) else 0.0


def _day(value: object) -> str | None:
    """The ISO date of a datetime; ``None`` for anything else (an empty or undated store)."""
    return value.date().isoformat() if isinstance(value, datetime) else None


def store_info(store: Store, *, verify: bool) -> StoreInfo:
    """What ``convlab stats`` prints, read from one pinned version of the store."""
    m = store.manifest()
    version = store.version
    status = store.verify().line() if verify else None
    units = store.frame("units")
    convs = store.frame("conversations")
    files = m.files
    skips = [r.skipped for r in files.values()]
    first = convs["started_at"].min() if convs.height else None
    last = convs["ended_at"].max() if convs.height else None
    updated = m.updated_at
    if status is None:
        status = "checked: the manifest and every file's size; `--verify` checks every byte"
    bytes_version = _bytes_under(version)
    bytes_cache = _bytes_under(store.directory / "cache")
    return {
        "store": str(store.directory),
        "version": version.name,
        "model_id": m.model_id,
        "config": msgspec.to_builtins(m.config),
        "system": store.system().name,
        "counts": m.counts,
        "files": len(files),
        "files_with_skips": sum(1 for n in skips if n),
        "skipped_records": sum(skips),
        "messages_from": _day(first),
        "messages_to": _day(last),
        "updated": datetime.fromtimestamp(updated, UTC).strftime("%Y-%m-%d %H:%M UTC")
        if updated
        else None,
        "bytes_version": bytes_version,
        "bytes_cache": bytes_cache,
        "unit_tokens_mean": _mean(units["n_tokens"]),
        "units_by_role": dict(units.group_by("role").len().sort("role").iter_rows()),
        "verify": status,
        "redact_rules": m.redact_rules,
        "unit_costs": m.unit_costs,
        "last_embedding": m.embedding,
        "detached": dict(Counter(d.reason for d in m.detached.values())),
        "bytes_total": bytes_version + bytes_cache,  # last, as --json has always printed it
    }


def _held(config: dict[str, Any]) -> str:
    """The strategies a store holds, ``(BM25 only)`` after those not embedded."""
    return ", ".join(
        f"{s}{'' if s in config['dense'] else ' (BM25 only)'}" for s in config["strategies"]
    )
