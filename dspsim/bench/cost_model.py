"""The cost model of ``dspsim bench``: time against MACs, throughput against channels, what raw
(unpacked) weights cost, the accumulator models' slowdown, and peak memory of the elementwise calls."""
from __future__ import annotations

import numpy as np

from .timing import error_status, measure, peak_extra_bytes
from .workloads import KERNEL_OPS, PACKED_OPS, SHAPES, Case, dspsim_runner, kernel_kwargs, problem


def _time_dspsim(case: Case, p: dict, repeats: int, budget: float, accumulator=None):
    """(min seconds or None, status) of dspsim on ``case``."""
    try:
        t_min = measure(dspsim_runner(case, p, accumulator).fn, repeats, budget).min_seconds
        return t_min, "ok"
    except Exception as exc:
        return None, error_status(exc)


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
    """What the public call with raw int8 weights costs against the kernel's plan, prepared once (``*_plan``)."""
    import dspsim
    out = []
    for op in PACKED_OPS:
        case = Case(op, "double", size)
        p = problem(case)
        t_packed, status = _time_dspsim(case, p, repeats, budget)
        kw = kernel_kwargs(case, p)
        try:
            t_raw = measure(lambda: getattr(dspsim, op)(p["x"], p["w"], p["bias"], **kw), repeats, budget).min_seconds
        except Exception as exc:
            t_raw, status = None, error_status(exc)
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
                timed = measure(counted, repeats, budget)
                (_, st), t_stats = timed.result, timed.min_seconds
                row.update(path="fast" if st.fast_path else "checked", overflow_events=int(st.overflow_events))
                t, row["status"] = _time_dspsim(case, p, repeats, budget, acc)
            except Exception as exc:
                t, t_stats, row["status"] = None, None, error_status(exc)
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
            rows.append(dict(op=op, variant=variant, input_mb=nbytes / 2**20, status=error_status(exc)))
            continue
        in_bytes = (p["x"] if op == "quantize" else p["acc"]).nbytes
        temps = max(peak - out.nbytes, 0)
        rows.append(dict(op=op, variant=variant, input_mb=in_bytes / 2**20, output_mb=out.nbytes / 2**20,
                         peak_extra_mb=peak / 2**20, temporaries_mb=temps / 2**20,
                         temporaries_over_input=temps / in_bytes, method=method, status="ok"))
        del out, p, runner
    return dict(input_bytes=nbytes, rows=rows)

