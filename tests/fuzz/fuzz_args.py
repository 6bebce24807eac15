"""Argument fuzzing of dspsim's public functions: the targets, a valid call of each, hostile values.

Targets: every function of ``dspsim.__all__``, ``dspsim.kernels.__all__``, ``dspsim.onnx.__all__`` and
``dspsim.tflite.__all__``, every registered operator's kernel (:func:`dspsim.catalog.operators`), every CMSIS-DSP
kernel of :mod:`dspsim.dsp` and every stage of :mod:`dspsim.frontend` (:func:`targets`; a function another target
already names is keyed by its module, ``dspsim.tflite.load_model``). Each target has valid base calls: the
operator's ``examples()`` for a kernel, :func:`dsp_calls` for dspsim.dsp, :data:`BASE_CALLS` for the others. A fuzz call replaces one
or two arguments of a base call with hostile values (:func:`hostile_values`): wrong types, floats
for ints, lists for enums, ints of 2^31 / 2^63, NaN / inf / denormal / 0 / huge scales, empty,
0-d, wrong-dtype and higher-rank arrays, axes beyond the rank...

Verdict (:func:`check_call`): the call returns, or raises a ValueError / TypeError whose message
starts with the function's name (or its name with a module path: ``dspsim.onnx.load_model:`` from
``dspsim.load_model`` given an .onnx file). Anything else (another exception type, a message without the
name, a numba typing error) is a defect.
"""
from __future__ import annotations

import inspect
import os
import re
import signal

import numpy as np

import dspsim
import dspsim.dsp as D
import dspsim.frontend as FE
import dspsim.kernels as K
from dspsim import catalog as registry

_I8 = np.arange(-4, 4, dtype=np.int8)

_MODELS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "golden")
with open(os.path.join(_MODELS, "models", "cnn.tflite"), "rb") as _f:
    _TFLITE = _f.read()
with open(os.path.join(_MODELS, "onnx", "models", "mlp_qdq_u8s8_pt_op13.onnx"), "rb") as _f:
    _ONNX = _f.read()
_F32 = np.linspace(-2, 2, 8, dtype=np.float32)
_U8X = np.arange(50, dtype=np.uint8).reshape(1, 2, 5, 5)
_W8 = np.arange(-27, 27, dtype=np.int8).reshape(3, 2, 3, 3)
_ONNX_QPARAMS = dict(x_scale=np.float32(0.1), x_zero_point=np.uint8(1), w_scale=np.float32(0.2),
                     w_zero_point=np.int8(0), y_scale=np.float32(0.3), y_zero_point=np.uint8(2))
_FE = FE.frontend_tables(FE.FrontendConfig())
_PCM = (np.arange(512) * 37 % 2000 - 1000).astype(np.int16)
_U32 = np.arange(1, 41, dtype=np.uint32) * 1000

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
    "load_model": [dict(path_or_bytes=_TFLITE), dict(path_or_bytes=_ONNX, engine="onnx-reference")],
    "dspsim.tflite.load_model": [dict(path_or_bytes=_TFLITE, engine="tflm")],
    "dspsim.onnx.load_model": [dict(path_or_bytes=_ONNX, engine="onnxruntime")],
    "dspsim.onnx.quantize_linear": [dict(x=_F32, scale=np.float32(0.1), zero_point=np.int8(3)),
                                    dict(x=_F32.reshape(2, 4), scale=np.full(4, 0.1, np.float32),
                                         zero_point=np.zeros(4, np.uint8), axis=1)],
    "dspsim.onnx.dequantize_linear": [dict(x=np.arange(-4, 4, dtype=np.int8), scale=np.float32(0.1),
                                           zero_point=np.int8(1))],
    "dspsim.onnx.dynamic_quantize_linear": [dict(x=_F32)],
    "dspsim.onnx.matmul_integer": [dict(a=_U8X.reshape(10, 5), b=_W8[:2].reshape(-1)[:20].reshape(5, 4),
                                        a_zero_point=np.uint8(1), b_zero_point=np.int8(0))],
    "dspsim.onnx.qlinear_matmul": [dict(a=_U8X.reshape(10, 5), a_scale=np.float32(0.1), a_zero_point=np.uint8(1),
                                        b=_W8[:2].reshape(-1)[:20].reshape(5, 4), b_scale=np.float32(0.2),
                                        b_zero_point=np.int8(0), y_scale=np.float32(0.3), y_zero_point=np.uint8(2))],
    "dspsim.onnx.conv_integer": [dict(x=_U8X, w=_W8, x_zero_point=np.uint8(1), w_zero_point=np.int8(0))],
    "dspsim.onnx.qlinear_conv": [dict(x=_U8X, w=_W8, **_ONNX_QPARAMS)],
    "microfrontend": [dict(pcm=(np.arange(1600) * 37 % 2000 - 1000).astype(np.int16), sample_rate=16000)],
    "quantize_features": [dict(features=np.arange(40, dtype=np.uint16), scale=0.1, zero_point=-3)],
    "features_as_float": [dict(features=np.arange(40, dtype=np.uint16))],
    "fft_tables": [dict(nfft=512)],
    "filterbank_sqrt": [dict(work=np.arange(1, 41, dtype=np.uint64) << 20, scale_down_shift=5)],
    "filterbank_tables": [dict(cfg=FE.FrontendConfig())],
    "frontend_tables": [dict(cfg=FE.FrontendConfig())],
    "apply_window": [dict(frame=_PCM[:len(_FE.window)], coefficients=_FE.window)],
    "fft_compute": [dict(windowed=_PCM, input_shift=0, tables=_FE.fft)],
    "rfft": [dict(x=_PCM, tables=_FE.fft)],
    "filterbank_energy": [dict(spectrum=np.ones((257, 2), np.int16) * 300, tables=_FE.filterbank)],
    "filterbank_accumulate": [dict(energy=np.arange(257, dtype=np.uint32) * 999, tables=_FE.filterbank)],
    "pcan_gain_control": [dict(signal=_U32, noise_estimate=_U32 // 2, lut=_FE.pcan_lut, snr_shift=_FE.snr_shift)],
    "wide_dynamic_function": [dict(x=_U32, lut=_FE.pcan_lut)],
    "log_scale": [dict(signal=np.arange(1, 41, dtype=np.uint32) * 1000, correction_bits=3)],
    "noise_reduction": [dict(signal=np.arange(1, 41, dtype=np.uint32) * 1000, estimate=np.zeros(40, np.uint32),
                             smoothing_bits=10, even_smoothing=400, odd_smoothing=600, min_signal_remaining=307)],
}

#: Functions without arguments to fuzz, or whose name is a parameter (int_type names its caller).
SKIP = {"warmup", "get_num_threads", "int_type", "optimized_log_softmax", "host_engine", "supported_ops"}

_Q = {"q7": np.int8, "q15": np.int16, "q31": np.int32}


def _q(dt, n=16, shape=None):
    """A q vector (or matrix) of dtype ``dt`` spanning a quarter of its range, with both signs."""
    step = np.iinfo(dt).max // (4 * n)
    a = (np.arange(n) - n // 2).astype(np.int64) * max(step, 1)
    return a.astype(dt).reshape(shape or (n,))


def dsp_calls(name, f):
    """Valid keyword calls of CMSIS-DSP kernel ``name`` of :mod:`dspsim.dsp`, from its q type and its parameter
    names (an instance ``S`` from the matching init function); [] when none can be built."""
    qt = name.rsplit("_", 1)[-1]
    if qt not in _Q:
        return []
    dt, bits = _Q[qt], 8 * np.dtype(_Q[qt]).itemsize
    params = list(inspect.signature(f).parameters)
    kw = {}
    mat = "_mat_" in name
    init = {"fir_decimate": dict(coeffs=_q(dt, 8), m=2), "fir_interpolate": dict(coeffs=_q(dt, 8), l_factor=2),
            "fir": dict(coeffs=_q(dt, 8)), "cfft": dict(fft_len=16), "rfft": dict(fft_len_real=32),
            "biquad_cas_df1_32x64": dict(num_stages=1, coeffs=_q(dt, 5), post_shift=1),
            "biquad_cascade_df1": dict(num_stages=1, coeffs=_q(dt, 6 if qt == "q15" else 5), post_shift=1)}
    if qt == "q15":
        init["biquad_cascade_df1"]["coeffs"][1] = 0  # q15 stages: b0 0 b1 b2 a1 a2
    for p in params:
        if p in ("numerator", "denominator"):
            kw[p] = 1000 if p == "numerator" else 3000
        elif p in ("a", "b"):
            kw[p] = _q(dt, 16, (4, 4)) if mat else _q(dt)
        elif p == "v":
            kw[p] = _q(dt, 4)
        elif p == "x":
            kw[p] = _q(dt, 32) if ("fft" in name or "cmplx" in name) else np.abs(_q(dt)) if "sqrt" in name else _q(dt)
        elif p in ("shift", "shift_bits"):
            kw[p] = 1
        elif p == "scale_fract":
            kw[p] = 1 << (bits - 2)
        elif p == "offset":
            kw[p] = 3
        elif p == "S":
            family = next((k for k in init if f"arm_{k}_" in name), None)
            init_fn = family and getattr(D, f"arm_{family}_init_{qt}", None)
            if init_fn is None:
                return []
            kw[p] = init_fn(**init[family])
        elif p.endswith("_init") or name.endswith(f"_init_{qt}"):
            family = next((k for k in init if name.startswith(f"arm_{k}_init")), None)
            if family is None:
                return []
            return [dict(init[family])]
        elif inspect.signature(f).parameters[p].default is inspect.Parameter.empty:
            return []
    return [kw]


def _public(mod):
    """The public functions of ``mod``: its ``__all__``, or (a package without one) every function it imports."""
    names = getattr(mod, "__all__", None)
    if names is None:
        names = sorted(n for n, v in vars(mod).items() if inspect.isfunction(v) and not n.startswith("_"))
    return [(n, getattr(mod, n)) for n in names]


def targets():
    """{name: (function, [base kwargs, ...])} of every public function and operator kernel; a name is the one the
    function's errors start with (:func:`check_call`), the module's path added where two functions share it."""
    import dspsim.onnx as O
    import dspsim.tflite as T

    out = {}
    for op in registry.operators().values():
        f = op.kernel
        out.setdefault(f.__name__, (f, []))[1].extend(op.examples())
    for mod in (dspsim, K, D, FE, O, T):
        for name, f in _public(mod):
            if not inspect.isfunction(f) or name in SKIP:
                continue
            key = f.__name__ if mod in (dspsim, K, D, FE) else f"{mod.__name__}.{f.__name__}"
            if key in out and out[key][0] is not f and mod not in (dspsim, K):
                key = f"{mod.__name__}.{f.__name__}"
            if key in out:
                continue
            bases = list(BASE_CALLS.get(key, [])) or (dsp_calls(name, f) if mod is D else [])
            out[key] = (f, bases)
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
        out += list(_BIG_INTS) + [1.5, 2.0, float("nan"), float("inf"), True, np.int64(-1), -1, -100, 0, "3",
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
        if not re.match(rf"({re.escape(name)}|([\w]+\.)*{re.escape(name.rsplit('.', 1)[-1])}:)", msg):
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
