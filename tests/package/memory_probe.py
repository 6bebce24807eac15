"""Peak memory of dspsim's elementwise ops on a large input, measured in this (fresh) process.

``python tests/package/memory_probe.py N_ELEMENTS OP [OP ...]`` prints one JSON line per op:
``{"op", "input_bytes", "output_bytes", "rss_peak_bytes", "traced_peak_bytes"}``.

- ``rss_peak_bytes``: the rise of the resident set's high-water mark during the call (Linux
  ``VmHWM``, reset before the call by writing 5 to ``/proc/self/clear_refs``): every allocation,
  numpy's and numba's;
- ``traced_peak_bytes``: the peak of the numpy allocations that ``tracemalloc`` sees during the call.

Each op is compiled on a small input first, so that compilation is not measured. Temporaries are
the peak minus the output (tests/package/test_memory.py).
"""
from __future__ import annotations

import json
import sys
import tracemalloc

import numpy as np

import dspsim
import dspsim.kernels as K

M, S = 1 << 30, -3  # 0.0625 in Q31 x 2^-3


def _inputs(n):
    rng = np.random.default_rng(0)
    f = (rng.standard_normal(n, dtype=np.float32) * 0.5)
    q = rng.integers(-128, 128, n, dtype=np.int8)
    acc = rng.integers(-2**20, 2**20, n, dtype=np.int32)
    return {"f32": f, "i8": q, "i32": acc, "i64": acc.astype(np.int64)}


def _per_channel(x):
    return x.reshape(-1, 4)


OPS = {
    "quantize": ("f32", lambda x: dspsim.quantize(x, -1.0, 1.0, "qint8")),
    "quantize_per_tensor": ("f32", lambda x: dspsim.quantize_per_tensor(x, 0.01, 3, "int8")),
    "quantize_per_channel": ("f32", lambda x: dspsim.quantize_per_channel(_per_channel(x), [0.01, 0.02, 0.03, 0.04],
                                                                          [0, 1, 2, 3], 1, "int8")),
    "quantize_linear": ("f32", lambda x: dspsim.quantize_linear(x, 0.01, 3, dtype="int8")),
    "tflite_quantize": ("f32", lambda x: dspsim.tflite_quantize(x, 0.01, 3, "int8")),
    "quantize_pof2": ("f32", lambda x: dspsim.quantize_pof2(x, 5)),
    "xnnpack_quantize": ("f32", lambda x: K.xnnpack_quantize(x, scale=0.01, zero_point=3)),
    "dequantize": ("i8", lambda q: dspsim.dequantize(q, -1.0, 1.0)),
    "dequantize_per_tensor": ("i8", lambda q: dspsim.dequantize_per_tensor(q, 0.01, 3)),
    "dequantize_per_channel": ("i8", lambda q: dspsim.dequantize_per_channel(_per_channel(q), [0.01, 0.02, 0.03, 0.04],
                                                                             [0, 1, 2, 3], 1)),
    "dequantize_linear": ("i8", lambda q: dspsim.dequantize_linear(q, 0.01, 3)),
    "tflite_dequantize": ("i8", lambda q: dspsim.tflite_dequantize(q, 0.01, 3)),
    "dequantize_pof2": ("i8", lambda q: dspsim.dequantize_pof2(q, 5)),
    "requantize": ("i32", lambda a: dspsim.requantize(a, dspsim.Requant.fixed_point(M, S), 3)),
    "requantize_float": ("i32", lambda a: dspsim.requantize(a, dspsim.Requant.float_scale(0.001), 3)),
    "multiply_by_quantized_multiplier": ("i32", lambda a: dspsim.multiply_by_quantized_multiplier(a, M, S)),
    "multiply_by_quantized_multiplier_single": ("i32", lambda a: dspsim.multiply_by_quantized_multiplier(
        a, M, S, rounding="single")),
    "multiply_by_quantized_multiplier_int64": ("i64", lambda a: dspsim.multiply_by_quantized_multiplier_int64(a, M, S)),
    "rounding_right_shift": ("i32", lambda a: dspsim.rounding_right_shift(a, 3)),
    "saturate": ("i32", lambda a: dspsim.saturate(a, 8)),
    "wrap": ("i32", lambda a: dspsim.wrap(a, 8)),
    "tflite_requantize": ("i8", lambda q: K.tflite_requantize(q, input_zero_point=1, output_zero_point=-2,
                                                              multiplier=M, shift=S)),
    "relu": ("i8", lambda q: K.relu(q, input_zero_point=1, output_zero_point=-2, multiplier=M, shift=1)),
    "xnnpack_convert": ("i8", lambda q: K.xnnpack_convert(q, input_scale=0.02, input_zero_point=1, output_scale=0.03,
                                                          output_zero_point=-2)),
}


def _hwm():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    raise RuntimeError("no VmHWM")


def _rss():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise RuntimeError("no VmRSS")


def _nbytes(result):
    if isinstance(result, np.ndarray):
        return result.nbytes
    if isinstance(result, (tuple, list)) or hasattr(result, "_fields"):
        return sum(_nbytes(r) for r in result)
    if hasattr(result, "output"):
        return _nbytes(result.output)
    return 0


def measure(n, names):
    small = _inputs(1 << 12)
    for name in names:  # compile first
        kind, fn = OPS[name]
        fn(small[kind])
    big = _inputs(n)
    tracemalloc.start()
    out = []
    for name in names:
        kind, fn = OPS[name]
        x = big[kind]
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        before = _rss()
        tracemalloc.reset_peak()
        traced0 = tracemalloc.get_traced_memory()[0]
        result = fn(x)
        traced_peak = tracemalloc.get_traced_memory()[1] - traced0
        rss_peak = _hwm() - before
        out.append({"op": name, "input_bytes": int(x.nbytes), "output_bytes": int(_nbytes(result)),
                    "rss_peak_bytes": int(rss_peak), "traced_peak_bytes": int(traced_peak)})
        del result
    return out


if __name__ == "__main__":
    for row in measure(int(sys.argv[1]), sys.argv[2:]):
        print(json.dumps(row), flush=True)
