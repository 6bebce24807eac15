"""A subgraph of byte tensors as one compiled call: the streaming models' frame without a Python step per operator.

A microWakeWord frame is some 50 operators on a few hundred bytes: run one at a time, Python's dispatch costs
several times the arithmetic (docs/engines.md, "Small models at batch 1"). A :class:`Program` holds every
activation and every state variable of a subgraph in one byte arena, at offsets fixed at load, and three kinds
of instruction, run in order by one numba function:

- ``MAC``: a convolution (fully connected and depthwise are convolutions too) of a
  :class:`~dspsim.kernels._common.ConvProblem`: int32 sums modulo 2^32 (the default accumulator), the bias,
  :func:`~dspsim.requant.requantize_value` with the layer's own scheme, the clamp;
- ``GATHER``: ``arena[out + j] = arena[src[j]]`` (as runs of consecutive positions), any data movement (slices, concatenations, reshapes, state
  reads and writes) as a map of arena positions;
- ``TABLE``: ``arena[out + j] = table[j][byte]``, any element-wise operator of one byte input (one table, or
  one per element where a constant operand varies along the tensor).

What each operator becomes is the front end's business (:mod:`dspsim.tflite.lowering`); the maps and tables
are found by running the operator's own prepared ``run`` at load, so the index and rounding rules keep their
one home. Only int8 / uint8 activations (byte codes) live in the arena.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from ..requant import requantize_value

GATHER, TABLE, MAC = 0, 1, 2
#: fields of one instruction row of :attr:`Program.code` (unused fields 0)
WIDTH = 36
_HALF, _MASK = 1 << 31, (1 << 32) - 1


@njit(cache=True, nogil=True)
def _mac(arena, c, w8, i64, f64, f32):
    """One ``MAC`` row ``c``: output codes written into the arena (never raises).

    Each tap sums the raw codes ``x * w`` (int8 dot products in int64) and subtracts ``zx * sum(w)`` (the tap's
    weight sums, made at load); the total is taken modulo 2^32 once, after the bias: the int32 sum the fast
    cores and TFLite's wrapping int32 accumulator keep (int64 cannot overflow first: 2^63 / 2^16 per MAC is
    far beyond any layer here, :data:`~dspsim.tflite.lowering.MAX_MACS`). Plain integer arithmetic, so that it
    also runs under ``NUMBA_DISABLE_JIT``. A depthwise layer (one input channel per output channel)
    reads its weights tap-major, ``(KH * KW, OC)``, so that its channel loop runs along memory."""
    out, inp = c[1], c[2]
    n_b, h, wd, ch, oh, ow, n_oc, kh, kw, icg = c[3], c[4], c[5], c[6], c[7], c[8], c[9], c[10], c[11], c[12]
    sh, sw, dh, dw, pt, pl, zx = c[13], c[14], c[15], c[16], c[17], c[18], c[19]
    w_off, bias_off, base_off, mult_off, shift_off, scale_off, fb_off = c[20], c[21], c[22], c[23], c[24], c[25], c[26]
    arith, fb_mode, tie, zo, lo, hi, wsum_off = c[27], c[28], c[29], c[30], c[31], c[32], c[33]
    base = i64[base_off:base_off + n_oc]
    taps = kh * kw
    wsum = i64[wsum_off:wsum_off + n_oc * taps]  # (OC, taps)
    acc = np.empty(n_oc, np.int64)
    for b in range(n_b):
        for oy in range(oh):
            for ox in range(ow):
                acc[:] = 0
                for ky in range(kh):
                    iy = oy * sh - pt + ky * dh
                    if iy < 0 or iy >= h:
                        continue  # a padding tap: x = zx adds nothing
                    for kx in range(kw):
                        ix = ox * sw - pl + kx * dw
                        if ix < 0 or ix >= wd:
                            continue
                        tap = ky * kw + kx
                        px = inp + ((b * h + iy) * wd + ix) * ch
                        xv = arena[px:px + ch]
                        if icg == 1:
                            wt = w8[w_off + tap * n_oc:w_off + (tap + 1) * n_oc]
                            for oc in range(n_oc):
                                acc[oc] += np.int64(xv[base[oc]]) * np.int64(wt[oc]) - zx * wsum[oc * taps + tap]
                        else:
                            for oc in range(n_oc):
                                xs = xv[base[oc]:base[oc] + icg]
                                wb = w_off + (oc * taps + tap) * icg
                                ws = w8[wb:wb + icg]
                                s = 0
                                for k in range(icg):
                                    s += np.int64(xs[k]) * np.int64(ws[k])
                                acc[oc] += s - zx * wsum[oc * taps + tap]
                o = out + ((b * oh + oy) * ow + ox) * n_oc
                for oc in range(n_oc):
                    a = ((acc[oc] + i64[bias_off + oc] + _HALF) & _MASK) - _HALF  # int32 modulo 2^32, as the fast cores
                    v = requantize_value(a, arith, fb_mode, tie, i64[mult_off + oc], i64[shift_off + oc],
                                         f64[scale_off + oc], f32[fb_off + oc], f32[fb_off + n_oc + oc], zo)
                    arena[o + oc] = ((min(max(v, lo), hi) + 128) & 0xFF) - 128  # an int8 or uint8 code's byte


@njit(cache=True, nogil=True)
def run_program(arena, code, idx, w8, i64, f64, f32):
    """Run every instruction of ``code`` (rows of :data:`WIDTH` int64 fields) on the byte ``arena``; ``idx``
    holds the gathers' source positions, ``w8`` the weights and tables, ``i64`` / ``f64`` / ``f32`` the MACs'
    per-channel parameters. Never raises (the offsets were checked when the program was built)."""
    for k in range(code.shape[0]):
        c = code[k]
        kind = c[0]
        if kind == GATHER:  # runs of consecutive positions: (destination, source, length) triples; a loop over
            # the two slices (vectorized, ~5x numba's slice assignment); they never overlap: every tensor and
            # variable has a region of its own
            n_runs, at = c[2], c[3]
            for r in range(n_runs):
                d, src, n = idx[at + 3 * r], idx[at + 3 * r + 1], idx[at + 3 * r + 2]
                to, fro = arena[d:d + n], arena[src:src + n]
                for t in range(n):
                    to[t] = fro[t]
        elif kind == TABLE:
            out, n, inp, tab, per_element = c[1], c[2], c[3], c[4], c[5]
            for j in range(n):
                arena[out + j] = w8[tab + j * 256 * per_element + (np.int64(arena[inp + j]) & 0xFF)]
        else:
            _mac(arena, c, w8, i64, f64, f32)


class Program:
    """A subgraph's operators as instructions on one byte arena, assembled at load.

    Build it by :meth:`tensor` (an arena region per tensor), :meth:`gather`, :meth:`table` and :meth:`mac`,
    in execution order, then :meth:`finish`; :meth:`run` executes it. ``regions`` maps a tensor key (the
    front end's: a tensor index, or a variable's name) to ``(offset, shape, dtype)``.
    """

    def __init__(self):
        self.regions = {}
        self._size = 0
        self._code, self._idx, self._w8, self._i64, self._f64, self._f32 = [], [], [], [], [], []
        self._sizes = {"idx": 0, "w8": 0, "i64": 0, "f64": 0, "f32": 0}

    def tensor(self, key, shape, dtype):
        """The arena offset of tensor ``key`` (a new region the first time)."""
        if key not in self.regions:
            self.regions[key] = (self._size, tuple(shape), np.dtype(dtype))
            self._size += int(np.prod(shape, dtype=np.int64))
        return self.regions[key][0]

    def _pool(self, name, values, dtype):
        at = self._sizes[name]
        a = np.ascontiguousarray(np.ravel(values), dtype)
        getattr(self, "_" + name).append(a)
        self._sizes[name] += a.size
        return at

    def _row(self, *fields):
        row = np.zeros(WIDTH, np.int64)
        row[:len(fields)] = fields
        self._code.append(row)

    def gather(self, out, positions):
        """``arena[out + j] = arena[positions[j]]``, stored as the runs of consecutive positions (a slice, a
        concatenation or a state copy is a few runs: one memory copy each)."""
        positions = np.asarray(positions, np.int64).ravel()
        starts = np.flatnonzero(np.diff(positions, prepend=positions[:1] - 2) != 1)
        lengths = np.diff(np.append(starts, positions.size))
        runs = np.stack([out + starts, positions[starts], lengths], axis=1)
        self._row(GATHER, out, len(runs), self._pool("idx", runs, np.int64))

    def table(self, out, inp, n, tables):
        """``arena[out + j] = tables[j or 0][arena[inp + j] as a byte]``, ``j < n``: ``tables`` (1, 256) or
        (n, 256) byte codes."""
        tables = np.asarray(tables)
        self._row(TABLE, out, n, inp, self._pool("w8", tables.view(np.int8), np.int8), int(tables.shape[0] > 1))

    def mac(self, out, inp, problem, x_shape):
        """The ``MAC`` instruction of ``problem`` (a :class:`~dspsim.kernels._common.ConvProblem` with int8
        input and weights, weight zero points 0, int8 / uint8 output) on input ``x_shape`` (B, H, W, C)."""
        from ..requant import loop_tie

        g, q, w = problem.geometry, problem.quant, problem.w
        n_oc, kh, kw, icg = w.shape
        arith, mult, shift, scale, _, tie = q.requant.arrays(n_oc, problem.func)
        fb_a, fb_b, fb_mode = problem.float_bias
        fb = np.concatenate([np.broadcast_to(np.asarray(v, np.float32).ravel(), (n_oc,)) for v in (fb_a, fb_b)])
        layout = w.reshape(n_oc, kh * kw).T if icg == 1 else w  # depthwise: tap-major
        self._row(MAC, out, inp, *x_shape, g.out_h, g.out_w, n_oc, kh, kw, icg, g.stride[0], g.stride[1],
                  g.dilation[0], g.dilation[1], g.pad_top, g.pad_left, int(q.zx),
                  self._pool("w8", layout, np.int8), self._pool("i64", problem.bias, np.int64),
                  self._pool("i64", problem.channel_base, np.int64), self._pool("i64", mult, np.int64),
                  self._pool("i64", shift, np.int64), self._pool("f64", scale, np.float64), self._pool("f32", fb, np.float32),
                  int(arith), int(fb_mode), int(loop_tie(arith, tie)), int(q.zo), int(q.lo), int(q.hi),
                  self._pool("i64", w.astype(np.int64).sum(axis=3).reshape(n_oc, kh * kw), np.int64))

    def finish(self):
        """Freeze the instructions and pools; returns self."""
        def cat(parts, dtype):
            return np.concatenate(parts).astype(dtype) if parts else np.zeros(1, dtype)

        self.code = np.stack(self._code) if self._code else np.zeros((0, WIDTH), np.int64)
        self.idx, self.w8 = cat(self._idx, np.int64), cat(self._w8, np.int8)
        self.i64, self.f64, self.f32 = cat(self._i64, np.int64), cat(self._f64, np.float64), cat(self._f32, np.float32)
        self.arena = np.zeros(max(1, self._size), np.int8)
        return self

    def view(self, key):
        """Tensor ``key``'s region of the arena as an array of its shape and dtype (memory shared)."""
        offset, shape, dtype = self.regions[key]
        return self.arena[offset:offset + int(np.prod(shape, dtype=np.int64))].view(dtype).reshape(shape)

    def run(self):
        """Execute every instruction on the arena."""
        run_program(self.arena, self.code, self.idx, self.w8, self.i64, self.f64, self.f32)
