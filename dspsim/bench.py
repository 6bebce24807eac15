"""``dspsim bench``: throughput of dspsim's kernels, quantizers and requantizers beside peer engines.

Each *case* is one operation (``fully_connected``, ``conv2d``, ``depthwise_conv2d``, ``relu``,
``quantize``, ``requantize``), one *variant* (the requantization scheme or quantization convention)
and one *size*. For every case dspsim runs first; then each installed peer that emulates the same
arithmetic runs on the same integers (PyTorch/FBGEMM, ONNX Runtime, the naive numpy int64 route, the
LiteRT reference interpreter), and its output is diffed against dspsim's, element by element.

Timing: one warm-up call (numba compilation, prepacking, caches) is never timed; then the call is
repeated (at least ``repeats`` times, more while the time budget lasts) and the *minimum* wall time
is reported (the least disturbed run on a shared machine), with the median beside it. Throughput is
GMAC/s for kernels (multiply-accumulates of the layer, padding taps excluded) and Gelem/s for
elementwise operations. Every engine runs with the same thread count (numba, torch, ONNX Runtime
``intra_op_num_threads``).

The peer runners live in ``benches/peers.py`` of the source tree (they import torch, onnxruntime
and ai_edge_litert lazily); an installed copy of dspsim without that file benchmarks dspsim alone
and says so. LiteRT runs in-process when ai_edge_litert is importable, else in a worker process
under the interpreter named by the environment variable ``DSPSIM_LITERT_PYTHON`` (timed there).

Sizes: ``quick`` (tiny shapes, for CI), ``small``, ``medium``, ``large`` (see :data:`SHAPES`).
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import math
import os
import platform
import statistics
import sys
import time
import tracemalloc
from dataclasses import asdict, dataclass
from pathlib import Path
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
OPS = KERNEL_OPS + ("relu", "quantize", "requantize")
VARIANTS = {**{op: KERNEL_VARIANTS for op in KERNEL_OPS}, "relu": RELU_VARIANTS,
            "quantize": QUANTIZE_VARIANTS, "requantize": REQUANT_VARIANTS}
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
        return "MAC" if self.op in KERNEL_OPS else "elem"

    @property
    def shape(self) -> tuple:
        if self.dims is not None:
            return self.dims
        s = SHAPES[self.size]
        return {"fully_connected": s["dense"], "conv2d": s["conv"],
                "depthwise_conv2d": s["depthwise"]}.get(self.op, (s["elem"],))

    @property
    def work(self) -> int:
        """MACs of the layer (padding taps excluded) or elements."""
        sh = self.shape
        if self.op == "fully_connected":
            return sh[0] * sh[1] * sh[2]
        if self.op == "conv2d":
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


def cases(sizes=("quick",), ops=OPS) -> list[Case]:
    """Every (op, variant, size) case, sizes outermost."""
    return [Case(op, v, s) for s in sizes for op in ops for v in VARIANTS[op]]


@dataclass
class Runner:
    """A timed call and how to read its result: ``fn()`` is timed, ``to_numpy(fn())`` gives integers
    (an engine timed in another process supplies ``measure`` instead of ``fn``).

    ``skip`` (non-empty) says why the engine cannot run this case; ``compared_with`` names the
    dspsim scheme its output is diffed against: the case's own dspsim output, or ``reference()``
    when the engine's arithmetic needs a different dspsim model (e.g. an accumulator option).
    """

    engine: str
    fn: Callable | None = None
    to_numpy: Callable = np.asarray
    compared_with: str = ""
    skip: str = ""
    reference: Callable | None = None
    measure: Callable | None = None  # (repeats, budget) -> like measure(); for engines timed elsewhere


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
    """
    rng = np.random.default_rng(seed)
    if case.op in KERNEL_OPS:
        return _kernel_problem(case, rng)
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
        from .requant import Requant
        rq = Requant.from_scales(s_in, s_w, s_out, engine="tflite",
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
        op = getattr(dspsim, case.op)
        kw = kernel_kwargs(case, p, accumulator)
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
    return Requant.float_scale(p["scale"], variant)


def _requantize_call(variant: str, p: dict) -> Callable:
    from dspsim.requant import requantize
    rq = requant_object(variant, p)
    return lambda: requantize(p["acc"], rq, p["zo"], out_dtype="int8")


# --------------------------------------------------------------------------------------------
# timing and threads
# --------------------------------------------------------------------------------------------
def set_threads(threads: int) -> dict:
    """Set numba's thread count (torch and ONNX Runtime take it from the peer runners)."""
    import numba
    n = max(1, min(int(threads), numba.config.NUMBA_NUM_THREADS))
    numba.set_num_threads(n)
    return {"requested": int(threads), "numba": n, "cpu_count": os.cpu_count()}


def measure(fn: Callable, repeats: int, budget: float):
    """Time ``fn`` after one untimed warm-up call: at least ``repeats`` runs, more (up to 100)
    while ``budget`` seconds last. Returns (warm-up result, min seconds, median seconds, runs)."""
    out = fn()
    times = []
    deadline = time.perf_counter() + budget
    while len(times) < repeats or (time.perf_counter() < deadline and len(times) < 100):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return out, min(times), statistics.median(times), len(times)


def _error(exc: BaseException) -> str:
    return f"error: {type(exc).__name__}: {str(exc).splitlines()[0][:160] if str(exc) else ''}"


def load_peers():
    """``benches/peers.py`` of the source tree as a module, or None when it is absent."""
    path = Path(__file__).resolve().parent.parent / "benches" / "peers.py"
    if not path.exists():
        return None
    name = "dspsim_bench_peers"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


@dataclass
class Row:
    """One line of the results table (one engine on one case)."""

    case: str
    op: str
    variant: str
    size: str
    shape: str
    unit: str
    work: int
    engine: str
    status: str = "ok"
    seconds: float | None = None
    median_seconds: float | None = None
    runs: int = 0
    throughput: float | None = None       # G unit / s
    compared_with: str = ""
    mismatches: int | None = None
    bit_exact: bool | None = None
    dspsim_over_peer: float | None = None  # dspsim throughput / this engine's


def run_case(case: Case, peers=None, threads: int = 2, repeats: int = 5, budget: float = 0.5,
             seed: int = 0) -> list[Row]:
    """dspsim's row and one row per peer of ``case``."""
    p = problem(case, seed)
    base = dict(case=case.name, op=case.op, variant=case.variant, size=case.size,
                shape="x".join(map(str, case.shape)), unit=case.unit, work=case.work)
    try:
        runners = [dspsim_runner(case, p)]
    except Exception as exc:  # dspsim's module not written yet, or its API moved
        runners = [Runner("dspsim", skip=_error(exc))]
    if peers is not None:
        runners += peers.runners(case, p, threads)
    rows, ref = [], None
    for r in runners:
        row = Row(engine=r.engine, compared_with=r.compared_with, **base)
        rows.append(row)
        if r.skip:
            row.status = f"skipped: {r.skip}"
            continue
        try:
            out, t_min, t_med, runs = r.measure(repeats, budget) if r.measure else measure(r.fn, repeats, budget)
            out = r.to_numpy(out)
        except Exception as exc:  # a placeholder or a refused case: record it, keep going
            row.status = _error(exc)
            continue
        row.seconds, row.median_seconds, row.runs = t_min, t_med, runs
        row.throughput = case.work / t_min / 1e9
        if r.engine == "dspsim":
            ref = out
        elif ref is not None:
            try:
                expected = ref if r.reference is None else np.asarray(r.reference())
            except Exception as exc:
                row.status = _error(exc)
                continue
            if np.shape(out) != np.shape(expected):
                row.status = f"error: output shape {np.shape(out)} != dspsim's {np.shape(expected)}"
            else:
                row.mismatches = int(np.count_nonzero(np.asarray(out, np.int64) != np.asarray(expected, np.int64)))
                row.bit_exact = row.mismatches == 0
    if rows[0].throughput:
        for row in rows[1:]:
            if row.throughput:
                row.dspsim_over_peer = rows[0].throughput / row.throughput
    return rows


# --------------------------------------------------------------------------------------------
# cost model
# --------------------------------------------------------------------------------------------
def _time_dspsim(case: Case, p: dict, repeats: int, budget: float, accumulator=None):
    """(min seconds or None, status) of dspsim on ``case``."""
    try:
        _, t_min, _, _ = measure(dspsim_runner(case, p, accumulator).fn, repeats, budget)
        return t_min, "ok"
    except Exception as exc:
        return None, _error(exc)


def cost_macs(size: str, repeats: int, budget: float) -> dict:
    """Time of fully_connected (double rounding) against its MACs; a least-squares line t = a + b*MACs."""
    k = {"quick": 32, "small": 256}.get(size, 1024)
    points = []
    for m in (1, 4, 16, 64, 256):
        case = Case("fully_connected", "double", size, (m, k, k))
        p = problem(case)
        t, status = _time_dspsim(case, p, repeats, budget)
        points.append(dict(shape=f"{m}x{k}x{k}", macs=m * k * k, seconds=t, status=status,
                           gmacs=(m * k * k / t / 1e9) if t else None))
    fit = _line([(q["macs"], q["seconds"]) for q in points if q["seconds"]])
    return dict(op="fully_connected[double]", points=points,
                overhead_us=fit[0] * 1e6 if fit else None, ns_per_mac=fit[1] * 1e9 if fit else None)


def cost_channels(size: str, repeats: int, budget: float) -> dict:
    """GMAC/s of conv2d (C -> C, 3x3 SAME) and depthwise (C, 3x3) as the channel count grows."""
    hw = {"quick": 8, "small": 28}.get(size, 56)
    chans = (4, 8, 16) if size == "quick" else (8, 16, 32, 64, 128)
    points = []
    for op in ("conv2d", "depthwise_conv2d"):
        for c in chans:
            shape = (1, hw, hw, c, c) if op == "conv2d" else (1, hw, hw, c)
            case = Case(op, "double", size, shape)
            p = problem(case)
            macs = case.work
            t, status = _time_dspsim(case, p, repeats, budget)
            points.append(dict(op=op, channels=c, shape="x".join(map(str, shape)), macs=macs, seconds=t,
                               status=status, gmacs=(macs / t / 1e9) if t else None))
    return dict(points=points)


def cost_packing(size: str, repeats: int, budget: float) -> dict:
    """What passing raw int8 weights costs per call against weights packed once (``pack_weights``)."""
    import dspsim
    out = []
    for op in PACKED_OPS:
        case = Case(op, "double", size)
        p = problem(case)
        t_packed, status = _time_dspsim(case, p, repeats, budget)
        kw = kernel_kwargs(case, p)
        try:
            _, t_raw, _, _ = measure(lambda: getattr(dspsim, op)(p["x"], p["w"], p["bias"], **kw), repeats, budget)
        except Exception as exc:
            t_raw, status = None, _error(exc)
        out.append(dict(op=op, shape="x".join(map(str, case.shape)), packed_seconds=t_packed, raw_seconds=t_raw,
                        status=status, raw_over_packed=(t_raw / t_packed) if (t_raw and t_packed) else None))
    return dict(ops=out)


ACCUMULATORS = {"int32 saturate": (32, "saturate"), "int24 saturate": (24, "saturate"),
                "int16 saturate": (16, "saturate"), "int16 wrap": (16, "wrap")}


def cost_accumulator(size: str, repeats: int, budget: float) -> dict:
    """Slowdown of an accumulator model against the default (int32 wrap, the gemm fast path).

    Each model runs on the shapes of ``size`` (large enough that a call's fixed cost does not
    hide the MACs' cost at medium). dspsim picks the checked
    MAC-by-MAC kernel only when its worst-case bound cannot exclude overflow of a saturating
    accumulator (a wrapping one is exact on the fast path) or when events are counted while overflow
    is possible. ``slowdown`` is the plain call's, ``stats_slowdown`` the call with ``stats=True``
    (event counting); ``path`` and ``overflow_events`` come from the ``stats=True`` call.
    """
    import dspsim
    out = []
    for op in KERNEL_OPS:
        case = Case(op, "double", size)
        p = problem(case)
        t_fast, status = _time_dspsim(case, p, repeats, budget)
        entry = dict(op=op, shape="x".join(map(str, case.shape)), macs=case.work, fast_seconds=t_fast,
                     fast_gmacs=(case.work / t_fast / 1e9) if t_fast else None, status=status, checked=[])
        for label, (bits, overflow) in ACCUMULATORS.items():
            row = dict(accumulator=label, seconds=None, gmacs=None, slowdown=None, stats_slowdown=None,
                       path=None, overflow_events=None)
            try:
                acc = dspsim.Accumulator(bits=bits, overflow=overflow)
                kw = kernel_kwargs(case, p, acc)
                counted = lambda: getattr(dspsim, op)(p["x"], p["w"], p["bias"], stats=True, **kw)  # noqa: E731
                (_, st), t_stats, _, _ = measure(counted, repeats, budget)
                row.update(path="fast" if st.fast_path else "checked", overflow_events=int(st.overflow_events))
                t, row["status"] = _time_dspsim(case, p, repeats, budget, acc)
            except Exception as exc:
                t, t_stats, row["status"] = None, None, _error(exc)
            if t and t_fast:
                row.update(seconds=t, gmacs=case.work / t / 1e9, slowdown=t / t_fast, stats_slowdown=t_stats / t_fast)
            entry["checked"].append(row)
        out.append(entry)
    return dict(ops=out)


def _line(xy):
    """Least-squares (intercept, slope) of points, or None with fewer than two."""
    if len(xy) < 2:
        return None
    x = np.array([a for a, _ in xy], float)
    y = np.array([b for _, b in xy], float)
    slope, intercept = np.polyfit(x, y, 1)
    return float(intercept), float(slope)


def _rss_kb(key: str) -> int | None:
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith(key + ":"):
                    return int(line.split()[1])
    except OSError:
        return None
    return None


def _reset_peak_rss() -> bool:
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")  # Linux: reset VmHWM to the current RSS
        return True
    except OSError:
        return False


def peak_extra_bytes(fn: Callable):
    """(result, peak bytes allocated during ``fn()`` beyond what was resident before, method).

    Linux: VmHWM after resetting it (counts numpy and numba allocations alike). Elsewhere:
    tracemalloc (numpy's allocations only; numba's are invisible to it).
    """
    if _rss_kb("VmHWM") is not None and _reset_peak_rss():
        before = _rss_kb("VmRSS")
        out = fn()
        return out, (_rss_kb("VmHWM") - before) * 1024, "rss"
    tracemalloc.start()
    try:
        out = fn()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return out, peak, "tracemalloc"


def cost_memory(size: str) -> dict:
    """Peak extra memory of quantizers and requantizers on a large input, against input and output size.

    ``temporaries = peak - output``: what the call allocates beyond its result. A well-behaved
    elementwise function needs a small constant, not several times the input.
    """
    nbytes = SHAPES[size]["memory"]
    rows = []
    probes = [("quantize", v) for v in ("torch", "onnx", "tflite", "tf-min-combined", "pof2")] + \
             [("requantize", v) for v in ("double", "fbgemm", "shift")]
    for op, variant in probes:
        n = nbytes // 4  # float32 in, or int32 accumulators in
        big = Case(op, variant, size, (n,))
        p = problem(big)
        try:
            runner = dspsim_runner(big, p)
            runner.fn()  # compilation and thread-pool start-up stay outside the probe
            out, peak, method = peak_extra_bytes(runner.fn)
            out = runner.to_numpy(out)
        except Exception as exc:
            rows.append(dict(op=op, variant=variant, input_mb=nbytes / 2**20, status=_error(exc)))
            continue
        in_bytes = (p["x"] if op == "quantize" else p["acc"]).nbytes
        temps = max(peak - out.nbytes, 0)
        rows.append(dict(op=op, variant=variant, input_mb=in_bytes / 2**20, output_mb=out.nbytes / 2**20,
                         peak_extra_mb=peak / 2**20, temporaries_mb=temps / 2**20,
                         temporaries_over_input=temps / in_bytes, method=method, status="ok"))
        del out, p, runner
    return dict(input_bytes=nbytes, rows=rows)


# --------------------------------------------------------------------------------------------
# targets, table, plot
# --------------------------------------------------------------------------------------------
TARGETS = (
    # (label, op, dspsim variant, peer engine or None for an absolute figure, threshold)
    ("bit-exact dense >= 0.25x PyTorch FBGEMM", "fully_connected", "fbgemm", "torch-fbgemm", 0.25),
    ("bit-exact conv >= 0.25x PyTorch FBGEMM", "conv2d", "fbgemm", "torch-fbgemm", 0.25),
    ("quantize >= torch.quantize_per_tensor", "quantize", "torch", "torch", 1.0),
) + tuple((f"requantize[{v}] >= 4 Gelem/s", "requantize", v, None, 4.0) for v in REQUANT_VARIANTS)


def targets(rows: list[dict]) -> list[dict]:
    """Each target against the medium-size rows (else the largest size run)."""
    out = []
    for label, op, variant, peer, threshold in TARGETS:
        mine = [r for r in rows if r["op"] == op and r["variant"] == variant and r["engine"] == "dspsim"
                and r["throughput"]]
        if not mine:
            out.append(dict(target=label, value=None, met=None, note="dspsim did not run"))
            continue
        size = "medium" if any(r["size"] == "medium" for r in mine) else \
            max((r["size"] for r in mine), key=SIZES.index)
        mine = next(r for r in mine if r["size"] == size)
        if peer is None:
            out.append(dict(target=label, size=size, value=mine["throughput"], met=mine["throughput"] >= threshold,
                            note=f"{mine['throughput']:.2f} Gelem/s"))
            continue
        theirs = next((r for r in rows if r["case"] == mine["case"] and r["engine"] == peer and r["throughput"]),
                      None)
        if theirs is None:
            out.append(dict(target=label, size=size, value=None, met=None, note=f"{peer} did not run"))
            continue
        ratio = mine["throughput"] / theirs["throughput"]
        out.append(dict(target=label, size=size, value=ratio, met=ratio >= threshold,
                        note=f"{ratio:.2f}x ({mine['throughput']:.2f} vs {theirs['throughput']:.2f} "
                             f"G{mine['unit']}/s; {peer} bit-exact: {theirs['bit_exact']})"))
    return out


def _fmt(v, spec, dash="-"):
    return dash if v is None else format(v, spec)


def _ok(status: str) -> str:
    return "" if status == "ok" else status


def format_table(result: dict) -> str:
    """The results, targets and cost model as Markdown."""
    th = result["threads"]
    lines = [f"# dspsim bench ({result['run']})", "",
             f"threads: {th['numba']} (numba, torch, ONNX Runtime, LiteRT); sizes: {', '.join(result['sizes'])}; "
             f"time = min of >= {result['repeats']} runs after an untimed warm-up; {result['machine']}", "",
             f"peers: {result['peers_available']}", "",
             "dspsim/engine > 1: dspsim is faster. mismatches: elements that differ from dspsim's output of "
             "the scheme named in 'compared with'. dspsim's fully_connected/conv2d weights are packed once "
             "(dspsim.pack_weights), as torch's are prepacked.", "",
             "| case | shape | engine | ms | G/s | dspsim/engine | compared with | mismatches | status |",
             "|---|---|---|---:|---:|---:|---|---:|---|"]
    for r in result["rows"]:
        unit = ("GMAC/s" if r["unit"] == "MAC" else "Gelem/s") if r["throughput"] else ""
        ms = r["seconds"] * 1e3 if r["seconds"] else None
        lines.append(f"| {r['case']} | {r['shape']} | {r['engine']} | {_fmt(ms, '.3f')} | "
                     f"{_fmt(r['throughput'], '.3f')} {unit} | {_fmt(r['dspsim_over_peer'], '.2f')} | "
                     f"{r['compared_with']} | {_fmt(r['mismatches'], 'd')} | {r['status']} |")
    lines += ["", "## Targets", ""]
    lines += [f"- {t['target']}: {'MET' if t['met'] else ('NOT MET' if t['met'] is False else 'n/a')}"
              f" ({t.get('size', '-')}: {t['note']})" for t in result["targets"]]
    cm = result.get("cost_model") or {}
    macs = cm.get("macs")
    if macs:
        lines += ["", f"## Time against MACs ({macs['op']})", "",
                  f"least squares: {_fmt(macs['overhead_us'], '.1f')} us per call + "
                  f"{_fmt(macs['ns_per_mac'], '.4f')} ns per MAC", "", "| shape | MACs | ms | GMAC/s |",
                  "|---|---:|---:|---:|"]
        lines += [f"| {q['shape']} | {q['macs']} | {_fmt(q['seconds'] and q['seconds'] * 1e3, '.3f')} | "
                  f"{_fmt(q['gmacs'], '.2f')} {_ok(q['status'])} |" for q in macs["points"]]
    ch = cm.get("channels")
    if ch:
        lines += ["", "## Throughput against channels (3x3 SAME, C -> C)", "", "| op | C | shape | GMAC/s |",
                  "|---|---:|---|---:|"]
        lines += [f"| {q['op']} | {q['channels']} | {q['shape']} | {_fmt(q['gmacs'], '.2f')} {_ok(q['status'])} |"
                  for q in ch["points"]]
    pk = cm.get("packing")
    if pk:
        lines += ["", "## Weight packing (raw int8 weights are packed on every call)", "",
                  "| op | shape | packed ms | raw ms | raw / packed |", "|---|---|---:|---:|---:|"]
        lines += [f"| {q['op']} | {q['shape']} | {_fmt(q['packed_seconds'] and q['packed_seconds'] * 1e3, '.3f')} | "
                  f"{_fmt(q['raw_seconds'] and q['raw_seconds'] * 1e3, '.3f')} | {_fmt(q['raw_over_packed'], '.2f')} "
                  f"{_ok(q['status'])} |" for q in pk["ops"]]
    acc = cm.get("accumulator")
    if acc:
        lines += ["", "## Accumulator models", "",
                  "slowdown = time / time with the default accumulator (int32 wrap, gemm fast path); "
                  "'with stats' counts overflow events (stats=True), which is also where path and events come from.",
                  "", "| op | shape | default GMAC/s | accumulator | slowdown | with stats | path | overflows |",
                  "|---|---|---:|---|---:|---:|---|---:|"]
        for e in acc["ops"]:
            for c in e["checked"]:
                lines.append(f"| {e['op']} | {e['shape']} | {_fmt(e['fast_gmacs'], '.2f')} | {c['accumulator']} | "
                             f"{_fmt(c['slowdown'], '.1f')} | {_fmt(c['stats_slowdown'], '.1f')} | "
                             f"{c['path'] or _ok(c['status'])} | {_fmt(c['overflow_events'], 'd')} |")
    mem = cm.get("memory")
    if mem:
        lines += ["", f"## Peak memory (input {mem['input_bytes'] / 2**20:.0f} MB)", "",
                  "temporaries = peak extra resident memory during the call - the output's size", "",
                  "| call | input MB | output MB | peak extra MB | temporaries MB | temporaries / input | method |",
                  "|---|---:|---:|---:|---:|---:|---|"]
        for m in mem["rows"]:
            if m["status"] != "ok":
                lines.append(f"| {m['op']}[{m['variant']}] | {m['input_mb']:.0f} | | | | | {m['status']} |")
                continue
            lines.append(f"| {m['op']}[{m['variant']}] | {m['input_mb']:.0f} | {m['output_mb']:.0f} | "
                         f"{m['peak_extra_mb']:.0f} | {m['temporaries_mb']:.0f} | "
                         f"{m['temporaries_over_input']:.2f} | {m['method']} |")
    return "\n".join(lines) + "\n"


def plot(result: dict, path: Path) -> None:
    """Throughput bars per case, one colour per engine, log scale: kernels (GMAC/s) on the left,
    elementwise operations (Gelem/s) on the right. One PNG."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = [r for r in result["rows"] if r["throughput"]]
    engines = list(dict.fromkeys(r["engine"] for r in rows))
    colours = {e: plt.get_cmap("tab10")(i % 10) for i, e in enumerate(engines)}
    panels = [("MAC", "GMAC/s"), ("elem", "Gelem/s")]
    n_bars = max(sum(1 for r in rows if r["unit"] == u) + 2 * len({r["case"] for r in rows if r["unit"] == u})
                 for u, _ in panels)
    fig, axes = plt.subplots(1, 2, figsize=(13, 1.5 + 0.14 * n_bars))
    for ax, (unit, label) in zip(axes, panels):
        y, ticks, names = 0.0, [], []
        for name in dict.fromkeys(r["case"] for r in rows if r["unit"] == unit):
            group = [r for r in rows if r["case"] == name]
            ticks.append(y + (len(group) - 1) / 2)
            names.append(name)
            for r in group:
                ax.barh(y, r["throughput"], color=colours[r["engine"]], height=0.9)
                y += 1
            y += 1.5
        ax.set_yticks(ticks)
        ax.set_yticklabels(names, fontsize=7)
        ax.set_ylim(y, -1)
        ax.set_xscale("log")
        ax.set_xlabel(label)
        ax.grid(axis="x", alpha=0.3)
    handles = [plt.Rectangle((0, 0), 1, 1, color=colours[e]) for e in engines]
    fig.legend(handles, engines, loc="upper center", bbox_to_anchor=(0.5, 0.975), ncol=len(engines), fontsize=8)
    fig.suptitle(f"dspsim bench, {result['threads']['numba']} threads, {result['run']}", y=0.995, fontsize=9)
    fig.tight_layout(rect=(0, 0, 1, 0.94))
    fig.savefig(path, dpi=100)
    plt.close(fig)


# --------------------------------------------------------------------------------------------
# command line
# --------------------------------------------------------------------------------------------
def run(sizes=("small",), threads: int = 2, repeats: int = 5, budget: float = 0.5, ops=OPS,
        cost_size: str | None = "small", memory_size: str | None = "small", peers=True,
        log=None) -> dict:
    """Run the cases of ``sizes`` and the cost model; return the result dictionary (see ``--json``)."""
    th = set_threads(threads)
    peer_mod = load_peers() if peers else None
    rows = []
    for case in cases(sizes, ops):
        for row in run_case(case, peer_mod, th["requested"], repeats, budget):
            rows.append(asdict(row))
            if log:
                log(f"{row.case:42s} {row.engine:14s} {_fmt(row.throughput, '9.3f')} G{row.unit}/s  {row.status}"
                    + (f"  mismatches={row.mismatches}" if row.mismatches is not None else ""))
    cost = {}
    if cost_size:
        cost["macs"] = cost_macs(cost_size, repeats, budget)
        cost["channels"] = cost_channels(cost_size, repeats, budget)
        cost["packing"] = cost_packing(cost_size, repeats, budget)
        cost["accumulator"] = cost_accumulator(cost_size, repeats, budget)
    if memory_size:
        cost["memory"] = cost_memory(memory_size)
    import dspsim
    return dict(run=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), version=getattr(dspsim, "__version__", ""),
                threads=th, sizes=list(sizes), repeats=repeats, budget_seconds=budget,
                machine=f"{platform.machine()} {platform.processor() or ''} {os.cpu_count()} cpus, "
                        f"python {platform.python_version()}, numpy {np.__version__}",
                peers_available=peer_mod.available() if peer_mod else "benches/peers.py not found",
                rows=rows, targets=targets(rows), cost_model=cost)


def main(argv=None) -> int:
    """``dspsim bench [--quick] [--size S[,S]] [--json FILE] [--out DIR] [--threads N] [--no-peers]``."""
    ap = argparse.ArgumentParser(prog="dspsim bench", description="Throughput of dspsim beside peer engines.")
    ap.add_argument("--quick", action="store_true", help="small sizes, few repeats (a few seconds)")
    ap.add_argument("--size", default=None,
                    help="comma-separated sizes among quick, small, medium, large (default small,medium)")
    ap.add_argument("--ops", default=None, help=f"comma-separated subset of {', '.join(OPS)}")
    ap.add_argument("--json", dest="json_path", default=None, help="also write the results as JSON here")
    ap.add_argument("--out", default=None, help="run directory for bench.md/json/png (default reports/bench-<time>)")
    ap.add_argument("--threads", type=int, default=2, help="threads for dspsim and every peer (default 2)")
    ap.add_argument("--no-peers", action="store_true", help="benchmark dspsim alone")
    args = ap.parse_args(argv)
    if args.quick:
        sizes, repeats, budget, cost_size, mem_size = ["small"], 3, 0.05, "quick", "quick"
    else:
        sizes, repeats, budget, cost_size, mem_size = ["small", "medium"], 5, 0.5, "medium", "medium"
    if args.size:
        sizes = [s.strip() for s in args.size.split(",") if s.strip()]
        bad = [s for s in sizes if s not in SIZES]
        if bad:
            ap.error(f"unknown size(s) {bad}; expected among {list(SIZES)}")
        mem_size = max(sizes, key=SIZES.index)
        cost_size = "quick" if mem_size == "quick" else ("small" if mem_size == "small" else "medium")
    ops = OPS
    if args.ops:
        ops = tuple(o.strip() for o in args.ops.split(","))
        bad = [o for o in ops if o not in OPS]
        if bad:
            ap.error(f"unknown op(s) {bad}; expected among {list(OPS)}")
    if args.threads < 1:
        ap.error("--threads must be >= 1")
    result = run(sizes, args.threads, repeats, budget, ops, cost_size, mem_size, not args.no_peers,
                 log=lambda s: print(s, file=sys.stderr, flush=True))
    table = format_table(result)
    print(table)
    out_dir = Path(args.out) if args.out else Path("reports") / f"bench-{time.strftime('%Y%m%d-%H%M%S')}"
    out_dir.mkdir(parents=True, exist_ok=True)
    text = json.dumps(result, indent=1, default=float)
    (out_dir / "bench.json").write_text(text)
    (out_dir / "bench.md").write_text(table)
    try:
        plot(result, out_dir / "bench.png")
    except Exception as exc:  # a plot must never lose the figures
        print(f"dspsim bench: plot not written ({_error(exc)})", file=sys.stderr)
    if args.json_path:
        Path(args.json_path).write_text(text)
    print(f"dspsim bench: wrote {out_dir}/bench.md, bench.json, bench.png", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
