"""The benchmark workloads: cases, their integer problems and dspsim's call on each.

Shared by ``dspsim bench`` and ``benches/`` (pytest-benchmark): both take their shapes from
:data:`SHAPES`, their inputs from :func:`problem` and dspsim's call from :func:`dspsim_runner`, so the
two report the same operation on the same integers.

A *case* is one operation (:data:`OPS`), one *variant* (the requantization scheme or quantization
convention; for the exact int32 cores ``gemm_s32`` / ``conv2d_s32``, the SIMD path) and one *size*.
"""
from __future__ import annotations

import math
import os
from dataclasses import dataclass
from typing import Callable

import numpy as np

SIZES = ("quick", "small", "medium", "large")

#: dense (M, K, N); conv (N, H, W, C, O) 3x3 SAME stride 1; depthwise (N, H, W, C) 3x3 SAME;
#: elementwise element count; memory: bytes of the input of the memory probe.
SHAPES = {
    "quick": dict(dense=(4, 32, 16), conv=(1, 8, 8, 8, 8), depthwise=(1, 8, 8, 8), elem=4096,
                  memory=1 << 20),
    "small": dict(dense=(64, 256, 256), conv=(1, 28, 28, 32, 32), depthwise=(1, 28, 28, 32),
                  elem=1 << 20, memory=16 << 20),
    "medium": dict(dense=(256, 1024, 1024), conv=(1, 56, 56, 64, 64), depthwise=(1, 56, 56, 64),
                   elem=16 << 20, memory=256 << 20),
    "large": dict(dense=(1024, 4096, 4096), conv=(1, 112, 112, 128, 128), depthwise=(1, 112, 112, 256),
                  elem=128 << 20, memory=1 << 30),
}

KERNEL_OPS = ("fully_connected", "conv2d", "depthwise_conv2d")
#: variant -> family of the integer problem: "tflite" (int8 in, multiplier/shift), "fbgemm" and
#: "onnxruntime" (uint8 in, float scales; FBGEMM takes a float bias).
KERNEL_VARIANTS = ("double", "single", "fbgemm", "onnxruntime")
RELU_VARIANTS = ("clamp", "requant")
QUANTIZE_VARIANTS = ("tf-min-combined", "tf-min-first", "tf-scaled", "torch", "onnx", "tflite", "pof2")
REQUANT_VARIANTS = ("double", "single", "shift", "fbgemm", "onnxruntime", "xnnpack")
#: the exact int32 GEMM / convolution cores of dspsim.kernels.mac.gemm (prepacked weights, no requantization);
#: their variants are the SIMD paths this machine runs (dspsim.kernels.mac.gemm.PATHS)
CORE_OPS = ("gemm_s32", "conv2d_s32")
OPS = KERNEL_OPS + ("relu", "quantize", "requantize") + CORE_OPS
VARIANTS = {**{op: KERNEL_VARIANTS for op in KERNEL_OPS}, "relu": RELU_VARIANTS,
            "quantize": QUANTIZE_VARIANTS, "requantize": REQUANT_VARIANTS}
CORE_ZERO_POINT = 128  # uint8 activations of the cores (FBGEMM's layout: uint8 x int8)
PACKED_OPS = ("fully_connected", "conv2d")  # dspsim.pack_weights applies to these
REQUANT_ROW = 256  # requantize works on (elements / 256, 256): per-tensor scheme, a layer's last axis


@dataclass(frozen=True)
class Case:
    """One benchmarked operation: ``op``, ``variant`` and ``size`` (a key of :data:`SHAPES`);
    ``dims`` overrides the size's shape (the cost model's sweeps)."""

    op: str
    variant: str
    size: str
    dims: tuple | None = None

    @property
    def unit(self) -> str:
        return "MAC" if self.op in KERNEL_OPS + CORE_OPS else "elem"

    @property
    def shape(self) -> tuple:
        if self.dims is not None:
            return self.dims
        s = SHAPES[self.size]
        return {"fully_connected": s["dense"], "conv2d": s["conv"], "gemm_s32": s["dense"], "conv2d_s32": s["conv"],
                "depthwise_conv2d": s["depthwise"]}.get(self.op, (s["elem"],))

    @property
    def work(self) -> int:
        """MACs of the layer (padding taps excluded) or elements."""
        sh = self.shape
        if self.op in ("fully_connected", "gemm_s32"):
            return sh[0] * sh[1] * sh[2]
        if self.op in ("conv2d", "conv2d_s32"):
            n, h, w, c, o = sh
            return _same_taps(n, h, w) * c * o
        if self.op == "depthwise_conv2d":
            n, h, w, c = sh
            return _same_taps(n, h, w) * c
        return sh[0]

    @property
    def name(self) -> str:
        return f"{self.op}[{self.variant}]/{self.size if self.dims is None else 'x'.join(map(str, self.dims))}"


def _same_taps(n, h, w, k=3):
    """In-image taps of a k x k SAME stride-1 window summed over all output pixels."""
    def axis(length):
        pad = k // 2
        return sum(min(length, o + pad + 1) - max(0, o - pad) for o in range(length))
    return n * axis(h) * axis(w)


def env_sizes(default: str = "quick") -> list[str]:
    """Sizes named by ``DSPSIM_BENCH_SIZE`` (comma-separated; the pytest benches read it)."""
    sizes = [s.strip() for s in os.environ.get("DSPSIM_BENCH_SIZE", default).split(",") if s.strip()]
    bad = [s for s in sizes if s not in SIZES]
    if bad:
        raise ValueError(f"DSPSIM_BENCH_SIZE: unknown size(s) {bad}; expected among {list(SIZES)}")
    return sizes


def variants(op: str) -> tuple:
    """The variants of ``op`` (the cores': the SIMD paths of this machine)."""
    if op in CORE_OPS:
        from ..kernels.mac.gemm import PATHS
        return PATHS
    return VARIANTS[op]


def cases(sizes=("quick",), ops=OPS) -> list[Case]:
    """Every (op, variant, size) case, sizes outermost."""
    return [Case(op, v, s) for s in sizes for op in ops for v in variants(op)]


CHANNEL_OPS = ("conv2d", "depthwise_conv2d")


def channel_cases(channels=(), ops=OPS) -> list[Case]:
    """The conv2d (C -> C) and depthwise (C) cases of ``medium``'s image (56 x 56, 3x3 SAME) at each channel
    count of ``channels`` (issue 29 judges 64 and 128), every variant; ``ops`` filters them."""
    if any(isinstance(c, bool) or not isinstance(c, int) or c < 1 for c in channels):
        raise ValueError(f"channel_cases: channel counts must be integers >= 1, got {channels!r}")
    n, h, w = SHAPES["medium"]["conv"][:3]
    dims = {"conv2d": lambda c: (n, h, w, c, c), "depthwise_conv2d": lambda c: (n, h, w, c)}
    return [Case(op, v, "medium", dims[op](c)) for c in channels for op in CHANNEL_OPS if op in ops
            for v in variants(op)]


@dataclass
class Runner:
    """A timed call and how to read its result: ``fn()`` is timed, ``to_numpy(fn())`` gives integers
    (an engine timed in another process supplies ``measure`` instead of ``fn``).

    ``skip`` (non-empty) says why the engine cannot run this case; ``compared_with`` names the
    dspsim scheme its output is diffed against: the case's own dspsim output, or ``reference()``
    when the engine's arithmetic needs a different dspsim model (e.g. an accumulator option); empty
    for a peer timed for speed only (its call computes more than dspsim's, e.g. FBGEMM beside a core,
    or its bits cannot match here: ``note`` says why).
    """

    engine: str
    fn: Callable | None = None
    to_numpy: Callable = np.asarray
    compared_with: str = ""
    skip: str = ""
    reference: Callable | None = None
    measure: Callable | None = None  # (repeats, budget) -> like measure(); for engines timed elsewhere
    note: str = ""  # what the row's reader must know (e.g. why a peer cannot match dspsim's bits here)


# --------------------------------------------------------------------------------------------
# problems: the integer inputs and parameters of a case, shared by dspsim and its peers
# --------------------------------------------------------------------------------------------
def problem(case: Case, seed: int = 0) -> dict:
    """Inputs and parameters of ``case`` (deterministic for a seed).

    Kernel families: ``"tflite"`` (variants double/single): int8 input with zero point -3, int8
    weights (zero point 0, per-channel for conv), int32 bias, Q31 multiplier and shift from
    ``QuantizeMultiplier``; ``"fbgemm"``: uint8 input (zero point 131), float32 bias, float scales;
    ``"onnxruntime"``: uint8 input, int32 bias (dense: none, as QLinearMatMul has no bias). Output
    scales put the output's standard deviation near 30 LSB, so both clamps are reached sometimes.
    Cores: uint8 activations with zero point :data:`CORE_ZERO_POINT`, int8 weights (OHWI, 3x3 SAME).
    """
    rng = np.random.default_rng(seed)
    if case.op in KERNEL_OPS:
        return _kernel_problem(case, rng)
    if case.op in CORE_OPS:
        return _core_problem(case, rng)
    n = case.shape[0]
    if case.op == "relu":
        if case.variant == "clamp":
            return dict(x=rng.integers(0, 256, n, dtype=np.uint8), zi=131)
        return dict(x=rng.integers(-128, 128, n, dtype=np.int8), zi=-3, zo=5,
                    multiplier=1518500250, shift=-1)  # s_in / s_out = 0.35355...
    if case.op == "quantize":
        x = (rng.standard_normal(n, dtype=np.float32) * np.float32(2.0)).astype(np.float32)
        return dict(x=x, scale=np.float32(0.0234375), zp=131, min_range=-6.0, max_range=6.0, frac_bits=5)
    acc = rng.integers(-(1 << 18), 1 << 18, (max(n // REQUANT_ROW, 1), min(n, REQUANT_ROW)), dtype=np.int32)
    return dict(acc=acc, zo=-3, multiplier=1395864371, shift=-9, scale=np.float32(0.0012345),
                shift_only=-10)


def _kernel_problem(case: Case, rng) -> dict:
    family = "tflite" if case.variant in ("double", "single") else case.variant
    op = case.op
    if op == "fully_connected":
        m, k, n_out = case.shape
        x_shape, w_shape, taps = (m, k), (n_out, k), k
    elif op == "conv2d":
        n, h, w, c, n_out = case.shape
        x_shape, w_shape, taps = (n, h, w, c), (n_out, 3, 3, c), 9 * c
    else:
        n, h, w, n_out = case.shape
        x_shape, w_shape, taps = (n, h, w, n_out), (1, 3, 3, n_out), 9
    if family == "tflite":
        x = rng.integers(-128, 128, x_shape, dtype=np.int8)
        zi, zo, out_dtype = -3, 2, "int8"
    else:
        x = rng.integers(0, 256, x_shape, dtype=np.uint8)
        zi, zo, out_dtype = 131, 125, "uint8"
    w = rng.integers(-127, 128, w_shape, dtype=np.int8)
    s_in = np.float32(0.05)
    per_channel = op != "fully_connected"
    s_w = (np.float32(0.005) + rng.random(n_out, dtype=np.float32) * np.float32(0.01)).astype(np.float32)
    if not per_channel:
        s_w = np.float32(0.01)
    acc_std = math.sqrt(taps) * 74.0 * 74.0
    s_out = np.float32(float(s_in) * 0.01 * acc_std / 30.0)
    bias_i = rng.integers(-int(acc_std) // 4, int(acc_std) // 4 + 1, n_out).astype(np.int32)
    p = dict(family=family, x=x, w=w, zi=zi, zw=0, zo=zo, out_dtype=out_dtype,
             s_in=s_in, s_w=s_w, s_out=s_out)
    if family == "tflite":
        from ..requant import Requant
        rq = Requant.from_scales(s_in, s_w, s_out, engine="tflm",
                                 op={"conv2d": "conv", "depthwise_conv2d": "depthwise"}.get(op, op))
        mult, shift = np.array(rq.multiplier), np.array(rq.shift)
        if not per_channel:
            mult, shift = int(mult[0]), int(shift[0])
        p.update(bias=bias_i, multiplier=mult, shift=shift)
    elif family == "fbgemm":
        p.update(bias=(bias_i.astype(np.float32) * (s_in * np.asarray(s_w, np.float32))).astype(np.float32))
    else:
        p.update(bias=bias_i if per_channel else np.zeros(n_out, np.int32))
    return p


def _core_problem(case: Case, rng) -> dict:
    if case.op == "gemm_s32":
        m, k, n_out = case.shape
        x_shape, w_shape = (m, k), (n_out, k)
    else:
        n, h, w, c, n_out = case.shape
        x_shape, w_shape = (n, h, w, c), (n_out, 3, 3, c)
    return dict(x=rng.integers(0, 256, x_shape, dtype=np.uint8), w=rng.integers(-128, 128, w_shape, dtype=np.int8),
                zi=CORE_ZERO_POINT)


# --------------------------------------------------------------------------------------------
# dspsim's side
# --------------------------------------------------------------------------------------------
def kernel_kwargs(case: Case, p: dict, accumulator=None) -> dict:
    """Keyword arguments of dspsim's kernel call for a kernel ``case``."""
    kw = dict(input_zero_point=p["zi"], weight_zero_point=p["zw"], output_zero_point=p["zo"],
              out_dtype=p["out_dtype"])
    if case.op != "fully_connected":
        kw["padding"] = "SAME"
    if p["family"] == "tflite":
        kw.update(multiplier=p["multiplier"], shift=p["shift"], rounding=case.variant)
    else:
        kw.update(input_scale=p["s_in"], weight_scale=p["s_w"], output_scale=p["s_out"], requant=case.variant)
    if accumulator is not None:
        kw["accumulator"] = accumulator
    return kw


def dspsim_runner(case: Case, p: dict, accumulator=None) -> Runner:
    """The dspsim call of ``case`` on problem ``p``."""
    import dspsim
    if case.op in KERNEL_OPS:
        kw = kernel_kwargs(case, p, accumulator)
        if accumulator is None:  # the kernel's plan, prepared outside the timing, as FBGEMM's prepacked op
            from .. import kernels
            plan = getattr(kernels, f"{case.op}_plan")(p["x"].shape, p["x"].dtype, p["w"], p["bias"], **kw)
            return Runner("dspsim", lambda: plan(p["x"]))
        op = getattr(dspsim, case.op)
        w = p["w"]
        if case.op in PACKED_OPS:  # packed once per layer, outside the timing, as FBGEMM's prepack
            w = dspsim.pack_weights(w)
        return Runner("dspsim", lambda: op(p["x"], w, p["bias"], **kw))
    if case.op == "relu":
        if case.variant == "clamp":
            return Runner("dspsim", lambda: dspsim.relu(p["x"], input_zero_point=p["zi"]))
        return Runner("dspsim", lambda: dspsim.relu(p["x"], input_zero_point=p["zi"], output_zero_point=p["zo"],
                                                    multiplier=p["multiplier"], shift=p["shift"]))
    if case.op == "quantize":
        return Runner("dspsim", _quantize_call(case.variant, p), to_numpy=_quantize_output)
    if case.op in CORE_OPS:
        from ..kernels.mac import gemm
        packed = gemm.pack_weights(p["w"])  # once, outside the timing
        if case.op == "gemm_s32":
            return Runner("dspsim", lambda: gemm.gemm_s32(p["x"], packed, a_zero_point=p["zi"], path=case.variant))
        return Runner("dspsim", lambda: gemm.conv2d_s32(p["x"], packed, pads=(1, 1, 1, 1), input_zero_point=p["zi"],
                                                        path=case.variant))
    return Runner("dspsim", _requantize_call(case.variant, p))


def _quantize_call(variant: str, p: dict) -> Callable:
    import dspsim
    x = p["x"]
    if variant.startswith("tf-"):
        mode = variant[3:].upper().replace("-", "_")
        return lambda: dspsim.quantize(x, p["min_range"], p["max_range"], "qint8", mode=mode)
    if variant == "torch":
        return lambda: dspsim.quantize_per_tensor(x, p["scale"], p["zp"], "uint8")
    if variant == "onnx":
        return lambda: dspsim.quantize_linear(x, p["scale"], p["zp"], dtype="uint8")
    if variant == "tflite":
        return lambda: dspsim.tflite_quantize(x, p["scale"], p["zp"], dtype="uint8")
    return lambda: dspsim.quantize_pof2(x, p["frac_bits"], 8)


def _quantize_output(res):
    """The integer tensor of a quantizer's result (TF modes return (output, min, max))."""
    return np.asarray(res[0] if isinstance(res, tuple) or hasattr(res, "output_min") else res)


def requant_object(variant: str, p: dict):
    """The :class:`dspsim.Requant` of a requantize case."""
    from dspsim.requant import Requant
    if variant in ("double", "single"):
        return Requant.fixed_point(p["multiplier"], p["shift"], variant)
    if variant == "shift":
        return Requant.shift_only(p["shift_only"])
    from dspsim.engines import get

    return Requant.float_scale(p["scale"], get(variant).mac.fully_connected.requant.kind.value)  # the engine's scheme


def _requantize_call(variant: str, p: dict) -> Callable:
    from dspsim import requantize
    rq = requant_object(variant, p)
    return lambda: requantize(p["acc"], rq, p["zo"], out_dtype="int8")


