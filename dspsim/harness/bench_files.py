"""The files of a test-bench export: named arrays in each format, one operator's parameters, the umbrella header.

:func:`write_arrays` writes a set of named arrays (and names: strings) under one stem, in one of the export
formats, and returns where each went; :mod:`dspsim.harness.export_model` writes every operator's parameters
through it (:func:`write_operator`), and any other vectors an export adds (accumulator stages) can go the same
way:

* ``npz``: ``<stem>.npz``, one entry per array (names as 0-d string entries);
* ``c-header``: ``<stem>.h``, 0-d arrays and names as ``#define <C_NAME>_<NAME>``, other arrays as
  ``static const <type> <c_name>_<name>[]`` (:func:`dspsim.harness.vectors.c_header`, valid C whatever the
  names);
* ``hex`` / ``bin``: ``<stem>/<name>.<ext>``, one file per array (the names only in the manifest); a ``.hex``
  file opens with ``//`` lines giving what it holds, its shape, dtype, layout and element order.

A stem is a relative path of safe names (:func:`dspsim.harness.safe_io.check_name`). Two array names that
would become one file or C name are refused (ValueError), never merged.

:func:`operator_stem` names an operator's files by its index, its type and its first output tensor's name
(``op003_CONV_2D_conv1_Relu``; every character outside ``[A-Za-z0-9_]`` replaced by ``_``, the tensor part at
most :data:`NAME_PART` characters). :func:`tensor_layout` gives a tensor's axes where its operator says them
(``NHWC``, ``OHWI``...). Every array is written in row-major (C) order, the last axis fastest
(:data:`ELEMENT_ORDER`).
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from .bench_params import SHIFT_CONVENTION, bench_params
from .safe_io import check_name
from .vectors import _unique, c_header, c_identifier, write_array

ELEMENT_ORDER = "row-major (C order): the last axis varies fastest, element 0 first"
NAME_PART = 48
GENERATOR = "dspsim export-model"

# The axes of an operator's tensors where the operator fixes them: (inputs by position, output).
_LAYOUTS = {
    "CONV_2D": (("NHWC", "OHWI", "O"), "NHWC"),
    "DEPTHWISE_CONV_2D": (("NHWC", "1HWC", "C"), "NHWC"),
    "TRANSPOSE_CONV": ((None, "OHWI", "NHWC", "O"), "NHWC"),
    "FULLY_CONNECTED": ((None, "OI", "O"), None),
    "AVERAGE_POOL_2D": (("NHWC",), "NHWC"),
    "MAX_POOL_2D": (("NHWC",), "NHWC"),
    "Conv": (("NCHW", "OIHW", "O"), "NCHW"),
    "QLinearConv": (("NCHW", None, None, "OIHW", None, None, None, None, "O"), "NCHW"),
}


def tensor_layout(model, index: int, ndim: int) -> str | None:
    """The axes of tensor ``index`` (``ndim`` axes: its value's, where the model leaves its shape open) as the
    first operator that fixes them reads or writes it (``NHWC``, ``OHWI``, ``1HWC``, ``OI``, ``NCHW``...), or None
    where no operator does."""
    for k, op in model.operators:
        ins, out = _LAYOUTS.get(op, ((), None))
        found = [ins[j] for j, i in enumerate(model.operator_inputs(k)) if i == index and j < len(ins)]
        if index in model.outputs_of(k)[:1]:
            found.append(out)
        for layout in found:
            if layout is not None and len(layout) == ndim:
                return layout
    return None


def array_comment(what: str, a: np.ndarray, layout: str | None = None) -> str:
    """The comment that opens a vector file: what it holds, shape, dtype, layout and element order, and how
    each element is written."""
    word = (f"IEEE-754 {a.dtype.name} bit pattern" if a.dtype.kind == "f"
            else "two's complement" if a.dtype.kind == "i" else "unsigned")
    return (f"{what}\nshape {tuple(a.shape)}, {a.dtype.name}, layout {layout or 'as the shape'}\n"
            f"element order: {ELEMENT_ORDER}; one element per line, {2 * a.dtype.itemsize} hex digits, {word}")


def operator_stem(model, op_index: int) -> str:
    """``op<index:03d>_<OP TYPE>_<first output tensor's name>`` (module docstring), a safe file name."""
    op = dict(model.operators)[op_index]
    outs = [i for i in model.outputs_of(op_index) if i >= 0]
    name = model.tensor_info(outs[0]).name if outs else ""
    stem = f"op{op_index:03d}_{c_identifier(op)}" + (f"_{c_identifier(name)[:NAME_PART]}" if name else "")
    return check_name(stem, "operator file name", "export_model")


def write_arrays(out, stem: str, arrays: dict, fmt: str, *, names: dict | None = None, c_name: str | None = None,
                 comment: str = "", hex_style: str = "readmemh", includes=(), layouts: dict | None = None,
                 notes: dict | None = None) -> dict:
    """Write ``arrays`` (name -> ndarray) and ``names`` (name -> str) under ``stem`` in ``fmt``.

    Parameters
    ----------
    out : path-like
        The export folder.
    stem : str
        A relative path of safe names (``op003_CONV_2D_conv1``); a folder for ``hex`` / ``bin``.
    arrays, names : dict
    fmt : str
        ``npz``, ``c-header``, ``hex`` or ``bin``.
    c_name : str, optional
        The C prefix of a header's macros and arrays (default: the stem's last part).
    comment : str
        What the arrays are: the header's comment, the first lines of each ``.hex`` file.
    hex_style : str
        ``.hex`` words (:data:`dspsim.harness.vectors.HEX_STYLES`).
    includes : sequence of str
        Headers (relative to ``out``) a C header includes.
    layouts : dict, optional
        name -> axes (``NHWC``) of arrays that have them.
    notes : dict, optional
        name -> more comment for that array's ``.hex`` file (a shift's sign convention).

    Returns
    -------
    dict
        name -> ``{"file", "key"}``: the file (relative to ``out``) and the npz entry or C name (None for
        ``hex`` / ``bin``), for every array and name written (names are not written in ``hex`` / ``bin``).
    """
    out = Path(out)
    parts = [check_name(p, "file name", "write_arrays") for p in str(stem).split("/")]
    names = names or {}
    layouts, notes = layouts or {}, notes or {}
    _unique([(str(k), k) for k in [*arrays, *names]], c_identifier, "names", "write_arrays")
    (out / Path(*parts[:-1])).mkdir(parents=True, exist_ok=True)
    base = "/".join(parts)
    if fmt == "npz":
        np.savez(out / f"{base}.npz", **{c_identifier(k): np.asarray(a) for k, a in arrays.items()},
                 **{c_identifier(k): np.asarray(v) for k, v in names.items()})
        return {k: {"file": f"{base}.npz", "key": c_identifier(k)} for k in [*arrays, *names]}
    if fmt == "c-header":
        prefix = c_identifier(c_name or parts[-1])
        scalars = {k: a.item() for k, a in arrays.items() if np.ndim(a) == 0}
        scalars.update(names)
        vectors = {k: a for k, a in arrays.items() if np.ndim(a) > 0}
        text = c_header(prefix, vectors, scalars, comment=comment, generator=GENERATOR, includes=includes)
        (out / f"{base}.h").write_text(text, encoding="utf-8")
        keys = {k: f"{prefix.upper()}_{c_identifier(k).upper()}" for k in scalars}
        keys.update({k: f"{prefix}_{c_identifier(k)}" for k in vectors})
        return {k: {"file": f"{base}.h", "key": keys[k]} for k in [*arrays, *names]}
    (out / base).mkdir(exist_ok=True)
    files = {}
    for k, a in arrays.items():
        a = np.asarray(a)
        f = f"{base}/{c_identifier(k)}.{fmt}"
        what = f"{comment.splitlines()[0] if comment else base}: {k}" + (f"\n{notes[k]}" if k in notes else "")
        write_array(out / f, a.reshape(-1), hex_style=hex_style, comment=array_comment(what, a, layouts.get(k)))
        files[k] = {"file": f, "key": None}
    return files


def write_operator(model, op_index: int, fmt: str, out, *, tensor_files: dict, hex_style: str = "readmemh") -> dict:
    """Write operator ``op_index``'s parameters (:func:`dspsim.harness.bench_params.bench_params`) under
    :func:`operator_stem`; a C header also includes the headers of its tensors (``tensor_files``: tensor index
    -> file). Returns the operator's manifest entry: ``{"op_index", "op", "file", "inputs", "outputs",
    "rounding", "settings" (the names), "params": {name: {"file", "key", "shape", "dtype", "value" (scalars)}}}``.
    """
    p = bench_params(model, op_index)
    ins, outs = model.operator_inputs(op_index), model.outputs_of(op_index)
    stem = operator_stem(model, op_index)
    tensors = {f"input{j}_tensor": i for j, i in enumerate(ins)}
    tensors.update({f"output{j}_tensor": i for j, i in enumerate(outs)})
    extra = {"op_type": p.op, **({"rounding_rule": p.rounding} if p.rounding else {})}
    if set(extra) & set(p.names):
        raise ValueError(f"export_model: operator {op_index} has a parameter named {sorted(set(extra) & set(p.names))}"
                         ", a name the export gives the operator's type or rounding rule")
    names = {**p.names, **extra}
    _unique([*p.numbers, *names], c_identifier, f"operator {op_index}'s parameters", "export_model")
    numbers = dict(p.numbers)
    if fmt in ("c-header", "npz"):  # the tensors' indices travel with the parameters; hex / bin: the manifest
        numbers.update({k: np.int32(v) for k, v in tensors.items()})
    lines = [f"operator {op_index} {p.op}: parameters as prepared"]
    lines += [f"{k[:-7]}: tensor {i} {model.tensor_info(i).name!r}" for k, i in tensors.items() if i >= 0]
    lines += [f"rounding: {p.rounding}" if p.rounding else "rounding: none named (no requantization parameters)",
              f"shifts: {SHIFT_CONVENTION}", f"arrays: {ELEMENT_ORDER}"]
    includes = [tensor_files[i] for i in [*ins, *outs] if i in tensor_files] if fmt == "c-header" else ()
    notes = {k: (f"shifts: {SHIFT_CONVENTION}" + (f"\nrounding: {p.rounding}" if p.rounding else ""))
             for k in numbers if "shift" in k or "exponent" in k or "multiplier" in k}
    files = write_arrays(out, stem, numbers, fmt, names=names, c_name=f"op{op_index:03d}", comment="\n".join(lines),
                         hex_style=hex_style, includes=list(dict.fromkeys(includes)), notes=notes)
    params = {}
    for k, a in p.numbers.items():
        params[k] = dict(files[k], shape=list(a.shape), dtype=a.dtype.name, value=a.item() if a.ndim == 0 else None)
    file = {"c-header": f"{stem}.h", "npz": f"{stem}.npz"}.get(fmt, f"{stem}/")  # hex / bin: a folder
    return {"op_index": op_index, "op": p.op, "file": file, "inputs": ins, "outputs": outs, "rounding": p.rounding,
            "settings": p.names, "params": params}


def write_umbrella(out, headers, *, inputs, outputs) -> str:
    """``model.h``: includes every header of the export (``headers``, relative to ``out``), with the model's
    input and output tensor indices. Returns its file name."""
    text = c_header("model", {"input_tensors": np.asarray(inputs, np.int32),
                              "output_tensors": np.asarray(outputs, np.int32)},
                    {"num_headers": len(headers)}, generator=GENERATOR, includes=list(headers),
                    comment="every tensor (t<k>.h) and every operator (op<index>_<type>_<tensor>.h) of one run")
    (Path(out) / "model.h").write_text(text, encoding="utf-8")
    return "model.h"
