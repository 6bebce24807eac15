"""Accumulator-level vectors of the MAC operators: ``--stages`` and ``--partial-sums OP:INDEX`` of ``dspsim run``
and ``dspsim export-model``.

For every operator that has them (:meth:`Model.has_stages <dspsim.graph.model.Model.has_stages>`: the
FULLY_CONNECTED, CONV_2D, DEPTHWISE_CONV_2D, TRANSPOSE_CONV and BATCH_MATMUL operators of a .tflite model, an
ONNX model's QLinearConv, QLinearMatMul and QGemm), on the inputs the operator saw in a trace, three int vectors of
the output's shape (QLinearConv's NCHW):

* ``op<k>_acc``: the accumulator before the bias, as the engine's register holds it (an engine's or a device
  TOML's narrow, wrapping or saturating accumulator: every addition wrapped or saturated, MAC by MAC);
* ``op<k>_acc_bias``: after adding the bias (one more addition in that register);
* ``op<k>_requant``: the requantized value before the output zero point and the activation clamp, so that
  ``clip(requant + output_zero_point, act_min, act_max)`` is the operator's output, bit for bit (a scheme that
  adds the zero point before its rounding, ``float64`` or oneDNN's, gives its rounded value minus the zero
  point).

They come from the operator's own kernel (:meth:`dspsim.kernels._common.ConvProblem.stages`: the checked
MAC-by-MAC kernel and the requantization loop the outputs use;
:func:`dspsim.kernels.mac.transpose_conv.transpose_conv_stages`: the scatter and its requantization;
:meth:`dspsim.kernels.mac.batch_matmul.BatchMatmulPlan.stages`), never from a second copy of the formula.

``--partial-sums OP:INDEX`` adds one output's taps, in the order the engine accumulates them, as
``op<k>_taps_<field>`` (:data:`TAP_FIELDS`, one value per tap): FULLY_CONNECTED ``d = 0 .. K-1``; CONV_2D
``filter_y``, then ``filter_x``, then the input channel of the output's group (TFLite's ``ConvPerChannel``);
DEPTHWISE_CONV_2D ``filter_y`` then ``filter_x`` (``DepthwiseConvPerChannel``); TRANSPOSE_CONV the scatter's
order, input row, input column, filter row, filter column, input channel (``reference_integer_ops::TransposeConv``,
only the taps that reach the output; its filter zero point is 0); BATCH_MATMUL ``k = 0 .. K-1`` (``w`` the
rhs; no bias: ``acc_bias`` is ``acc``). ``partial_sum`` is the accumulator after the tap (the last one is
``acc``); a padding tap (``kind`` 1) is skipped by the engine and
shown with ``x`` = the input zero point; with x86 pair saturation a tap's partial sum is its pair's, and one
last row (``kind`` 2) adds the zero-point correction (ONNX Runtime's uint8 x int8 MLAS kernels without VNNI).
QLinearConv sums as CONV_2D / DEPTHWISE_CONV_2D (the NHWC kernels), its INDEX counted in its NCHW output;
QLinearMatMul and QGemm as FULLY_CONNECTED (QLinearMatMul batch by batch, each batch with its own requantization
where B's scales are per batch and column: :func:`dspsim.onnx.mac.qlinear_matmul_stages`). MatMulInteger and
ConvInteger output int32 sums: their accumulator is the output, ``op<k>_acc`` alone (no bias, no requantization);
their taps run over ``k`` (MatMulInteger) or the input channel of the group, filter row, filter column (ConvInteger,
ONNX Runtime's im2col order; a padding tap ``kind`` 1), refused where the engine saturates product pairs. Legacy
uint8 weights appear as ``w - 128`` with their zero point ``- 128`` (the same differences).

The recurrent operators record more steps, each by the kernel's own loop as it runs
(:func:`dspsim.kernels.recurrent.lstm.lstm_stages`, :func:`dspsim.kernels.recurrent.svdf.svdf_stages`), on the state
the operator started from (the variable tensors' values before it ran: ``Trace.state_before``):

* UNIDIRECTIONAL_SEQUENCE_LSTM, per time step, gate (input, forget, cell, output) and unit, (B, T, 4, N) in the
  operator's layout ((T, B, 4, N) time-major): ``op<k>_in_acc``, ``_in_acc_bias``, ``_in_requant`` (the input FC;
  the requantized part before its int16 clamp), ``_rec_acc``, ``_rec_requant`` (the recurrent FC over the previous
  hidden state; no bias), ``_pre`` (the gate's Q3.12 pre-activation), ``_gate`` (its Q0.15 activation); per step
  and unit, (B, T, N): ``_forget_cell``, ``_input_cell`` (the cell products), ``_cell``, ``_tanh_cell``,
  ``_hidden_requant`` (before the hidden zero point and clamp) and ``_hidden`` (the output). INDEX of
  ``--partial-sums`` addresses ``(b, t, gate, unit)`` in that layout (flat or multi-index): the input FC's taps
  (``kind`` 0), then the recurrent FC's (``kind`` 3: a second sum, its partial sums start again from 0).
* SVDF, per batch and filter (B, F): ``op<k>_feature_acc`` (the feature FC), ``_feature_requant`` (before the clamp
  to the state's range), ``_state_entry`` (the value stored in the newest slot), ``_time_acc`` (the time FC over the
  shifted state); per unit (B, F / rank): ``_acc`` (the unit's time sums), ``_acc_bias`` (the register the engines
  hold: it starts at the bias, then adds the time sums; int32, so the same value) and ``_requant``:
  ``clip(requant + output_zero_point, -128, 127)`` is the output. INDEX addresses ``(b, filter)``: the feature FC's
  taps (``kind`` 0, from CMSIS-NN Helium's offset where the engine adds one), then the time FC's (``kind`` 3).
"""
from __future__ import annotations

import numpy as np

STAGES = ("acc", "acc_bias", "requant")
"""The stage vectors of a MAC operator, in the order of its arithmetic (the recurrent operators': the module
docstring)."""

TAP_FIELDS = ("x", "w", "x_zero_point", "w_zero_point", "kind", "partial_sum")
"""The per-tap vectors of ``--partial-sums``."""

NO_STAGES = ("--stages: no operator of this model has accumulator stages (FULLY_CONNECTED, CONV_2D, DEPTHWISE_CONV_2D, "
             "TRANSPOSE_CONV, BATCH_MATMUL, UNIDIRECTIONAL_SEQUENCE_LSTM, SVDF; ONNX QLinearConv, QLinearMatMul, "
             "QGemm, MatMulInteger, ConvInteger have them; a QDQ graph run unfused has none)")
"""The one line ``--stages`` prints where it finds nothing to capture."""

_INT32 = np.iinfo(np.int32)


def _narrow(a):
    """int32 where every value fits (as TFLite holds accumulators), else int64."""
    return a.astype(np.int32) if a.size == 0 or (_INT32.min <= a.min() and a.max() <= _INT32.max) else a


def parse_partial_sums(text, model, flag="--partial-sums") -> tuple:
    """``(op_index, flat_index, multi_index)`` of ``OP:INDEX`` (INDEX a flat index into the operator's output, or
    a recurrent operator's gate FC outputs (:meth:`Model.stages_shape <dspsim.graph.model.Model.stages_shape>`), or
    a comma-separated multi-index), checked against ``model``; a ValueError naming ``flag`` and the rule."""
    op_text, sep, index_text = str(text).partition(":")
    try:
        op = int(op_text)
        index = tuple(int(v) for v in index_text.split(","))
    except ValueError:
        raise ValueError(f"{flag} {text!r}: expected OP:INDEX, OP an operator index and INDEX a flat index or a "
                         "comma-separated multi-index (e.g. 3:17 or 3:0,2,2,5)") from None
    if not sep or not 0 <= op < len(model.operators):
        raise ValueError(f"{flag} {text!r}: the operator index must be in [0, {len(model.operators)})")
    if not model.has_stages(op):
        raise ValueError(f"{flag} {text!r}: operator {op} ({model.operators[op][1]}) is not a MAC operator with "
                         "stages")
    shape = model.stages_shape(op)
    if shape is None or any(d is None or d < 0 for d in shape):  # an open shape (ONNX): a flat index only
        if len(index) != 1 or index[0] < 0:
            raise ValueError(f"{flag} {text!r}: operator {op}'s output shape is not declared; give a flat index")
        return op, index[0], index
    size = int(np.prod(shape))
    if len(index) == 1 and len(shape) != 1:
        if not 0 <= index[0] < size:
            raise ValueError(f"{flag} {text!r}: the flat index must be in [0, {size}) (output {shape})")
        flat = index[0]
    elif len(index) != len(shape) or not all(0 <= i < n for i, n in zip(index, shape)):
        raise ValueError(f"{flag} {text!r}: the index must be flat or {len(shape)} indices within the output "
                         f"{shape}")
    else:
        flat = int(np.ravel_multi_index(index, shape))
    return op, flat, tuple(int(i) for i in np.unravel_index(flat, shape))


def capture(model, trace, partial=None) -> dict:
    """The stage vectors of every MAC operator of one run, ``{"op<k>_<stage>": array}``, in operator order; with
    ``partial = (op_index, flat_index)`` also that output's ``op<k>_taps_<field>``.

    ``trace`` is the run's :meth:`Model.trace`: each operator's stages are computed on the values its inputs had
    when it ran (a state-carrying model is not run again)."""
    out, values, done = {}, {}, set()
    state_before = getattr(trace, "state_before", {})
    for e in trace:
        k = e.op_index
        if k >= 0 and k not in done and model.has_stages(k):
            done.add(k)
            tap = partial[1] if partial is not None and partial[0] == k else None
            before = state_before.get(k, {})
            args = [before[i] if i in before else None if i < 0 or model.tensor_value(i) is not None else values[i]
                    for i in model.operator_inputs(k)]
            st = model.operator_stages(k, args, tap)
            out.update({f"op{k}_{name}": _narrow(a) for name, a in st.named().items()})
            if tap is not None:
                out.update({f"op{k}_taps_{name}": _narrow(np.asarray(st.taps[name])) for name in TAP_FIELDS})
        values[e.tensor] = e.value
    return out


def summary(model, arrays: dict, partial=None) -> dict:
    """report.json's view of :func:`capture`'s arrays: per operator its entries, the first one's shape and every
    entry's; the chosen output's taps as numbers (``acc``: the last partial sum, the accumulator of its last
    sum)."""
    ops = sorted({int(key[2:].split("_")[0]) for key in arrays})
    entries = {k: [key for key in arrays if key.startswith(f"op{k}_") and not key.startswith(f"op{k}_taps_")]
               for k in ops}
    rep = {"operators": [{"op_index": k, "op": model.operators[k][1], "entries": entries[k],
                          "shape": list(arrays[entries[k][0]].shape),
                          "shapes": {key: list(arrays[key].shape) for key in entries[k]}} for k in ops]}
    if partial is not None:
        k, flat, multi = partial
        rep["partial_sums"] = {"op_index": k, "flat_index": flat, "index": list(multi),
                               "order": "the engine's accumulation order (docs: dspsim.harness.stages)",
                               "taps": {name: arrays[f"op{k}_taps_{name}"].tolist() for name in TAP_FIELDS},
                               "acc": int(arrays[f"op{k}_taps_partial_sum"][-1])}
    return rep


def taps_markdown(report: dict) -> str:
    """:func:`summary`'s partial sums as a Markdown table (report.md), one row per tap in accumulation order."""
    ps = report["partial_sums"]
    taps = ps["taps"]
    lines = [f"## Partial sums of operator {ps['op_index']}, output {tuple(ps['index'])} (acc = {ps['acc']})", "",
             "| tap | " + " | ".join(TAP_FIELDS) + " |", "|---" * (len(TAP_FIELDS) + 1) + "|"]
    lines += [f"| {t} | " + " | ".join(str(taps[f][t]) for f in TAP_FIELDS) + " |" for t in range(len(taps["x"]))]
    return "\n".join(lines) + "\n"
