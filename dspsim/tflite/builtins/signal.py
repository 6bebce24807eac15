"""TensorFlow Lite Micro's Signal library custom operators (``signal/micro/kernels/*.cc``): the audio front end
inside a .tflite model (``CUSTOM(SignalWindow)`` ... ``CUSTOM(SignalFilterBankLog)``).

Each op's ``custom_options`` is a FlexBuffer map (decoded by :mod:`dspsim.tflite.flexbuffers`); the C Init reads
its values by their alphabetical position, so a missing or mistyped key is refused here. The C config fields are
uint32 where the options are int32 (an int32 option is taken modulo 2^32 as the C assignment does). The noise
estimate of ``SignalFilterBankSpectralSubtraction`` and the FIFOs and buffers of ``SignalDelay``, ``SignalFramer``,
``SignalStacker`` and ``SignalOverlapAdd`` persist between invocations in the model's state (after ``reset`` what
the op's Reset restores: zeros, the prefill, an empty stacker).
"""
from __future__ import annotations

import numpy as np

from ...engines import Kernel
from ...kernels.signal import (
    signal_delay, signal_energy, signal_fft_auto_scale, signal_filter_bank, signal_filter_bank_log,
    signal_filter_bank_spectral_subtraction, signal_filter_bank_square_root, signal_framer, signal_overlap_add,
    signal_irfft, signal_pcan, signal_rfft, signal_stacker, signal_window,
)
from ..prepare import Prepared, at_run, builtin, check_arity, check_dtype, refuse

_I16, _I32 = np.dtype(np.int16), np.dtype(np.int32)
_U32, _U64 = np.dtype(np.uint32), np.dtype(np.uint64)
_F32, _BOOL = np.dtype(np.float32), np.dtype(np.bool_)
_INT16_TYPE, _INT32_TYPE, _FLOAT32_TYPE = 7, 2, 0   # TensorType: the option 'T' (FFTs, SignalOverlapAdd)


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
    """Check that the engine runs TFLM's kernel for the op (only TFLite Micro registers the Signal library), the
    operator's arity and tensor types (``inputs`` / ``outputs``: one dtype per tensor)."""
    if g.kernel(op) is not Kernel.TFLM:
        refuse(op, f"only TensorFlow Lite Micro registers the Signal library's custom operators (engine "
                   f"{g.profile.name!r} has no kernel for it)")
    check_arity(op, len(inputs), len(outputs))
    for k, (i, dt) in enumerate(zip(op.inputs, inputs)):
        if i < 0:
            refuse(op, f"input {k} is absent (tensor index -1)")
        check_dtype(op, g.tensor(i), (dt,), f"input {k}")
    for k, (i, dt) in enumerate(zip(op.outputs, outputs)):
        check_dtype(op, g.tensor(i), (dt,), f"output {k}")


def _u32(v):
    return v & 0xFFFFFFFF


def _stateful(op, g, initial, step):
    """``run`` of a streaming op: ``step(inputs, state) -> (outputs, new state)`` with its state in the model's
    (``initial()`` after a reset, as the op's Reset restores it)."""
    key = (op.name, str(op.index))

    def run(inputs):
        state = g.state.resources.get(key)
        outputs, state = at_run(op, step, inputs, initial() if state is None else state)
        g.state.resources[key] = state
        return outputs

    return run


def _out_shape(op, g, k=0):
    return tuple(g.tensor(op.outputs[k]).shape)


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


def _fft_type_and_length(op, g):
    """The FFT's scalar type (option 'T': INT16 or INT32; FLOAT32 is not modelled) and its power-of-two length."""
    dt = {_INT16_TYPE: _I16, _INT32_TYPE: _I32}.get(op.options.get("T", _INT16_TYPE))
    if dt is None:
        refuse(op, f"{op.name[7:-1]} of TensorType {op.options['T']} is not modelled (INT16 and INT32: kissfft "
                   "FIXED_POINT 16 and 32)")
    _types(op, g, (dt,), (dt,))
    n = _option(op, "fft_length", 4, 1 << 16)
    if n & (n - 1):
        refuse(op, f"fft_length {n} is not a power of two (dspsim models kissfft's radix-2/4 stages)")
    return n


@builtin("CUSTOM(SignalRfft)")
def prepare_signal_rfft(op, g):
    n = _fft_type_and_length(op, g)
    t_out = g.tensor(op.outputs[0])
    if not t_out.shape or t_out.shape[-1] != n + 2:
        refuse(op, f"output tensor {t_out.index} has shape {t_out.shape}; its last dimension must be fft_length + 2 "
                   f"= {n + 2}")
    return Prepared(lambda inputs: at_run(op, signal_rfft, inputs[0], n), {"fft_length": n})


@builtin("CUSTOM(SignalIrfft)")
def prepare_signal_irfft(op, g):
    n = _fft_type_and_length(op, g)
    t_in, t_out = g.tensor(op.inputs[0]), g.tensor(op.outputs[0])
    if not t_in.shape or t_in.shape[-1] != n + 2 or tuple(t_out.shape) != tuple(t_in.shape[:-1]) + (n,):
        refuse(op, f"input shape {t_in.shape} and output shape {t_out.shape}: (..., fft_length + 2) in and "
                   f"(..., fft_length) out expected, fft_length {n}")
    return Prepared(lambda inputs: at_run(op, signal_irfft, inputs[0], n), {"fft_length": n})


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

    def step(inputs, estimate):
        out, estimate = signal_filter_bank_spectral_subtraction(inputs[0], estimate, **params)
        return (out, estimate.copy()), estimate

    return Prepared(_stateful(op, g, lambda: np.zeros(n, np.uint32), step), params)


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


@builtin("CUSTOM(SignalDelay)")
def prepare_signal_delay(op, g):
    _types(op, g, (_I16,), (_I16,))
    d = _option(op, "delay_length", 0, 1 << 24)
    shape = g.tensor(op.inputs[0]).shape
    if not shape:
        refuse(op, "its input needs at least one dimension")
    rows = int(np.prod(shape[:-1], dtype=np.int64))

    def step(inputs, history):
        return signal_delay(inputs[0], history, d)

    return Prepared(_stateful(op, g, lambda: np.zeros((rows, d), np.int16), step), {"delay_length": d})


@builtin("CUSTOM(SignalFramer)")
def prepare_signal_framer(op, g):
    _types(op, g, (_I16,), (_I16, _BOOL))
    size, step_ = _option(op, "frame_size", 1, 1 << 24), _option(op, "frame_step", 1, 1 << 24)
    prefill = _option(op, "prefill", kind=bool)
    shape = g.tensor(op.inputs[0]).shape
    if not shape or shape[-1] < step_ or shape[-1] % step_:
        refuse(op, f"input shape {shape}: its last dimension must be a positive multiple of frame_step {step_}")
    if prefill and step_ > size:
        refuse(op, f"prefill with frame_step {step_} > frame_size {size} (the C code writes a negative count)")
    rows = int(np.prod(shape[:-1], dtype=np.int64))
    out_shape = _out_shape(op, g)

    def initial():
        return np.zeros((rows, size - step_ if prefill else 0), np.int16), np.zeros(out_shape, np.int16)

    def step(inputs, state):
        out, valid, fifo = signal_framer(inputs[0], state[0], state[1], size, step_)
        return (out, np.array(valid)), (fifo, out)

    return Prepared(_stateful(op, g, initial, step), {"frame_size": size, "frame_step": step_, "prefill": prefill})


@builtin("CUSTOM(SignalStacker)")
def prepare_signal_stacker(op, g):
    _types(op, g, (_I16,), (_I16, _BOOL))
    params = {"num_channels": _option(op, "num_channels", 1, 1 << 20),
              "left_context": _option(op, "stacker_left_context", 0, 1 << 10),
              "right_context": _option(op, "stacker_right_context", 0, 1 << 10),
              "step": _option(op, "stacker_step", 1, 1 << 10)}
    width = params["left_context"] + params["right_context"] + 1
    if params["step"] > width:
        refuse(op, f"stacker_step {params['step']} exceeds the stack's {width} frames (the C code discards more "
                   "than its buffer holds)")
    if _out_shape(op, g) != (width * params["num_channels"],):
        refuse(op, f"output shape {_out_shape(op, g)}: (left + right + 1) * num_channels = "
                   f"{width * params['num_channels']} expected")

    def step(inputs, state):
        out, valid, fifo = signal_stacker(inputs[0], state[0], previous=state[1], **params)
        return (out, np.array(valid)), (fifo, out)

    return Prepared(_stateful(op, g, lambda: (None, np.zeros(width * params["num_channels"], np.int16)), step),
                    params)


@builtin("CUSTOM(SignalOverlapAdd)")
def prepare_signal_overlap_add(op, g):
    dt = {_INT16_TYPE: _I16, _FLOAT32_TYPE: _F32}.get(op.options.get("T"))
    if dt is None:
        refuse(op, f"custom option 'T' must be INT16 ({_INT16_TYPE}) or FLOAT32 ({_FLOAT32_TYPE}), got "
                   f"{op.options.get('T')!r}")
    _types(op, g, (dt,), (dt,))
    step_ = _option(op, "frame_step", 1, 1 << 24)
    shape = g.tensor(op.inputs[0]).shape
    if len(shape) < 2 or len(_out_shape(op, g)) != len(shape) - 1 or step_ > shape[-1]:
        refuse(op, f"input shape {shape} must be (..., n_frames, frame_size >= frame_step {step_}) and the output "
                   "one dimension less")
    rows = int(np.prod(shape[:-2], dtype=np.int64))

    def step(inputs, buffer):
        return signal_overlap_add(inputs[0], buffer, step_)

    return Prepared(_stateful(op, g, lambda: np.zeros((rows, shape[-1]), dt), step), {"frame_step": step_})
