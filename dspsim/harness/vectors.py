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

The C is valid and inert whatever the names (they come from model files and suites): identifiers are
made of ``[A-Za-z0-9_]`` only (:func:`c_identifier`), and two names that become one identifier or
macro (``fc-a`` and ``fc_a``; ``a`` and ``A`` in a macro) are refused with a ValueError rather than
merged; comment text is printable ASCII with ``*/`` and ``/*`` broken up and every other character
escaped (:func:`c_comment`); strings are C literals with every byte outside printable ASCII, ``"``,
backslash and ``?`` escaped (:func:`c_string`). :func:`export_stems` gives the file names of a set of
exported cases, refusing collisions the same way.

:func:`load_vectors` reads ``.npz`` / ``.npy`` and raises :class:`VectorError` (a ValueError) with
a one-line message for a missing, unreadable or corrupt file or a missing key.

One array per file, in the formats a device or an RTL test bench dumps (:data:`ARRAY_FORMATS`):
:func:`read_array` / :func:`write_array`.

* ``.npy``: numpy's own (dtype and shape in the header).
* ``.bin``: raw little-endian values of the dtype, C (row-major) order, no header.
* ``.hex``: one two's-complement value per line in hexadecimal, as Verilog's ``$readmemh`` reads
  (``ff`` is -1 in an int8 tensor); written with ``2 * itemsize`` digits, bare or ``0x``-prefixed
  (:data:`HEX_STYLES`), after ``//`` comment lines. Reading also accepts what
  test benches write (:class:`HexLayout`): several words per line, ``_`` inside a word, a ``0x``
  prefix, comments (``//`` and ``#`` to the end of the line, ``/* ... */``), ``@<hex address>``
  records (the next word's address, in words, as ``$readmemh`` reads them: every value from 0 on must
  be written exactly once), and words that pack several values (``HexLayout(pack=N)``: N values of
  the dtype per word, lane 0 in the least significant bits unless ``order="msb"``). ``x``/``z``
  digits are refused. A malformed line is a VectorError naming its line number; reading stops (an
  error) at the first value beyond the tensor's size, or beyond :data:`MAX_VALUES` when no shape is
  given, and at a line longer than :data:`MAX_LINE`, so a file never costs more memory than its
  tensor. Float tensors are their IEEE bit patterns.
* ``.txt``: decimal integers (floats for a float tensor), whitespace- or comma-separated.

Every file is read through :mod:`dspsim._io` (a regular file only: a FIFO or a device is refused unopened; a
``.npy`` whose header claims more than the file holds is refused before anything is allocated). A ``.bin`` larger
than the tensor's values is refused before it is read; a ``.txt`` is read in chunks, and reading stops (an error)
at the first value beyond the tensor's size, or beyond :data:`MAX_VALUES` when no shape is given.

The raw formats carry no dtype or shape: the reader is given the dtype, and a shape whose size the
file must match (a flat file is reshaped to it). A ``.npy`` carries its own shape: it must be the
expected one, up to axes of size 1 (``(224, 224, 3)`` for ``(1, 224, 224, 3)``), or flat (1-D);
any other shape of the same size (an NHWC image for an NCHW input) is refused, never reshaped.
"""
from __future__ import annotations

import io
import os
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .._io import FileRefused, load_npy, load_npz, open_regular, shape_size

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
    key. Object arrays (pickles) are refused, and so is a file that is not a regular file or claims more than it
    holds (:mod:`dspsim._io`: a ``.npy`` header, a ``.npz``'s zip directory).
    """
    p = Path(path)
    try:
        with open_regular(p, "load_vectors") as f:
            zipped = f.read(4) == b"PK\x03\x04"  # an .npz by its content, as np.load decides
        if zipped:
            arrays = load_npz(p, "load_vectors")
        else:
            arrays = {key or p.stem: load_npy(p, "load_vectors")}
    except FileRefused as exc:
        raise VectorError(str(exc)) from None
    except FileNotFoundError:
        raise VectorError(f"{p}: no such file") from None
    except OSError as exc:
        raise VectorError(f"{p}: not a readable .npz/.npy file ({type(exc).__name__}: {exc.strerror or exc})") \
            from None
    if key is not None:
        if key not in arrays:
            raise VectorError(f"{p}: no array named {key!r}; it has {sorted(arrays)}")
        arrays = {key: arrays[key]}
    return arrays


#: The one-array file formats, by extension.
ARRAY_FORMATS = ("npy", "bin", "hex", "txt")


def _array_format(p: Path) -> str:
    ext = p.suffix.lower().lstrip(".")
    if ext not in ARRAY_FORMATS:
        raise VectorError(f"{p}: unknown dump format {p.suffix!r}; expected one of "
                          f"{', '.join('.' + f for f in ARRAY_FORMATS)}")
    return ext


#: The most values a raw file is read for when no shape bounds it.
MAX_VALUES = 1 << 26
#: The longest line (characters) a ``.hex`` file may have.
MAX_LINE = 1 << 16
_TXT_CHARS = 64  # the most characters of a decimal value and its separators (a float's repr is at most 24)


@dataclass(frozen=True)
class HexLayout:
    """How a ``.hex`` file's words hold values: ``pack`` values per word (1: one value per word), lane 0 in
    the least (``order="lsb"``, little-endian, the default) or the most significant bits (``"msb"``)."""

    pack: int = 1
    order: str = "lsb"

    def __post_init__(self):
        if isinstance(self.pack, bool) or not isinstance(self.pack, int) or not 1 <= self.pack <= 64:
            raise ValueError(f"HexLayout: pack must be an integer in [1, 64], got {self.pack!r}")
        if self.order not in ("lsb", "msb"):
            raise ValueError(f"HexLayout: order must be 'lsb' or 'msb', got {self.order!r}")


_BLOCK_COMMENT = re.compile(r"/\*.*?\*/", re.S)


def _hex_lines(f, p: Path, limit: int):
    """(line number, text) of a hex file, comments removed; VectorError for a line longer than MAX_LINE or a
    file of more lines than ``limit`` values could need (4 per value, plus 4096 for headers)."""
    in_block, max_lines = False, 4 * limit + 4096
    for lineno in range(1, max_lines + 2):
        line = f.readline(MAX_LINE + 1)
        if not line:
            return
        if len(line) > MAX_LINE and not line.endswith("\n"):
            raise VectorError(f"{p}:{lineno}: line longer than {MAX_LINE} characters")
        if lineno > max_lines:
            raise VectorError(f"{p}:{lineno}: more than {max_lines} lines for at most {limit} values")
        if in_block:
            end = line.find("*/")
            if end < 0:
                continue
            line, in_block = line[end + 2:], False
        line = _BLOCK_COMMENT.sub(" ", line)
        if "/*" in line:
            line, in_block = line[:line.index("/*")], True
        yield lineno, line.split("//", 1)[0].split("#", 1)[0]


def _parse_hex(p: Path, f, dtype: np.dtype, limit: int, layout: HexLayout) -> np.ndarray:
    """The values of a ``.hex`` file (module docstring), at most ``limit`` of them."""
    bits, n = 8 * dtype.itemsize, layout.pack
    width, mask = bits * n, (1 << bits) - 1
    values = np.zeros(min(limit, 1 << 16), dtype=np.uint64)
    written = np.zeros(values.size, dtype=bool)
    pos, top = 0, 0  # the next value's index; one past the highest written
    for lineno, line in _hex_lines(f, p, limit):
        for word in line.split():
            w = word.replace("_", "")
            if w.startswith("@"):
                a = w[1:]
                if not a or any(c not in "0123456789abcdefABCDEF" for c in a):
                    raise VectorError(f"{p}:{lineno}: bad address record {word!r}: @ and a hex word address")
                pos = int(a, 16) * n
                if pos >= limit:
                    raise VectorError(f"{p}:{lineno}: address {word!r} is past the end ({limit} values"
                                      + (f", {-(-limit // n)} words of {n}" if n > 1 else "") + ")")
                continue
            if w[:2] in ("0x", "0X"):
                w = w[2:]
            if not w or any(c not in "0123456789abcdefABCDEF" for c in w):
                raise VectorError(f"{p}:{lineno}: bad hex {word!r}: not a hex value")
            v = int(w, 16)
            if v >> width:
                raise VectorError(f"{p}:{lineno}: bad hex {word!r}: wider than {width} bits ({n} x {dtype})"
                                  if n > 1 else f"{p}:{lineno}: bad hex {word!r}: wider than {bits} bits ({dtype})")
            lanes = [(v >> (bits * k)) & mask for k in range(n)]
            if layout.order == "msb":
                lanes.reverse()
            if pos + n > limit:  # past the tensor: only a last word's zero padding lanes may be
                if pos >= limit or any(lanes[limit - pos:]):
                    raise VectorError(f"{p}:{lineno}: more values than the {limit} "
                                      + ("the tensor holds" if limit < MAX_VALUES else "read without a shape"))
                lanes = lanes[:limit - pos]
            if pos + len(lanes) > values.size:
                grow = min(limit, max(2 * values.size, pos + n))
                values = np.concatenate([values, np.zeros(grow - values.size, np.uint64)])
                written = np.concatenate([written, np.zeros(grow - written.size, bool)])
            if written[pos:pos + len(lanes)].any():
                raise VectorError(f"{p}:{lineno}: value {pos + int(np.argmax(written[pos:pos + len(lanes)]))} is "
                                  "written twice (an @ address goes back)")
            values[pos:pos + len(lanes)], written[pos:pos + len(lanes)] = lanes, True
            pos += len(lanes)
            top = max(top, pos)
    if not written[:top].all():
        gap = int(np.argmin(written[:top]))
        raise VectorError(f"{p}: value {gap} is never written (the @ addresses leave a gap)")
    u = values[:top].astype(np.dtype(f"u{dtype.itemsize}"))
    return u.view(dtype) if dtype.kind in "if" else u.astype(dtype)


def _txt_words(p: Path, text, limit: int, need) -> list:
    """The words (decimal values) of a ``.txt`` file open as ``text``, read in chunks: reading stops, an error,
    at the first value beyond ``limit`` or at a word longer than a value can be."""
    words, carry = [], ""
    while True:
        chunk = text.read(1 << 16)
        parts = (carry + chunk).replace(",", " ").split()
        if chunk and parts and not chunk[-1].isspace() and chunk[-1] != ",":
            carry = parts.pop()  # a word the next chunk may continue
        else:
            carry = ""
        words += parts
        if len(words) > limit:
            raise VectorError(f"{p}: more than the {limit} values "
                              + ("the tensor holds" if need is not None else "read without a shape"))
        if len(carry) > _TXT_CHARS:
            raise VectorError(f"{p}: a word of more than {_TXT_CHARS} characters, not a decimal value")
        if not chunk:
            return words


def _parse_txt(p: Path, words: list, dtype: np.dtype) -> np.ndarray:
    if dtype.kind == "f":
        try:
            return np.array([float(w) for w in words], dtype=dtype)
        except ValueError as exc:
            raise VectorError(f"{p}: bad decimal value ({exc})") from None
    info = np.iinfo(dtype)
    out = []
    for k, w in enumerate(words):
        try:
            v = int(w)
        except ValueError:
            raise VectorError(f"{p}: value {k} is {w!r}, not a decimal integer") from None
        if not info.min <= v <= info.max:
            raise VectorError(f"{p}: value {k} is {v}, outside {dtype} [{info.min}, {info.max}]")
        out.append(v)
    return np.array(out, dtype=dtype)


def _read_raw(p: Path, f, fmt: str, dt: np.dtype, limit: int, need, hex_layout) -> np.ndarray:
    """The values of a ``.bin``, ``.hex`` or ``.txt`` file open as ``f``, at most ``limit`` of them."""
    if fmt == "bin":
        size = os.fstat(f.fileno()).st_size
        if size > limit * dt.itemsize:  # before reading it
            raise VectorError(f"{p}: {size} bytes: {size // dt.itemsize} values of {dt}, more than the "
                              + (f"{need} the tensor holds" if need is not None else f"{MAX_VALUES} read without "
                                 "a shape"))
        data = f.read(size)
        if len(data) % dt.itemsize:
            raise VectorError(f"{p}: {len(data)} bytes is not a whole number of {dt} values "
                              f"({dt.itemsize} bytes each)")
        return np.frombuffer(data, dtype=dt.newbyteorder("<")).astype(dt)
    text = io.TextIOWrapper(f, encoding="ascii", newline=None)
    if fmt == "hex":
        return _parse_hex(p, text, dt, limit, hex_layout or HexLayout())
    return _parse_txt(p, _txt_words(p, text, limit, need), dt)


def read_array(path, dtype=None, shape=None, hex_layout=None) -> np.ndarray:
    """Read one array from a ``.npy``, ``.bin``, ``.hex`` or ``.txt`` file (see the module docstring).

    Parameters
    ----------
    path : path-like
    dtype : numpy dtype, optional
        Required for the raw formats (``.bin``, ``.hex``, ``.txt``); a ``.npy`` keeps its own.
    shape : tuple of int, optional
        The expected shape: a raw file (or a flat ``.npy``) with the same number of elements is reshaped
        to it (a flat dump of a 4-D tensor reads as that tensor); a ``.npy`` of another shape must differ
        from it only by axes of size 1; a different element count is a VectorError.
    hex_layout : HexLayout, optional
        How a ``.hex`` file's words hold values (default: one value per word).

    Raises
    ------
    VectorError
        A missing or unreadable file, an unknown extension, a corrupt ``.npy``, a ``.bin`` whose
        size is not a multiple of the item size, a malformed hex or decimal value, a value outside
        the dtype, an element count that is not the shape's, or a ``.npy`` of another layout; one
        line, naming the file.
    """
    p = Path(path)
    fmt = _array_format(p)
    if fmt != "npy" and dtype is None:
        raise VectorError(f"{p}: a .{fmt} file has no dtype; give one (--dtype)")
    dt = None if dtype is None else np.dtype(dtype)
    if dt is not None and dt.name not in _C_TYPES:
        raise VectorError(f"{p}: dtype {dt} is not a plain integer or float type")
    try:
        if shape is not None:
            shape = tuple(int(d) for d in shape)
        need = None if shape is None else shape_size(shape, "read_array")
        limit = MAX_VALUES if need is None else need
        if fmt == "npy":
            a = load_npy(p, "read_array")
        else:
            with open_regular(p, "read_array") as f:
                a = _read_raw(p, f, fmt, dt, limit, need, hex_layout)
    except VectorError:
        raise
    except FileRefused as exc:
        raise VectorError(str(exc)) from None
    except FileNotFoundError:
        raise VectorError(f"{p}: no such file") from None
    except (OSError, ValueError, EOFError) as exc:
        msg = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise VectorError(f"{p}: not a readable .{fmt} file ({type(exc).__name__}: {msg})") from None
    if shape is not None:
        if a.size != need:
            raise VectorError(f"{p}: {a.size} values, but shape {shape} needs {need}")
        if fmt == "npy" and a.ndim > 1 and a.shape != shape and _unit_free(a.shape) != _unit_free(shape):
            raise VectorError(f"{p}: shape {a.shape}, but the tensor's shape is {shape}: same size, another layout "
                              "(dspsim never reshapes a shaped array: transpose it, e.g. NHWC to NCHW)")
        a = a.reshape(shape)
    return a


def _unit_free(shape) -> tuple:
    """``shape`` without its axes of size 1 (reshaping between two shapes with the same one keeps every value
    where it is in C order)."""
    return tuple(d for d in shape if d != 1)


#: How :func:`write_array` writes a ``.hex`` file's words: ``"readmemh"`` bare hex digits (what Verilog's
#: ``$readmemh`` reads), ``"0x"`` with a ``0x`` prefix (C's ``strtol``, Python's ``int(w, 0)``). Both: one value
#: per line, ``2 * itemsize`` digits of the two's-complement (or IEEE) bit pattern, comments as ``//`` lines
#: (``$readmemh`` skips them); :func:`read_array` reads both.
HEX_STYLES = ("readmemh", "0x")


def write_array(path, array, *, comment: str = "", hex_style: str = "readmemh") -> Path:
    """Write one array in the format its extension names (``.npy``, ``.bin``, ``.hex``, ``.txt``).

    ``.bin`` is little-endian C order; ``.hex`` is one value per line, ``2 * itemsize`` hex digits of
    its two's-complement (or IEEE) bit pattern, in the style ``hex_style`` (:data:`HEX_STYLES`), ``comment``
    first as ``//`` lines (each made printable ASCII with no ``/*`` or ``*/``, :func:`c_comment`, so no reader
    takes it for data); ``.txt`` one decimal value per line (floats as their shortest round-trip repr).
    ``.npy`` keeps the shape; the others are flat (``comment`` is written in ``.hex`` only).
    """
    p = Path(path)
    fmt = _array_format(p)
    if hex_style not in HEX_STYLES:
        raise ValueError(f"write_array: hex_style must be one of {', '.join(HEX_STYLES)}, got {hex_style!r}")
    a = np.ascontiguousarray(array)
    if a.dtype.name not in _C_TYPES:
        raise ValueError(f"write_array: dtype {a.dtype} is not a plain integer or float type")
    if fmt == "npy":
        np.save(p, a)
    elif fmt == "bin":
        p.write_bytes(a.astype(a.dtype.newbyteorder("<")).tobytes())
    elif fmt == "hex":
        u = a.ravel().view(np.dtype(f"u{a.dtype.itemsize}")) if a.dtype.kind in "if" else a.ravel()
        head = "".join(f"// {c_comment(line)}\n" for line in str(comment).splitlines())
        prefix = "0x" if hex_style == "0x" else ""
        p.write_text(head + "".join(f"{prefix}{int(v):0{2 * a.dtype.itemsize}x}\n" for v in u.tolist()),
                     encoding="ascii")
    else:
        p.write_text("".join(f"{v!r}\n" if isinstance(v, float) else f"{int(v)}\n" for v in a.ravel().tolist()),
                     encoding="ascii")
    return p


def save_npz(path, arrays: dict, constants: dict | None = None) -> Path:
    """Write ``arrays`` and ``constants`` (as 0-d arrays) into one uncompressed ``.npz``."""
    p = Path(path)
    merged = {k: np.asarray(v) for k, v in (constants or {}).items()}
    merged.update({k: np.asarray(v) for k, v in arrays.items()})
    np.savez(p, **merged)
    return p


_INCLUDE = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]*(/[A-Za-z0-9_][A-Za-z0-9_.-]*)*")


def c_identifier(name: str) -> str:
    """``name`` as a C identifier: every character outside ``[A-Za-z0-9_]`` (non-ASCII letters
    included) becomes ``_``, a leading digit (or nothing) gets ``v``."""
    s = re.sub(r"[^A-Za-z0-9_]", "_", str(name))
    return f"v{s}" if not s or s[0].isdigit() else s


def c_comment(text) -> str:
    """``text`` safe inside a C block comment, on one line: printable ASCII kept, every other
    character escaped as Python writes it (``\\n``, ``\\x1b``, ``\\u00e9``), ``*/`` and ``/*`` broken
    up (``* /``, ``/ *``)."""
    out = "".join(c if " " <= c <= "~" else ascii(c)[1:-1] for c in str(text))
    while "*/" in out or "/*" in out:
        out = out.replace("*/", "* /").replace("/*", "/ *")
    return out


def c_string(text) -> str:
    """``text`` as a C string literal (UTF-8 bytes; every byte outside printable ASCII, and ``"``,
    ``\\`` and ``?`` (trigraphs), as a three-digit octal escape)."""
    return '"' + "".join(chr(b) if 0x20 <= b <= 0x7E and chr(b) not in '"\\?' else f"\\{b:03o}"
                         for b in str(text).encode("utf-8")) + '"'


def _unique(names, key, what: str, func: str) -> dict:
    """name -> key(name), refusing two entries of ``names`` with one key (compared without case: macros
    are upper case, and some file systems ignore case). ``names`` may hold (label, name) pairs: the
    label is what the message shows."""
    seen, out = {}, {}
    for i, n in enumerate(names):
        label, n = n if isinstance(n, tuple) else (n, n)
        k = key(n)
        j, other = seen.setdefault(k.upper(), (i, label))
        if j != i:
            raise ValueError(f"{func}: {what} {other!r} and {label!r} both become {k!r}; rename one of them")
        out[n] = k
    return out


def c_names(header: str) -> set:
    """The macros and array identifiers a header made by :func:`c_header` defines (to find two headers that
    could not be included together)."""
    return set(re.findall(r"^#define (\w+)", header, flags=re.M)) | set(
        re.findall(r"^static const \w+ (\w+)\[", header, flags=re.M))


def export_stems(names, fmt: str) -> dict:
    """Case name -> file stem for ``dspsim export`` in ``fmt`` (``npz``: the name, which must be safe as a file
    name; ``c-header``: its C identifier). ValueError for an unsafe name or two names with one stem."""
    from .safe_io import check_name

    if fmt == "npz":
        return _unique([check_name(n, "case name", "export") for n in names], str, "case names", "export")
    return _unique(names, c_identifier, "case names", "export")


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
    return c_string(v)


def c_header(name: str, arrays: dict, constants: dict | None = None, comment: str = "", per_line: int = 16,
             generator: str = "dspsim export", includes=()) -> str:
    """Render a vector set as a self-contained C header (include guard, ``<stdint.h>``).

    Arrays become ``static const <type> <name>_<key>[N] = {...};`` with ``#define
    <NAME>_<KEY>_SIZE N``; scalar constants become ``#define <NAME>_<KEY> value`` (strings quoted).
    ``generator`` names the command in the first line. ``includes``: headers dspsim wrote beside this one,
    included as ``#include "<file>"`` (relative paths of ``[A-Za-z0-9_.-]`` parts, never ``..``: anything
    else is a ValueError).
    """
    for inc in includes:
        if not _INCLUDE.fullmatch(str(inc)) or ".." in str(inc):
            raise ValueError(f"c_header: include {str(inc)!r} is not a relative path of [A-Za-z0-9_.-] parts")
    ident = c_identifier(name)
    up = ident.upper()
    guard = f"DSPSIM_{up}_H"
    macros = [(str(name), guard)] + [(str(k), f"{up}_{c_identifier(k).upper()}") for k in (constants or {})]
    for k in arrays:
        m = f"{up}_{c_identifier(k).upper()}"
        macros += [(str(k), f"{m}_SIZE")] + [(str(k), f"{m}_DIM{i}") for i in range(np.ndim(arrays[k]))]
    _unique(macros, str, "names", "c_header")
    _unique([str(k) for k in arrays], c_identifier, "array names", "c_header")
    lines = [f"/* Generated by `{c_comment(generator)}`. Do not edit. */"]
    if comment:
        lines += [f"/* {c_comment(line)} */" for line in str(comment).splitlines()]
    lines += [f"#ifndef {guard}", f"#define {guard}", "", "#include <stdint.h>"]
    lines += [f'#include "{inc}"' for inc in includes]
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
