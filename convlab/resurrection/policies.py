"""The resurrection policies' registry, and policies named with their parameters.

A policy is named by its registered name (``"window"``: its defaults) or by a **spec** that sets
its integer parameters, ``name:key=value:key=value`` (``"window:n=2"``,
``"adaptive:short=16:long=64"``): what ``--resurrection``, an experiment file's
``resurrection`` and the policy grid's ``policy`` column hold, so that a parameter such as
``window``'s ``n`` is a candidate of the grid and is chosen by cross-validation like any other
cell (:mod:`convlab.studies.policy_cv`). Specs are parsed here only.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable

from convlab.protocols import ResurrectionPolicy
from convlab.registry import Registry

__all__ = ["POLICIES", "get_policy", "parse_spec"]

POLICIES: Registry[Callable[..., ResurrectionPolicy]] = Registry("resurrection policy")
"""Resurrection policies by name; each is a class whose defaults make a working policy."""


def parse_spec(spec: str) -> tuple[str, dict[str, int]]:
    """A policy spec's name and its integer parameters.

    Raises:
        ValueError: a parameter that is not ``key=integer``, or one given twice.

    Example:
        >>> parse_spec("adaptive:short=16:long=64")
        ('adaptive', {'short': 16, 'long': 64})
        >>> parse_spec("unit+doc")
        ('unit+doc', {})
    """
    name, *parts = spec.split(":")
    params: dict[str, int] = {}
    for part in parts:
        key, eq, value = part.partition("=")
        try:
            number = int(value)
        except ValueError:
            number = None
        if not eq or not key or number is None:
            raise ValueError(
                f"bad resurrection policy {spec!r}: a parameter is key=integer, got {part!r}"
            )
        if key in params:
            raise ValueError(f"bad resurrection policy {spec!r}: {key!r} given twice")
        params[key] = number
    return name, params


def get_policy(policy: str | ResurrectionPolicy) -> ResurrectionPolicy:
    """The policy a name or spec makes (:func:`parse_spec`), or ``policy`` itself.

    Raises:
        ValueError: an unknown name (listing the valid ones), a parameter the policy does not
            take (listing those it takes) or a bad value, or an object that is not a policy.

    Example:
        >>> get_policy("window").n, get_policy("window:n=3").n
        (1, 3)
    """
    if isinstance(policy, str):
        name, params = parse_spec(policy)
        cls = POLICIES.get(name)
        if params:
            takes = list(inspect.signature(cls).parameters)
            unknown = sorted(set(params) - set(takes))
            if unknown:
                raise ValueError(
                    f"resurrection policy {name!r} takes no parameter {unknown[0]!r}; "
                    f"it takes: {', '.join(takes) or 'none'}"
                )
        return cls(**params)
    if not isinstance(policy, ResurrectionPolicy):
        raise ValueError(
            f"not a resurrection policy: {policy!r}; valid names: {', '.join(POLICIES.names())}"
        )
    return policy
