"""The Signal library's streaming operators (``signal/micro/kernels/{delay,framer,stacker,overlap_add}.cc`` over
``signal/src/circular_buffer.cc`` and ``overlap_add.cc``): what they keep between invocations is an explicit
argument and result here, so the callers (the model's state, a test) hold it.

* ``SignalDelay``: each row's samples come out ``delay_length`` samples later (the FIFO starts with that many
  zeros).
* ``SignalFramer``: per row, ``frame_step`` new samples per frame into a FIFO (prefilled with ``frame_size -
  frame_step`` zeros when ``prefill``); each time it holds ``frame_size`` samples the frame is output and
  ``frame_step`` dropped. When a frame is missing, ``valid`` is False and the C code leaves that output frame as
  the arena held it: here, the previous output.
* ``SignalStacker``: ``num_channels`` values a call into a FIFO; the first call's are repeated ``left_context``
  more times; when it holds ``(left + right + 1) * num_channels`` values they are output and ``step *
  num_channels`` dropped (otherwise ``valid`` False, the output left as it was).
* ``SignalOverlapAdd``: per frame, ``buffer += frame`` (int16 saturating, float32 IEEE), the first ``frame_step``
  values out, the buffer shifted left by ``frame_step`` and zero-filled.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from ..._errors import names_its_errors
from .._checks import check_tensor, int_in_range

_I16 = (np.dtype(np.int16),)


@njit(cache=True, nogil=True)
def _overlap_add_kernel(x, buffer, frame_step, saturate, out):
    """``OverlapAdd`` over x (outer, n_frames, frame_size) with ``buffer`` (outer, frame_size) in place."""
    outer, n_frames, size = x.shape
    for i in range(outer):
        for f in range(n_frames):
            for k in range(size):
                if saturate:
                    buffer[i, k] = min(max(np.int64(x[i, f, k]) + np.int64(buffer[i, k]), -32768), 32767)
                else:
                    buffer[i, k] = x[i, f, k] + buffer[i, k]
            for k in range(frame_step):
                out[i, f * frame_step + k] = buffer[i, k]
            for k in range(size - frame_step):
                buffer[i, k] = buffer[i, k + frame_step]
            for k in range(size - frame_step, size):
                buffer[i, k] = 0


def _rows(x, func, name="x", allowed=_I16):
    x = check_tensor(x, func, name, allowed=allowed)
    if x.ndim < 1:
        raise ValueError(f"{func}: {name} must have at least one dimension")
    return x.reshape(-1, x.shape[-1])


def _state(state, shape, dtype, func, name):
    s = check_tensor(state, func, name, allowed=(np.dtype(dtype),)) if np.size(state) else np.asarray(state, dtype)
    if s.shape != shape:
        raise ValueError(f"{func}: {name} must have shape {shape}, got {s.shape}")
    return s


@names_its_errors
def signal_delay(x, history, delay_length: int):
    """``SignalDelay``: (output, new history). Each row of the int16 ``x`` (..., frame) continues its row of
    ``history`` ((rows, delay_length) int16, zeros after a reset); the output is the first ``frame`` samples of
    history + x, the new history the last ``delay_length``."""
    f = "signal_delay"
    rows = _rows(x, f)
    d = int_in_range(delay_length, 0, 1 << 24, f, "delay_length")
    hist = _state(history, (rows.shape[0], d), np.int16, f, "history")
    both = np.concatenate([hist, rows], axis=1)
    return both[:, :rows.shape[1]].reshape(np.shape(x)).copy(), both[:, rows.shape[1]:].copy()


@names_its_errors
def signal_framer(x, fifo, previous, frame_size: int, frame_step: int):
    """``SignalFramer``: (frames, valid, new fifo). ``x`` (..., n * frame_step) int16; ``fifo`` (rows, k) int16 the
    samples each row's FIFO holds (after a reset: ``frame_size - frame_step`` zeros with prefill, else none);
    ``previous`` the last output (..., n, frame_size), kept where a frame is missing."""
    f = "signal_framer"
    size = int_in_range(frame_size, 1, 1 << 24, f, "frame_size")
    step = int_in_range(frame_step, 1, 1 << 24, f, "frame_step")
    rows = _rows(x, f)
    if rows.shape[1] < step or rows.shape[1] % step:
        raise ValueError(f"{f}: x's last dimension {rows.shape[1]} must be a positive multiple of frame_step {step}")
    n = rows.shape[1] // step
    fifo = check_tensor(fifo, f, "fifo", ndim=2, allowed=_I16) if np.size(fifo) else np.zeros((rows.shape[0], 0),
                                                                                              np.int16)
    capacity = -(-size // step) * step
    if fifo.shape[0] != rows.shape[0] or fifo.shape[1] > capacity - step:
        raise ValueError(f"{f}: fifo must have {rows.shape[0]} rows of at most {capacity - step} samples, got "
                         f"{fifo.shape}")
    shape = np.shape(x)[:-1] + (n, size)
    out = _state(previous, shape, np.int16, f, "previous").reshape(rows.shape[0], n, size).copy()
    valid = True
    for k in range(n):
        fifo = np.concatenate([fifo, rows[:, k * step:(k + 1) * step]], axis=1)
        if fifo.shape[1] >= size:
            out[:, k] = fifo[:, :size]
            fifo = fifo[:, step:]
        else:
            valid = False
    return out.reshape(shape), valid, fifo.copy()


@names_its_errors
def signal_stacker(x, fifo, num_channels: int, left_context: int, right_context: int, step: int, previous):
    """``SignalStacker``: (stacked, valid, new fifo). ``x`` (num_channels,) int16; ``fifo`` the values the FIFO
    holds, None after a reset (the next call then repeats its input ``left_context`` more times); ``previous`` the
    last output ((left + right + 1) * num_channels,), kept where the stack is not full."""
    f = "signal_stacker"
    nc = int_in_range(num_channels, 1, 1 << 20, f, "num_channels")
    left = int_in_range(left_context, 0, 1 << 10, f, "left_context")
    right = int_in_range(right_context, 0, 1 << 10, f, "right_context")
    width = left + right + 1
    st = int_in_range(step, 1, width, f, "step")
    x = check_tensor(x, f, "x", ndim=1, allowed=_I16)
    if x.shape[0] != nc:
        raise ValueError(f"{f}: x must hold num_channels = {nc} values, got {x.shape[0]}")
    out = _state(previous, (width * nc,), np.int16, f, "previous").copy()
    if fifo is None:
        fifo = np.tile(x, left + 1)
    else:
        fifo = check_tensor(fifo, f, "fifo", ndim=1, allowed=_I16) if np.size(fifo) else np.zeros(0, np.int16)
        if fifo.shape[0] > (width - 1) * nc:
            raise ValueError(f"{f}: fifo holds {fifo.shape[0]} values, at most {(width - 1) * nc} between calls")
        fifo = np.concatenate([fifo, x])
    if fifo.shape[0] < width * nc:
        return out, False, fifo
    return fifo[:width * nc].copy(), True, fifo[st * nc:].copy()


@names_its_errors
def signal_overlap_add(x, buffer, frame_step: int):
    """``SignalOverlapAdd``: (output, new buffer). ``x`` (..., n_frames, frame_size) int16 or float32; ``buffer``
    (rows, frame_size) of the same type, zeros after a reset; output (..., n_frames * frame_step). int16 sums
    saturate; float32 sums are IEEE."""
    f = "signal_overlap_add"
    x = check_tensor(x, f, "x", allowed=(np.dtype(np.int16), np.dtype(np.float32)))
    if x.ndim < 2:
        raise ValueError(f"{f}: x must be (..., n_frames, frame_size), got shape {x.shape}")
    size = x.shape[-1]
    step = int_in_range(frame_step, 1, size, f, "frame_step")
    frames = x.reshape(-1, x.shape[-2], size)
    buf = _state(buffer, (frames.shape[0], size), x.dtype, f, "buffer").copy()
    out = np.empty((frames.shape[0], frames.shape[1] * step), x.dtype)
    _overlap_add_kernel(np.ascontiguousarray(frames), buf, step, x.dtype == np.int16, out)
    return out.reshape(x.shape[:-2] + (frames.shape[1] * step,)), buf
