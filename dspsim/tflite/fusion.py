"""Operator fusion at load: groups of operators run as one prepared step where that is bit-exact.

Only :meth:`Model.run` and :meth:`Model.run_batch` run the fused steps; :meth:`Model.trace` (and so
``dspsim validate``, ``run_operator``, ``operator_params``) runs every original operator, so each
operator's output stays observable.

**Split depthwise (MixConv).** microWakeWord's MixedNet blocks split a window's channels
(SPLIT_V / SPLIT on the channel axis), run a depthwise conv of a different height on each part (on
the part's last rows: a STRIDED_SLICE of the time axis, or the whole part), and concatenate the
parts' outputs on the channel axis. Each part's kernel covers its whole window (one output row). The
group is one depthwise conv over the unsplit window whose kernel has the full height: part ``j``'s
taps on its last ``KH_j`` rows and zeros on the rows above. A zero tap adds ``(x - zx) * 0 = 0``
to the int32 sum, and every channel keeps its bias, multiplier, shift (or float scale), zero points
and clamp, so the merged conv's outputs are the concatenation's codes, bit for bit. It saves the
SPLIT_V's and STRIDED_SLICEs' channel-window copies (short strided rows: the slowest copies of the
model), the CONCATENATION, and one depthwise call per part, for more (zero) MACs. Not fused under a
simulated :class:`dspsim.Accumulator` (its event counts are per MAC) nor on 16x8 tensors.

**Explicit padding (PAD + VALID conv).** MobileNetV2 pads before its stride-2 convs: a PAD / PADV2 of
the height and width with the conv's input zero point ``zx``, then a CONV_2D or DEPTHWISE_CONV_2D with
padding VALID. A padded tap adds ``(zx - zx) * w = 0`` to the int32 (16x8: int64) sum; the conv kernels
with explicit pads ``((top, bottom), (left, right))`` add exactly 0 for a tap outside the input (TFLite
skips it), so the conv with the PAD's pads computes the same sums, hence the same codes, without the
padded copy. Fused where the PAD's only reader is that conv (the padded tensor is no subgraph output),
the pad value equals the conv's input zero point (int8, and 16x8 with zero point 0), the batch and
channel axes are unpadded, and the conv's input type is the PAD's input type. Not under a simulated
:class:`dspsim.Accumulator` (the unfused conv counts MACs on the padded taps).
"""
from __future__ import annotations

import dataclasses

import numpy as np

from .. import kernels
from .builtins.mac import _conv_common
from .prepare import Prepared, at_run

_SPLIT_DATA = {"SPLIT_V": 0, "SPLIT": 1}  # the data input of each splitting operator
_SPLIT_AXIS = {"SPLIT_V": 2, "SPLIT": 0}  # its (constant) axis input
_CONV_AXIS = {"CONV_2D": 0, "DEPTHWISE_CONV_2D": 3}  # the filter's output-channel axis


def fuse(sg, plan, g):
    """``plan`` (``[(op, Prepared), ...]`` of subgraph ``sg``) with every split-depthwise group replaced
    by one step at the place of its CONCATENATION and every PAD + VALID conv by one conv step at the
    conv's place; ``plan`` itself when nothing fuses."""
    if any(g.mac(family).accumulator is not None for family in ("conv_2d", "depthwise_conv_2d")):
        return plan  # the fused layers run the exact int32 accumulator
    if g.mac("depthwise_conv_2d").requant.vector_channels:
        return plan  # the fused layers take one tie rule for every channel: the builtin handles the tail channels
    readers = {}
    for op, _ in plan:
        for i in op.inputs:
            readers.setdefault(i, []).append(op)
    prepared = {op.index: prep for op, prep in plan}
    replaced, fused_at = set(), {}
    for op, _ in plan:
        if op.name in _SPLIT_DATA:
            group = _split_depthwise(sg, op, readers, prepared)
            step = None if group is None else _or_none(_merged_depthwise, sg, g, *group)
            if step is not None:
                replaced.update(o.index for o in group[1])
                fused_at[group[2].index] = step
        elif op.name in ("PAD", "PADV2"):
            conv = _only_reader(sg, op.outputs[0], readers)
            step = None if conv is None else _or_none(_padded_conv, sg, g, op, prepared[op.index].params, conv)
            if step is not None:
                replaced.update((op.index, conv.index))
                fused_at[conv.index] = step
    if not fused_at:
        return plan
    return [fused_at.get(op.index, (op, prep)) for op, prep in plan
            if op.index not in replaced or op.index in fused_at]


def _or_none(build, *args):
    """``build(*args)`` (a fused step or None), or None where preparing the fused layer fails (the
    operators then run as they are, each already prepared)."""
    try:
        return build(*args)
    except (ValueError, TypeError, MemoryError):
        return None


def _only_reader(sg, i, readers):
    """The one operator reading tensor ``i`` (None if several, none, or ``i`` is a subgraph output)."""
    r = readers.get(i, [])
    return r[0] if len(r) == 1 and i not in sg.outputs and not sg.tensors[i].is_variable else None


def _split_depthwise(sg, split, readers, prepared):
    """``(parts, ops, concatenation)`` when ``split`` starts a split-depthwise group, else None: ``parts``
    = ``[(depthwise op, rows its window drops at the top)]`` in split order, ``ops`` every operator of the
    group."""
    data = split.inputs[_SPLIT_DATA[split.name]]
    t_x = sg.tensors[data]
    axis = sg.tensors[split.inputs[_SPLIT_AXIS[split.name]]].data
    if len(t_x.shape) != 4 or t_x.dtype != np.int8 or axis is None or axis.size != 1 \
            or int(axis.reshape(-1)[0]) % 4 != 3:
        return None
    n, h, w, _ = t_x.shape
    parts, ops, concat = [], [split], None
    for p in split.outputs:
        r = _only_reader(sg, p, readers)
        if r is None:
            return None
        top, window = 0, p
        if r.name == "STRIDED_SLICE":  # a tail of the time axis: found by running the slice on a probe
            t_p = sg.tensors[p]
            probe = np.arange(int(np.prod(t_p.shape)), dtype=np.int32).reshape(t_p.shape)
            out = prepared[r.index].run([probe] + [None] * 3)
            top = h - out.shape[1] if out.ndim == 4 else -1
            if not (0 <= top < h and np.array_equal(out, probe[:, top:])):
                return None
            ops.append(r)
            window = r.outputs[0]
            r = _only_reader(sg, window, readers)
        if r is None or r.name != "DEPTHWISE_CONV_2D" or r.inputs[0] != window:
            return None
        c = _only_reader(sg, r.outputs[0], readers)
        if c is None or c.name != "CONCATENATION" or (concat is not None and c is not concat):
            return None
        concat = c
        parts.append((r, top))
        ops.append(r)
    if concat is None or tuple(concat.inputs) != tuple(d.outputs[0] for d, _ in parts) \
            or int(concat.options.get("axis", 0)) % 4 != 3:
        return None
    ops.append(concat)
    return parts, ops, concat


def _merged_depthwise(sg, g, parts, ops, concat):
    """``(op, Prepared)`` of the one depthwise conv computing ``concat``'s output, or None where the parts
    differ in anything but their channels' weights, bias and requantization, or a part's kernel does not
    cover its window (one output row)."""
    x = ops[0].inputs[_SPLIT_DATA[ops[0].name]]
    t_x = sg.tensors[x]
    h = t_x.shape[1]
    weights, biases, requants, common = [], [], [], None
    for dw, top in parts:
        o = dw.options
        if o.get("padding", 0) != 1 or o.get("dilation_h_factor", 1) != 1:
            return None
        t_in, t_out, w, bias, quant, _ = _conv_common(dw, g, 3)
        if w.shape[1] != h - top or w.shape[3] != t_in.shape[3] or t_out.shape[1] != 1:
            return None  # not a full-window kernel, or a depth multiplier
        rq = quant.pop("requant")
        # one output row: the vertical stride is never used; the horizontal one, the kernel width and
        # everything but the per-channel requantization must agree
        quant["stride"] = quant["stride"][1]
        key = (quant, w.shape[2], rq.scheme, rq.tie, rq.reciprocal_bias, rq.saturate_input)
        if common is None:
            common = key
        elif key != common:
            return None
        padded = np.zeros((1, h, w.shape[2], w.shape[3]), np.int8)
        padded[:, top:] = w
        weights.append(padded)
        biases.append(np.zeros(w.shape[3], np.int32) if bias is None else bias)
        requants.append((rq, w.shape[3]))
    fields = {}
    for f in ("multiplier", "shift", "scale", "act_times_w"):  # one value per channel (or none)
        fields[f] = tuple(v for rq, c in requants for v in (getattr(rq, f) * c if len(getattr(rq, f)) == 1
                                                             else getattr(rq, f)))
        if len(fields[f]) not in (0, sum(c for _, c in requants)):
            return None
    quant = dict(common[0], stride=(1, common[0]["stride"]), requant=dataclasses.replace(requants[0][0], **fields),
                 depth_multiplier=1)
    layer = kernels.depthwise_conv2d_plan(t_x.shape, t_x.dtype, np.concatenate(weights, axis=3),
                                           np.concatenate(biases), **quant)
    if tuple(layer.out_shape) != tuple(sg.tensors[concat.outputs[0]].shape):
        return None
    op = dataclasses.replace(parts[0][0], inputs=(x,), outputs=tuple(concat.outputs), options={})
    return op, Prepared(lambda inputs: at_run(op, layer.run, inputs[0], None))


def _padded_conv(sg, g, pad, pad_params, conv):
    """``(op, Prepared)`` of ``conv`` run on ``pad``'s input with ``pad``'s height and width pads, or None
    where that is not the same computation (see the module docstring)."""
    if conv.name not in _CONV_AXIS or conv.inputs[0] != pad.outputs[0] or conv.options.get("padding", 0) != 1:
        return None
    x = pad.inputs[0]
    t_x, pads = sg.tensors[x], np.asarray(pad_params["paddings"])
    if len(t_x.shape) != 4 or pads.shape != (4, 2) or pads[0].any() or pads[3].any():
        return None
    t_in, t_out, w, bias, quant, _ = _conv_common(conv, g, _CONV_AXIS[conv.name])
    if int(pad_params["pad_value"]) != quant["input_zero_point"] or t_x.dtype != t_in.dtype:
        return None
    quant["padding"] = tuple((int(a), int(b)) for a, b in pads[1:3])
    if conv.name == "DEPTHWISE_CONV_2D":
        layer = kernels.depthwise_conv2d_plan(t_x.shape, t_x.dtype, w, bias, depth_multiplier=w.shape[3] //
                                               t_x.shape[3], **quant)
    else:
        layer = kernels.conv2d_plan(t_x.shape, t_x.dtype, w, bias, **quant)
    if tuple(layer.out_shape) != tuple(t_out.shape):
        return None
    op = dataclasses.replace(conv, inputs=(x,), options={})
    return op, Prepared(lambda inputs: at_run(op, layer.run, inputs[0], None))
