"""The oracle of the mac family: FULLY_CONNECTED, CONV_2D, DEPTHWISE_CONV_2D, TRANSPOSE_CONV, BATCH_MATMUL.

Plain Python integers and exact fractions (no numba); the kernels are checked against it.
"""
from __future__ import annotations

from .fixedpoint import (
    _np,
    _range,
    clamp,
    multiply_by_quantized_multiplier,
    multiply_by_quantized_multiplier_int64,
    wrap,
)
from .requant import accumulate, requant_from_rule, requant_from_scales, requantize_value, rule_dict


# --- kernels ---------------------------------------------------------------------------------
def _conv_generic(x, w, bias, zx, zw, zo, rq, lo, hi, stride, pads, dilation, in_channels, acc_model,
                  float_bias=None):
    """TFLite ConvPerChannel loop: output channel oc reads input channels in_channels(oc) and
    filter taps w[oc][fy][fx][i]; ``zw`` an int or one per output channel. Returns (nested output list, total overflow events, pair events)."""
    bits, overflow, pair_mode = acc_model
    n_b, in_h, in_w = len(x), len(x[0]), len(x[0][0])
    k_h, k_w = len(w[0]), len(w[0][0])
    (sh, sw), (pt, pb, pl, pr), (dh, dw) = stride, pads, dilation
    out_h = (in_h + pt + pb - (k_h - 1) * dh - 1) // sh + 1
    out_w = (in_w + pl + pr - (k_w - 1) * dw - 1) // sw + 1
    out, events, pair_events = [], 0, 0
    for b in range(n_b):
        plane = []
        for oy in range(out_h):
            line = []
            for ox in range(out_w):
                pixel = []
                for oc in range(len(w)):
                    chans = in_channels(oc)
                    zwo = zw[oc] if isinstance(zw, (list, tuple)) else zw
                    terms, raw = [], []
                    for fy in range(k_h):
                        for fx in range(k_w):
                            iy, ix = oy * sh - pt + dh * fy, ox * sw - pl + dw * fx
                            inside = 0 <= iy < in_h and 0 <= ix < in_w
                            for i, ic in enumerate(chans):
                                wv = w[oc][fy][fx][i]
                                xv = x[b][iy][ix][ic] if inside else zx
                                raw.append((xv, wv))
                                if inside:
                                    terms.append((xv - zx) * (wv - zwo))
                    pairs = None
                    if pair_mode:
                        k = len(raw)
                        corr = -zx * (sum(v for _, v in raw) - k * zwo) - zwo * sum(u for u, _ in raw)
                        pairs = ([u * v for u, v in raw], corr)
                    bv = 0 if bias is None else bias[oc]
                    acc, e, pe = accumulate(terms, bv, bits, overflow, pairs)
                    events += e
                    pair_events += pe
                    fb = None if float_bias is None else float_bias[oc]
                    pixel.append(clamp(requantize_value(acc, rq, oc, zo, fb), lo, hi))
                line.append(pixel)
            plane.append(line)
        out.append(plane)
    return out, events, pair_events


def conv2d(x, w, bias, zx, zw, zo, rq, lo, hi, stride=(1, 1), pads=(0, 0, 0, 0), dilation=(1, 1),
           acc_model=(32, "wrap", False), float_bias=None):
    """TFLite ConvPerChannel (grouped): x NHWC, w OHWI nested lists; ``pads = (top, bottom, left, right)``."""
    icg, c = len(w[0][0][0]), len(x[0][0][0])
    ocg = len(w) // (c // icg)
    return _conv_generic(x, w, bias, zx, zw, zo, rq, lo, hi, stride, pads, dilation,
                         lambda oc: range((oc // ocg) * icg, (oc // ocg + 1) * icg), acc_model, float_bias)


def depthwise_conv2d(x, w, bias, zx, zw, zo, rq, lo, hi, depth_multiplier=1, stride=(1, 1), pads=(0, 0, 0, 0),
                     dilation=(1, 1), acc_model=(32, "wrap", False), float_bias=None):
    """TFLite DepthwiseConvPerChannel: w (1, KH, KW, C*M), output channel oc = ic*M + m reads input ic."""
    k_h, k_w, n_oc = len(w[0]), len(w[0][0]), len(w[0][0][0])
    w_ohwi = [[[[w[0][fy][fx][oc]] for fx in range(k_w)] for fy in range(k_h)] for oc in range(n_oc)]
    return _conv_generic(x, w_ohwi, bias, zx, zw, zo, rq, lo, hi, stride, pads, dilation,
                         lambda oc: [oc // depth_multiplier], acc_model, float_bias)


def fully_connected(x, w, bias, zx, zw, zo, rq, lo, hi, acc_model=(32, "wrap", False), float_bias=None):
    """TFLite FullyConnected: x (M, K), w (N, K) nested lists; acc = sum over d, then + bias."""
    x4 = [[[row]] for row in x]
    w4 = [[[row]] for row in w]
    out, ev, pe = _conv_generic(x4, w4, bias, zx, zw, zo, rq, lo, hi, (1, 1), (0, 0, 0, 0), (1, 1),
                                lambda oc: range(len(x[0])), acc_model, float_bias)
    return [o[0][0] for o in out], ev, pe


def _same_pads(n, k, stride, dilation, padding):
    """(before, after) padding of one spatial axis: TensorFlow's SAME (odd pixel after), VALID, or given."""
    if isinstance(padding, str):
        if padding.upper() == "VALID":
            return 0, 0
        eff = (k - 1) * dilation + 1
        out = -(-n // stride)
        total = max((out - 1) * stride + eff - n, 0)
        return total // 2, total - total // 2
    return padding


def _explicit_pads(padding):
    """``padding`` as ((top, bottom), (left, right)) for an explicit int / (ph, pw) / nested pair."""
    if isinstance(padding, str):
        return padding, padding
    if isinstance(padding, int):
        return (padding, padding), (padding, padding)
    a, b = padding
    return ((a, a) if isinstance(a, int) else tuple(a)), ((b, b) if isinstance(b, int) else tuple(b))


def _kernel_rq(n, multiplier, shift, rounding, requant, input_scale, weight_scale, output_scale, op):
    """The requantization of a kernel call as :func:`requantize_value`'s dict (see dspsim.requant)."""
    np = _np()
    if hasattr(requant, "mac"):  # an engine's profile: its rule for the op's family
        ws = np.asarray(weight_scale, np.float64)
        family = {"conv": "conv_2d", "depthwise": "depthwise_conv_2d"}.get(op, op)
        return requant_from_rule(rule_dict(getattr(requant.mac, family).requant), float(input_scale),
                                 ws.tolist() if ws.ndim else float(ws), float(output_scale))
    if requant is not None and not isinstance(requant, str):  # a dspsim.Requant value
        return {"scheme": requant.scheme, "multiplier": list(requant.multiplier), "shift": list(requant.shift),
                "scale": list(requant.scale), "act_times_w": list(requant.act_times_w),
                "rounding": requant.tie.name.lower(), "reciprocal_bias": requant.reciprocal_bias,
                "saturate_input": requant.saturate_input}
    if requant == "shift":
        return {"scheme": "shift", "shift": np.atleast_1d(shift).tolist(),
                "rounding": "half_away_from_zero" if rounding == "double" else str(rounding).lower()}
    if requant is not None or input_scale is not None:
        ws = np.asarray(weight_scale, np.float64)
        return requant_from_scales(float(input_scale), ws.tolist() if ws.ndim else float(ws), float(output_scale),
                                   engine=requant or "tflm", op=op, rounding=rounding)
    return {"scheme": rounding, "multiplier": np.atleast_1d(multiplier).tolist(),
            "shift": np.atleast_1d(shift).tolist()}


def _mac_kernel_oracle(kind, x, w, bias, geometry, input_zero_point, weight_zero_point, output_zero_point,
                       multiplier, shift, act_min, act_max, rounding, accumulator, out_dtype, requant, input_scale,
                       weight_scale, output_scale):
    np = _np()
    w = np.asarray(getattr(w, "weights", w))  # a dspsim.pack_weights result holds its raw weights
    n = w.shape[3] if kind == "depthwise" else w.shape[0]
    lo, hi = _range(np.dtype(out_dtype), act_min, act_max)
    rq = _kernel_rq(n, multiplier, shift, rounding, requant, input_scale, weight_scale, output_scale, kind)
    zw = np.broadcast_to(np.asarray(weight_zero_point), (n,)).tolist()
    b = None if bias is None else np.asarray(bias)
    fb, bi = (b.tolist(), None) if b is not None and b.dtype.kind == "f" else (None, None if b is None else b.tolist())
    acc = (64 if np.asarray(x).dtype == np.int16 else 32, "wrap", False) if accumulator is None else (
        accumulator.bits, accumulator.overflow, accumulator.pair_saturation)  # 16x8: an int64 accumulator
    args = (np.asarray(x).tolist(), w.tolist(), bi, int(input_zero_point), zw, int(output_zero_point), rq, lo, hi)
    if kind == "fully_connected":
        x2 = np.asarray(x).reshape(-1, x.shape[-1])
        out = fully_connected(x2.tolist(), *args[1:], acc_model=acc, float_bias=fb)[0]
        return np.array(out, np.dtype(out_dtype)).reshape(x.shape[:-1] + (n,))
    stride, padding, dilation, mult = geometry
    (sh, sw), (dh, dw) = ((stride, stride) if isinstance(stride, int) else stride,
                          (dilation, dilation) if isinstance(dilation, int) else dilation)
    ph, pw = _explicit_pads(padding)
    pads = (*_same_pads(x.shape[1], w.shape[1], sh, dh, ph), *_same_pads(x.shape[2], w.shape[2], sw, dw, pw))
    kw = dict(stride=(sh, sw), pads=pads, dilation=(dh, dw), acc_model=acc, float_bias=fb)
    if kind == "depthwise":
        out = depthwise_conv2d(*args, depth_multiplier=mult, **kw)[0]
    else:
        out = conv2d(*args, **kw)[0]
    return np.array(out, np.dtype(out_dtype))


def fully_connected_oracle(x, w, bias=None, *, input_zero_point, weight_zero_point=0, output_zero_point,
                           multiplier=None, shift=None, act_min=None, act_max=None, rounding="double",
                           accumulator=None, out_dtype="int8", requant=None, input_scale=None, weight_scale=None,
                           output_scale=None, stats=False):
    return _mac_kernel_oracle("fully_connected", x, w, bias, None, input_zero_point, weight_zero_point,
                              output_zero_point, multiplier, shift, act_min, act_max, rounding, accumulator,
                              out_dtype, requant, input_scale, weight_scale, output_scale)


def conv2d_oracle(x, w, bias=None, *, stride=1, padding="VALID", dilation=1, input_zero_point, weight_zero_point=0,
                  output_zero_point, multiplier=None, shift=None, act_min=None, act_max=None, rounding="double",
                  accumulator=None, out_dtype="int8", requant=None, input_scale=None, weight_scale=None,
                  output_scale=None, stats=False):
    return _mac_kernel_oracle("conv", x, w, bias, (stride, padding, dilation, 1), input_zero_point,
                              weight_zero_point, output_zero_point, multiplier, shift, act_min, act_max, rounding,
                              accumulator, out_dtype, requant, input_scale, weight_scale, output_scale)


def depthwise_conv2d_oracle(x, w, bias=None, *, depth_multiplier=1, stride=1, padding="VALID", dilation=1,
                            input_zero_point, weight_zero_point=0, output_zero_point, multiplier=None, shift=None,
                            act_min=None, act_max=None, rounding="double", accumulator=None, out_dtype="int8",
                            requant=None, input_scale=None, weight_scale=None, output_scale=None, stats=False):
    return _mac_kernel_oracle("depthwise", x, w, bias, (stride, padding, dilation, depth_multiplier),
                              input_zero_point, weight_zero_point, output_zero_point, multiplier, shift, act_min,
                              act_max, rounding, accumulator, out_dtype, requant, input_scale, weight_scale,
                              output_scale)


def batch_matmul_oracle(x, y, *, adj_x=False, adj_y=False, x_zero_point, y_zero_point, output_zero_point, multiplier,
                        shift):
    """reference_ops::BatchMatMul: per output element an int32 dot product, MBQM, + zo, clamp to int8; int16
    (``BatchMatMul<int16_t, int64_t>``): an int64 dot product and the int64 MBQM, clamped to int16."""
    np = _np()
    if np.asarray(x).dtype == np.int16:
        def requant(acc):
            return clamp(multiply_by_quantized_multiplier_int64(acc, multiplier, shift) + output_zero_point,
                         -32768, 32767)
    else:
        def requant(acc):
            return clamp(multiply_by_quantized_multiplier(wrap(acc, 32), multiplier, shift) + output_zero_point,
                         -128, 127)
    a = np.swapaxes(x, -1, -2) if adj_x else x
    b = np.swapaxes(y, -1, -2) if adj_y else y
    batch = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    m, k, n = a.shape[-2], a.shape[-1], b.shape[-1]
    a3 = np.broadcast_to(a, batch + (m, k)).reshape(-1, m, k).tolist()
    b3 = np.broadcast_to(b, batch + (k, n)).reshape(-1, k, n).tolist()
    out = [[[requant(sum((A[i][d] - x_zero_point) * (B[d][j] - y_zero_point) for d in range(k)))
             for j in range(n)] for i in range(m)] for A, B in zip(a3, b3)]
    return np.array(out, np.asarray(x).dtype).reshape(batch + (m, n))


def transpose_conv_oracle(x, w, bias=None, *, output_size, stride=1, padding="SAME", input_zero_point,
                          output_zero_point, requant, act_min=None, act_max=None):
    """reference_integer_ops::TransposeConv: scatter into int32 scratch (int16 input: int64), + bias,
    requantize per channel (int16: the int64 MultiplyByQuantizedMultiplier, no zero points)."""
    np = _np()
    bits = 64 if x.dtype == np.int16 else 32
    n, in_h, in_w, c_in = x.shape
    c_out, k_h, k_w, _ = w.shape
    out_h, out_w = (output_size, output_size) if isinstance(output_size, int) else output_size
    sh, sw = (stride, stride) if isinstance(stride, int) else stride
    pads = []
    for out, k, s in ((out_h, k_h, sh), (out_w, k_w, sw)):  # ComputePaddingHeightWidth on the output size
        o = -(-out // s) if padding.upper() == "SAME" else (out - k + s) // s
        pads.append(max((o - 1) * s + k - out, 0) // 2)
    xs, ws = np.asarray(x).tolist(), np.asarray(w).tolist()
    acc = [[[[0] * c_out for _ in range(out_w)] for _ in range(out_h)] for _ in range(n)]
    for b in range(n):
        for iy in range(in_h):
            for ix in range(in_w):
                for ic in range(c_in):
                    for fy in range(k_h):
                        for fx in range(k_w):
                            oy, ox = iy * sh - pads[0] + fy, ix * sw - pads[1] + fx
                            if 0 <= oy < out_h and 0 <= ox < out_w:
                                v = xs[b][iy][ix][ic] - input_zero_point
                                for oc in range(c_out):
                                    acc[b][oy][ox][oc] = wrap(acc[b][oy][ox][oc] + v * ws[oc][fy][fx][ic], bits)
    rq = _kernel_rq(c_out, None, None, "double", requant, None, None, None, "conv")
    lo, hi = _range(x.dtype, act_min, act_max)
    bs = [0] * c_out if bias is None else np.asarray(bias).tolist()

    def requantized(a, oc):
        if bits == 64:
            at = oc if len(rq["multiplier"]) > 1 else 0
            return multiply_by_quantized_multiplier_int64(a, rq["multiplier"][at], rq["shift"][at])
        return requantize_value(a, rq, oc, output_zero_point)

    out = [[[[clamp(requantized(wrap(acc[b][oy][ox][oc] + bs[oc], bits), oc), lo, hi)
              for oc in range(c_out)] for ox in range(out_w)] for oy in range(out_h)] for b in range(n)]
    return np.array(out, x.dtype)


# --- ONNX MatMulInteger / ConvInteger (int32 sums, per-row / per-column / per-channel zero points) ---
def matmul_integer(a, b, za, zb):
    """``a`` M x K, ``b`` K x N nested lists; ``za`` per row list, ``zb`` per column list. Wrapped to int32."""
    m, k, n = len(a), len(b), len(b[0])
    return [[wrap(sum((a[i][t] - za[i]) * (b[t][j] - zb[j]) for t in range(k)), 32) for j in range(n)]
            for i in range(m)]


def conv_integer(x, w, zx, zw, strides, pads, dilations, group):
    """NCHW nested lists; ``pads`` (top, left, bottom, right) as ONNX; ``zw`` per output channel."""
    n_b, h, wd = len(x), len(x[0][0]), len(x[0][0][0])
    c_out, c_g, kh, kw = len(w), len(w[0]), len(w[0][0]), len(w[0][0][0])
    pt, pl, pb, pr = pads
    oh = (h + pt + pb - dilations[0] * (kh - 1) - 1) // strides[0] + 1
    ow = (wd + pl + pr - dilations[1] * (kw - 1) - 1) // strides[1] + 1
    per_group = c_out // group
    out = [[[[0] * ow for _ in range(oh)] for _ in range(c_out)] for _ in range(n_b)]
    for b in range(n_b):
        for o in range(c_out):
            g = o // per_group
            for oy in range(oh):
                for ox in range(ow):
                    s = 0
                    for ci in range(c_g):
                        c = g * c_g + ci
                        for ky in range(kh):
                            for kx in range(kw):
                                iy = oy * strides[0] + ky * dilations[0] - pt
                                ix = ox * strides[1] + kx * dilations[1] - pl
                                if 0 <= iy < h and 0 <= ix < wd:
                                    s += (x[b][c][iy][ix] - zx) * (w[o][ci][ky][kx] - zw[o])
                    out[b][o][oy][ox] = wrap(s, 32)
    return out
