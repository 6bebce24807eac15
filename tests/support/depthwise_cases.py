"""The depthwise convolution test cases the core, fused-store and odd-channel tests share: codes with edges,
the requantization schemes and clamps, a case run through the core against the oracle, a prepared plan run
against the oracle, and the plain integer sums."""
from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
import dspsim
from dspsim import kernels
from dspsim import oracle as ref
from dspsim.kernels.mac import depthwise_core as core
from dspsim.requant import Requant
from oracle_views import oracle_requant


RANGES = {"int8": (-128, 127), "uint8": (0, 255)}


# 1 and 3 (runs only), 7 (direct), 8/9 (two overlapping 8-blocks), 16/17/24 (16-blocks, tails), 33 (two 16-blocks + tail)
CHANNELS = [1, 3, 7, 8, 9, 16, 17, 24, 33]


def codes(rng, shape, dtype, edge):
    """Random codes of ``dtype``, a quarter of them at the type's min/max when ``edge``."""
    lo, hi = RANGES[dtype]
    a = rng.integers(lo, hi + 1, shape)
    if edge:
        pick = rng.random(shape)
        a = np.where(pick < 0.125, lo, np.where(pick < 0.25, hi, a))
    return a.astype(dtype)


def run_case(cs):
    rng = np.random.default_rng(cs["seed"])
    (kh, kw), (dh, dw), pads = cs["k"], cs["dil"], list(cs["pads"])
    if cs["h"] + pads[0] + pads[1] < (kh - 1) * dh + 1 or cs["w"] + pads[2] + pads[3] < (kw - 1) * dw + 1:
        pads = [(kh - 1) * dh, (kh - 1) * dh, (kw - 1) * dw, (kw - 1) * dw]
    oc = cs["c"] * cs["mult"]
    x = codes(rng, (cs["b"], cs["h"], cs["w"], cs["c"]), cs["xd"], cs["edge"])
    w = codes(rng, (1, kh, kw, oc), cs["wd"], cs["edge"])
    lo, hi = RANGES[cs["wd"]]
    zw = [int(v) for v in rng.integers(lo, hi + 1, oc)] if cs["per_channel_zw"] else cs["zw"]
    bias = rng.integers(-(1 << 12), 1 << 12, oc).astype(np.int32)
    # shift-only to int16: |sum| <= 9 * 255 * 255 + 2^12, divided by 8 to 32 it fits, so a wrong sum shows
    rq = Requant.shift_only(cs["shift"])
    top, bottom, left, right = pads
    got = dspsim.depthwise_conv2d(x, w, bias, depth_multiplier=cs["mult"], stride=cs["stride"], dilation=cs["dil"],
                                  padding=((top, bottom), (left, right)), input_zero_point=cs["zx"],
                                  weight_zero_point=zw, output_zero_point=0, requant=rq, out_dtype="int16")
    want, _, _ = ref.depthwise_conv2d(x.tolist(), w.tolist(), bias.tolist(), cs["zx"], zw, 0, oracle_requant(rq),
                                      -32768, 32767, depth_multiplier=cs["mult"], stride=cs["stride"],
                                      pads=tuple(pads), dilation=cs["dil"])
    # the core's sums themselves, against plain Python ints
    zw_c = np.broadcast_to(np.asarray(zw, np.int64), (oc,))
    w_s, zw_s = (w.astype(np.int64) - 128, zw_c - 128) if cs["wd"] == "uint8" else (w.astype(np.int64), zw_c)
    prepared = core.prepare_depthwise_weights(w_s[0].astype(np.int8), zw_s, cs["mult"])
    sums, out_h, out_w = plain_sums(x, w_s[0], cs["zx"], zw_s, bias, cs["stride"], pads, cs["dil"], cs["mult"])
    assert got.shape[1:3] == (out_h, out_w)
    for bits in (32, 64):
        acc = core.depthwise_accumulate(x, prepared, cs["zx"], bias.astype(np.int64), cs["stride"], cs["dil"], top,
                                        left, out_h, out_w, bits)
        assert np.array_equal(acc, sums.astype(np.int64)), bits
    return got, np.array(want, np.int64)


CLAMPS = {"int8": [(0, -128, 127), (-128, -128, 127), (127, -128, 127), (-3, 0, 6), (9, 9, 9)],
          "uint8": [(0, 0, 255), (128, 0, 255), (255, 0, 255), (3, 3, 200)],
          "int16": [(0, -32768, 32767), (-32768, -32768, 32767), (100, -200, 300)]}


pairs_only = pytest.mark.skipif(not core.USE_PAIRS, reason="the fused store is the tap pairs' (AVX2, jit)")


# --------------------------------------------------------------------------------------------
# the fused depthwise layer
# --------------------------------------------------------------------------------------------
SCHEMES = ["double", "double-per-tensor", "fbgemm", "fbgemm-per-tensor", "xnnpack", "onnxruntime", "single"]


def scheme_kwargs(scheme, rng, oc):
    """(keywords of the layer, the oracle's requant dict, float bias or None) for ``scheme`` on ``oc`` channels."""
    s_in, s_out = 0.05, float(rng.choice([0.5, 5.0, 40.0]))
    s_w = (0.005 + rng.random(oc) * 0.01).astype(np.float32)
    bias_i = rng.integers(-(1 << 14), 1 << 14, oc).astype(np.int32)
    if scheme in ("double", "double-per-tensor", "single"):
        rq = Requant.from_scales(s_in, s_w if scheme != "double-per-tensor" else 0.01, s_out, engine="tflm",
                                 op="depthwise", rounding="single" if scheme == "single" else "double")
        return dict(requant=rq), bias_i, None
    if scheme in ("xnnpack", "onnxruntime"):
        return dict(requant=Requant.from_scales(s_in, s_w, s_out, engine=scheme, op="depthwise")), bias_i, None
    per_tensor = scheme == "fbgemm-per-tensor"
    rq = Requant.from_scales(s_in, 0.01 if per_tensor else s_w, s_out, engine="fbgemm", op="depthwise")
    fbias = (bias_i.astype(np.float32) * np.float32(s_in) * (np.float32(0.01) if per_tensor else s_w)).astype(
        np.float32)
    return dict(requant=rq), fbias, fbias


def run_layer(cs):
    """The prepared layer's codes, the public (unfused) call's and the oracle's."""
    rng = np.random.default_rng(cs["seed"])
    (kh, kw), (dh, dw), pads = cs["k"], cs["dil"], list(cs["pads"])
    if cs["h"] + pads[0] + pads[1] < (kh - 1) * dh + 1 or cs["w"] + pads[2] + pads[3] < (kw - 1) * dw + 1:
        pads = [(kh - 1) * dh, (kh - 1) * dh, (kw - 1) * dw, (kw - 1) * dw]
    c, mult = cs["c"], cs.get("mult", 1)  # the odd-channel cases keep M = 1
    x = codes(rng, (cs["b"], cs["h"], cs["w"], c), cs["xd"], cs["edge"])
    w = codes(rng, (1, kh, kw, c * mult), "int8", cs["edge"])
    zw = [int(v) for v in rng.integers(-128, 128, c * mult)] if cs["per_channel_zw"] else cs["zw"]
    kw_q, bias, fbias = scheme_kwargs(cs["scheme"], rng, c * mult)
    out_name = cs["xd"] if cs["out"] == "same" else cs["out"]
    zo, lo, hi = CLAMPS[out_name][cs["clamp"] % len(CLAMPS[out_name])]
    top, bottom, left, right = pads
    kw_all = dict(depth_multiplier=mult, stride=cs["stride"], dilation=cs["dil"], padding=((top, bottom), (left, right)),
                  input_zero_point=cs["zx"], weight_zero_point=zw, output_zero_point=zo, act_min=lo, act_max=hi,
                  out_dtype=out_name, **kw_q)
    layer = kernels.depthwise_conv2d_plan(x.shape, x.dtype, w, bias, **kw_all)
    got = layer.run(x)
    unfused = dspsim.depthwise_conv2d(x, w, bias, **kw_all)
    want, _, _ = ref.depthwise_conv2d(x.tolist(), w.tolist(), None if fbias is not None else bias.tolist(), cs["zx"],
                                      zw, zo, oracle_requant(kw_q["requant"]), lo, hi, depth_multiplier=mult,
                                      stride=cs["stride"],
                                      pads=tuple(pads), dilation=cs["dil"],
                                      float_bias=None if fbias is None else [Fraction(float(v)) for v in fbias])
    return got, unfused, np.array(want, np.int64)


def plain_sums(x, w, zx, zw, bias, stride, pads, dilation=(1, 1), mult=1):
    """Exact Python-int depthwise sums ``(B*OH*OW, C*M)`` of ``w`` (KH, KW, C*M), taps outside the input skipped."""
    n_b, in_h, in_w, c = x.shape
    k_h, k_w, n_oc = w.shape
    (sh, sw), (pt, pb, pl, pr), (dh, dw) = stride, pads, dilation
    out_h, out_w = (in_h + pt + pb - (k_h - 1) * dh - 1) // sh + 1, (in_w + pl + pr - (k_w - 1) * dw - 1) // sw + 1
    out = np.zeros((n_b, out_h, out_w, n_oc), object)
    for b in range(n_b):
        for oy in range(out_h):
            for ox in range(out_w):
                for oc in range(n_oc):
                    s = int(bias[oc])
                    for fy in range(k_h):
                        for fx in range(k_w):
                            iy, ix = oy * sh - pt + dh * fy, ox * sw - pl + dw * fx
                            if 0 <= iy < in_h and 0 <= ix < in_w:
                                s += (int(x[b, iy, ix, oc // mult]) - zx) * (int(w[fy, fx, oc]) - int(zw[oc]))
                    out[b, oy, ox, oc] = s
    return out.reshape(-1, n_oc), out_h, out_w
