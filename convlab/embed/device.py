"""Where the model runs: ``auto``, ``cpu`` or ``cuda``, resolved once per embedder.

The device is a setting of the run, never of the vectors: a GPU's fp32 vectors match the CPU's
(cosine >= 0.999, checked by ``python -m eval.bench_device``), so cache keys and store manifests
key on the model id alone and record the device only as provenance.

- ``torch``: ``auto`` is ``cuda`` when ``torch.cuda.is_available()``, else ``cpu``.
- ``onnx``: ``cuda`` needs onnxruntime's CUDA provider (the ``onnxruntime-gpu`` package); the
  CPU build (the ``onnx`` extra) has none, so there ``auto`` is ``cpu`` and ``cuda`` is refused.
- ``onnx-int8``: the CPU only. Its dynamically quantized operators (``MatMulInteger``) have no
  CUDA kernels in onnxruntime, so ``auto`` is ``cpu`` and ``cuda`` is refused.

Example:
    >>> resolve_device("cpu")
    'cpu'
    >>> resolve_device("auto", "onnx-int8")
    'cpu'
"""

from __future__ import annotations

import importlib.util
from enum import StrEnum

__all__ = [
    "CPU_ONLY_BACKENDS",
    "Device",
    "DeviceUnavailable",
    "device_of",
    "parse_device",
    "resolve_device",
    "torch_cuda_available",
]


class Device(StrEnum):
    """A device setting: ``auto`` (the GPU when there is one), ``cpu`` or ``cuda``."""

    AUTO = "auto"
    CPU = "cpu"
    CUDA = "cuda"


CPU_ONLY_BACKENDS = frozenset({"onnx-int8"})
"""Backends that run on the CPU only (dynamic int8 quantization has no CUDA kernels)."""


class DeviceUnavailable(ValueError):
    """``cuda`` was asked for where it cannot run: one line saying why and what to do."""


def parse_device(text: str) -> Device:
    """The :class:`Device` named ``text``.

    Raises:
        ValueError: not a device name, listing the valid ones.

    Example:
        >>> parse_device("cuda")
        <Device.CUDA: 'cuda'>
    """
    try:
        return Device(text)
    except ValueError:
        valid = ", ".join(d.value for d in Device)
        raise ValueError(f"unknown device {text!r}; valid: {valid}") from None


def torch_cuda_available() -> bool:
    """Whether torch is installed and sees a CUDA GPU (imports torch when it is installed)."""
    if importlib.util.find_spec("torch") is None:
        return False
    import torch

    return bool(torch.cuda.is_available())


def _onnx_cuda_available() -> bool:
    """Whether the installed onnxruntime has its CUDA provider (``onnxruntime-gpu``)."""
    if importlib.util.find_spec("onnxruntime") is None:
        return False
    import onnxruntime

    return "CUDAExecutionProvider" in onnxruntime.get_available_providers()


def resolve_device(device: str | Device = Device.AUTO, backend: str = "torch") -> str:
    """The device ``backend`` runs on: ``"cpu"`` or ``"cuda"``.

    Args:
        device: ``auto``, ``cpu`` or ``cuda``.
        backend: the MiniLM backend (``torch``, ``onnx``, ``onnx-int8``).

    Raises:
        ValueError: an unknown device name.
        DeviceUnavailable: ``cuda`` with no GPU for ``backend`` (no CUDA GPU visible to torch, no
            CUDA provider in onnxruntime, or a CPU-only backend), in one line.
    """
    wanted = parse_device(str(device))
    if wanted is Device.CPU:
        return "cpu"
    if backend in CPU_ONLY_BACKENDS:
        if wanted is Device.CUDA:
            raise DeviceUnavailable(
                f"--device cuda: the {backend} backend runs on the CPU only (its int8 operators "
                "have no CUDA kernels in onnxruntime); use --backend torch for the GPU, or "
                "--device cpu"
            )
        return "cpu"
    if backend == "torch":
        if torch_cuda_available():
            return "cuda"
        if wanted is Device.CUDA:
            raise DeviceUnavailable(
                "--device cuda: no CUDA GPU is available (torch.cuda.is_available() is False); "
                "use --device cpu or auto"
            )
        return "cpu"
    if _onnx_cuda_available():
        return "cuda"
    if wanted is Device.CUDA:
        raise DeviceUnavailable(
            f"--device cuda: the {backend} backend runs on the CPU here (onnxruntime has no "
            "CUDA provider: install onnxruntime-gpu), or use --backend torch for the GPU"
        )
    return "cpu"


def device_of(embedder: object) -> str:
    """The device ``embedder`` runs on, for provenance: its ``device``, else ``"cpu"``.

    Embedders without a ``device`` attribute (the hash embedder) compute on the CPU.
    """
    device = getattr(embedder, "device", None)
    return device if isinstance(device, str) else "cpu"
