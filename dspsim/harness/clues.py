"""The clue in a divergence: what the differences between a device's tensor and dspsim's have in common.

:func:`analyze` takes one integer tensor twice, dspsim's value (the reference) and the device's, and gives the
exact histogram of the signed differences (device - reference, every distinct value: :func:`exact_histogram`)
and the patterns they follow, each found by one function of this module:

where the differences lie
    :func:`per_channel` (all in a few channels), :func:`per_position` (one output position, the border, a few
    rows or columns, a region of the spatial axes);
what explains them
    :func:`swapped_layout` (the device's values are the reference's in another axis order, or a permutation of
    them), :func:`stuck_bit` (every difference sets or clears one bit k, and the device holds bit k at 1 / 0
    everywhere the differences lie), :func:`saturation` (one side clipped at a bound the other passes),
    :func:`constant_offset` (every value not at a range end moved by the same c: a zero point),
    :func:`scale_ratio` (the device's values are the reference's scaled about the zero point: a multiplier or a
    shift), :func:`off_by_one` (every difference is +-1 LSB: rounding; at ties when the exact values are given).

A location is stated only when the differences would fall there by chance with probability below
:data:`SIGNIFICANCE` (a union bound over the sets of its kind: ``C(n, k) (k / n) ** m`` for m differences in k of
n channels), so a handful of scattered rounding differences gives no location, and only when the cause does not
hold on the whole tensor as well (a bit stuck everywhere shows only in the channels whose values it can change:
the others, all -128 after a ReLU, are no clue). The explaining patterns are
tried in the order above and the first that holds is the cause; the clue is one sentence: what the differences
are, where they lie, and the cause, e.g. ``"every difference is +64, all in channel 5: bit 6 stuck at 1"``.
No pattern, no clue (None).
"""
from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field, replace

import numpy as np

#: A location is stated when chance would put the differences there with a probability below this.
SIGNIFICANCE = 1e-3
#: Distinct difference values the histogram keeps (the most frequent); the rest are pooled under "other".
HISTOGRAM_VALUES = 32
#: Channels, rows or columns listed by value in a clue (more are counted).
LIST_LIMIT = 8
#: Axis orders tried by :func:`swapped_layout` up to this rank (rank! orders).
PERMUTE_RANK = 5


@dataclass(frozen=True)
class Divergence:
    """One diverging integer tensor, prepared once for every pattern function: ``ref`` and ``dev`` as int64,
    ``bits`` (their two's-complement patterns, uint64 masked to the dtype's width), ``diff`` (dev - ref), ``bad``
    (where they differ), the dtype, the channel axis and the spatial axes (None / () where the layout has none),
    the zero point (None: unknown), ``axis_names`` (one letter per axis, e.g. "NHWC", or None), ``real`` (the
    reference's exact value before rounding, in output LSB, or None) and ``scope`` (a mask: where the locations
    found put the differences; None before, or when none was found)."""

    ref: np.ndarray
    dev: np.ndarray
    dtype: np.dtype
    channel_axis: int | None = None
    spatial_axes: tuple = ()
    zero_point: int | None = None
    axis_names: str | None = None
    real: np.ndarray | None = field(default=None, repr=False)
    scope: np.ndarray | None = field(default=None, repr=False)

    @property
    def where(self) -> np.ndarray:
        """The elements of the channels / positions the differences lie in (the whole tensor when no location
        was found)."""
        return np.ones(self.bad.shape, bool) if self.scope is None else self.scope

    @property
    def diff(self) -> np.ndarray:
        return self.dev - self.ref

    @property
    def bad(self) -> np.ndarray:
        return self.dev != self.ref

    @property
    def m(self) -> int:
        return int(np.count_nonzero(self.bad))

    def bits(self, a: np.ndarray) -> np.ndarray:
        width = 8 * self.dtype.itemsize
        return a.astype(np.uint64) & np.uint64((1 << width) - 1) if width < 64 else a.view(np.uint64)


@dataclass(frozen=True)
class Clue:
    """A pattern found: its ``pattern`` name, ``text`` (a clause of the clue sentence), ``lead`` (what the
    differences are, when the pattern says it better than the histogram), ``scope`` (a mask: where a location
    puts the differences; None for a cause) and ``detail`` (numbers for the JSON)."""

    pattern: str
    text: str
    lead: str | None = None
    scope: np.ndarray | None = field(default=None, repr=False, compare=False)
    detail: dict = field(default_factory=dict)

    def to_dict(self) -> dict:
        return {"pattern": self.pattern, "text": self.text, **self.detail}


# ---------------------------------------------------------------------------------------------
# the histogram
# ---------------------------------------------------------------------------------------------
def exact_histogram(expected, actual, limit: int = HISTOGRAM_VALUES) -> dict:
    """``{"+64": 312, "-64": 3}``: every distinct nonzero difference ``actual - expected`` (integers) and how
    many values differ by it, the most frequent first (ties: the smaller difference first); beyond ``limit``
    distinct values the rest are pooled as ``"other (<n> values)"``."""
    d = np.asarray(actual, dtype=np.int64) - np.asarray(expected, dtype=np.int64)
    values, counts = np.unique(d[d != 0], return_counts=True)
    order = sorted(range(len(values)), key=lambda i: (-counts[i], values[i]))
    hist = {f"{int(values[i]):+d}": int(counts[i]) for i in order[:limit]}
    if len(order) > limit:
        hist[f"other ({len(order) - limit} values)"] = int(sum(counts[i] for i in order[limit:]))
    return hist


def histogram_text(hist: dict, limit: int = 6) -> str:
    """``"+64: 312 values, -64: 3"``: the first ``limit`` bins of an :func:`exact_histogram`."""
    items = list(hist.items())
    parts = [f"{k}: {v:,}" + ((" value" if v == 1 else " values") if i == 0 else "")
             for i, (k, v) in enumerate(items[:limit])]
    return ", ".join(parts) + (f", … ({len(items) - limit} more)" if len(items) > limit else "")


# ---------------------------------------------------------------------------------------------
# where: channels and positions
# ---------------------------------------------------------------------------------------------
def _chance(n: int, k: int, m: int) -> float:
    """Probability bound that m differences placed at random all fall in some k of n equal parts,
    ``C(n, k) (k / n) ** m``, computed in logarithms (C(2048, 1024) is no float); at most 1."""
    log = math.lgamma(n + 1) - math.lgamma(k + 1) - math.lgamma(n - k + 1) + m * math.log(k / n)
    return math.exp(min(log, 0.0))


def _listed(idx, n: int, word: str) -> str:
    idx = [int(i) for i in idx]
    if len(idx) == 1:
        return f"{word} {idx[0]}"
    if idx == list(range(idx[0], idx[-1] + 1)) and len(idx) > 2:
        names = f"{idx[0]}..{idx[-1]}"
    else:
        names = ", ".join(map(str, idx[:LIST_LIMIT])) + (", …" if len(idx) > LIST_LIMIT else "")
    return f"{word}s {names} ({len(idx)} of {n})"


def _along(d: Divergence, axis: int) -> np.ndarray:
    """Which indices of ``axis`` hold a difference."""
    return np.flatnonzero(d.bad.any(axis=tuple(a for a in range(d.bad.ndim) if a != axis)))


def _mask_along(d: Divergence, axis: int, idx) -> np.ndarray:
    shape = [1] * d.bad.ndim
    shape[axis] = d.bad.shape[axis]
    sel = np.zeros(d.bad.shape[axis], bool)
    sel[idx] = True
    return np.broadcast_to(sel.reshape(shape), d.bad.shape)


def per_channel(d: Divergence) -> Clue | None:
    """All differences in a few channels of the channel axis (fewer than all, beyond chance)."""
    if d.channel_axis is None or d.m < 2:
        return None
    n = d.bad.shape[d.channel_axis]
    ch = _along(d, d.channel_axis)
    if n < 2 or len(ch) == n or _chance(n, len(ch), d.m) >= SIGNIFICANCE:
        return None
    return Clue("per_channel", "all in " + _listed(ch, n, "channel"), scope=_mask_along(d, d.channel_axis, ch),
                detail={"channels": [int(c) for c in ch], "of": n})


def _positions(d: Divergence) -> np.ndarray:
    """The spatial map of differences: True where any element at that position differs."""
    other = tuple(a for a in range(d.bad.ndim) if a not in d.spatial_axes)
    return d.bad.any(axis=other) if other else d.bad


def _scope_of(d: Divergence, where: np.ndarray) -> np.ndarray:
    """A spatial mask broadcast to the tensor's shape."""
    shape = [d.bad.shape[a] if a in d.spatial_axes else 1 for a in range(d.bad.ndim)]
    return np.broadcast_to(where.reshape(shape), d.bad.shape)


def per_position(d: Divergence) -> Clue | None:
    """All differences at one spatial position, on the border only, in a few rows or columns, or within a
    region (the bounding box) of the spatial axes, the most specific that is beyond chance."""
    if not d.spatial_axes or d.m < 2:
        return None
    pos = _positions(d)
    total = pos.size
    if total < 2 or pos.all():
        return None
    hit = np.argwhere(pos)
    names = ("row", "column") if pos.ndim == 2 else tuple(f"position of axis {a}" for a in d.spatial_axes)
    if len(hit) == 1 and total ** (1 - d.m) < SIGNIFICANCE:
        at = ", ".join(f"{n.split()[0]} {int(i)}" for n, i in zip(names, hit[0]))
        return Clue("per_position", f"all at one output position ({at})", scope=_scope_of(d, pos),
                    detail={"kind": "position", "position": [int(i) for i in hit[0]]})
    if pos.ndim == 2 and min(pos.shape) >= 3:
        border = np.ones(pos.shape, bool)
        border[1:-1, 1:-1] = False
        if not (pos & ~border).any() and (border.sum() / total) ** d.m < SIGNIFICANCE:
            return Clue("per_position", "all on the border (the first or last row or column)",
                        scope=_scope_of(d, border), detail={"kind": "border"})
    found = []  # (positions covered, clue): rows, columns, the bounding box; the smallest wins
    for axis, name in enumerate(names):
        n = pos.shape[axis]
        idx = np.flatnonzero(pos.any(axis=tuple(a for a in range(pos.ndim) if a != axis)))
        if n >= 2 and len(idx) < n and _chance(n, len(idx), d.m) < SIGNIFICANCE:
            where = np.zeros(pos.shape, bool)
            where[(slice(None),) * axis + (idx,)] = True
            found.append((int(where.sum()), Clue("per_position", "all in " + _listed(idx, n, name),
                                                 scope=_scope_of(d, where),
                                                 detail={"kind": name, "indices": [int(i) for i in idx], "of": n})))
    lo, hi = hit.min(axis=0), hit.max(axis=0) + 1
    box = int(np.prod(hi - lo))
    if pos.ndim > 1 and box < total and total ** 2 * (box / total) ** d.m < SIGNIFICANCE:
        where = np.zeros(pos.shape, bool)
        where[tuple(slice(a, b) for a, b in zip(lo, hi))] = True
        spans = ", ".join(f"{n.split()[0]}s {a}..{b - 1}" for n, a, b in zip(names, lo, hi))
        found.append((box, Clue("per_position", f"all within {spans} ({box} of {total} positions)",
                                scope=_scope_of(d, where), detail={"kind": "region", "start": [int(a) for a in lo],
                                                                   "stop": [int(b) for b in hi]})))
    return min(found, key=lambda f: f[0])[1] if found else None


# ---------------------------------------------------------------------------------------------
# what: the causes, tried in this order
# ---------------------------------------------------------------------------------------------
def swapped_layout(d: Divergence) -> Clue | None:
    """The device's values are the reference's in another axis order (a transpose, e.g. NCHW written for
    NHWC), or at least the same multiset of values in another order."""
    if d.m < 2 or not np.array_equal(np.sort(d.dev, axis=None), np.sort(d.ref, axis=None)):
        return None
    if d.ref.ndim <= PERMUTE_RANK:
        for perm in itertools.permutations(range(d.ref.ndim)):
            if perm != tuple(range(d.ref.ndim)) and np.array_equal(d.ref.transpose(perm).reshape(-1),
                                                                   d.dev.reshape(-1)):
                order = f"axis order {perm}"
                if d.axis_names and len(d.axis_names) == d.ref.ndim:
                    order = f"{''.join(d.axis_names[p] for p in perm)} order for the model's {d.axis_names}"
                return Clue("swapped_layout", f"the device wrote the reference's values in {order}: a swapped layout",
                            detail={"axes": list(perm)})
    return Clue("swapped_layout", "the device's values are a permutation of the reference's (the same values, "
                "another order): a layout or ordering difference", detail={"axes": None})


def stuck_bit(d: Divergence) -> Clue | None:
    """Every difference sets (or every one clears) the same bit k of the value's two's complement, and
    everywhere in ``d.where`` (the channels / positions the differences lie in, else the whole tensor) the
    device's bit k is 1 (or 0): bit k stuck."""
    if d.m < 1:
        return None
    x = np.unique(d.bits(d.ref)[d.bad] ^ d.bits(d.dev)[d.bad])
    if len(x) != 1 or int(x[0]) & (int(x[0]) - 1):
        return None
    k = int(x[0]).bit_length() - 1
    held = (d.bits(d.dev)[d.where] >> np.uint64(k)) & np.uint64(1)
    if held.all():
        value = 1
    elif not held.any():
        value = 0
    else:
        return None
    steps = np.unique(d.diff[d.bad])
    lead = (f"every difference is {int(steps[0]):+d}" if len(steps) == 1
            else "every difference is " + " or ".join(f"{int(s):+d}" for s in steps))
    return Clue("stuck_bit", f"bit {k} stuck at {value}", lead=lead, detail={"bit": k, "value": value})


def saturation(d: Divergence) -> Clue | None:
    """One side clipped at a bound the other passes: every differing value of that side is its tensor's max (min)
    while the other side's value lies above (below) it; at least two values clipped."""
    if d.m < 2:
        return None
    for side, clipped, free in (("device", d.dev, d.ref), ("reference", d.ref, d.dev)):
        hi, lo = int(clipped.max()), int(clipped.min())
        c, f = clipped[d.bad], free[d.bad]
        up, down = (c == hi) & (f > hi), (c == lo) & (f < lo)
        if not (up | down).all():
            continue
        other = "reference" if side == "device" else "device"
        bounds = []
        if up.any():
            bounds.append(f"clips at {hi} where the {other} reaches {int(f[up].max())}")
        if down.any():
            bounds.append(f"clips at {lo} where the {other} reaches {int(f[down].min())}")
        at = " or ".join(str(v) for v, hit in ((hi, up.any()), (lo, down.any())) if hit)
        return Clue("saturation", f"the {side} " + " and ".join(bounds) + ": a different clamp (activation range)",
                    lead=f"every differing {side} value is {at}",
                    detail={"side": side, "upper": hi if up.any() else None, "lower": lo if down.any() else None})
    return None


def constant_offset(d: Divergence) -> Clue | None:
    """Every value (of ``d.where``: the channels / positions the differences lie in) moved by the same c, except
    values at a range end of the device (clipped), and those are fewer than the values that moved: a zero point,
    or a bias."""
    if d.m < 2 or 2 * d.m <= int(d.where.sum()):
        return None
    steps = np.unique(d.diff[d.bad])
    if len(steps) != 1:
        return None
    ends = (d.dev == d.dev.min()) | (d.dev == d.dev.max())
    if (~d.bad & ~ends & d.where).any():
        return None
    c = int(steps[0])
    if d.scope is None:
        every = "every value" if d.m == d.bad.size else "every value not at a range end"
        return Clue("constant_offset", f"a constant offset of {c:+d} (a zero point)",
                    lead=f"{every} differs by {c:+d}", detail={"offset": c})
    return Clue("constant_offset", f"every value there is off by {c:+d} (a zero point or a bias)",
                lead=f"every difference is {c:+d}", detail={"offset": c})


def scale_ratio(d: Divergence) -> Clue | None:
    """The device's values are the reference's scaled by r about the zero point (0 when unknown), to within
    1 LSB wherever the device is not at the dtype's range ends, and some differ by more than 1 LSB (else it is
    rounding): a multiplier or a shift."""
    z = d.zero_point or 0
    a, b = (d.ref - z).astype(np.float64), (d.dev - z).astype(np.float64)
    if d.m < 4 or np.abs(d.diff).max() < 2 or len(np.unique(a)) < 4 or not (a * a).sum():  # 1 LSB: rounding
        return None
    r = float((a * b).sum() / (a * a).sum())
    info = np.iinfo(d.dtype)
    inside = (d.dev > info.min) & (d.dev < info.max)
    if abs(r - 1) < 1 / 64 or r <= 0 or np.abs(np.round(a * r) - b)[inside].max(initial=0) > 1:
        return None
    e = math.log2(r)
    why = f"2^{round(e)}: the shift off by {abs(round(e))}" if abs(e - round(e)) < 0.01 else "the multiplier"
    return Clue("scale_ratio", f"the device's values are the reference's x{r:.3f} about the zero point {z} ({why})",
                lead=f"{d.m:,} of {d.bad.size:,} values differ", detail={"ratio": r, "zero_point": z})


def off_by_one(d: Divergence) -> Clue | None:
    """Every difference is +-1 LSB: rounding. With ``real`` (the reference's exact value before rounding), says
    whether they all lie at ties (x.5: the tie rule) or not (the rounding of the final shift)."""
    if d.m < 1 or (np.abs(d.diff[d.bad]) != 1).any():
        return None
    up, down = int((d.diff == 1).sum()), int((d.diff == -1).sum())
    lead = f"every difference is {'+1' if not down else '-1' if not up else f'+-1 ({up:,} up, {down:,} down)'}"
    text = "rounding"
    ties = None
    if d.real is not None:
        frac = np.abs(np.asarray(d.real, dtype=np.float64)[d.bad] % 1.0 - 0.5)
        ties = int((frac == 0).sum())
        text += (", all at ties (x.5): the tie rule" if ties == d.m else
                 f", {ties:,} of {d.m:,} at ties: the rounding of the final shift")
    return Clue("off_by_one", text, lead=lead, detail={"up": up, "down": down, "at_ties": ties})


WHERE = (per_channel, per_position)
CAUSES = (swapped_layout, stuck_bit, saturation, constant_offset, scale_ratio, off_by_one)
#: The causes judged on the location's scope (``Divergence.where``), not only on the differing values.
SCOPED = (stuck_bit, constant_offset)


# ---------------------------------------------------------------------------------------------
# the analysis
# ---------------------------------------------------------------------------------------------
def layout(fmt: str, ndim: int) -> dict:
    """The channel axis, spatial axes and axis letters of an activation of ``ndim`` axes in a model of format
    ``fmt`` ("tflite": NHWC, channels last; "onnx": NCHW, channels second)."""
    if ndim < 2:
        return {"channel_axis": None, "spatial_axes": (), "axis_names": None}
    if fmt == "onnx" and ndim >= 3:
        return {"channel_axis": 1, "spatial_axes": tuple(range(2, ndim)),
                "axis_names": "NCHW" if ndim == 4 else None}
    return {"channel_axis": ndim - 1, "spatial_axes": tuple(range(1, ndim - 1)),
            "axis_names": "NHWC" if ndim == 4 else None}


def analyze(expected, actual, *, channel_axis=None, spatial_axes=(), zero_point=None, axis_names=None,
            real=None) -> dict:
    """The histogram and the patterns of ``actual - expected`` (two integer arrays of one shape).

    Parameters
    ----------
    expected, actual : integer arrays
        The reference's (dspsim's) value and the device's.
    channel_axis : int, optional
        The channel axis (:func:`layout`); None: no per-channel pattern.
    spatial_axes : tuple of int
        The spatial axes (rows, columns); empty: no per-position pattern.
    zero_point : int, optional
        The tensor's zero point (the centre of a scale ratio; 0 when None).
    axis_names : str, optional
        One letter per axis ("NHWC"), to name a swapped layout.
    real : float array, optional
        The reference's exact value before rounding, in output LSB (says whether 1-LSB differences are ties).

    Returns
    -------
    dict
        ``{"histogram": exact_histogram, "patterns": [Clue.to_dict()], "clue": sentence | None}``.

    Raises
    ------
    TypeError
        When either array is not of an integer dtype.
    ValueError
        When their shapes differ.
    """
    ref, dev = np.asarray(expected), np.asarray(actual)
    if ref.dtype.kind not in "iu" or dev.dtype.kind not in "iu":
        raise TypeError(f"analyze: needs integer tensors, got {ref.dtype} and {dev.dtype}")
    if ref.shape != dev.shape:
        raise ValueError(f"analyze: the tensors must have one shape, got {ref.shape} and {dev.shape}")
    d = Divergence(ref.astype(np.int64), dev.astype(np.int64), np.result_type(ref.dtype, dev.dtype),
                   channel_axis if ref.ndim else None, tuple(spatial_axes) if ref.ndim else (), zero_point,
                   axis_names, real)
    hist = exact_histogram(ref, dev)
    if not d.m:
        return {"histogram": hist, "patterns": [], "clue": None}
    where = [c for c in (f(d) for f in WHERE) if c is not None]
    scoped = d
    for c in where:
        scoped = replace(scoped, scope=c.scope if scoped.scope is None else scoped.scope & c.scope)
    cause, f = next(((c, f) for c, f in ((f(scoped), f) for f in CAUSES) if c is not None), (None, None))
    if f in SCOPED and where and f(d) is not None:  # it holds on the whole tensor: where the differences lie is
        cause, where = f(d), []                     # only where values could change (dead channels)
    found = where + ([cause] if cause else [])
    return {"histogram": hist, "patterns": [c.to_dict() for c in found], "clue": _sentence(where, cause, hist)}


def _sentence(where: list, cause, hist: dict) -> str | None:
    """The one sentence: what the differences are, where they lie, and the cause."""
    if not where and cause is None:
        return None
    if cause is not None and cause.pattern == "swapped_layout":
        return cause.text
    lead = cause.lead if cause is not None and cause.lead else (
        f"every difference is {next(iter(hist))}" if len(hist) == 1 else f"the differences ({histogram_text(hist, 3)})")
    text = ", ".join([lead] + [w.text for w in where])
    return text + (f": {cause.text}" if cause is not None else "")
