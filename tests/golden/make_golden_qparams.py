"""Record the quantization parameters the real TFLite converter chooses (for dspsim.choose_qparams).

Run with the golden venv (tensorflow-cpu 2.21)::

    /work/goldvenv/bin/python tests/golden/make_golden_qparams.py

Each case converts ``y = x @ W`` (x: (1, 8) float, W: (8, 4)) with full-integer post-training
quantization. The representative dataset is two samples whose values lie in ``[rmin, rmax]`` and
contain both ends exactly, so the calibrated input range is known exactly (the calibrator keeps
the plain min / max over all samples). The file records, per case, the float32 ``rmin``/``rmax``,
the weights ``W``, and what the converter wrote into the flatbuffer:

* ``in_scale`` (float32) / ``in_zp`` (int64): the input tensor (int8 activations; int16 in the
  ``a16`` mode, 16x8 quantization);
* ``w_scale`` (float32, one per output channel) / ``w_zp``: the per-channel int8 FULLY_CONNECTED
  weights (TFLite layout (4, 8), quantized dimension 0), and ``w_q`` their int8 codes.

Output: ``tests/golden/qparams_tflite.npz`` with keys ``<case>__<field>``; the case names are in
``cases`` and the mode of each case (``a8`` or ``a16``) in ``modes``; ``versions`` holds a JSON
string of the engine versions. Deterministic (fixed seeds).
"""
from __future__ import annotations

import json
import os
import platform

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
from ai_edge_litert.interpreter import Interpreter  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
K, N = 8, 4


def convert(W, rmin, rmax, mode, seed):
    rng = np.random.default_rng(seed)
    w = tf.constant(W)
    conc = tf.function(lambda x: tf.matmul(x, w),
                       input_signature=[tf.TensorSpec((1, K), tf.float32)]).get_concrete_function()

    def rep():
        for end in (rmin, rmax):
            v = rng.uniform(float(rmin), float(rmax), size=(1, K)).astype(np.float32)
            v = np.clip(v, rmin, rmax)
            v[0, int(rng.integers(K))] = end
            yield [v]

    conv = tf.lite.TFLiteConverter.from_concrete_functions([conc])
    conv.optimizations = [tf.lite.Optimize.DEFAULT]
    conv.representative_dataset = rep
    if mode == "a16":
        conv.target_spec.supported_ops = [
            tf.lite.OpsSet.EXPERIMENTAL_TFLITE_BUILTINS_ACTIVATIONS_INT16_WEIGHTS_INT8]
        conv.inference_input_type = tf.int16
        conv.inference_output_type = tf.int16
    else:
        conv.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS_INT8]
        conv.inference_input_type = tf.int8
        conv.inference_output_type = tf.int8
    return conv.convert()


def params(model_bytes):
    it = Interpreter(model_content=model_bytes)
    it.allocate_tensors()
    in_idx = it.get_input_details()[0]["index"]
    out = {}
    for d in it.get_tensor_details():
        qp = d["quantization_parameters"]
        if d["index"] == in_idx:
            out["in_scale"] = np.asarray(qp["scales"], np.float32)
            out["in_zp"] = np.asarray(qp["zero_points"], np.int64)
        elif tuple(d["shape"]) == (N, K) and d["dtype"] == np.int8:
            out["w_scale"] = np.asarray(qp["scales"], np.float32)
            out["w_zp"] = np.asarray(qp["zero_points"], np.int64)
            out["w_axis"] = np.int64(qp["quantized_dimension"])
            out["w_q"] = it.get_tensor(d["index"]).copy()
    assert {"in_scale", "w_scale"} <= set(out), out.keys()
    return out


def tie_range(z, rmax, qmin=-128, qmax=127):
    """A float32 range whose exact zero point ``qmin - rmin / scale`` is ``z + 0.5`` (in reals)."""
    # qmin - rmin * (qmax - qmin) / (rmax - rmin) = z + 0.5  =>  rmin = -(z + 0.5 - qmin) rmax / (qmax - z - 0.5)
    t = z + 0.5 - qmin
    return np.float32(-t * rmax / (qmax - qmin - t)), np.float32(rmax)


def cases():
    rng = np.random.default_rng(2026)
    out = [("sym_1", -1.0, 1.0), ("unit_pos", 0.0, 1.0), ("pos_only", 0.5, 2.0), ("neg_only", -3.0, -1.0),
           ("relu6_like", -0.3, 6.1), ("tiny", 0.0, 1e-7), ("tiny_both", -2e-7, 3e-7), ("wide", -1000.0, 3.0),
           ("ten_small", -1e-3, 2e-3), ("almost_zero_min", -1e-6, 5.0)]
    for z in (-100, -50, -1, 0, 3, 60):
        lo, hi = tie_range(z, np.float32(rng.uniform(0.5, 8.0)))
        out.append((f"tie_z{z}", lo, hi))
    for i in range(14):
        e = rng.uniform(-3, 3)
        lo = -np.float32(10 ** e * rng.uniform(0.01, 1.0))
        hi = np.float32(10 ** e * rng.uniform(0.01, 1.0))
        out.append((f"rand{i}", lo, hi))
    return [(n, np.float32(a), np.float32(b)) for n, a, b in out]


def weights(i, rng):
    e = rng.uniform(-3, 1, size=N)
    W = (rng.normal(size=(K, N)) * 10 ** e).astype(np.float32)
    if i % 5 == 1:
        W[:, 0] = 0.0  # an all-zero channel
    if i % 5 == 2:
        W[:, 1] = np.abs(W[:, 1])  # one-signed channels
        W[:, 2] = -np.abs(W[:, 2])
    if i % 5 == 3:
        W[3, 3] = np.float32(127.0 * 2.0 ** -7)  # a power-of-two extreme: max|w| / 127 exact
    return W


def main():
    rng = np.random.default_rng(7)
    data, names, modes = {}, [], []
    all_cases = [(n, a, b, "a8") for n, a, b in cases()]
    all_cases += [(f"a16_{n}", a, b, "a16") for n, a, b in cases()[:10]]
    for i, (name, lo, hi, mode) in enumerate(all_cases):
        W = weights(i, rng)
        got = params(convert(W, lo, hi, mode, seed=i))
        print(f"{name:20s} [{lo!r}, {hi!r}] -> scale {got['in_scale']} zp {got['in_zp']}")
        names.append(name)
        modes.append(mode)
        data.update({f"{name}__rmin": lo, f"{name}__rmax": hi, f"{name}__W": W})
        data.update({f"{name}__{k}": v for k, v in got.items()})
    versions = {"tensorflow": tf.__version__, "python": platform.python_version(), "numpy": np.__version__}
    np.savez_compressed(os.path.join(HERE, "qparams_tflite.npz"), cases=np.array(names), modes=np.array(modes),
                        versions=np.array(json.dumps(versions)), **data)


if __name__ == "__main__":
    main()
