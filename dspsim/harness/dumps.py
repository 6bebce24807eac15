"""A device's dump directory, matched to a model's tensors.

A dump directory holds one file per tensor the device dumped, named

* ``t<tensor index>.<ext>`` (the index in the model's subgraph, as ``dspsim export-model`` and
  ``Model.trace`` number them), or ``#<tensor index>.<ext>``, always the index, or
* the tensor's name with every character outside ``[A-Za-z0-9_.-]`` replaced by ``_``
  (:func:`sanitize_name`), then ``.<ext>``,

in any format of :data:`dspsim.harness.vectors.ARRAY_FORMATS` (``.npy``, raw little-endian
``.bin``, ``$readmemh`` ``.hex``, decimal ``.txt``; see :mod:`dspsim.harness.vectors`). The raw
formats take the tensor's dtype and shape from the model; a flat ``.npy`` is reshaped to the
tensor's shape (a ``.npy`` of another shape is refused unless it differs only by axes of size 1). Tensors
that were not dumped are simply absent. Hidden files, subdirectories and
files with other extensions (a README, a ``manifest.json``) are listed as ignored.

A stem that means two tensors is refused, never guessed: a name that two tensors sanitize to, and ``t<k>`` when
another tensor is named ``t<k>`` (tensor 0 named ``t12`` and tensor 12: ``t12`` is either; dump them as ``#0`` and
``#12``).

Every problem (a name that matches no tensor or two, two files for one tensor, a wrong element
count, bad hex, an unreadable file, a float dump of an integer tensor or the reverse) raises :class:`DumpError`
with one line naming the file.
"""
from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ._model_access import num_tensors
from .vectors import ARRAY_FORMATS, VectorError, read_array

_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]")
_INDEX_NAME = re.compile(r"[t#](\d+)")


class DumpError(VectorError):
    """A dump directory or file that cannot be matched to the model or read."""


def sanitize_name(name: str) -> str:
    """``name`` with every character outside ``[A-Za-z0-9_.-]`` replaced by ``_`` (a dump file stem)."""
    return _UNSAFE.sub("_", name)


def model_tensors(model, values=None) -> list:
    """:class:`TensorInfo` of every tensor of the model's subgraph, by index; where the model leaves a tensor's
    dtype or shape open (an ONNX activation), the dtype and shape of its value in ``values`` (tensor index ->
    value of a run), when given."""
    infos = [model.tensor_info(i) for i in range(num_tensors(model))]
    if values is None:
        return infos
    out = []
    for info in infos:
        v = values.get(info.index)
        open_shape = info.shape is None or any(d is None for d in info.shape)
        if isinstance(v, np.ndarray) and (info.dtype is None or open_shape):
            info = dataclasses.replace(info, dtype=v.dtype, shape=v.shape)
        out.append(info)
    return out


def dump_stems(tensors) -> dict:
    """File stem -> the tensor indices it may mean: ``#<k>`` and ``t<k>`` mean tensor k, a sanitized name the
    tensors it names; a stem of more than one index is ambiguous (the module docstring)."""
    stems = {}
    for t in tensors:
        stems.setdefault(sanitize_name(t.name), []).append(t.index)
    for t in tensors:
        stems[f"#{t.index}"] = [t.index]
        stems[f"t{t.index}"] = sorted({t.index, *stems.get(f"t{t.index}", [])})
    return {s: tuple(ks) for s, ks in stems.items()}


@dataclass(frozen=True)
class Dump:
    """One dumped tensor: its index, the file, the value (shaped as the tensor) and the file's dtype
    when it differs from the tensor's (a ``.npy`` of int32 codes for an int8 tensor)."""

    tensor: int
    path: Path
    value: np.ndarray
    file_dtype: str | None = None


def load_dumps(model, directory, values=None, hex_layout=None) -> tuple:
    """Read every dump in ``directory`` against ``model``'s tensors (their dtypes and shapes, completed from
    ``values``, a run's tensor values by index, where the model leaves them open); ``hex_layout``: how the
    ``.hex`` dumps pack values (:class:`~dspsim.harness.vectors.HexLayout`, default one per word).

    Returns
    -------
    dumps : dict
        tensor index -> :class:`Dump`.
    ignored : list of str
        Files that are not dumps (other extensions, hidden files, subdirectories).

    Raises
    ------
    DumpError
        The directory is missing or holds no dump; a file's name matches no tensor (or an ambiguous
        name); two files dump one tensor; a file cannot be read, has the wrong element count, or is
        a float dump of an integer tensor.
    """
    d = Path(directory)
    if not d.is_dir():
        raise DumpError(f"{d}: no such directory" if not d.exists() else f"{d}: not a directory")
    tensors = model_tensors(model, values)
    stems = dump_stems(tensors)
    dumps, ignored = {}, []
    for p in sorted(d.iterdir()):
        if p.name.startswith(".") or p.is_dir() or p.suffix.lower().lstrip(".") not in ARRAY_FORMATS:
            ignored.append(p.name)
            continue
        m = _INDEX_NAME.fullmatch(p.stem)
        if m and p.stem not in stems:
            raise DumpError(f"{p}: the model has no tensor {m.group(1)} (it has {len(tensors)} tensors)")
        if p.stem not in stems:
            raise DumpError(f"{p}: {p.stem!r} matches no tensor of the model; name a dump t<tensor index>.<ext> "
                            "or after the tensor's name with characters outside [A-Za-z0-9_.-] replaced by _")
        if len(stems[p.stem]) > 1:
            raise DumpError(f"{p}: {p.stem!r} could be tensor " + " or ".join(map(str, stems[p.stem]))
                            + " (a tensor index and a tensor's name, or two names); name the dump #<tensor index>")
        (k,) = stems[p.stem]
        if k in dumps:
            raise DumpError(f"{p}: tensor {k} is already dumped in {dumps[k].path.name}")
        info = tensors[k]
        if info.dtype is None:
            raise DumpError(f"{p}: tensor {k} ({info.name!r}) holds values with no numpy type (a 4-bit or float8 "
                            "ONNX tensor); dumps of it are not read")
        a = read_array(p, dtype=info.dtype, shape=_declared(info.shape), hex_layout=hex_layout)
        note = None
        if a.dtype != info.dtype:
            if (a.dtype.kind == "f") != (info.dtype.kind == "f") or a.dtype.kind not in "iubf":
                raise DumpError(f"{p}: holds {a.dtype} values; tensor {k} ({info.name!r}) is {info.dtype}")
            note = a.dtype.name
        dumps[k] = Dump(k, p, a, note)
    if not dumps:
        raise DumpError(f"{d}: no dump files (t<tensor index> or tensor names, with extension "
                        f"{', '.join('.' + f for f in ARRAY_FORMATS)})")
    return dumps, ignored


def read_inputs(model, paths) -> list:
    """The model inputs from ``--input`` files, one per model input in order, in any dump format
    (the raw ones take the input tensor's dtype and shape; a ``.npy`` must have the input's shape, up
    to axes of size 1, or be flat: one of another layout is refused, never reshaped). Raises DumpError
    for a wrong count or a file :func:`read_array` cannot read."""
    if len(paths) != len(model.inputs):
        raise DumpError(f"the model has {len(model.inputs)} input(s) "
                        f"({', '.join(repr(i.name) for i in model.inputs)}), got {len(paths)} --input file(s)")
    return [read_inputs_one(k, p, info) for k, (p, info) in enumerate(zip(paths, model.inputs))]


def read_frames(model, paths) -> list:
    """The model inputs of T frames from ``--input`` files: a list of T per-frame input lists. A ``.npy``
    with one more leading axis than its input, ``(T, *input)``, is T frames, run in order with the model's
    state carried (a streaming model); any other file is one frame (:func:`read_inputs`'s rules). Every
    input of a sequence must have the same T. Raises DumpError as :func:`read_inputs` does, and for inputs
    that disagree on T."""
    if len(paths) != len(model.inputs):
        raise DumpError(f"the model has {len(model.inputs)} input(s) "
                        f"({', '.join(repr(i.name) for i in model.inputs)}), got {len(paths)} --input file(s)")
    arrays, counts = [], set()
    for k, (p, info) in enumerate(zip(paths, model.inputs)):
        shape = _declared(info.shape)
        a = None
        if Path(p).suffix.lower() == ".npy" and shape is not None:
            try:
                a = read_array(p)
            except VectorError as exc:
                raise DumpError(f"--input {k} ({info.name!r}): {exc}") from None
            if not (a.ndim == len(shape) + 1 and a.shape[1:] == shape and a.shape[0] >= 1):
                a = None
        if a is None:
            arrays.append(read_inputs_one(k, p, info))
            counts.add(None)
        else:
            arrays.append(a)
            counts.add(a.shape[0])
    if len(counts) > 1:
        raise DumpError("the --input files disagree on the number of frames: "
                        + ", ".join("one frame" if c is None else f"{c} frames" for c in sorted(counts, key=str)))
    n = counts.pop()
    if n is None:
        return [arrays]
    return [[a[t] for a in arrays] for t in range(n)]


def read_inputs_one(k, path, info):
    """Input ``k`` (its :class:`TensorInfo` ``info``) from ``path``, as :func:`read_inputs` reads it."""
    try:
        return read_array(path, dtype=info.dtype, shape=_declared(info.shape))
    except VectorError as exc:
        raise DumpError(f"--input {k} ({info.name!r}): {exc}") from None


def _declared(shape):
    """A shape with every dimension known, else None (the file's own shape, or a flat array, is taken)."""
    return None if shape is None or any(d is None or d < 0 for d in shape) else tuple(shape)
