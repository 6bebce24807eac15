"""The MAC kernels (dense, conv, depthwise, requantize, ADD) on random and edge codes, for the SIMD-level tests.

:func:`outputs` runs them in this process (at its ``DSPSIM_SIMD`` level); :func:`oracle_outputs` gives the
plain-Python oracle's integers of the same cases. Run as a script (``python simd_levels.py OUT.npz [full]``) it saves
:func:`outputs` and a JSON ``meta`` entry: :func:`dspsim.simd.cpu.describe`, and for the kernels whose code
depends on the level, what their compiled code holds (``vpdpbusd``: the VNNI GEMM tile; a zmm ``vpdpwssd`` /
``vpmaddwd``: the 512-bit depthwise tap pairs) and how many of their overloads came from numba's disk cache.
"""
from __future__ import annotations

import json
import re
import sys

import numpy as np

import dspsim
from dspsim import kernels
from dspsim import oracle as ref
from dspsim.requant import Requant

SCHEMES = ("double", "fbgemm")
"""The requantizations each MAC case runs: gemmlowp's fixed point (int32 lanes) and FBGEMM's float scale."""


def _codes(rng, shape, dtype, edge):
    """Random codes of ``dtype``; with ``edge`` a quarter of them at the type's min and max."""
    info = np.iinfo(dtype)
    a = rng.integers(info.min, info.max + 1, shape)
    if edge:
        pick = rng.random(shape)
        a = np.where(pick < 0.125, info.min, np.where(pick < 0.25, info.max, a))
    return a.astype(dtype)


def _cases(full):
    """(name, kernel, oracle, arguments, geometry, scheme, zx, channels) of each MAC case: int8 codes with edges,
    dense and depthwise in the fixed point, conv in the float scale; ``full``: uint8 codes, random codes and both
    schemes everywhere too."""
    out = []
    for edge in (False, True)[not full:]:
        rng = np.random.default_rng(29 + edge)
        for dtype in (np.int8, np.uint8)[:1 + full]:
            zx = int(np.iinfo(dtype).max if edge else rng.integers(np.iinfo(dtype).min, np.iinfo(dtype).max))
            for scheme in SCHEMES:
                tag = f"{np.dtype(dtype).name}-{scheme}-{'edge' if edge else 'random'}"
                x2 = _codes(rng, (13, 37), dtype, edge)
                w2 = _codes(rng, (21, 37), np.int8, edge)
                x4 = _codes(rng, (1, 6, 7, 9), dtype, edge)
                w4 = _codes(rng, (5, 3, 3, 9), np.int8, edge)
                for c, mult in ((24, 1), (12, 1), (8, 2))[:3 if full else scheme == "double"]:
                    # 16-blocks and a tail, two 8-blocks, a depth multiplier
                    xd = _codes(rng, (1, 6, 7, c), dtype, edge)
                    wd = _codes(rng, (1, 3, 3, c * mult), np.int8, edge)
                    out.append((f"depthwise{c}x{mult}-{tag}", kernels.depthwise_conv2d, ref.depthwise_conv2d_oracle,
                                (xd, wd, rng.integers(-5000, 5000, c * mult).astype(np.int32)),
                                dict(depth_multiplier=mult, padding="SAME", stride=1), scheme, zx, c * mult))
                if full or scheme == "double":
                    out.append((f"dense-{tag}", kernels.fully_connected, ref.fully_connected_oracle,
                                (x2, w2, rng.integers(-5000, 5000, 21).astype(np.int32)), {}, scheme, zx, 21))
                if full or scheme == "fbgemm":
                    out.append((f"conv-{tag}", kernels.conv2d, ref.conv2d_oracle,
                                (x4, w4, rng.integers(-5000, 5000, 5).astype(np.int32)), dict(padding="SAME"),
                                scheme, zx, 5))
    return out


def _mac_kwargs(scheme, zx, n, dtype):
    kw = dict(input_zero_point=zx, weight_zero_point=0, output_zero_point=-3 if dtype == np.int8 else 130,
              out_dtype=np.dtype(dtype).name)
    if scheme == "double":
        rng = np.random.default_rng(n)
        return dict(kw, multiplier=rng.integers(1 << 29, 1 << 31, n), shift=rng.integers(-12, -6, n),
                    rounding="double")
    return dict(kw, input_scale=0.05, weight_scale=np.linspace(0.002, 0.02, n), output_scale=0.9, requant="fbgemm")


def _requant_case(edge):
    """int32 sums (edges: int32's extremes) and a per-channel fixed-point Requant of 19 channels."""
    rng = np.random.default_rng(7 + edge)
    acc = rng.integers(-(1 << 31), 1 << 31, (11, 19)) if edge else rng.integers(-40000, 40000, (11, 19))
    rq = Requant.fixed_point(rng.integers(1 << 30, 1 << 31, 19), rng.integers(-10, 2, 19))
    return acc.astype(np.int32), rq


def _add_case(edge):
    rng = np.random.default_rng(11 + edge)
    a, b = (_codes(rng, (3, 67), np.int8, edge) for _ in range(2))
    return a, b, kernels.tflite_add_params(0.05, 0.07, 0.11), dict(input1_zero_point=-128 if edge else 5,
                                                                    input2_zero_point=127 if edge else -9,
                                                                    output_zero_point=3)


def outputs(full=False) -> dict:
    """name -> integer array of every case (``full``: the whole sweep), by the kernels of this process's level."""
    res = {}
    for name, kernel, _, args, geom, scheme, zx, n in _cases(full):
        res[name] = kernel(*args, **geom, **_mac_kwargs(scheme, zx, n, args[0].dtype))
    for edge in (False, True):
        acc, rq = _requant_case(edge)
        res[f"requantize-{edge}"] = dspsim.requantize(acc, rq, output_zero_point=-2)
        a, b, params, zps = _add_case(edge)
        res[f"add-{edge}"] = kernels.add(a, b, params, **zps)
    return res


def oracle_outputs(full=False) -> dict:
    """name -> the oracle's integers of every case of :func:`outputs`."""
    from oracle_views import oracle_requant

    res = {}
    for name, _, oracle, args, geom, scheme, zx, n in _cases(full):
        res[name] = np.asarray(oracle(*args, **geom, **_mac_kwargs(scheme, zx, n, args[0].dtype)))
    for edge in (False, True):
        acc, rq = _requant_case(edge)
        rqd = oracle_requant(rq)
        res[f"requantize-{edge}"] = np.array([[min(max(ref.requantize_value(int(v), rqd, c, -2), -128), 127)
                                               for c, v in enumerate(row)] for row in acc])
        a, b, params, zps = _add_case(edge)
        res[f"add-{edge}"] = np.asarray(ref.add_oracle(a, b, params, **zps))
    return res


def compiled_code() -> dict:
    """For the level-dependent kernels compiled in this process: whether their code holds the VNNI GEMM tile
    (``vpdpbusd``) and the 512-bit tap pairs (a zmm ``vpdpwssd`` / ``vpmaddwd``), and their disk-cache hits."""
    from dspsim.kernels.mac import depthwise_core, gemm

    found = {}
    for name, disp in [("gemm", d) for d in gemm._DRIVERS.values()] + [("pairs", depthwise_core._pair_rows)]:
        entry = found.setdefault(name, dict(vpdpbusd=False, zmm_pairs=False, cache_hits=0, compiled=0))
        entry["cache_hits"] += sum(disp.stats.cache_hits.values())
        for sig in disp.signatures:
            entry["compiled"] += 1
            asm = disp.inspect_asm(sig)
            entry["vpdpbusd"] |= "vpdpbusd" in asm
            entry["zmm_pairs"] |= bool(re.search(r"(vpdpwssd|vpmaddwd)\s[^\n]*zmm", asm))
    return found


if __name__ == "__main__":
    from dspsim.simd import cpu

    res = outputs(sys.argv[2:] == ["full"])
    meta = dict(describe=cpu.describe(), code=compiled_code())
    np.savez(sys.argv[1], meta=np.array(json.dumps(meta)), **res)
