"""Argument checks of the frontend's public functions: int16 PCM and integer arrays, named errors."""
from __future__ import annotations

import numpy as np


def int16_array(x, func: str, name: str, ndim: int = 1) -> np.ndarray:
    """``x`` as a C-contiguous int16 array of ``ndim`` dimensions. An int16 array (or list of ints) only: floats
    (NaN included), other integer dtypes and values beyond int16 are refused, never converted."""
    if isinstance(x, (bytes, bytearray, memoryview)):
        raise TypeError(f"{func}: {name} must be an int16 array; decode PCM bytes with "
                        f"np.frombuffer(data, '<i2') first")
    a = np.asarray(x)
    if a.dtype == np.int16:
        pass
    elif a.dtype.kind in "iu" and a.size and (a.min() < -32768 or a.max() > 32767):
        raise ValueError(f"{func}: {name} must hold int16 values (-32768..32767), got {a.min()}..{a.max()}")
    elif a.dtype.kind == "f":
        raise TypeError(f"{func}: {name} must be int16 PCM, got {a.dtype} (scale and round floats to int16 "
                        f"yourself; NaN has no PCM value)")
    elif a.dtype.kind not in "iu" and not (a.dtype == object and all(isinstance(v, int) for v in a.ravel())):
        raise TypeError(f"{func}: {name} must be an int16 array, got dtype {a.dtype}")
    if a.ndim != ndim:
        raise ValueError(f"{func}: {name} must have {ndim} dimension(s), got shape {a.shape}")
    return np.ascontiguousarray(a.astype(np.int16) if a.dtype != np.int16 else a)


def int_array(x, func: str, name: str, lo: int, hi: int, shape=None) -> np.ndarray:
    """``x`` as a C-contiguous int64 array with every value in [lo, hi] (refusing floats and other kinds)."""
    a = np.asarray(x)
    if a.dtype.kind not in "iu":
        raise TypeError(f"{func}: {name} must be an integer array, got dtype {a.dtype}")
    if shape is not None and a.shape != tuple(shape):
        raise ValueError(f"{func}: {name} must have shape {tuple(shape)}, got {a.shape}")
    if a.size and (int(a.min()) < lo or int(a.max()) > hi):
        raise ValueError(f"{func}: {name} must hold values in {lo}..{hi}, got {a.min()}..{a.max()}")
    return np.ascontiguousarray(a, dtype=np.int64)
