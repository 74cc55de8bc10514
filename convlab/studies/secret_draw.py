"""A seeded source of the strings secrets are made of, for the trial corpora.

See :mod:`convlab.studies.secret_corpus`.
"""

from __future__ import annotations

import random
import string
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass

__all__ = ["ALNUM", "B64", "HEX", "URLSAFE", "Draw", "Shape"]

HEX = "0123456789abcdef"
ALNUM = string.ascii_letters + string.digits
URLSAFE = ALNUM + "_-"
B64 = ALNUM + "+/"
# symbols a password holds unquoted in a shell word, a URL's user part and a config line
_SYMBOLS = "#%*+-.=?^_~"


@dataclass(frozen=True, slots=True)
class Draw:
    """A seeded source of random strings of the shapes secrets take."""

    rng: random.Random

    def chars(self, alphabet: str, n: int) -> str:
        """``n`` characters of ``alphabet``."""
        return "".join(self.rng.choice(alphabet) for _ in range(n))

    def hex(self, n: int) -> str:
        """``n`` lowercase hex digits."""
        return self.chars(HEX, n)

    def alnum(self, n: int) -> str:
        """``n`` letters and digits."""
        return self.chars(ALNUM, n)

    def urlsafe(self, n: int) -> str:
        """``n`` characters of the URL-safe base64 alphabet."""
        return self.chars(URLSAFE, n)

    def bytes(self, n: int) -> bytes:
        """``n`` random bytes."""
        return bytes(self.rng.randrange(256) for _ in range(n))

    def uuid(self) -> str:
        """A random (version 4) UUID."""
        return str(uuid.UUID(int=self.rng.getrandbits(128), version=4))

    def digits(self, n: int) -> str:
        """``n`` digits, the first not 0."""
        return self.chars("123456789", 1) + self.chars(string.digits, n - 1)

    def password(self, n: int = 14, symbols: str = _SYMBOLS) -> str:
        """A made-up password: a letter, then upper and lower case, digits and a symbol."""
        core = [
            *self.chars(string.ascii_uppercase, 2),
            *self.chars(string.digits, 2),
            *self.chars(symbols, 1),
            *self.chars(string.ascii_lowercase, n - 5),
        ]
        self.rng.shuffle(core)
        return self.chars(string.ascii_letters, 1) + "".join(core)

    def pick(self, options: Sequence[str]) -> str:
        """One of ``options``."""
        return self.rng.choice(list(options))


Shape = Callable[[Draw], tuple[str, str]]
"""A family or shape: given a draw, ``(secret, snippet)``, the snippet holding the secret."""
