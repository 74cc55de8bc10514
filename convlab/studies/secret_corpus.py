"""The trial corpora of redaction, made at run time from a seeded generator.

Three sets, none of them stored in the repository (no live-looking secret is committed; running
:func:`build` again gives the same texts):

- ``families``: 40 families of stored secrets (provider keys, private keys, connection strings,
  a Twilio token passed positionally ``Client("AC...", "<hex32>")``, a Datadog ``app_key:
  <hex40>``, a GCP ``private_key_id`` in a pasted service-account JSON, a key wrapped over two
  lines), :mod:`convlab.studies.secret_families`;
- ``shapes``: 20 shapes of credentials known by where they stand (a Django ``SECRET_KEY`` with a
  ``)`` inside, ``curl -u admin:<password>``, ``heroku auth:token`` output, a docker
  ``config.json`` auth, ``.netrc``, a PEM key inside a base64 ``tls.key``, a JSON-escaped Slack
  webhook, ``.npmrc`` ``_auth=``...), :mod:`convlab.studies.secret_families` too;
- look-alikes: 60 shapes that must come out unchanged (hashes, UUIDs, git SHAs, base64 images,
  example placeholders, public certificates...), :mod:`convlab.studies.secret_lookalikes`,
  half given to each corpus.

Every secret and look-alike is placed in the three places a store keeps text where secrets live:
a user's prompt (``user``), a tool's output (``tool_output``, stored with ``--include
tool-output``) and a model's thinking (``thinking``, stored with ``--include thinking``), each
time drawn anew. A record is ``{id, kind, where, secret, text}`` (no ``secret`` for a
look-alike), as :func:`convlab.studies.redact_bench.corpus_scores` takes.

Example:
    >>> secrets, lookalikes = build("families")
    >>> len(secrets), sorted({s["where"] for s in secrets})
    (120, ['thinking', 'tool_output', 'user'])
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any

from convlab.studies.secret_draw import Draw, Shape
from convlab.studies.secret_families import FAMILIES
from convlab.studies.secret_lookalikes import LOOKALIKES
from convlab.studies.secret_shapes import SHAPES

__all__ = ["CHANNELS", "SEED", "TRIAL_CORPORA", "build", "place"]

SEED = 20261202
CHANNELS = ("user", "tool_output", "thinking")
TRIAL_CORPORA = ("families", "shapes")
_USER = (
    "this fails with 401, what is wrong?",
    "can you check my setup?",
    "I ran it and got this:",
    "here is what I have:",
)
_THINKING = (
    "The user pasted this:",
    "The file holds:",
    "The command printed:",
)


def place(d: Draw, where: str, snippet: str) -> str:
    """``snippet`` as a user's prompt, a tool's output or a model's thinking would hold it."""
    block = "\n" in snippet.strip()
    if where == "tool_output":
        return snippet if snippet.endswith("\n") else snippet + "\n"
    if where == "user":
        intro = d.pick(_USER)
        return f"{intro}\n{snippet}\nthanks" if block else f"{intro} {snippet}"
    if where == "thinking":
        intro = d.pick(_THINKING)
        end = "Next I will look at the rest of the setup."
        return f"{intro}\n{snippet}\n{end}" if block else f"{intro} {snippet}\n{end}"
    raise ValueError(f"unknown place {where!r}; choose one of {', '.join(CHANNELS)}")


def _records(
    prefix: str, shapes: Sequence[tuple[str, Shape]], d: Draw, *, lookalike: bool
) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for kind, shape in shapes:
        for where in CHANNELS:
            secret, snippet = shape(d)
            if not lookalike and secret not in snippet:
                raise ValueError(f"{kind}: the secret is not in its snippet")
            record = {"id": f"{prefix}{len(out) + 1:03d}", "kind": kind, "where": where}
            if not lookalike:
                record["secret"] = secret
            record["text"] = place(d, where, snippet)
            out.append(record)
    return out


def build(name: str, seed: int = SEED) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The ``(secrets, lookalikes)`` of the trial corpus ``name`` (one of :data:`TRIAL_CORPORA`)."""
    if name not in TRIAL_CORPORA:
        raise ValueError(f"unknown trial corpus {name!r}; choose one of {', '.join(TRIAL_CORPORA)}")
    d = Draw(random.Random(f"{seed}-{name}"))
    shapes = FAMILIES if name == "families" else SHAPES
    half = len(LOOKALIKES) // 2
    likes = LOOKALIKES[:half] if name == "families" else LOOKALIKES[half:]
    prefix = name[0]
    return (
        _records(prefix, shapes, d, lookalike=False),
        _records(f"{prefix}l", likes, d, lookalike=True),
    )
