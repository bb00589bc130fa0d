"""Which library loads, samples and trains a model: one interface, two implementations.

Covers: `get(name)` (the Backend for `cfg.backend`: "torch" = transformers, TRL and PEFT in
`backends/torch/`; "mlx" = MLX and mlx-lm in `backends/mlx/`), `backend_of` (which backend wrote
an artifact) and `for_model` (the backend that can load it). The interface is
`sparring.backends.base.Backend`. Nothing outside this package branches on the backend's name.

Does not cover: what a phase does with the model (sparring.phases). Importing this package
imports no framework; each backend imports its own lazily.
"""

from __future__ import annotations

import os

from sparring.backends.base import Backend, base_name, copy_model
from sparring.errors import SparringError

__all__ = ["Backend", "backend_of", "base_name", "copy_model", "for_model", "get"]


def get(name: str) -> Backend:
    """The backend called `name` ("torch" or "mlx")."""
    if name == "torch":
        from sparring.backends.torch import TorchBackend

        return TorchBackend()
    if name == "mlx":
        from sparring.backends.mlx import MlxBackend

        return MlxBackend()
    raise SparringError(f"backend: unknown backend {name!r}; use 'torch' or 'mlx'")


def backend_of(name_or_path: str, default: str = "torch") -> str:
    """ "mlx" for an artifact written by the MLX backend, else `default`."""
    from sparring.backends.base import read_meta

    if name_or_path and os.path.isdir(name_or_path):
        meta = read_meta(name_or_path) or {}
        if meta.get("backend") == "mlx":
            return "mlx"
    return default


def for_model(name_or_path: str, default: str = "torch") -> Backend:
    """The backend that loads `name_or_path` (an artifact says which one wrote it)."""
    return get(backend_of(name_or_path, default))
