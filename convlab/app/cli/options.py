"""What the subcommands share: the store option, dates, embedders and engines by name.

Every choice offered on the command line is read from the registry that holds the parts
(strategies, index kinds, redaction modes, backends, engines, embedders), so the
help, the errors and the code name the same things.
"""

from __future__ import annotations

import argparse
import re
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING

from convlab.app.exits import UsageError

if TYPE_CHECKING:
    from convlab.engines import Engine
    from convlab.protocols import Embedder
    from convlab.store import Store
    from convlab.store.format import StoreManifest

__all__ = [
    "DEFAULT_STORE",
    "add_common",
    "add_device",
    "add_store",
    "embedder_for_vectors",
    "engine",
    "make_embedder",
    "parse_date",
    "resolve_conversation",
]

DEFAULT_STORE = Path("~/.convlab/store")


def add_store(sp: argparse.ArgumentParser) -> None:
    """``--store DIR`` (default ``~/.convlab/store``)."""
    sp.add_argument(
        "--store", type=Path, default=DEFAULT_STORE, help="store directory (%(default)s)"
    )


def add_common(p: argparse.ArgumentParser, *, top: bool) -> None:
    """``--quiet``, ``--verbose``, ``--debug``: accepted before or after the subcommand."""
    default: bool | str = False if top else argparse.SUPPRESS  # a subcommand keeps the top's
    p.add_argument("-q", "--quiet", action="store_true", default=default, help="no progress")
    p.add_argument(
        "-v", "--verbose", action="store_true", default=default, help="list every skipped file"
    )
    p.add_argument(
        "--debug", action="store_true", default=default, help="print tracebacks of internal errors"
    )


def resolve_conversation(store: Store, text: str, *, shown: int = 5) -> str:
    """The stored conversation that ``text`` names: its id, or a unique prefix of it.

    A prefix that matches a session and its sidechains (``{session}:agent-...``) names the
    session.

    Raises:
        UsageError: no conversation starts with ``text``, or several do (the first ``shown``
            named).
    """
    found = store.conversation_ids(text)
    heads = [c for c in found if not any(c.startswith(f"{o}:") for o in found if o != c)]
    if len(heads) == 1:
        return heads[0]
    if not heads:
        raise UsageError(f"no conversation {text!r} in {store.directory}")
    more = f" and {len(heads) - shown} more" if len(heads) > shown else ""
    raise UsageError(
        f"{text!r} is the start of {len(heads)} conversations: "
        f"{', '.join(heads[:shown])}{more}; give more of the id"
    )


# --- embedders -----------------------------------------------------------------------------------


def add_device(p: argparse.ArgumentParser) -> None:
    """``--device auto|cpu|cuda`` (default ``auto``: the GPU when there is one)."""
    from convlab.embed import Device

    p.add_argument(
        "--device",
        default=Device.AUTO.value,
        choices=[d.value for d in Device],
        help="where the model embeds: 'auto' (a CUDA GPU when torch sees one, else the CPU), "
        "'cpu' or 'cuda' (refused without a GPU); onnx-int8 runs on the CPU only; with "
        "--engine ray, resolved against the cluster (%(default)s)",
    )


def make_embedder(name: str, backend: str = "torch", device: str = "auto") -> Embedder:
    """The embedder of ``--embedder NAME --backend BACKEND --device DEVICE``, for indexing.

    Raises:
        UsageError: an unknown embedder or backend, naming the valid ones, or ``cuda`` where
            there is no GPU for the backend (one line saying why).
    """
    from convlab.embed import make_embedder as make

    try:
        return make(name, backend, device=device)
    except ValueError as exc:
        raise UsageError(str(exc)) from None


def embedder_for_vectors(vectors: StoreManifest, name: str | None, backend: str | None) -> Embedder:
    """The embedder for queries against a store's vectors.

    Args:
        vectors: the store's manifest: the ``embedder`` it names and the ``model_id``.
        name: ``--embedder`` when given; else the embedder the manifest names.
        backend: ``--backend`` when given.

    Raises:
        UsageError: an unknown ``name``, or vectors no registered embedder can query.
    """
    from convlab.embed import make_embedder as make

    model_id = vectors.model_id
    try:
        return make(name or vectors.embedder, backend, model_id=model_id)
    except ValueError as exc:
        raise UsageError(f"the store's vectors ({model_id!r}): {exc}") from None


def engine(name: str, address: str | None, device: str = "auto") -> Engine:
    """The embedding engine of ``--engine NAME [--address ADDR] [--device DEVICE]``.

    The Ray engine takes the device itself: it resolves it against the cluster at each job.

    Raises:
        UsageError: ``--address`` without ``--engine ray``, or the engine's extra is missing.
    """
    from convlab.engines import get_engine

    if address is not None and name != "ray":
        raise UsageError("--address joins a Ray cluster: use it with --engine ray")
    options: dict[str, str] = {"address": address} if address else {}
    if name == "ray":
        options["device"] = device
    try:
        return get_engine(name, **options)
    except ImportError as exc:  # the extra is missing: one line naming it
        raise UsageError(str(exc)) from None


_AGE = re.compile(r"(\d+)\s*(h|hours?|d|days?|w|weeks?)")
_DAY_NAMES = {"today": 0, "yesterday": 1}


def parse_date(
    text: str | None, option: str, *, end: bool = False, now: datetime | None = None
) -> datetime | None:
    """A time the user wrote, as UTC: a date, an ISO time, an age or a day's name.

    The grammar, exactly (case and surrounding spaces ignored):

    - ``2026-01-31``: that UTC day's start, or with ``end`` its last microsecond;
    - ``2026-01-31T14:30`` (any ISO time; UTC when it names no zone);
    - ``7d``, ``2w``, ``3h`` (also ``7 days``, ``2 weeks``, ``1 hour``): that long before ``now``;
    - ``today``, ``yesterday``: the UTC day of ``now`` or the one before, as a bare date is read.

    Args:
        text: what the user wrote (None: no bound).
        option: the option's name, for the error.
        end: the bound is an upper one (``--until``): a day counts whole.
        now: the reference time of ages and day names (default: the clock now).

    Raises:
        UsageError: ``text`` is none of these, naming ``option`` and the grammar, or a time
            outside the calendar's years 1 to 9999 once in UTC (``999999999d``).

    Example:
        >>> parse_date("2026-01-31", "--until", end=True).isoformat()
        '2026-01-31T23:59:59.999999+00:00'
        >>> now = datetime(2026, 3, 10, 15, 30, tzinfo=UTC)
        >>> parse_date("2w", "--since", now=now).isoformat()
        '2026-02-24T15:30:00+00:00'
        >>> parse_date("yesterday", "--until", end=True, now=now).isoformat()
        '2026-03-09T23:59:59.999999+00:00'
    """
    if text is None:
        return None
    try:
        return _parse_date(text, option, end, now)
    except OverflowError:  # an age or a zone that leaves the years 1 to 9999
        raise UsageError(
            f"{option} {text.strip()!r} is outside the calendar (years 1 to 9999, in UTC)"
        ) from None


def _parse_date(text: str, option: str, end: bool, now: datetime | None) -> datetime:
    word = text.strip().lower()
    if word in _DAY_NAMES or _AGE.fullmatch(word):
        ref = datetime.now(UTC) if now is None else now
        ref = ref.replace(tzinfo=UTC) if ref.tzinfo is None else ref.astimezone(UTC)
        age = _AGE.fullmatch(word)
        if age is not None:
            hours = int(age.group(1)) * {"h": 1, "d": 24, "w": 168}[age.group(2)[0]]
            return ref - timedelta(hours=hours)
        day = ref.date() - timedelta(days=_DAY_NAMES[word])
        return _day_bound(datetime(day.year, day.month, day.day, tzinfo=UTC), end)
    try:
        d = datetime.fromisoformat(text.strip())
    except ValueError:
        raise UsageError(
            f"{option} expects a date (2026-01-31), a time (2026-01-31T14:30), an age "
            f"(7d, 2w, 3h) or today/yesterday, got {text!r}"
        ) from None
    try:
        date.fromisoformat(text.strip())
        bare = True
    except ValueError:
        bare = False
    d = d.replace(tzinfo=UTC) if d.tzinfo is None else d.astimezone(UTC)
    return _day_bound(d, end) if bare else d


def _day_bound(start: datetime, end: bool) -> datetime:
    """A day's first microsecond, or its last when ``end``."""
    return start.replace(hour=23, minute=59, second=59, microsecond=999_999) if end else start
