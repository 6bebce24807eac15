"""What a prepared ONNX operator shows a test bench (``Prepared.params``, :meth:`Model.operator_params`): the
keywords its kernel runs with, unfolded into numbers and names.

A prepare function hands the graph one ``params`` dict (:func:`with_params`) and its ``run`` fills it from the
objects it prepares: the input's shape and any parameter fed as a graph input decide them, so an ONNX operator's
parameters are there after its first run (``dspsim export-model`` runs the model first). Names follow the TFLite
front end's (``input_zero_point``, ``multiplier`` / ``shift`` or ``scale``, ``requant_scheme``, ``tie``,
``act_min`` / ``act_max``, ``stride``, ``pad_top``...); floats stay float32 where the engine holds float32. The
256-entry tables of the com.microsoft operators (``table``, ``input<k>_table``, ``exp_table``) are indexed by the
code's byte (``codes.view(uint8)``), as ONNX Runtime indexes them.
"""
from __future__ import annotations

from enum import Enum

import numpy as np

from ...accumulator import Accumulator
from ...requant import Requant, output_range

_FUNC = "dspsim.onnx.load_model"


def with_params(run, params: dict):
    """``run`` carrying ``params``, the dict the front end gives the graph as the operator's ``Prepared.params``
    (``run`` fills it)."""
    run.params = params
    return run


def accumulator_params(acc: Accumulator | None) -> dict:
    """A MAC kernel's accumulator as parameters (None: the exact int32, wrapping)."""
    acc = Accumulator() if acc is None else acc
    return {"accumulator_bits": acc.bits, "accumulator_overflow": acc.overflow, "pair_saturation": acc.pair_saturation}


def requant_params(rq) -> dict:
    """A :class:`~dspsim.Requant` as parameters (:meth:`Requant.params`); a list of them (QLinearMatMul with B's
    scales per batch) as one row of each number per batch."""
    if isinstance(rq, Requant):
        return _float32_scale(rq.params())
    rows = [_float32_scale(r.params()) for r in rq]
    if len(rows) == 1:
        return rows[0]
    return {k: v if isinstance(v, (str, Enum)) else np.stack([np.asarray(r[k]) for r in rows])
            for k, v in rows[0].items()}


def _float32_scale(params: dict) -> dict:
    """The scale of the float32 scheme as the float32 value the engine multiplies by."""
    if params["requant_scheme"] == "float32" and "scale" in params:
        params["scale"] = np.asarray(params["scale"], np.float32)
    return params


def kernel_params(kw: dict) -> dict:
    """A MAC kernel's keywords (:func:`dspsim.conv2d`, :func:`dspsim.fully_connected`...) as parameters: the
    padding as ``pad_top`` / ``pad_bottom`` / ``pad_left`` / ``pad_right``, the requantization and the accumulator
    unfolded, ``act_min`` / ``act_max`` resolved against ``out_dtype`` as the kernel resolves them."""
    out = {}
    for name, v in kw.items():
        if name == "padding":
            (out["pad_top"], out["pad_bottom"]), (out["pad_left"], out["pad_right"]) = v
        elif name == "requant":
            out.update(requant_params(v))
        elif name == "accumulator":
            out.update(accumulator_params(v))
        elif name not in ("act_min", "act_max"):
            out[name] = v
    if "out_dtype" in kw:
        _, out["act_min"], out["act_max"] = output_range(kw["out_dtype"], kw.get("act_min"), kw.get("act_max"), _FUNC)
    return out


def qparams(prefix: str, scale, zero_point) -> dict:
    """``<prefix>_scale`` (float32, as ONNX Runtime reads it) and ``<prefix>_zero_point`` of a per-tensor
    quantized operand."""
    return {f"{prefix}_scale": np.float32(np.asarray(scale).reshape(-1)[0]),
            f"{prefix}_zero_point": 0 if zero_point is None else int(np.asarray(zero_point).reshape(-1)[0])}
