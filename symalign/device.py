"""Choose the compute device once: `auto` means CUDA, then MPS, then CPU.

torch is imported inside the functions: the app's pages import this module, and Home must paint
before torch (1.5 s) is loaded."""

from __future__ import annotations

from typing import TYPE_CHECKING

from symalign.errors import SymalignError

if TYPE_CHECKING:
    import torch


def pick_device(name: str = "auto") -> torch.device:
    import torch

    if name == "auto":
        if torch.cuda.is_available():
            return torch.device("cuda")
        if getattr(torch.backends, "mps", None) is not None and torch.backends.mps.is_available():
            return torch.device("mps")
        return torch.device("cpu")
    if name == "cuda" and not torch.cuda.is_available():
        raise SymalignError("--device cuda asked for, but no CUDA device is available (use auto or cpu)")
    if name == "mps" and not (getattr(torch.backends, "mps", None) and torch.backends.mps.is_available()):
        raise SymalignError("--device mps asked for, but MPS is not available (use auto or cpu)")
    if name not in ("cpu", "cuda", "mps"):
        raise SymalignError(f"unknown device {name!r}; choose auto, cpu, cuda or mps")
    return torch.device(name)


def describe_devices() -> dict[str, str | bool]:
    """What the machine offers, for the app's sidebar and `symalign` reports."""
    import torch

    info: dict[str, str | bool] = {"cpu": True, "cuda": torch.cuda.is_available(), "mps": False}
    if info["cuda"]:
        info["cuda_name"] = torch.cuda.get_device_name(0)
    mps = getattr(torch.backends, "mps", None)
    info["mps"] = bool(mps is not None and mps.is_available())
    return info
