"""Every tensor of one model run, and every operator's integer parameters, as test-bench vectors.

:func:`export_model` runs a model (TFLite or ONNX, :func:`dspsim.load_model`) once and writes, in one of
:data:`FORMATS`:

* every tensor: the model inputs, every constant (weights, biases, shapes) and every operator's
  output, named ``t<tensor index>`` (the dump naming of :mod:`dspsim.harness.dumps`, so a device
  that writes the same files can be diffed with ``dspsim diagnose``);
* every operator's parameters as prepared at load, as numbers and names
  (:func:`dspsim.harness.bench_params.bench_params`: op type, stride, dilation, the explicit padding
  ``pad_top`` / ``pad_bottom`` / ``pad_left`` / ``pad_right``, zero points, activation bounds, multipliers and
  shifts per channel, the rounding rule named, SOFTMAX's / LSTM's integer parameters, every lookup table),
  one file (or folder) per operator named ``op<index:03d>_<OP TYPE>_<first output's name>``
  (:func:`dspsim.harness.bench_files.operator_stem`);
* ``manifest.json``, mapping each file (and entry) to its tensor or parameter, shape, dtype and layout.

Formats:

* ``npz``: ``tensors.npz`` (entries ``t<k>``) and ``<op stem>.npz`` per operator (one entry per parameter,
  names as string entries, the tensor indices as ``input<j>_tensor`` / ``output<j>_tensor``);
* ``c-header``: ``t<k>.h`` per tensor (``static const <type> t<k>_value[N]``, ``T<K>_VALUE_SIZE``,
  ``_DIM<i>``, and ``T<K>_ZERO_POINT`` / ``T<K>_SCALE`` for per-tensor quantized tensors), ``<op stem>.h``
  per operator (scalars and names as ``#define OP<III>_<NAME>``, per-channel arrays and tables as
  ``op<iii>_<name>[]``; it includes its tensors' headers), and ``model.h``, which includes them all;
  each self-contained and warning-free under ``gcc -Wall -Werror``;
* ``hex`` / ``bin``: one file per tensor (``t<k>.hex``) and per parameter (``<op stem>/<name>.hex``),
  raw little-endian, or one word per line (``hex_style``: ``readmemh``, bare digits, or ``0x``) after ``//``
  lines giving shape, dtype, layout and element order (see :mod:`dspsim.harness.vectors`).

The output directory is itself a dump directory: ``dspsim diagnose --dumps`` reads its ``t<k>``
files (and ignores the manifest and the operators' files and folders).

:func:`export_frames` exports T frames of a streaming model, the state carried from frame to frame: one
such export per frame in ``frame<t:04d>/``, and a manifest of the frames (schema
``dspsim.export-model-frames/1``); ``dspsim diagnose`` reads the same layout as T frames of dumps.

Manifest schema (``dspsim.export-model/1``)::

    {"schema", "model", "engine" (the engine, and a device's changes, as words), "format",
     "hex_style" (null but for hex), "conventions": {"shift", "element_order"},
     "inputs": [tensor], "outputs": [tensor],
     "tensors": [{"tensor", "name", "role" ("input" | "constant" | "activation" | "state": a variable
                  tensor the run wrote, with its value after the run), "op_index" (the
                  producing operator, null for inputs and constants), "file", "key" (npz entry or
                  C array; null for hex/bin), "shape", "dtype", "layout" ("NHWC", "OHWI"... or null),
                  "scale", "zero_point"}],
     "operators": [{"op_index", "op", "file" (its header, npz or folder), "inputs", "outputs",
                    "rounding" (the rule, named, or null),
                    "params": {name: {"file", "key", "shape", "dtype", "value" (scalars)}},
                    "settings": {name: str} (the named choices: padding, requant_scheme, tie...)}]}
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from . import _model_access as access
from .dumps import model_tensors
from .stages import capture, parse_partial_sums, summary
from .bench_files import ELEMENT_ORDER, SHIFT_CONVENTION, array_comment, tensor_layout, write_operator, write_umbrella
from .vectors import HEX_STYLES, c_header, write_array

SCHEMA = "dspsim.export-model/1"
FRAMES_SCHEMA = "dspsim.export-model-frames/1"
STATE_WRITE = " (state write)"  # how Model.trace names a state write (dspsim.graph.executor)
FORMATS = ("npz", "c-header", "hex", "bin")


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


def _write_tensors(model, trace, fmt: str, out: Path, hex_style: str = "readmemh") -> list:
    """Write every tensor of the run ``trace``; return their manifest rows."""
    rows, npz = [], {}
    for info, role, op_index, value in _run_tensors(model, trace):
        key = f"t{info.index}"
        layout = tensor_layout(model, info.index, value.ndim)
        row = {"tensor": info.index, "name": info.name, "role": role, "op_index": op_index, "file": None,
               "key": None, "shape": list(value.shape), "dtype": value.dtype.name, "layout": layout,
               "scale": info.scale, "zero_point": info.zero_point}
        what = f"tensor {info.index} {info.name!r} ({role}" + (f" of operator {op_index}" if op_index is not None
                                                               else "") + ")"
        if fmt == "npz":
            npz[key] = value
            row["file"], row["key"] = "tensors.npz", key
        elif fmt == "c-header":
            consts = {"tensor": info.index}
            if info.zero_point is not None:
                consts.update(zero_point=info.zero_point, scale=info.scale)
            text = c_header(key, {"value": value}, consts, generator="dspsim export-model",
                            comment=f"{what}, shape {tuple(value.shape)}, {value.dtype.name}, layout "
                                    f"{layout or 'as the shape'}\n{ELEMENT_ORDER}")
            (out / f"{key}.h").write_text(text, encoding="utf-8")
            row["file"], row["key"] = f"{key}.h", f"{key}_value"
        else:
            row["file"] = write_array(out / f"{key}.{fmt}", value, comment=array_comment(what, value, layout),
                                      hex_style=hex_style).name
        rows.append(row)
    if npz:
        np.savez(out / "tensors.npz", **npz)
    return rows


def _write_operators(model, fmt: str, out: Path, tensors: list, hex_style: str) -> list:
    """Write every operator's parameters (:func:`dspsim.harness.bench_files.write_operator`) and, for C headers,
    ``model.h`` including every header; return the operators' manifest entries."""
    files = {r["tensor"]: r["file"] for r in tensors}
    operators = [write_operator(model, k, fmt, out, tensor_files=files, hex_style=hex_style)
                 for k, _ in model.operators]
    if fmt == "c-header":
        write_umbrella(out, [*files.values(), *(o["file"] for o in operators)],
                       inputs=[i.index for i in model.inputs], outputs=[o.index for o in model.outputs])
    return operators


def _write_stages(arrays: dict, fmt: str, out: Path, hex_style: str) -> list:
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
            f = write_array(out / "stages" / f"{key}.{fmt}", a.reshape(-1), hex_style=hex_style,
                            comment=array_comment(f"accumulator stage {key} (dspsim.harness.stages)", a))
            row["file"] = f"stages/{f.name}"
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
                 hex_style: str = "readmemh", stages: bool = False, partial_sums=None) -> dict:
    """Write every tensor and operator parameter of one run of ``model`` on ``inputs`` into ``out``.

    ``out`` must exist (the CLI passes an :func:`atomic_dir` temporary). Returns the manifest
    (also written as ``out/manifest.json``). ``hex_style``: the words of the ``.hex`` files
    (:data:`dspsim.harness.vectors.HEX_STYLES`). Raises ValueError for an unknown format. ``stages`` adds every MAC
    operator's accumulator stages and ``partial_sums`` (``"OP:INDEX"``) one output's taps
    (:mod:`dspsim.harness.stages`), listed in the manifest's ``stages``.
    """
    if fmt not in FORMATS:
        raise ValueError(f"export_model: format must be one of {', '.join(FORMATS)}, got {fmt!r}")
    if hex_style not in HEX_STYLES:
        raise ValueError(f"export_model: hex_style must be one of {', '.join(HEX_STYLES)}, got {hex_style!r}")
    out = Path(out)
    partial = None if partial_sums is None else parse_partial_sums(partial_sums, model)
    trace = model.trace(inputs)
    manifest = {"schema": SCHEMA, "model": model_name, "engine": engine, "format": fmt,
                "hex_style": hex_style if fmt == "hex" else None,
                "conventions": {"shift": SHIFT_CONVENTION, "element_order": ELEMENT_ORDER},
                "inputs": [i.index for i in model.inputs], "outputs": [o.index for o in model.outputs],
                "tensors": _write_tensors(model, trace, fmt, out, hex_style)}
    manifest["operators"] = _write_operators(model, fmt, out, manifest["tensors"], hex_style)
    if stages or partial:
        arrays = capture(model, trace, partial and partial[:2])
        manifest["stages"] = dict(summary(model, arrays, partial), files=_write_stages(arrays, fmt, out, hex_style))
    (out / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n", encoding="utf-8")
    return manifest


def frame_folder(t: int) -> str:
    """The subfolder of frame ``t`` in a multi-frame export (and a multi-frame dump directory)."""
    return f"frame{t:04d}"


def export_frames(model, frames, fmt: str, out: Path, *, model_name: str = "", engine: str = "",
                  hex_style: str = "readmemh", stages: bool = False, partial_sums=None) -> dict:
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
        m = export_model(model, inputs, fmt, sub, model_name=model_name, engine=engine, hex_style=hex_style,
                         stages=stages, partial_sums=partial_sums)
        state.update(r["tensor"] for r in m["tensors"] if r["role"] == "state")
        folders.append(sub.name)
    manifest = {"schema": FRAMES_SCHEMA, "model": model_name, "engine": engine, "format": fmt,
                "frames": len(folders), "folders": folders, "inputs": [i.index for i in model.inputs],
                "outputs": [o.index for o in model.outputs], "state": sorted(state)}
    (out / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n", encoding="utf-8")
    return manifest
