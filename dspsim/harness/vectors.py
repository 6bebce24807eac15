"""Test vectors in and out: ``.npz`` / ``.npy`` files, and C headers for hardware test benches.

A vector set is a dict of named numpy arrays (``input``, ``weight``, ``bias``, ``multiplier``,
``shift``, ``output``, ...) plus a dict of scalar constants (zero points, activation bounds,
strides). :func:`save_npz` writes both into one ``.npz`` (scalars as 0-d arrays);
:func:`c_header` renders them in the style of embedded unit tests::

    #ifndef FC_TIE_H
    #define FC_TIE_H
    #include <stdint.h>
    #define FC_TIE_INPUT_ZERO_POINT (-1)
    #define FC_TIE_INPUT_SIZE 64
    static const int8_t fc_tie_input[64] = { ... };   /* shape (4, 16) */
    #endif

Every array gets a ``<NAME>_<KEY>_SIZE`` define and ``_DIMS`` defines; multidimensional arrays are
flattened in C (row-major) order, the shape is given in a comment and in ``_DIM<i>`` defines.

:func:`load_vectors` reads ``.npz`` / ``.npy`` and raises :class:`VectorError` (a ValueError) with
a one-line message for a missing, unreadable or corrupt file or a missing key.
"""
from __future__ import annotations

import re
import zipfile
from pathlib import Path

import numpy as np

_C_TYPES = {
    "int8": "int8_t", "uint8": "uint8_t", "int16": "int16_t", "uint16": "uint16_t",
    "int32": "int32_t", "uint32": "uint32_t", "int64": "int64_t", "uint64": "uint64_t",
    "float32": "float", "float64": "double", "bool": "uint8_t",
}


class VectorError(ValueError):
    """A vector file that cannot be read, or lacks a requested key."""


def load_vectors(path, key: str | None = None) -> dict:
    """Read a ``.npz`` (all arrays) or ``.npy`` (one array, under its file stem) into a dict.

    With ``key``, return only that entry (still as a one-entry dict); a ``.npy`` file accepts any
    key. Object arrays (pickles) are refused.
    """
    p = Path(path)
    if not p.exists():
        raise VectorError(f"{p}: no such file")
    if p.is_dir():
        raise VectorError(f"{p}: is a directory, expected a .npz or .npy file")
    try:
        data = np.load(p, allow_pickle=False)
        if isinstance(data, np.ndarray):
            arrays = {key or p.stem: data}
        else:
            with data:
                arrays = {k: data[k] for k in data.files}
    except (OSError, ValueError, zipfile.BadZipFile, EOFError, KeyError) as exc:
        raise VectorError(f"{p}: not a readable .npz/.npy file ({type(exc).__name__}: {exc})") from None
    if key is not None:
        if key not in arrays:
            raise VectorError(f"{p}: no array named {key!r}; it has {sorted(arrays)}")
        arrays = {key: arrays[key]}
    return arrays


def save_npz(path, arrays: dict, constants: dict | None = None) -> Path:
    """Write ``arrays`` and ``constants`` (as 0-d arrays) into one uncompressed ``.npz``."""
    p = Path(path)
    merged = {k: np.asarray(v) for k, v in (constants or {}).items()}
    merged.update({k: np.asarray(v) for k, v in arrays.items()})
    np.savez(p, **merged)
    return p


def c_identifier(name: str) -> str:
    """``name`` as a C identifier: non-alphanumerics become ``_``, a leading digit gets ``v``."""
    s = re.sub(r"\W", "_", name)
    return f"v{s}" if not s or s[0].isdigit() else s


def _c_int(v: int, ctype: str) -> str:
    # the most negative value has no literal in C: write it as (-MAX - 1)
    if ctype in ("int32_t", "int64_t") and v == np.iinfo(ctype[:-2]).min:
        return f"({v + 1} - 1)"
    if ctype in ("int64_t", "uint64_t") and abs(v) > 2**31 - 1:
        return f"{v}LL" if ctype == "int64_t" else f"{v}ULL"
    return f"{v}U" if ctype == "uint32_t" and v > 2**31 - 1 else str(v)


def _c_value(v, ctype: str) -> str:
    if ctype == "float":
        f = np.float32(v)
        return "NAN" if np.isnan(f) else ("INFINITY" if f > 0 else "-INFINITY") if np.isinf(f) else f"{str(f)}f"
    if ctype == "double":
        f = float(v)
        return "NAN" if np.isnan(f) else ("INFINITY" if f > 0 else "-INFINITY") if np.isinf(f) else repr(f)
    return _c_int(int(v), ctype)


def _define_value(v) -> str:
    if isinstance(v, (bool, np.bool_)):
        return "1" if v else "0"
    if isinstance(v, (int, np.integer)):
        v = int(v)
        return f"({v})" if v < 0 else str(v)
    if isinstance(v, (float, np.floating)):
        f32 = np.float32(v)
        text = f"{str(f32)}f" if float(f32) == float(v) else repr(float(v))  # a float32 value: its shortest form
        return f"({text})" if v < 0 else text
    return '"' + str(v).replace("\\", "\\\\").replace('"', '\\"') + '"'


def c_header(name: str, arrays: dict, constants: dict | None = None, comment: str = "", per_line: int = 16) -> str:
    """Render a vector set as a self-contained C header (include guard, ``<stdint.h>``).

    Arrays become ``static const <type> <name>_<key>[N] = {...};`` with ``#define
    <NAME>_<KEY>_SIZE N``; scalar constants become ``#define <NAME>_<KEY> value`` (strings quoted).
    """
    ident = c_identifier(name)
    up = ident.upper()
    guard = f"DSPSIM_{up}_H"
    lines = ["/* Generated by `dspsim export`. Do not edit. */"]
    if comment:
        lines += [f"/* {line} */" for line in comment.splitlines()]
    lines += [f"#ifndef {guard}", f"#define {guard}", "", "#include <stdint.h>"]
    if any(np.asarray(a).dtype.kind == "f" for a in arrays.values()):
        lines.append("#include <math.h>")
    lines.append("")
    for key, value in (constants or {}).items():
        lines.append(f"#define {up}_{c_identifier(key).upper()} {_define_value(value)}")
    if constants:
        lines.append("")
    for key, arr in arrays.items():
        a = np.asarray(arr)
        if a.dtype.name not in _C_TYPES:
            raise ValueError(f"c_header: array {key!r} has dtype {a.dtype}, which has no C type here")
        ctype = _C_TYPES[a.dtype.name]
        k = c_identifier(key)
        flat = a.ravel()
        n = max(flat.size, 1)
        lines.append(f"#define {up}_{k.upper()}_SIZE {flat.size}")
        for i, d in enumerate(a.shape):
            lines.append(f"#define {up}_{k.upper()}_DIM{i} {d}")
        body = [_c_value(v, ctype) for v in flat.tolist()] or ["0"]
        rows = [", ".join(body[i : i + per_line]) for i in range(0, len(body), per_line)]
        lines.append(f"/* shape {tuple(a.shape)}, {a.dtype.name}, row-major */")
        lines.append(f"static const {ctype} {ident}_{k}[{n}] = {{")
        lines += [f"    {r}," for r in rows]
        lines.append("};")
        lines.append("")
    lines += [f"#endif /* {guard} */", ""]
    return "\n".join(lines)
