"""TensorFlow Lite Micro's Signal library custom operators (``signal/micro/kernels/*.cc``): the audio front end
inside a .tflite model (``CUSTOM(SignalWindow)`` ... ``CUSTOM(SignalFilterBankLog)``).

Each op's ``custom_options`` is a FlexBuffer map (decoded by :mod:`dspsim.tflite.flexbuffers`); the C Init reads
its values by their alphabetical position, so a missing or mistyped key is refused here. The C config fields are
uint32 where the options are int32 (an int32 option is taken modulo 2^32 as the C assignment does). The noise
estimate of ``SignalFilterBankSpectralSubtraction`` persists between invocations in the model's state (zeros
after ``reset``, as the op's Reset memsets it).
"""
from __future__ import annotations

import numpy as np

from ...kernels.signal import (
    signal_energy, signal_fft_auto_scale, signal_filter_bank, signal_filter_bank_log,
    signal_filter_bank_spectral_subtraction, signal_filter_bank_square_root, signal_pcan, signal_rfft, signal_window,
)
from ..prepare import Prepared, at_run, builtin, check_arity, check_dtype, refuse

_I16, _I32 = np.dtype(np.int16), np.dtype(np.int32)
_U32, _U64 = np.dtype(np.uint32), np.dtype(np.uint64)
_INT16_TYPE = 7   # TensorType INT16, the option 'T' of SignalRfft


def _option(op, name, lo=-(1 << 31), hi=(1 << 31) - 1, kind=int):
    """Custom option ``name``: an int (bool for ``kind=bool``) in [lo, hi], else a refusal."""
    if name not in op.options:
        refuse(op, f"custom option {name!r} is missing (the C Init reads it by position)")
    v = op.options[name]
    if kind is bool:
        if not isinstance(v, (bool, int)):
            refuse(op, f"custom option {name!r} must be a bool, got {v!r}")
        return bool(v)
    if isinstance(v, bool) or not isinstance(v, int) or not lo <= v <= hi:
        refuse(op, f"custom option {name!r} must be an int in [{lo}, {hi}], got {v!r}")
    return v


def _types(op, g, inputs, outputs):
    """Check the operator's arity and tensor types (``inputs`` / ``outputs``: one dtype per tensor)."""
    check_arity(op, len(inputs), len(outputs))
    for k, (i, dt) in enumerate(zip(op.inputs, inputs)):
        if i < 0:
            refuse(op, f"input {k} is absent (tensor index -1)")
        check_dtype(op, g.tensor(i), (dt,), f"input {k}")
    for k, (i, dt) in enumerate(zip(op.outputs, outputs)):
        check_dtype(op, g.tensor(i), (dt,), f"output {k}")


def _u32(v):
    return v & 0xFFFFFFFF


@builtin("CUSTOM(SignalWindow)")
def prepare_signal_window(op, g):
    _types(op, g, (_I16, _I16), (_I16,))
    shift = _option(op, "shift", 0, 31)
    return Prepared(lambda inputs: at_run(op, signal_window, inputs[0], inputs[1], shift), {"shift": shift})


@builtin("CUSTOM(SignalFftAutoScale)")
def prepare_signal_fft_auto_scale(op, g):
    _types(op, g, (_I16,), (_I16, _I32))

    def run(inputs):
        out, bits = at_run(op, signal_fft_auto_scale, inputs[0])
        return out, np.array(bits, np.int32)

    return Prepared(run)


@builtin("CUSTOM(SignalRfft)")
def prepare_signal_rfft(op, g):
    if op.options.get("T", _INT16_TYPE) != _INT16_TYPE:
        refuse(op, f"SignalRfft of TensorType {op.options['T']} is not modelled (int16 only)")
    _types(op, g, (_I16,), (_I16,))
    n = _option(op, "fft_length", 4, 1 << 16)
    if n & (n - 1):
        refuse(op, f"fft_length {n} is not a power of two (dspsim models kissfft's radix-2/4 stages)")
    t_out = g.tensor(op.outputs[0])
    if not t_out.shape or t_out.shape[-1] != n + 2:
        refuse(op, f"output tensor {t_out.index} has shape {t_out.shape}; its last dimension must be fft_length + 2 "
                   f"= {n + 2}")
    return Prepared(lambda inputs: at_run(op, signal_rfft, inputs[0], n), {"fft_length": n})


@builtin("CUSTOM(SignalEnergy)")
def prepare_signal_energy(op, g):
    _types(op, g, (_I16,), (_U32,))
    params = {"start_index": _option(op, "start_index", 0), "end_index": _option(op, "end_index", 0)}
    return Prepared(lambda inputs: at_run(op, signal_energy, inputs[0], **params), params)


@builtin("CUSTOM(SignalFilterBank)")
def prepare_signal_filter_bank(op, g):
    _types(op, g, (_U32,) + (_I16,) * 5, (_U64,))
    n = _option(op, "num_channels", 1, 1 << 15)
    return Prepared(lambda inputs: at_run(op, signal_filter_bank, *inputs, n), {"num_channels": n})


@builtin("CUSTOM(SignalFilterBankSquareRoot)")
def prepare_signal_filter_bank_square_root(op, g):
    _types(op, g, (_U64, _I32), (_U32,))
    return Prepared(lambda inputs: at_run(op, signal_filter_bank_square_root, inputs[0], int(inputs[1])))


@builtin("CUSTOM(SignalFilterBankSpectralSubtraction)")
def prepare_signal_filter_bank_spectral_subtraction(op, g):
    _types(op, g, (_U32,), (_U32, _U32))
    params = {name: _u32(_option(op, name)) for name in (
        "smoothing", "one_minus_smoothing", "alternate_smoothing", "alternate_one_minus_smoothing",
        "min_signal_remaining")}
    params["smoothing_bits"] = _option(op, "smoothing_bits", 0, 31)
    params["spectral_subtraction_bits"] = _option(op, "spectral_subtraction_bits", 0, 63)
    params["clamping"] = _option(op, "clamping", kind=bool)
    n = _option(op, "num_channels", 1, 1 << 15)
    if g.tensor(op.inputs[0]).shape != (n,):
        refuse(op, f"input tensor {op.inputs[0]} has shape {g.tensor(op.inputs[0]).shape}, num_channels is {n}")
    key = (op.name, str(op.index))  # the op's persistent noise estimate in the model's state

    def run(inputs):
        estimate = g.state.resources.get(key)
        if estimate is None:
            estimate = np.zeros(n, np.uint32)
        out, estimate = at_run(op, signal_filter_bank_spectral_subtraction, inputs[0], estimate, **params)
        g.state.assign(key, estimate, op.outputs[1])
        return out, estimate.copy()

    return Prepared(run, params)


@builtin("CUSTOM(SignalPCAN)")
def prepare_signal_pcan(op, g):
    _types(op, g, (_U32, _U32, _I16), (_U32,))
    shift = _option(op, "snr_shift", 0, 63)
    return Prepared(lambda inputs: at_run(op, signal_pcan, inputs[0], inputs[1], inputs[2], shift),
                    {"snr_shift": shift})


@builtin("CUSTOM(SignalFilterBankLog)")
def prepare_signal_filter_bank_log(op, g):
    _types(op, g, (_U32,), (_I16,))
    params = {"output_scale": _u32(_option(op, "output_scale")),
              "input_correction_bits": _option(op, "input_correction_bits", 0, 31)}
    return Prepared(lambda inputs: at_run(op, signal_filter_bank_log, inputs[0], **params), params)
