"""Argument fuzzing of dspsim's public functions: the targets, a valid call of each, hostile values.

Targets: every function of ``dspsim.__all__`` and ``dspsim.kernels.__all__`` and every registered
operator's kernel (:func:`dspsim.catalog.operators`). Each target has valid base calls: the
operator's ``examples()`` for a kernel, :data:`BASE_CALLS` for the others. A fuzz call replaces one
or two arguments of a base call with hostile values (:func:`hostile_values`): wrong types, floats
for ints, lists for enums, ints of 2^31 / 2^63, NaN / inf / denormal / 0 / huge scales, empty,
0-d, wrong-dtype and higher-rank arrays, axes beyond the rank...

Verdict (:func:`check_call`): the call returns, or raises a ValueError / TypeError whose message
starts with the function's name. Anything else (another exception type, a message without the
name, a numba typing error) is a defect.
"""
from __future__ import annotations

import inspect
import signal

import numpy as np

import dspsim
import dspsim.kernels as K
from dspsim import catalog as registry

_I8 = np.arange(-4, 4, dtype=np.int8)

_LSTM_SCALES = dict(input_scale=0.06, input_zero_point=3, input_weight_scales=[0.02, 0.01, 0.03, 0.015],
                    recurrent_weight_scales=[0.02, 0.025, 0.01, 0.03], output_state_scale=0.0078,
                    output_state_zero_point=-3, cell_state_scale=2.0**-11, cell_clip=10.0)

#: Valid calls of the public functions that are not a registered operator's kernel.
BASE_CALLS = {
    "choose_qparams": [dict(min_val=-1.0, max_val=1.0), dict(min_val=-1.0, max_val=2.0, dtype="uint8", scheme="torch")],
    "requantize": [dict(acc=np.arange(-6, 6, dtype=np.int32) * 1000, requant=dspsim.Requant.fixed_point(1 << 30, -3),
                        output_zero_point=1)],
    "tflite_activation_range": [dict(activation="relu6", output_scale=0.1, output_zero_point=3)],
    "multiply_by_quantized_multiplier": [dict(acc=np.arange(-6, 6, dtype=np.int32) * 1000, multiplier=1 << 30,
                                              shift=-3),
                                         dict(acc=np.arange(12, dtype=np.int32).reshape(3, 4), multiplier=[1 << 30] * 4,
                                              shift=[0, 1, -1, 2], axis=1)],
    "multiply_by_quantized_multiplier_int64": [dict(acc=np.arange(-6, 6, dtype=np.int64) * 1000, multiplier=1 << 30,
                                                    shift=-3)],
    "pack_weights": [dict(w=np.ones((3, 4), np.int8))],
    "pof2_frac_bits": [dict(max_abs=4.0), dict(max_abs=0.3, bits=16, narrow_range=False)],
    "quantize_multiplier": [dict(real_multiplier=0.3), dict(real_multiplier=1.7, rounding="single")],
    "rounding_divide_by_pot": [dict(x=np.arange(-6, 6, dtype=np.int32), exponent=2)],
    "rounding_right_shift": [dict(x=np.arange(-6, 6, dtype=np.int64), shift=2)],
    "saturate": [dict(x=np.arange(-300, 300, 50), bits=8)],
    "wrap": [dict(x=np.arange(-300, 300, 50), bits=8)],
    "saturating_rounding_doubling_high_mul": [dict(a=np.arange(-6, 6, dtype=np.int32) << 20, b=1 << 30)],
    "set_num_threads": [dict(n=1)],
    "optimized_log_softmax": [],  # its table comes from optimized_softmax_table: covered through log_softmax
    "optimized_softmax_table": [dict(input_scale=0.1)],
    "tflite_log_softmax_params": [dict(input_scale=0.1)],
    "tflite_rsqrt_multiplier": [dict(input_scale=0.1, output_scale=0.05)],
    "tflite_hard_swish_params": [dict(input_scale=0.1, input_zero_point=0, output_scale=0.05, output_zero_point=0)],
    "tflite_lut_table": [dict(function="exp", input_scale=0.1, input_zero_point=0, output_scale=0.05,
                              output_zero_point=0)],
    "xnnpack_lut_table": [dict(function="exp", input_scale=0.1, input_zero_point=0, output_scale=0.05,
                               output_zero_point=0)],
    "tflite_prelu_params": [dict(input_scale=0.1, input_zero_point=0, alpha_scale=0.01, alpha_zero_point=0,
                                 output_scale=0.05, output_zero_point=0)],
    "tflite_softmax_params": [dict(input_scale=0.1)],
    "tflm_gemmlowp_input_params": [dict(input_scale=0.1)],
    "tflite_add_params": [dict(input1_scale=0.1, input2_scale=0.2, output_scale=0.3)],
    "tflite_mul_multiplier": [dict(input1_scale=0.1, input2_scale=0.2, output_scale=0.3)],
    "xnnpack_add_params": [dict(input1_scale=0.1, input2_scale=0.2, output_scale=0.3)],
    "tflite_squared_difference_params": [dict(input1_scale=0.1, input2_scale=0.2, output_scale=0.3)],
    "tflite_sub_params": [dict(input1_scale=0.1, input2_scale=0.2, output_scale=0.3)],
    "xnnpack_sub_params": [dict(input1_scale=0.1, input2_scale=0.2, output_scale=0.3)],
    "strided_slice_plan": [dict(shape=(2, 3), begin=(0, 0), end=(2, 3), strides=(1, 1))],
    "tflm_lstm_params": [dict(_LSTM_SCALES, cell_gate_tanh=True)],
    "litert_lstm_params": [dict(_LSTM_SCALES, hidden_scale=2.0**-7, hidden_zero_point=-1)],
}

#: Functions without arguments to fuzz, or whose name is a parameter (int_type names its caller).
SKIP = {"warmup", "get_num_threads", "int_type", "optimized_log_softmax"}


def targets():
    """{name: (function, [base kwargs, ...])} of every public function and operator kernel."""
    out = {}
    for op in registry.operators().values():
        f = op.kernel
        out.setdefault(f.__name__, (f, []))[1].extend(op.examples())
    for mod in (dspsim, K):
        for name in mod.__all__:
            f = getattr(mod, name)
            if not inspect.isfunction(f) or name in SKIP or f.__name__ in out:
                continue
            out[f.__name__] = (f, list(BASE_CALLS.get(name, [])))
    for name, (f, bases) in out.items():
        if not bases:  # a function added since BASE_CALLS was written: fuzz around a signature-only call
            bases.append(signature_call(f))
    return out


def signature_call(f):
    """Keyword arguments from ``f``'s signature: the defaults, 0.1 for a required parameter."""
    out = {}
    for p in inspect.signature(f).parameters.values():
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            continue
        out[p.name] = 0.1 if p.default is p.empty else p.default
    return out


_BIG_INTS = (2**31, -2**31 - 1, 2**63, -2**63 - 1, 2**64, 10**30)
_BAD_FLOATS = (float("nan"), float("inf"), float("-inf"), 0.0, -0.0, 5e-324, 1e-45, 1e-40, 1e308, 3.5e38, -1.0,
               np.float32(1e-45), np.float64(1e300))
_ANY = (None, "bogus", [1, 2], {"a": 1}, object(), b"\x00", 1 + 2j, (), [])


def hostile_values(value):
    """Hostile replacements for an argument whose valid value is ``value``."""
    out = list(_ANY)
    if isinstance(value, (bool, np.bool_)):
        out += [2, -1, "yes", 1.0, np.array([True, False])]
    elif isinstance(value, (int, np.integer)):
        out += list(_BIG_INTS) + [1.5, 2.0, float("nan"), float("inf"), True, np.int64(-1), -1, 0, "3",
                                  np.array([1, 2]), np.array(1.5), [value]]
    elif isinstance(value, (float, np.floating)):
        out += list(_BAD_FLOATS) + [2**31, 2**63, -2**63 - 1, True, "0.1", [value], np.array([value, value])]
    elif isinstance(value, str):
        out += ["", value.upper() + "X", [value], (value,), 1, 1.0, value + " "]
    elif isinstance(value, np.ndarray):
        out += _hostile_arrays(value)
    elif isinstance(value, (tuple, list)):
        out += [type(value)(_BIG_INTS[:1] * max(len(value), 1)), type(value)([-100] * max(len(value), 1)),
                type(value)([1.5] * max(len(value), 1)), type(value)(["a"] * max(len(value), 1)), 2**63, -2**31 - 1,
                type(value)(list(value) + list(value)), type(value)(list(value)[:-1]), np.asarray(value)]
    return out


def _hostile_arrays(a):
    dt = a.dtype
    out = [np.zeros((0,) + a.shape[1:], dt), np.zeros(0, dt), np.asarray(a.reshape(-1)[:1].reshape(()) if a.size else 0,
                                                                            dt),
           a.astype(np.float64), a.astype(np.complex128), a.astype(bool), a.astype(object), a.tolist(),
           a[None], a.reshape(-1), a[..., ::-1], a.astype(dt.newbyteorder(">")) if dt.itemsize > 1 else a.astype(np.int16)]
    if dt.kind in "iu":
        out += [a.astype(np.int64) + (1 << 40), a.astype(np.uint64), a.astype(np.int8) if dt != np.int8 else a.astype(np.uint8)]
    if dt.kind == "f":
        out += [np.full(a.shape, np.nan, dt), np.full(a.shape, np.inf, dt), np.full(a.shape, 3.4e38, dt),
                np.full(a.shape, 1e-45, dt)]
    if a.ndim >= 1 and a.size:
        out += [np.zeros((1,) * 7, dt), np.broadcast_to(a, (2,) + a.shape)]
    return out


ALLOWED = (ValueError, TypeError)
TIME_LIMIT_S = 30.0  # compiling a new numba specialisation takes seconds; a loop over 2^31 elements, minutes


class _Hang(Exception):
    pass


def _alarm(signum, frame):
    raise _Hang


def check_call(name, fn, kwargs, time_limit=TIME_LIMIT_S):
    """None if ``fn(**kwargs)`` returns or refuses properly, else a one-line defect signature.

    A call still running after ``time_limit`` seconds of Python code is interrupted and reported as
    a hang (a numba loop cannot be interrupted: it is reported when it returns)."""
    previous = signal.signal(signal.SIGALRM, _alarm)
    signal.setitimer(signal.ITIMER_REAL, time_limit)
    try:
        with np.errstate(all="ignore"):
            fn(**kwargs)
    except _Hang:
        return f"{name}: hang: still running after {time_limit:.0f} s"
    except MemoryError as exc:
        return f"{name}: MemoryError: {str(exc)[:160]!r}"
    except ALLOWED as exc:
        msg = str(exc)
        if not msg.startswith(name):
            return f"{name}: {type(exc).__name__} without the function's name: {msg[:160]!r}"
        return None
    except Exception as exc:  # noqa: BLE001 - the verdict is about which exception
        return f"{name}: {type(exc).__name__}: {str(exc)[:160]!r}"
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    return None


def describe(v):
    """A short text of a hostile value (for reports)."""
    if isinstance(v, np.ndarray):
        return f"array(shape={v.shape}, dtype={v.dtype})"
    r = repr(v)
    return r if len(r) < 60 else r[:57] + "..."
