"""Every tensor of one model run, and every operator's integer parameters, as test-bench vectors.

:func:`export_model` runs a model (TFLite or ONNX, :func:`dspsim.load_model`) once and writes, in one of
:data:`FORMATS`:

* every tensor: the model inputs, every constant (weights, biases, shapes) and every operator's
  output, named ``t<tensor index>`` (the dump naming of :mod:`dspsim.harness.dumps`, so a device
  that writes the same files can be diffed with ``dspsim diagnose``);
* every operator's integer parameters (``Model.operator_params``: zero points, activation bounds,
  strides, multipliers and shifts, as prepared at load; FC/conv/depthwise carry their
  requantization's ``requant_scheme`` and its ``multiplier`` / ``shift``, or the float ``scale`` of
  LiteRT's FC), named ``op<index>_<parameter>``;
* ``manifest.json``, mapping each file (and entry) to its tensor or parameter, shape and dtype.

Formats:

* ``npz``: ``tensors.npz`` (entries ``t<k>``) and ``params.npz`` (entries ``op<i>_<name>``);
* ``c-header``: ``t<k>.h`` per tensor (``static const <type> t<k>_value[N]``, ``T<K>_VALUE_SIZE``,
  ``_DIM<i>``, and ``T<K>_ZERO_POINT`` / ``T<K>_SCALE`` for per-tensor quantized tensors) and
  ``params.h`` (scalars as ``#define PARAMS_OP<I>_<NAME>``, per-channel arrays as
  ``params_op<i>_<name>[]``), each self-contained and warning-free under ``gcc -Wall -Werror``;
* ``hex`` / ``bin``: one file per tensor (``t<k>.hex``) and per parameter (``params/op<i>_<name>.hex``),
  ``$readmemh`` text or raw little-endian (see :mod:`dspsim.harness.vectors`).

The output directory is itself a dump directory: ``dspsim diagnose --dumps`` reads its ``t<k>``
files (and ignores the manifest, ``params.*`` and ``params/``).

:func:`export_frames` exports T frames of a streaming model, the state carried from frame to frame: one
such export per frame in ``frame<t:04d>/``, and a manifest of the frames (schema
``dspsim.export-model-frames/1``); ``dspsim diagnose`` reads the same layout as T frames of dumps.

Manifest schema (``dspsim.export-model/1``)::

    {"schema", "model", "engine" (the engine, and a device's changes, as words), "format",
     "inputs": [tensor], "outputs": [tensor],
     "tensors": [{"tensor", "name", "role" ("input" | "constant" | "activation" | "state": a variable
                  tensor the run wrote, with its value after the run), "op_index" (the
                  producing operator, null for inputs and constants), "file", "key" (npz entry or
                  C array; null for hex/bin), "shape", "dtype", "scale", "zero_point"}],
     "operators": [{"op_index", "op", "inputs", "outputs",
                    "params": {name: {"file", "key", "shape", "dtype", "value" (scalars)}},
                    "settings": {name: value} (the other parameters: float scales, padding, scheme)}]}
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from . import _model_access as access
from .dumps import model_tensors
from .stages import capture, parse_partial_sums, summary
from .vectors import c_header, c_identifier, write_array

SCHEMA = "dspsim.export-model/1"
FRAMES_SCHEMA = "dspsim.export-model-frames/1"
STATE_WRITE = " (state write)"  # how Model.trace names a state write (dspsim.graph.executor)
FORMATS = ("npz", "c-header", "hex", "bin")
_INT32 = np.iinfo(np.int32)


def _param_arrays(params: dict, op_index: int) -> dict:
    """``op<i>_<name>`` -> array for every integer (or integer-array) parameter; floats, strings
    and None stay in the manifest only."""
    out = {}
    for name, v in params.items():
        if v is None or isinstance(v, str):
            continue
        a = np.asarray(v)
        if a.dtype.kind == "b":
            a = a.astype(np.uint8)
        if a.dtype.kind not in "iu":
            continue
        if a.size and _INT32.min <= a.min() and a.max() <= _INT32.max:
            a = a.astype(np.int32)  # zero points, shifts, bounds, multipliers: int32 as TFLite holds them
        key = f"op{op_index}_{c_identifier(name)}"
        if key in out:  # two names, one file / C identifier: refused, never merged
            raise ValueError(f"export_model: operator {op_index}'s parameters {name!r} and another both become "
                             f"{key!r}")
        out[key] = a
    return out


def _json_value(v):
    """A parameter that is not an integer array (scales, padding, scheme names) as JSON."""
    if isinstance(v, (str, type(None), bool, int, float)):
        return v
    a = np.asarray(v)
    return a.tolist() if a.dtype.kind in "iufb" else str(v)


def _run_tensors(model, trace) -> list:
    """(info, role, producing op index, value) of every tensor of the run ``trace``, by tensor index."""
    producer = {e.tensor: e for e in trace}
    rows = []
    for info in model_tensors(model):
        const = access.tensor_value(model, info.index)
        e = producer.get(info.index)
        if const is not None:
            rows.append((info, "constant", None, np.asarray(getattr(const, "codes", const))))
        elif e is not None:  # an ONNX 4-bit / float8 value is written as its codes
            role = "input" if e.op_index < 0 else "state" if e.name.endswith(STATE_WRITE) else "activation"
            rows.append((info, role, None if e.op_index < 0 else e.op_index,
                         np.asarray(getattr(e.value, "codes", e.value))))
    return rows


def _write_tensors(model, trace, fmt: str, out: Path) -> list:
    """Write every tensor of the run ``trace``; return their manifest rows."""
    rows, npz = [], {}
    for info, role, op_index, value in _run_tensors(model, trace):
        key = f"t{info.index}"
        row = {"tensor": info.index, "name": info.name, "role": role, "op_index": op_index, "file": None,
               "key": None, "shape": list(value.shape), "dtype": value.dtype.name, "scale": info.scale,
               "zero_point": info.zero_point}
        if fmt == "npz":
            npz[key] = value
            row["file"], row["key"] = "tensors.npz", key
        elif fmt == "c-header":
            consts = {"tensor": info.index}
            if info.zero_point is not None:
                consts.update(zero_point=info.zero_point, scale=info.scale)
            text = c_header(key, {"value": value}, consts, generator="dspsim export-model",
                            comment=f"tensor {info.index} {info.name!r} ({role}), shape {tuple(value.shape)}, "
                                    f"{value.dtype.name}")
            (out / f"{key}.h").write_text(text, encoding="utf-8")
            row["file"], row["key"] = f"{key}.h", f"{key}_value"
        else:
            row["file"] = write_array(out / f"{key}.{fmt}", value).name
        rows.append(row)
    if npz:
        np.savez(out / "tensors.npz", **npz)
    return rows


def _write_operators(model, fmt: str, out: Path) -> list:
    """Write every operator's integer parameters; return the operators' manifest entries."""
    operators, all_params = [], {}
    for op_index, name in model.operators:
        raw = model.operator_params(op_index)
        arrays = _param_arrays(raw, op_index)
        settings = {k: _json_value(v) for k, v in raw.items() if f"op{op_index}_{c_identifier(k)}" not in arrays}
        params = {}
        for key, a in arrays.items():
            p = {"file": None, "key": None, "shape": list(a.shape), "dtype": a.dtype.name,
                 "value": a.item() if a.ndim == 0 else None}
            if fmt == "npz":
                p["file"], p["key"] = "params.npz", key
            elif fmt == "c-header":
                p["file"], p["key"] = "params.h", (f"PARAMS_{key.upper()}" if a.ndim == 0 else f"params_{key}")
            else:
                (out / "params").mkdir(exist_ok=True)
                write_array(out / "params" / f"{key}.{fmt}", a.reshape(-1))
                p["file"] = f"params/{key}.{fmt}"
            params[key[len(f"op{op_index}_"):]] = p
        all_params.update(arrays)
        operators.append({"op_index": op_index, "op": name, "inputs": model.operator_inputs(op_index),
                          "outputs": model.outputs_of(op_index), "params": params, "settings": settings})
    if fmt == "npz" and all_params:
        np.savez(out / "params.npz", **all_params)
    if fmt == "c-header":
        scalars = {k: int(a) for k, a in all_params.items() if a.ndim == 0}
        arrays = {k: a for k, a in all_params.items() if a.ndim > 0}
        text = c_header("params", arrays, scalars, generator="dspsim export-model",
                        comment="integer parameters of every operator, as prepared at load")
        (out / "params.h").write_text(text, encoding="utf-8")
    return operators


def _write_stages(arrays: dict, fmt: str, out: Path) -> list:
    """Write the stage vectors of :func:`dspsim.harness.stages.capture` (``op<k>_<stage>``) as the tensors are
    written: ``stages.npz``, ``stages.h``, or ``stages/op<k>_<stage>.<fmt>``; return their manifest rows."""
    rows = []
    for key, a in arrays.items():
        row = {"key": key, "file": None, "shape": list(a.shape), "dtype": a.dtype.name}
        if fmt == "npz":
            row["file"] = "stages.npz"
        elif fmt == "c-header":
            row["file"], row["key"] = "stages.h", f"stages_{key}"
        else:
            (out / "stages").mkdir(exist_ok=True)
            row["file"] = f"stages/{write_array(out / 'stages' / f'{key}.{fmt}', a.reshape(-1)).name}"
        rows.append(row)
    if arrays and fmt == "npz":
        np.savez(out / "stages.npz", **arrays)
    if arrays and fmt == "c-header":
        text = c_header("stages", arrays, {}, generator="dspsim export-model",
                        comment="MAC operators' accumulator before and after the bias and requantized value before "
                                "the output zero point and clamp (dspsim.harness.stages); per-tap partial sums")
        (out / "stages.h").write_text(text, encoding="utf-8")
    return rows


def export_model(model, inputs, fmt: str, out: Path, *, model_name: str = "", engine: str = "",
                 stages: bool = False, partial_sums=None) -> dict:
    """Write every tensor and operator parameter of one run of ``model`` on ``inputs`` into ``out``.

    ``out`` must exist (the CLI passes an :func:`atomic_dir` temporary). Returns the manifest
    (also written as ``out/manifest.json``). Raises ValueError for an unknown format. ``stages`` adds every MAC
    operator's accumulator stages and ``partial_sums`` (``"OP:INDEX"``) one output's taps
    (:mod:`dspsim.harness.stages`), listed in the manifest's ``stages``.
    """
    if fmt not in FORMATS:
        raise ValueError(f"export_model: format must be one of {', '.join(FORMATS)}, got {fmt!r}")
    out = Path(out)
    partial = None if partial_sums is None else parse_partial_sums(partial_sums, model)
    trace = model.trace(inputs)
    manifest = {"schema": SCHEMA, "model": model_name, "engine": engine, "format": fmt,
                "inputs": [i.index for i in model.inputs], "outputs": [o.index for o in model.outputs],
                "tensors": _write_tensors(model, trace, fmt, out), "operators": _write_operators(model, fmt, out)}
    if stages or partial:
        arrays = capture(model, trace, partial and partial[:2])
        manifest["stages"] = dict(summary(model, arrays, partial), files=_write_stages(arrays, fmt, out))
    (out / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n", encoding="utf-8")
    return manifest


def frame_folder(t: int) -> str:
    """The subfolder of frame ``t`` in a multi-frame export (and a multi-frame dump directory)."""
    return f"frame{t:04d}"


def export_frames(model, frames, fmt: str, out: Path, *, model_name: str = "", engine: str = "", stages: bool = False,
                  partial_sums=None) -> dict:
    """Export T frames of a (streaming) model: ``frames`` is a list of per-frame input lists, run in order from
    the model's current state, the state carried from frame to frame (as :meth:`Model.run` does without
    :meth:`~Model.reset`).

    Each frame goes into ``out/frame<t:04d>/`` (:func:`frame_folder`) as a complete single-frame export
    (:func:`export_model`: its own ``manifest.json``; the variable tensors the frame wrote, LSTM / SVDF state,
    have the role ``"state"`` and hold their values after the frame). ``out/manifest.json`` (schema
    ``dspsim.export-model-frames/1``) lists the frames: ``{"schema", "model", "engine", "format", "frames" (T),
    "folders", "inputs", "outputs", "state" (the tensors written as state)}``. Returns it.
    """
    if fmt not in FORMATS:
        raise ValueError(f"export_model: format must be one of {', '.join(FORMATS)}, got {fmt!r}")
    out = Path(out)
    folders, state = [], set()
    for t, inputs in enumerate(frames):
        sub = out / frame_folder(t)
        sub.mkdir()
        m = export_model(model, inputs, fmt, sub, model_name=model_name, engine=engine, stages=stages,
                         partial_sums=partial_sums)
        state.update(r["tensor"] for r in m["tensors"] if r["role"] == "state")
        folders.append(sub.name)
    manifest = {"schema": FRAMES_SCHEMA, "model": model_name, "engine": engine, "format": fmt,
                "frames": len(folders), "folders": folders, "inputs": [i.index for i in model.inputs],
                "outputs": [o.index for o in model.outputs], "state": sorted(state)}
    (out / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n", encoding="utf-8")
    return manifest
