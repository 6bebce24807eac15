"""Make golden vectors for the float-scale requantizing engines (PyTorch/FBGEMM, ONNX Runtime, ONNX reference).

Run with a venv that has torch==2.13.0, onnx and onnxruntime (``/work/goldvenv`` or ``/work/venv``)::

    python tests/golden/make_golden_float_requant.py            # writes tests/golden/{fbgemm,ort,onnxref}_*.npz

Every file holds several cases. Case ``c`` stores ``c/x``, ``c/w``, ``c/bias``, ``c/out`` and the
quantization parameters under ``c/<name>``, plus ``c/meta``, a JSON string with the op, geometry and
engine facts (see tests/golden/README.md). Layouts are dspsim's: activations ``(..., K)`` or NHWC,
weights ``(N, K)`` or OHWI (grouped: ``(OC, KH, KW, C/groups)``), depthwise ``(1, KH, KW, C*M)``.
Pads are ``[top, bottom, left, right]``.

Each engine output is also checked against a numpy model of the engine's arithmetic written here
(``fbgemm_model``, ``ort_model``, ``onnxref_model``); the script prints the model's mismatch count per
case and stores it in the meta. The vectors are the engines' outputs, never the model's.

FBGEMM picks its int8 GEMM kernels by CPU: with AVX512-VNNI (``vpdpbusd``) u8 x s8 products
accumulate exactly in int32; on AVX2 (``vpmaddubsw``) adjacent products are first summed and
saturated to int16. The AVX2 vectors are made on a VNNI host by forcing FBGEMM's dispatch with
``FBGEMM_ENABLE_INSTRUCTIONS=AVX2`` (read once per process, so each ISA runs in its own process).
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
F32 = np.float32

# ---------------------------------------------------------------------------------------------------
# geometry shared by the models


def out_size(n, k, stride, dil, pad_lo, pad_hi):
    return (n + pad_lo + pad_hi - dil * (k - 1) - 1) // stride + 1


def patches(x, kh, kw, stride, dil, pads, fill):
    """NHWC codes -> (N, OH, OW, KH*KW, C) windows; taps outside the image read ``fill``."""
    n, h, w, c = x.shape
    t, b, l, r = pads
    xp = np.full((n, h + t + b, w + l + r, c), fill, dtype=np.int64)
    xp[:, t:t + h, l:l + w, :] = x
    oh = out_size(h, kh, stride[0], dil[0], t, b)
    ow = out_size(w, kw, stride[1], dil[1], l, r)
    cols = np.empty((n, oh, ow, kh * kw, c), dtype=np.int64)
    for fy in range(kh):
        for fx in range(kw):
            y0, x0 = fy * dil[0], fx * dil[1]
            cols[:, :, :, fy * kw + fx, :] = xp[:, y0:y0 + stride[0] * (oh - 1) + 1:stride[0],
                                                x0:x0 + stride[1] * (ow - 1) + 1:stride[1], :]
    return cols


def grouped_im2col(x, w_ohwi, groups, stride, dil, pads, fill):
    """Return A (rows, groups, K) codes and B (OC, K) weight codes, K flattened as (fy, fx, ic)."""
    oc, kh, kw, cg = w_ohwi.shape
    cols = patches(x, kh, kw, stride, dil, pads, fill)
    n, oh, ow = cols.shape[:3]
    cols = cols.reshape(n, oh, ow, kh * kw, groups, cg).transpose(0, 1, 2, 4, 3, 5)
    return cols.reshape(n * oh * ow, groups, kh * kw * cg), w_ohwi.reshape(oc, -1).astype(np.int64), (n, oh, ow)


def sat16(v):
    return np.clip(v, -32768, 32767)


def raw_dot(a, b, pair_saturation):
    """sum_k a[m,k] b[n,k] of the raw codes; with pair_saturation, adjacent (2i, 2i+1) products are
    summed and saturated to int16 first (vpmaddubsw), then the pair sums are added exactly."""
    a = a.astype(np.int64)
    b = b.astype(np.int64)
    if not pair_saturation:
        return a @ b.T
    k = a.shape[-1]
    if k % 2:
        a = np.concatenate([a, np.zeros(a.shape[:-1] + (1,), np.int64)], axis=-1)
        b = np.concatenate([b, np.zeros(b.shape[:-1] + (1,), np.int64)], axis=-1)
    out = np.zeros((a.shape[0], b.shape[0]), np.int64)
    for n in range(b.shape[0]):
        prod = a * b[n]
        out[:, n] = sat16(prod[:, 0::2] + prod[:, 1::2]).sum(axis=1)
    return out


def wrap32(v):
    return ((np.asarray(v, np.int64) + 2**31) % 2**32 - 2**31).astype(np.int64)


def layer_acc(case, pair_saturation=False):
    """int accumulator sum (x - zx)(w - zw[oc]) per output, from raw-code dot products the way
    FBGEMM forms them: raw - zx*colsum(w) - zw*rowsum(x) + K*zx*zw (padding reads the code zx)."""
    x, w, zx = case["x"], case["w"], int(case["input_zero_point"])
    zw = np.broadcast_to(np.asarray(case["weight_zero_point"], np.int64), (w.shape[0] if case["op"] != "depthwise_conv2d" else w.shape[-1],))
    op = case["op"]
    if op == "fully_connected":
        a = x.reshape(-1, x.shape[-1]).astype(np.int64)
        b = w.astype(np.int64)
        acc = raw_dot(a, b, pair_saturation) - zx * b.sum(1)[None, :] - a.sum(1)[:, None] * zw[None, :] \
            + a.shape[1] * zx * zw[None, :]
        return acc.reshape(x.shape[:-1] + (w.shape[0],))
    if op == "depthwise_conv2d":
        m = case["depth_multiplier"]
        w_ohwi = np.transpose(w, (3, 1, 2, 0))          # (C*M, KH, KW, 1)
        groups = x.shape[-1]
    else:
        w_ohwi = w
        groups = case.get("groups", 1)
        m = w.shape[0] // groups
    a, b, (n, oh, ow) = grouped_im2col(x, w_ohwi, groups, case["stride"], case["dilation"], case["pads"], zx)
    oc = b.shape[0]
    acc = np.empty((a.shape[0], oc), np.int64)
    kk = a.shape[2]
    for g in range(groups):
        sl = slice(g * m, (g + 1) * m)
        ag, bg = a[:, g, :], b[sl]
        acc[:, sl] = raw_dot(ag, bg, pair_saturation) - zx * bg.sum(1)[None, :] \
            - ag.sum(1)[:, None] * zw[None, sl] + kk * zx * zw[None, sl]
    return acc.reshape(n, oh, ow, oc)


def qrange(dtype):
    return (0, 255) if dtype == "uint8" else (-128, 127)


def fbgemm_model(case, pair_saturation=False):
    """FBGEMM ReQuantizeOutput (and the depthwise kernel's requant) with a float bias.

    Per-tensor weights: ``raw_f = fma(bias, f32(1 / act_times_w), float(acc))`` (one rounding);
    per-channel: ``raw_f = f32(float(acc) + f32(bias / act_times_w))``. Then
    ``cvtps2dq(f32(raw_f * C_multiplier)) + zp`` (ties to even; INT32_MIN when |v| >= 2^31), clamp to
    ``[relu ? zp : 0, 255]``.
    """
    acc = wrap32(layer_acc(case, pair_saturation))
    per_channel = np.ndim(case["weight_scale"]) > 0
    sw = np.broadcast_to(np.asarray(case["weight_scale"], F32), (acc.shape[-1],))
    atw = (F32(case["input_scale"]) * sw).astype(F32)
    mult = (atw / F32(case["output_scale"])).astype(F32)
    bias = case["bias"].astype(F32)
    if per_channel:
        raw_f = (acc.astype(F32) + (bias / atw).astype(F32)).astype(F32)
    else:
        raw_f = f32_fma(bias, (F32(1) / atw).astype(F32), acc.astype(F32))
    v = cvtps_epi32((raw_f * mult).astype(F32)) + int(case["output_zero_point"])
    lo = int(case["output_zero_point"]) if case["relu"] else 0
    return np.clip(v, lo, 255)


def f32_fma(a, b, c):
    """float32 ``a * b + c`` rounded once (x86 vfmadd), for float32 arrays."""
    a, b, c = np.broadcast_arrays(*(np.asarray(v, F32).astype(np.float64) for v in (a, b, c)))
    p = a * b                                   # exact: 24 x 24 bits
    s = p + c
    bb = s - p
    e = (p - (s - bb)) + (c - bb)               # TwoSum: s + e == p + c exactly
    r = s.astype(F32)
    other = np.nextafter(r, np.where(s > r.astype(np.float64), np.inf, -np.inf).astype(F32))
    tie = (s == (r.astype(np.float64) + other.astype(np.float64)) / 2) & (e != 0)
    return np.where(tie & ((e > 0) == (other > r)), other, r).astype(F32)


def cvtps_epi32(v):
    """x86 float -> int32, ties to even; out of range (|v| >= 2^31) gives INT32_MIN ("integer indefinite")."""
    big = (v >= F32(2.0**31)) | (v < F32(-2.0**31))
    return np.where(big, -2**31, np.rint(np.where(big, 0, v))).astype(np.int64)


def onednn_model(case):
    """What torch's "x86" engine does for conv (oneDNN on an AVX512-VNNI host, fitted on these vectors):
    dequantize, add the float bias, scale by f32(1 / s_out), add the zero point in float, round to even
    (saturating), clamp: ``f32(f32(f32(float(acc) * act_times_w) + bias) * f32(1 / s_out)) + zp``."""
    acc = wrap32(layer_acc(case))
    sw = np.broadcast_to(np.asarray(case["weight_scale"], F32), (acc.shape[-1],))
    atw = (F32(case["input_scale"]) * sw).astype(F32)
    deq = ((acc.astype(F32) * atw).astype(F32) + case["bias"].astype(F32)).astype(F32)
    v = ((deq * (F32(1) / F32(case["output_scale"]))).astype(F32) + F32(case["output_zero_point"])).astype(F32)
    v = np.rint(np.clip(v, -2.0**31, 2.0**31)).astype(np.int64)
    return np.clip(v, int(case["output_zero_point"]) if case["relu"] else 0, 255)


def ort_scale(case):
    n = case["out"].shape[-1]
    sw = np.broadcast_to(np.asarray(case["weight_scale"], F32), (n,))
    return ((F32(case["input_scale"]) * sw).astype(F32) / F32(case["output_scale"])).astype(F32)


def ort_model(case):
    """MLAS MlasRequantizeOutput: f32(float(acc + bias) * scale), clamp, HTE, + zp."""
    acc = wrap32(layer_acc(case) + case["bias"].astype(np.int64))
    zo = int(case["output_zero_point"])
    lo, hi = qrange(case["out_dtype"])
    v = (acc.astype(F32) * ort_scale(case)).astype(F32)
    v = np.clip(v, F32(lo - zo), F32(hi - zo))
    return np.rint(v).astype(np.int64) + zo


def onnxref_model(case):
    """onnx.reference: float64(acc + bias) * f32 scale product, + zp BEFORE rounding, HTE, clip."""
    acc = layer_acc(case) + case["bias"].astype(np.int64)
    n = acc.shape[-1]
    sw = np.broadcast_to(np.asarray(case["weight_scale"], F32), (n,))
    mult = (F32(case["input_scale"]) * sw / F32(case["output_scale"])).astype(F32)
    v = acc.astype(np.float64) * mult.astype(np.float64) + int(case["output_zero_point"])
    lo, hi = qrange(case["out_dtype"])
    return np.clip(np.rint(v), lo, hi).astype(np.int64)


# ---------------------------------------------------------------------------------------------------
# case storage


class Book:
    """Collects cases for one npz file."""

    def __init__(self, name):
        self.name, self.arrays, self.report = name, {}, []

    def add(self, cid, case, model_out):
        mism = int(np.count_nonzero(np.asarray(model_out) != case["out"]))
        meta = {k: v for k, v in case.items() if not isinstance(v, np.ndarray) and k not in KEYS}
        meta["model_mismatches"] = mism
        for k in KEYS:
            self.arrays[f"{cid}/{k}"] = np.asarray(case[k])
        self.arrays[f"{cid}/meta"] = np.array(json.dumps(meta, sort_keys=True))
        self.report.append(f"{self.name}:{cid}: outputs={case['out'].size} model_mismatches={mism}"
                           + (f" (pair_saturation={meta.get('pair_saturation')})" if "pair_saturation" in meta else ""))

    def save(self):
        np.savez_compressed(HERE / f"{self.name}.npz", **self.arrays)
        print("\n".join(self.report))
        print(f"wrote {self.name}.npz ({(HERE / f'{self.name}.npz').stat().st_size} bytes)")


KEYS = ("x", "w", "bias", "out", "input_scale", "input_zero_point", "weight_scale", "weight_zero_point",
        "output_scale", "output_zero_point")


def f32s(v):
    return np.asarray(v, dtype=F32)


# ---------------------------------------------------------------------------------------------------
# PyTorch / FBGEMM


def torch_run(case, engine):
    import torch
    torch.backends.quantized.engine = engine
    x, w = case["x"], case["w"]
    op = case["op"]
    sw = np.asarray(case["weight_scale"], F32)
    zw = np.asarray(case["weight_zero_point"], np.int64)
    if op == "fully_connected":
        wt_np = w
    elif op == "depthwise_conv2d":
        wt_np = np.ascontiguousarray(np.transpose(w, (3, 0, 1, 2)))        # (C*M, 1, KH, KW)
    else:
        wt_np = np.ascontiguousarray(np.transpose(w, (0, 3, 1, 2)))        # OIHW
    if sw.ndim:
        wt = torch._make_per_channel_quantized_tensor(
            torch.from_numpy(wt_np), torch.from_numpy(sw.astype(np.float64)), torch.from_numpy(zw), 0)
    else:
        wt = torch._make_per_tensor_quantized_tensor(torch.from_numpy(wt_np), float(sw), int(zw))
    bias = torch.from_numpy(case["bias"].astype(F32))
    if op == "fully_connected":
        xt = torch._make_per_tensor_quantized_tensor(torch.from_numpy(x), float(case["input_scale"]),
                                                     int(case["input_zero_point"]))
        packed = torch.ops.quantized.linear_prepack(wt, bias)
        fn = torch.ops.quantized.linear_relu if case["relu"] else torch.ops.quantized.linear
        y = fn(xt, packed, float(case["output_scale"]), int(case["output_zero_point"]))
        return y.int_repr().numpy()
    xt = torch._make_per_tensor_quantized_tensor(torch.from_numpy(np.ascontiguousarray(x.transpose(0, 3, 1, 2))),
                                                 float(case["input_scale"]), int(case["input_zero_point"]))
    t, b, l, r = case["pads"]
    assert t == b and l == r, "torch conv pads are symmetric"
    cin = x.shape[-1]
    groups = cin if op == "depthwise_conv2d" else case.get("groups", 1)
    cls = torch.ao.nn.intrinsic.quantized.ConvReLU2d if case["relu"] else torch.ao.nn.quantized.Conv2d
    mod = cls(cin, wt_np.shape[0], wt_np.shape[2:], stride=tuple(case["stride"]), padding=(t, l),
              dilation=tuple(case["dilation"]), groups=groups, bias=True)
    mod.set_weight_bias(wt, bias)
    mod.scale = float(case["output_scale"])
    mod.zero_point = int(case["output_zero_point"])
    return np.ascontiguousarray(mod(xt).int_repr().numpy().transpose(0, 2, 3, 1))


def fb_case(rng, op, *, shape, wshape, zx, sx, sw, zw, so, zo, relu, bias=None, x=None, w=None,
            stride=(1, 1), dilation=(1, 1), pads=(0, 0, 0, 0), groups=1, depth_multiplier=1, spread=None, note=""):
    if spread is not None:      # codes near the zero points: small accumulators, many exact ties
        x = near(rng, zx, spread, shape, 0, 255)
        w = near(rng, zw, spread, wshape, -128, 127)
    x = rng.integers(0, 256, shape).astype(np.uint8) if x is None else x.astype(np.uint8)
    w = rng.integers(-128, 128, wshape).astype(np.int8) if w is None else w.astype(np.int8)
    nout = wshape[-1] if op == "depthwise_conv2d" else wshape[0]
    if bias is None:
        bias = rng.normal(0, 2.0, nout)
    case = dict(op=op, x=x, w=w, bias=f32s(bias), input_scale=F32(sx), input_zero_point=np.int32(zx),
                weight_scale=f32s(sw), weight_zero_point=np.asarray(zw, np.int32), output_scale=F32(so),
                output_zero_point=np.int32(zo), relu=bool(relu), out_dtype="uint8", note=note)
    if op != "fully_connected":
        case.update(stride=list(stride), dilation=list(dilation), pads=list(pads))
        if op == "conv2d":
            case["groups"] = groups
        else:
            case["depth_multiplier"] = depth_multiplier
    return case


def near(rng, center, spread, shape, lo, hi):
    c = int(np.max(center)) if np.ndim(center) else int(center)     # per-channel zero points here are all 0
    return np.clip(c + rng.integers(-spread, spread + 1, shape), lo, hi)


def fbgemm_cases(rng):
    """(id, case) pairs. Scales are float32 values; powers of two make ties."""
    cs = []
    # fully connected ------------------------------------------------------------------------------
    cs.append(("fc_per_tensor", fb_case(rng, "fully_connected", shape=(64, 200), wshape=(160, 200), zx=131,
                                        sx=0.0173, sw=0.0042, zw=0, so=0.61, zo=77, relu=False)))
    n = 160
    cs.append(("fc_per_channel_relu", fb_case(rng, "fully_connected", shape=(64, 200), wshape=(n, 200), zx=3,
                                              sx=0.021, sw=rng.uniform(0.001, 0.01, n), zw=np.zeros(n), so=0.5,
                                              zo=101, relu=True)))
    # ties: multiplier 2^-4 exactly, bias a multiple of act_times_w, odd output zero point
    sx, swt = 2.0**-6, 2.0**-7
    cs.append(("fc_ties", fb_case(rng, "fully_connected", shape=(64, 157), wshape=(160, 157), zx=128, sx=sx,
                                  sw=swt, zw=0, so=2.0**-9, zo=65, relu=False, spread=8,
                                  bias=rng.integers(-50, 50, 160) * (sx * swt),
                                  note="multiplier 2^-4, bias/act_times_w integer: exact ties, HTE then +zp")))
    sw_pc = 2.0 ** rng.integers(-9, -5, n)
    cs.append(("fc_ties_per_channel_relu", fb_case(rng, "fully_connected", shape=(64, 157), wshape=(n, 157), zx=128,
                                                   sx=sx, sw=sw_pc, zw=np.zeros(n), so=2.0**-9, zo=33, relu=True, spread=8,
                                                   bias=rng.integers(-50, 50, n) * sx * sw_pc)))
    cs.append(("fc_weight_zero_point", fb_case(rng, "fully_connected", shape=(33, 70), wshape=(20, 70), zx=17,
                                               sx=0.05, sw=0.01, zw=5, so=0.25, zo=128, relu=False,
                                               note="per-tensor int8 weight zero point 5")))
    # accumulators past 2^24: float(acc) rounds (RNE) before scaling; x[1].w[1] = 16777217
    k = 1030
    x = np.full((4, k), 255, np.uint8)
    w = np.full((8, k), 127, np.int8)
    w[:, 0] = 0
    x[0, 1:4] = 0
    t = 16777217
    n_full = t // (255 * 127)
    r = t - n_full * 255 * 127
    x[1] = 0
    x[1, 1:1 + n_full] = 255
    x[1, 1 + n_full], w[1, 1 + n_full] = 255, r // 255
    x[1, 2 + n_full], w[1, 2 + n_full] = r % 255, 1
    cs.append(("fc_float_acc_above_2p24", fb_case(rng, "fully_connected", shape=x.shape, wshape=w.shape, x=x, w=w,
                                                  zx=0, sx=2.0**-10, sw=2.0**-10, zw=0, so=2.0**5, zo=1,
                                                  relu=False, bias=np.zeros(8),
                                                  note="x[1].w[1] = 16777217, multiplier 2^-25: float(acc) = 2^24")))
    # output clamping, and the float -> int32 conversion of a huge scaled value
    cs.append(("fc_clamp", fb_case(rng, "fully_connected", shape=(16, 64), wshape=(32, 64), zx=128, sx=0.05,
                                   sw=0.02, zw=0, so=0.004, zo=128, relu=False)))
    cs.append(("fc_scaled_beyond_int32", fb_case(rng, "fully_connected", shape=(16, 64), wshape=(37, 64), zx=128,
                                                 sx=0.05, sw=0.02, zw=0, so=1e-8, zo=128, relu=False,
                                                 note="|acc * multiplier| > 2^31: cvtps2dq gives INT32_MIN")))
    # conv2d -----------------------------------------------------------------------------------------
    cs.append(("conv_3x3_same", fb_case(rng, "conv2d", shape=(2, 16, 16, 16), wshape=(32, 3, 3, 16), zx=120,
                                        sx=0.031, sw=0.0063, zw=0, so=0.9, zo=90, relu=False,
                                        pads=(1, 1, 1, 1))))
    oc = 24
    cs.append(("conv_per_channel_stride_dil_relu", fb_case(
        rng, "conv2d", shape=(1, 23, 19, 8), wshape=(oc, 5, 3, 8), zx=7, sx=0.02, sw=rng.uniform(0.002, 0.02, oc),
        zw=np.zeros(oc), so=0.4, zo=60, relu=True, stride=(2, 1), dilation=(2, 2), pads=(2, 2, 1, 1))))
    cs.append(("conv_1x1", fb_case(rng, "conv2d", shape=(1, 12, 10, 40), wshape=(96, 1, 1, 40), zx=128, sx=0.02,
                                   sw=0.01, zw=0, so=0.3, zo=128, relu=False)))
    cs.append(("conv_grouped_g4", fb_case(rng, "conv2d", shape=(1, 10, 10, 16), wshape=(16, 3, 3, 4), zx=128,
                                          sx=0.02, sw=0.01, zw=0, so=0.1, zo=128, relu=False, groups=4,
                                          pads=(1, 1, 1, 1))))
    cs.append(("conv_grouped_g16_gconv", fb_case(rng, "conv2d", shape=(1, 8, 8, 64), wshape=(64, 3, 3, 4), zx=100,
                                                 sx=0.02, sw=rng.uniform(0.005, 0.02, 64), zw=np.zeros(64), so=0.1,
                                                 zo=128, relu=False, groups=16, pads=(1, 1, 1, 1),
                                                 note="FBGEMM optimized groupwise-conv shape (C/G=4, 3x3, pad 1)")))
    sx, swt = 2.0**-6, 2.0**-8
    cs.append(("conv_ties", fb_case(rng, "conv2d", shape=(2, 9, 9, 6), wshape=(16, 3, 3, 6), zx=128, sx=sx, sw=swt,
                                    zw=0, so=2.0**-9, zo=41, relu=False, pads=(1, 1, 1, 1), spread=12,
                                    bias=rng.integers(-40, 40, 16) * sx * swt)))
    # depthwise ----------------------------------------------------------------------------------------
    cs.append(("dw_3x3_same", fb_case(rng, "depthwise_conv2d", shape=(2, 20, 20, 32), wshape=(1, 3, 3, 32), zx=128,
                                      sx=0.03, sw=0.01, zw=0, so=0.2, zo=128, relu=False, pads=(1, 1, 1, 1))))
    c, m = 16, 2
    cs.append(("dw_5x5_mult2_stride2_per_channel_relu", fb_case(
        rng, "depthwise_conv2d", shape=(1, 21, 17, c), wshape=(1, 5, 5, c * m), zx=9, sx=0.025,
        sw=rng.uniform(0.003, 0.02, c * m), zw=np.zeros(c * m), so=0.3, zo=50, relu=True, stride=(2, 2),
        pads=(2, 2, 2, 2), depth_multiplier=m)))
    sx, swt = 2.0**-5, 2.0**-8
    cs.append(("dw_ties_dilation2", fb_case(rng, "depthwise_conv2d", shape=(1, 15, 15, 8), wshape=(1, 3, 3, 8),
                                            zx=128, sx=sx, sw=swt, zw=0, so=2.0**-8, zo=17, relu=False, spread=40,
                                            dilation=(2, 2), pads=(2, 2, 2, 2),
                                            bias=rng.integers(-30, 30, 8) * sx * swt)))
    cs.append(("dw_ties_fast_path", fb_case(rng, "depthwise_conv2d", shape=(2, 12, 12, 16), wshape=(1, 3, 3, 16),
                                            zx=128, sx=sx, sw=swt, zw=0, so=2.0**-8, zo=19, relu=False,
                                            pads=(1, 1, 1, 1), spread=40, bias=rng.integers(-30, 30, 16) * sx * swt,
                                            note="FBGEMM depthwise fast path (3x3, pad 1): its own requant code")))
    sw_pc = 2.0 ** rng.integers(-10, -7, 32)
    cs.append(("dw_ties_fast_path_mult2_per_channel_relu", fb_case(
        rng, "depthwise_conv2d", shape=(1, 11, 11, 16), wshape=(1, 5, 5, 32), zx=128, sx=sx, sw=sw_pc,
        zw=np.zeros(32), so=2.0**-8, zo=21, relu=True, pads=(2, 2, 2, 2), depth_multiplier=2, spread=30,
        bias=rng.integers(-30, 30, 32) * sx * sw_pc)))
    cs.append(("conv_ties_gconv", fb_case(rng, "conv2d", shape=(1, 8, 8, 32), wshape=(32, 3, 3, 4), zx=128, sx=sx,
                                          sw=swt, zw=0, so=2.0**-8, zo=23, relu=False, groups=8, pads=(1, 1, 1, 1),
                                          spread=20, bias=rng.integers(-30, 30, 32) * sx * swt)))
    cs.append(("conv_ties_1x1", fb_case(rng, "conv2d", shape=(1, 9, 9, 24), wshape=(32, 1, 1, 24), zx=128, sx=sx,
                                        sw=swt, zw=0, so=2.0**-8, zo=25, relu=False, spread=20,
                                        bias=rng.integers(-30, 30, 32) * sx * swt)))
    return cs


def bias_probe(n):
    """Scales with multiplier exactly 2^-4 and ``n`` float32 biases b = f32(m * act_times_w) for which
    f32(b / act_times_w) != f32(b * f32(1 / act_times_w)), one of them the integer m."""
    sx, sw = F32(2.0**-6), F32(0.0123)
    atw = F32(sx * sw)
    rcp = F32(F32(1) / atw)
    bias = [F32(F32(m) * atw) for m in range(-1400, 1400, 7)]
    bias = [b for b in bias if F32(b / atw) != F32(b * rcp)][:n]
    return sx, sw, F32(atw * F32(16)), np.array(bias, F32)


def extreme_codes(rng, shape, p_hi=0.85):
    """Mostly 255 activations: the vpmaddubsw trigger."""
    return np.where(rng.random(shape) < p_hi, 255, rng.integers(0, 256, shape)).astype(np.uint8)


def extreme_weights(rng, shape, p=0.8):
    """Runs of -128 / 127 so that adjacent products share a sign."""
    s = np.where(rng.random(shape) < 0.5, -128, 127)
    return np.where(rng.random(shape) < p, s, rng.integers(-128, 128, shape)).astype(np.int8)


def saturation_cases(rng):
    """Layers whose u8*s8 pair sums leave int16 (and some that don't)."""
    cs = []
    # sign-blocked weights: k in blocks of 2 share a sign, so aligned pairs saturate, misaligned don't
    k = 33
    w = extreme_weights(rng, (24, k))
    cs.append(("sat_fc_odd_k", fb_case(rng, "fully_connected", shape=(40, k), wshape=w.shape,
                                       x=extreme_codes(rng, (40, k)), w=w, zx=0, sx=2.0**-6, sw=2.0**-7,
                                       zw=0, so=2.0**-3, zo=128, relu=False, bias=np.zeros(24),
                                       note="K odd: the last product is paired with a zero")))
    cs.append(("sat_fc_zero_point", fb_case(rng, "fully_connected", shape=(40, 64), wshape=(24, 64),
                                            x=extreme_codes(rng, (40, 64)), w=extreme_weights(rng, (24, 64)),
                                            zx=200, sx=0.01, sw=0.004, zw=0, so=0.02, zo=128, relu=True,
                                            note="pairs saturate on the raw codes, before zero-point terms")))
    cs.append(("sat_fc_large", fb_case(rng, "fully_connected", shape=(100, 256), wshape=(128, 256),
                                       x=extreme_codes(rng, (100, 256), 0.6), w=extreme_weights(rng, (128, 256), 0.5),
                                       zx=128, sx=0.02, sw=0.003, zw=0, so=0.05, zo=128, relu=False)))
    cs.append(("nosat_fc_moderate", fb_case(rng, "fully_connected", shape=(40, 64), wshape=(24, 64),
                                            x=rng.integers(0, 128, (40, 64)), w=rng.integers(-64, 64, (24, 64)),
                                            zx=64, sx=0.01, sw=0.004, zw=0, so=0.02, zo=128, relu=False,
                                            note="|pair| <= 2*127*64 < 2^15: never saturates")))
    cs.append(("sat_conv_c3_pad", fb_case(rng, "conv2d", shape=(2, 12, 12, 3), wshape=(16, 3, 3, 3),
                                          x=extreme_codes(rng, (2, 12, 12, 3)), w=extreme_weights(rng, (16, 3, 3, 3)),
                                          zx=250, sx=0.01, sw=0.005, zw=0, so=0.1, zo=128, relu=False,
                                          pads=(1, 1, 1, 1),
                                          note="C=3: pairs cross taps; padded taps read the code zx")))
    oc = 32
    cs.append(("sat_conv_per_channel_stride2", fb_case(
        rng, "conv2d", shape=(1, 17, 17, 16), wshape=(oc, 3, 3, 16), x=extreme_codes(rng, (1, 17, 17, 16), 0.7),
        w=extreme_weights(rng, (oc, 3, 3, 16), 0.6), zx=128, sx=0.01, sw=rng.uniform(0.002, 0.01, oc),
        zw=np.zeros(oc), so=0.3, zo=100, relu=True, stride=(2, 2), pads=(1, 1, 1, 1))))
    cs.append(("sat_conv_grouped_g4", fb_case(rng, "conv2d", shape=(1, 9, 9, 12), wshape=(12, 3, 3, 3),
                                              x=extreme_codes(rng, (1, 9, 9, 12)), w=extreme_weights(rng, (12, 3, 3, 3)),
                                              zx=128, sx=0.01, sw=0.005, zw=0, so=0.1, zo=128, relu=False,
                                              groups=4)))
    cs.append(("sat_dw_3x3_pad", fb_case(rng, "depthwise_conv2d", shape=(2, 14, 14, 16), wshape=(1, 3, 3, 16),
                                         x=extreme_codes(rng, (2, 14, 14, 16)), w=extreme_weights(rng, (1, 3, 3, 16)),
                                         zx=255, sx=0.01, sw=0.005, zw=0, so=0.05, zo=128, relu=False,
                                         pads=(1, 1, 1, 1),
                                         note="pairs over flat taps fy*KW+fx (9 taps: 4 pairs + 1)")))
    c, m = 8, 3
    cs.append(("sat_dw_5x5_mult3_stride2", fb_case(
        rng, "depthwise_conv2d", shape=(1, 15, 13, c), wshape=(1, 5, 5, c * m), x=extreme_codes(rng, (1, 15, 13, c)),
        w=extreme_weights(rng, (1, 5, 5, c * m)), zx=0, sx=0.01, sw=rng.uniform(0.002, 0.01, c * m),
        zw=np.zeros(c * m), so=0.2, zo=128, relu=True, stride=(2, 2), pads=(2, 2, 2, 2), depth_multiplier=m)))
    cs.append(("sat_dw_large", fb_case(rng, "depthwise_conv2d", shape=(1, 32, 32, 16), wshape=(1, 3, 3, 16),
                                       x=extreme_codes(rng, (1, 32, 32, 16), 0.5),
                                       w=extreme_weights(rng, (1, 3, 3, 16), 0.7), zx=128, sx=0.01, sw=0.004,
                                       zw=0, so=0.02, zo=128, relu=False, pads=(1, 1, 1, 1))))
    # float bias: f32(bias / act_times_w) and bias * f32(1 / act_times_w) differ by one ulp for these
    # biases; multiplier 2^-4 and acc = x - 128 over all 256 codes put acc + bias/act_times_w on ties
    sx, swt, so, bias = bias_probe(40)
    x = np.arange(256, dtype=np.uint8)
    w = np.ones((40, 1), np.int8)
    for cid, sw_ in (("fc_float_bias_division", swt), ("fc_float_bias_division_per_channel", np.full(40, swt))):
        cs.append((cid, fb_case(rng, "fully_connected", shape=(256, 1), wshape=w.shape, x=x.reshape(256, 1), w=w,
                                zx=128, sx=sx, sw=sw_, zw=np.zeros(40) if np.ndim(sw_) else 0, so=so, zo=128,
                                relu=False, bias=bias, note="bias_probe: the float-bias rounding decides ties")))
    x_img = np.repeat(x.reshape(1, 16, 16, 1), 40, axis=3)
    w_dw = np.zeros((1, 3, 3, 40), np.int8)
    w_dw[0, 1, 1, :] = 1
    for cid, sw_ in (("dw_float_bias_division", swt), ("dw_float_bias_division_per_channel", np.full(40, swt))):
        cs.append((cid, fb_case(rng, "depthwise_conv2d", shape=x_img.shape, wshape=w_dw.shape, x=x_img, w=w_dw,
                                zx=128, sx=sx, sw=sw_, zw=np.zeros(40) if np.ndim(sw_) else 0, so=so, zo=128,
                                relu=False, bias=bias, pads=(1, 1, 1, 1), note="bias_probe, depthwise fast path")))
    w_cv = np.zeros((40, 3, 3, 1), np.int8)
    w_cv[:, 1, 1, 0] = 1
    cs.append(("conv_float_bias_division", fb_case(rng, "conv2d", shape=(1, 16, 16, 1), wshape=w_cv.shape,
                                                   x=x.reshape(1, 16, 16, 1), w=w_cv, zx=128, sx=sx, sw=swt, zw=0,
                                                   so=so, zo=128, relu=False, bias=bias, pads=(1, 1, 1, 1),
                                                   note="bias_probe, im2col conv")))
    cs.append(("dw_scaled_beyond_int32", fb_case(rng, "depthwise_conv2d", shape=(1, 10, 10, 16), wshape=(1, 3, 3, 16),
                                                 zx=128, sx=0.05, sw=0.02, zw=0, so=1e-8, zo=128, relu=False,
                                                 pads=(1, 1, 1, 1), note="depthwise fast path, |acc * m| > 2^31")))
    cs.append(("conv_scaled_beyond_int32_relu", fb_case(rng, "conv2d", shape=(1, 6, 6, 8), wshape=(16, 3, 3, 8),
                                                        zx=128, sx=0.05, sw=0.02, zw=0, so=1e-8, zo=100, relu=True,
                                                        note="im2col conv, |acc * m| > 2^31, fused ReLU")))
    return cs


def run_torch_part(isa, engine):
    import torch
    warnings.filterwarnings("ignore")
    rng = np.random.default_rng(20261130)
    cases = fbgemm_cases(rng) + saturation_cases(rng)
    name = {"fbgemm": "fbgemm", "x86": "fbgemm_x86"}[engine] + ("_avx2" if isa == "AVX2" else "")
    book = Book(name)
    for cid, case in cases:
        case["out"] = torch_run(case, engine).astype(np.uint8)
        exact = fbgemm_model(case, False)
        sat = fbgemm_model(case, True)
        e_ok, s_ok = np.array_equal(exact, case["out"]), np.array_equal(sat, case["out"])
        requant = "fbgemm"
        if engine == "x86" and case["op"] != "fully_connected":    # torch routes these to oneDNN
            requant, exact = "onednn", onednn_model(case)
            e_ok = np.array_equal(exact, case["out"])
        case["pair_saturation"] = bool(s_ok and not e_ok)
        case["pair_saturation_changes"] = int(np.count_nonzero(fbgemm_model(case, False) != sat))
        case.update(engine=f"torch {torch.__version__} quantized engine {engine}", isa=isa, requant=requant)
        book.add(cid, case, sat if case["pair_saturation"] else exact)
    book.save()


# ---------------------------------------------------------------------------------------------------
# ONNX Runtime and the ONNX reference evaluator


def onnx_model(case):
    from onnx import TensorProto, helper, numpy_helper
    xdt = TensorProto.UINT8 if case["x"].dtype == np.uint8 else TensorProto.INT8
    op = case["op"]
    inits = [numpy_helper.from_array(np.asarray(case["input_scale"], F32), "xs"),
             numpy_helper.from_array(np.asarray(case["input_zero_point"], case["x"].dtype), "xz"),
             numpy_helper.from_array(np.asarray(case["weight_scale"], F32), "ws"),
             numpy_helper.from_array(np.asarray(case["weight_zero_point"], case["w"].dtype), "wz"),
             numpy_helper.from_array(np.asarray(case["output_scale"], F32), "ys"),
             numpy_helper.from_array(np.asarray(case["output_zero_point"], np.dtype(case["out_dtype"])), "yz")]
    if op == "fully_connected":
        inits.append(numpy_helper.from_array(np.ascontiguousarray(case["w"].T), "w"))
        node = helper.make_node("QLinearMatMul", ["x", "xs", "xz", "w", "ws", "wz", "ys", "yz"], ["y"])
        xshape = list(case["x"].shape)
    else:
        if op == "depthwise_conv2d":
            w = np.transpose(case["w"], (3, 0, 1, 2))
            group = case["x"].shape[-1]
        else:
            w = np.transpose(case["w"], (0, 3, 1, 2))
            group = case.get("groups", 1)
        inits.append(numpy_helper.from_array(np.ascontiguousarray(w), "w"))
        inits.append(numpy_helper.from_array(case["bias"].astype(np.int32), "b"))
        t, b, l, r = case["pads"]
        node = helper.make_node("QLinearConv", ["x", "xs", "xz", "w", "ws", "wz", "ys", "yz", "b"], ["y"],
                                kernel_shape=list(w.shape[2:]), strides=case["stride"], dilations=case["dilation"],
                                pads=[t, l, b, r], group=group)
        nn, h, ww, c = case["x"].shape
        xshape = [nn, c, h, ww]
    ydt = TensorProto.UINT8 if case["out_dtype"] == "uint8" else TensorProto.INT8
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", xdt, xshape)],
                              [helper.make_tensor_value_info("y", ydt, None)], initializer=inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)])
    model.ir_version = 10
    return model


def onnx_run(case, which):
    x = case["x"] if case["op"] == "fully_connected" else np.ascontiguousarray(case["x"].transpose(0, 3, 1, 2))
    model = onnx_model(case)
    if which == "ort":
        import onnxruntime as ort
        so = ort.SessionOptions()
        so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
        sess = ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])
        y = sess.run(None, {"x": x})[0]
    else:
        from onnx.reference import ReferenceEvaluator
        y = ReferenceEvaluator(model).run(None, {"x": x})[0]
    return y if case["op"] == "fully_connected" else np.ascontiguousarray(y.transpose(0, 2, 3, 1))


def ox_case(rng, op, *, shape, wshape, xdt, wdt, zx, sx, sw, zw, so, zo, odt=None, bias=None, x=None, w=None,
            stride=(1, 1), dilation=(1, 1), pads=(0, 0, 0, 0), groups=1, depth_multiplier=1, spread=None, note=""):
    lo, hi = qrange(xdt)
    wlo, whi = qrange(wdt)
    if spread is not None:      # codes near the zero points: small accumulators, many exact ties
        x = near(rng, zx, spread, shape, lo, hi)
        w = near(rng, zw, spread, wshape, wlo, whi)
    x = rng.integers(lo, hi + 1, shape).astype(xdt) if x is None else x.astype(xdt)
    w = rng.integers(wlo, whi + 1, wshape).astype(wdt) if w is None else w.astype(wdt)
    nout = wshape[-1] if op == "depthwise_conv2d" else wshape[0]
    if bias is None:
        bias = rng.integers(-3000, 3000, nout) if op != "fully_connected" else np.zeros(nout)
    case = dict(op=op, x=x, w=w, bias=np.asarray(bias).astype(np.int32), input_scale=F32(sx),
                input_zero_point=np.asarray(zx, xdt), weight_scale=f32s(sw), weight_zero_point=np.asarray(zw, wdt),
                output_scale=F32(so), output_zero_point=np.asarray(zo, odt or xdt), out_dtype=odt or xdt,
                relu=False, note=note)
    if op != "fully_connected":
        case.update(stride=list(stride), dilation=list(dilation), pads=list(pads))
        if op == "conv2d":
            case["groups"] = groups
        else:
            case["depth_multiplier"] = depth_multiplier
    return case


def onnx_cases(rng):
    cs = []
    cs.append(("matmul_u8u8", ox_case(rng, "fully_connected", shape=(64, 200), wshape=(160, 200), xdt="uint8",
                                      wdt="uint8", zx=131, sx=0.0173, sw=0.0042, zw=120, so=0.61, zo=77)))
    cs.append(("matmul_s8s8", ox_case(rng, "fully_connected", shape=(64, 200), wshape=(160, 200), xdt="int8",
                                      wdt="int8", zx=-3, sx=0.021, sw=0.0037, zw=0, so=0.45, zo=5)))
    cs.append(("matmul_u8s8", ox_case(rng, "fully_connected", shape=(50, 120), wshape=(64, 120), xdt="uint8",
                                      wdt="int8", zx=128, sx=0.02, sw=0.005, zw=0, so=0.3, zo=128)))
    cs.append(("matmul_u8s8_extreme", ox_case(rng, "fully_connected", shape=(40, 64), wshape=(24, 64), xdt="uint8",
                                              wdt="int8", x=extreme_codes(rng, (40, 64)),
                                              w=extreme_weights(rng, (24, 64)), zx=0, sx=0.01, sw=0.004, zw=0,
                                              so=0.5, zo=128, note="u8*s8 pair sums beyond int16: exact in MLAS here")))
    n = 96
    cs.append(("matmul_u8u8_per_column", ox_case(rng, "fully_connected", shape=(40, 100), wshape=(n, 100),
                                                 xdt="uint8", wdt="uint8", zx=100, sx=0.02,
                                                 sw=rng.uniform(0.002, 0.01, n), zw=rng.integers(100, 156, n),
                                                 so=0.3, zo=128, note="per-column b_scale and b_zero_point")))
    cs.append(("matmul_s8s8_per_column", ox_case(rng, "fully_connected", shape=(40, 100), wshape=(n, 100),
                                                 xdt="int8", wdt="int8", zx=1, sx=0.02,
                                                 sw=rng.uniform(0.002, 0.01, n), zw=np.zeros(n), so=0.3, zo=-1)))
    cs.append(("matmul_ties_u8", ox_case(rng, "fully_connected", shape=(64, 157), wshape=(160, 157), xdt="uint8",
                                         wdt="uint8", zx=128, sx=2.0**-6, sw=2.0**-7, zw=128, so=2.0**-9, zo=65, spread=8,
                                         note="multiplier 2^-4, odd zp: reference adds zp before rounding")))
    cs.append(("matmul_ties_s8", ox_case(rng, "fully_connected", shape=(64, 157), wshape=(160, 157), xdt="int8",
                                         wdt="int8", zx=0, sx=2.0**-6, sw=2.0**-7, zw=0, so=2.0**-9, zo=-7, spread=8)))
    # acc = 16777217 = 258 * 255 * 255 + 59 * 13 at out[0, 0]; 16777218 and 16777230 beside it
    k = 260
    x0 = np.zeros((3, k), np.uint8)
    w0 = np.zeros((2, k), np.uint8)
    x0[:, :258] = 255
    w0[:, :258] = 255
    x0[:, 258], w0[:, 258] = 59, 13
    x0[1, 259], w0[1, 259] = 1, 1
    x0[2, 258] = 60
    cs.append(("matmul_float_acc_above_2p24", ox_case(rng, "fully_connected", shape=x0.shape, wshape=w0.shape, x=x0,
                                                      w=w0, xdt="uint8", wdt="uint8", zx=0, sx=2.0**-10,
                                                      sw=2.0**-10, zw=0, so=2.0**5, zo=0,
                                                      note="out[0,0]: acc 16777217, multiplier 2^-25")))
    # conv ---------------------------------------------------------------------------------------------
    cs.append(("conv_u8u8_3x3_same", ox_case(rng, "conv2d", shape=(2, 16, 16, 16), wshape=(32, 3, 3, 16),
                                             xdt="uint8", wdt="uint8", zx=120, sx=0.031, sw=0.0063, zw=127, so=0.9,
                                             zo=90, pads=(1, 1, 1, 1))))
    oc = 24
    cs.append(("conv_s8s8_per_channel_stride_dil_asym_pad", ox_case(
        rng, "conv2d", shape=(1, 23, 19, 8), wshape=(oc, 5, 3, 8), xdt="int8", wdt="int8", zx=-5, sx=0.02,
        sw=rng.uniform(0.002, 0.02, oc), zw=np.zeros(oc), so=0.4, zo=3, stride=(2, 1), dilation=(2, 2),
        pads=(2, 1, 0, 2))))
    cs.append(("conv_u8s8_per_channel", ox_case(rng, "conv2d", shape=(1, 12, 12, 10), wshape=(20, 3, 3, 10),
                                                xdt="uint8", wdt="int8", zx=128, sx=0.02,
                                                sw=rng.uniform(0.002, 0.02, 20), zw=np.zeros(20), so=0.2, zo=128,
                                                pads=(1, 1, 1, 1))))
    cs.append(("conv_u8s8_extreme", ox_case(rng, "conv2d", shape=(1, 10, 10, 8), wshape=(16, 3, 3, 8), xdt="uint8",
                                            wdt="int8", x=extreme_codes(rng, (1, 10, 10, 8)),
                                            w=extreme_weights(rng, (16, 3, 3, 8)), zx=0, sx=0.01, sw=0.004, zw=0,
                                            so=1.0, zo=128, pads=(1, 1, 1, 1))))
    cs.append(("conv_u8u8_grouped_g4", ox_case(rng, "conv2d", shape=(1, 10, 10, 16), wshape=(16, 3, 3, 4),
                                               xdt="uint8", wdt="uint8", zx=128, sx=0.02, sw=0.01, zw=128, so=0.1,
                                               zo=128, groups=4, pads=(1, 1, 1, 1))))
    cs.append(("conv_ties_u8", ox_case(rng, "conv2d", shape=(2, 9, 9, 6), wshape=(16, 3, 3, 6), xdt="uint8",
                                       wdt="uint8", zx=128, sx=2.0**-6, sw=2.0**-8, zw=128, so=2.0**-9, zo=41, spread=12,
                                       bias=rng.integers(-300, 300, 16),
                                       pads=(1, 1, 1, 1))))
    cs.append(("dw_u8u8_3x3_same", ox_case(rng, "depthwise_conv2d", shape=(2, 20, 20, 32), wshape=(1, 3, 3, 32),
                                           xdt="uint8", wdt="uint8", zx=128, sx=0.03, sw=0.01, zw=128, so=0.2,
                                           zo=128, pads=(1, 1, 1, 1))))
    c, m = 16, 2
    cs.append(("dw_s8s8_5x5_mult2_stride2_per_channel", ox_case(
        rng, "depthwise_conv2d", shape=(1, 21, 17, c), wshape=(1, 5, 5, c * m), xdt="int8", wdt="int8", zx=2,
        sx=0.025, sw=rng.uniform(0.003, 0.02, c * m), zw=np.zeros(c * m), so=0.3, zo=-4, stride=(2, 2),
        pads=(2, 2, 2, 2), depth_multiplier=m)))
    cs.append(("dw_ties_s8_dilation2", ox_case(rng, "depthwise_conv2d", shape=(1, 15, 15, 8), wshape=(1, 3, 3, 8),
                                               xdt="int8", wdt="int8", zx=0, sx=2.0**-5, sw=2.0**-8, zw=0,
                                               so=2.0**-8, zo=17, dilation=(2, 2), pads=(2, 2, 2, 2), spread=40,
                                               bias=rng.integers(-300, 300, 8))))
    return cs


def run_onnx_part():
    import onnx
    import onnxruntime as ort
    rng = np.random.default_rng(20261201)
    cases = onnx_cases(rng)
    for which, model_fn, label in (("ort", ort_model, f"onnxruntime {ort.__version__} CPUExecutionProvider"),
                                   ("onnxref", onnxref_model, f"onnx {onnx.__version__} ReferenceEvaluator")):
        for op_group, prefix in (("matmul", ("matmul",)), ("conv", ("conv", "dw"))):
            book = Book(f"{which}_{op_group}")
            for cid, case in cases:
                if not cid.startswith(prefix):
                    continue
                case = dict(case)
                try:
                    case["out"] = onnx_run(case, which).astype(case["out_dtype"])
                except Exception as exc:  # an engine refusing a case is a finding, recorded in the report
                    book.report.append(f"{which}:{cid}: REFUSED {type(exc).__name__}: {str(exc)[:200]}")
                    continue
                case.update(engine=label, requant={"ort": "onnxruntime", "onnxref": "onnx-reference"}[which],
                            pair_saturation=False)
                book.add(cid, case, model_fn(case))
            book.save()


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--part", choices=["all", "torch", "onnx"], default="all")
    ap.add_argument("--isa", default="native", help="torch part: native | AVX2 (sets FBGEMM_ENABLE_INSTRUCTIONS)")
    ap.add_argument("--engine", default="fbgemm", help="torch part: fbgemm | x86")
    args = ap.parse_args()
    if args.part == "torch":
        run_torch_part(args.isa, args.engine)
    elif args.part == "onnx":
        run_onnx_part()
    else:
        me = [sys.executable, str(Path(__file__).resolve())]
        for isa, engine in (("native", "fbgemm"), ("AVX2", "fbgemm"), ("native", "x86")):
            env = dict(os.environ)
            env.pop("FBGEMM_ENABLE_INSTRUCTIONS", None)
            if isa != "native":
                env["FBGEMM_ENABLE_INSTRUCTIONS"] = isa
            subprocess.run(me + ["--part", "torch", "--isa", isa, "--engine", engine], env=env, check=True)
        subprocess.run(me + ["--part", "onnx"], check=True)


if __name__ == "__main__":
    main()
