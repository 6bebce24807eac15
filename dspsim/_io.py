"""Reading user files, shared by every part of dspsim that reads one (issue 31: memory bounded by the real work).

One rule for every file dspsim reads (a model, a suite, a device's TOML, a ``.npy`` / ``.npz``, a dump): it must be
a regular file, opened without blocking (:func:`open_regular`: a FIFO, ``/dev/zero``, a socket or a directory is
refused up front, never read), and the memory a read costs is bounded by what the file really holds, not by what it
claims:

* a ``.npy`` header's shape times its item size (a product of Python ints, never wrapping) must be in the file
  (:func:`load_npy`), checked before anything is allocated or mapped;
* a ``.npz`` member's size as the zip directory declares it must fit :data:`MAX_INFLATED` (all members together),
  its ``.npy`` header must claim exactly that size, and members may not share compressed data (a zip bomb)
  (:func:`load_npz`); the zip reader never inflates a member beyond its declared size;
* a file read whole is read up to a limit (:func:`read_bytes`).

Every refusal is a :class:`FileRefused` (a ValueError) naming the function and the rule.
"""
from __future__ import annotations

import math
import os
import stat
import tokenize
import zipfile

import numpy as np

#: The most bytes all the arrays of one ``.npz`` may inflate to.
MAX_INFLATED = 1 << 32
#: The most elements a shape may have (more than any memory holds; far from wrapping 64 bits).
MAX_ELEMENTS = 1 << 40
#: The most bytes a text file (a suite, a device's TOML, a manifest) is read for.
MAX_TEXT = 64 << 20
_CHUNK = 1 << 20


class UnreadableModel(OSError, ValueError):
    """A model path that cannot be read: an OSError (its errno kept) and a ValueError naming the function."""


class FileRefused(ValueError):
    """A file dspsim will not read: not a regular file, or one that claims more than it holds."""


def _kind(mode: int) -> str:
    for test, name in ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"),
                       (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return name
    return "not a regular file"


def open_regular(path, func: str):
    """``path`` opened for binary reading if it is a regular file (symlinks followed); FileRefused for anything else
    (a FIFO is opened without blocking and refused, a device never read). OSError when it cannot be opened."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise FileRefused(f"{func}: {os.fspath(path)}: is {_kind(mode)}; dspsim reads regular files only")
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_bytes(path, func: str, limit: int = MAX_TEXT) -> bytes:
    """The bytes of the regular file ``path``, FileRefused when it holds more than ``limit``."""
    with open_regular(path, func) as f:
        size = os.fstat(f.fileno()).st_size
        if size > limit:
            raise FileRefused(f"{func}: {os.fspath(path)}: {size} bytes, more than the {limit} read")
        return f.read(limit + 1)


def shape_size(shape, func: str, limit: int = MAX_ELEMENTS) -> int:
    """The number of elements of ``shape`` (a product of Python ints: it never wraps), FileRefused for a negative
    dimension or more than ``limit`` elements."""
    dims = tuple(int(d) for d in shape)
    if any(d < 0 for d in dims):
        raise FileRefused(f"{func}: shape {dims} has a negative dimension")
    n = math.prod(dims)
    if n > limit:
        raise FileRefused(f"{func}: shape {dims} has {n} elements, more than the {limit} allowed")
    return n


def model_bytes(path_or_bytes, func: str = "load_model") -> bytes:
    """The bytes of a model given as a path or as the file's bytes (TypeError for anything else;
    :class:`UnreadableModel`, an OSError and a ValueError, when the path cannot be read; FileRefused when it is not
    a regular file)."""
    if isinstance(path_or_bytes, (bytes, bytearray, memoryview)):
        return bytes(path_or_bytes)
    if isinstance(path_or_bytes, (str, os.PathLike)):
        try:
            with open_regular(path_or_bytes, func) as f:
                return f.read()
        except OSError as exc:
            err = UnreadableModel(f"{func}: cannot read the model {os.fspath(path_or_bytes)!r}: {exc.strerror or exc}")
            err.errno = exc.errno
            raise err from None
    raise TypeError(f"{func}: expected a path or bytes, got {type(path_or_bytes).__name__}")


# =============================================================================================
# .npy and .npz
# =============================================================================================
_HEADER_ERRORS = (ValueError, EOFError, SyntaxError, tokenize.TokenError)  # numpy parses the header with Python's


def _npy_header(f, what: str, func: str):
    """(shape, fortran order, dtype, data bytes) of the ``.npy`` stream ``f``, left at its data."""
    try:
        version = np.lib.format.read_magic(f)
        if version == (1, 0):
            shape, fortran, dtype = np.lib.format.read_array_header_1_0(f)
        elif version == (2, 0):
            shape, fortran, dtype = np.lib.format.read_array_header_2_0(f)
        else:
            raise FileRefused(f"{func}: {what}: not a readable .npy file (format version {version[0]}.{version[1]}; "
                              "dspsim reads 1.0 and 2.0, what numpy writes for plain arrays)")
    except FileRefused:
        raise
    except _HEADER_ERRORS as exc:
        msg = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise FileRefused(f"{func}: {what}: not a readable .npy file ({type(exc).__name__}: {msg})") from None
    if dtype.hasobject:
        raise FileRefused(f"{func}: {what}: holds Python objects (a pickle); dspsim reads plain arrays only")
    return shape, fortran, dtype, math.prod(shape) * dtype.itemsize


def load_npy(path, func: str, mmap: bool = False) -> np.ndarray:
    """The array of the ``.npy`` file ``path`` (read-only and memory-mapped with ``mmap``), its header checked
    against the file's size before anything is allocated or mapped (FileRefused)."""
    with open_regular(path, func) as f:
        size = os.fstat(f.fileno()).st_size
        shape, fortran, dtype, nbytes = _npy_header(f, os.fspath(path), func)
        offset = f.tell()
        if nbytes > size - offset:
            raise FileRefused(f"{func}: {os.fspath(path)}: its header claims {nbytes} bytes of data (shape {shape}, "
                              f"{dtype}), the file holds {size - offset}")
        order = "F" if fortran else "C"
        if mmap and nbytes:
            return np.memmap(f, dtype=dtype, mode="r", offset=offset, shape=shape, order=order)
        a = np.fromfile(f, dtype=dtype, count=nbytes // dtype.itemsize if dtype.itemsize else 0)
        return a.reshape(shape, order=order)


def load_npz(path, func: str, limit: int | None = None) -> dict:
    """name -> array of every member of the ``.npz`` file ``path``; FileRefused (before inflating anything) for a
    member that is not a ``.npy``, members that together inflate beyond ``limit`` bytes as the zip directory
    declares them (default :data:`MAX_INFLATED`), a ``.npy`` header that claims another size than the directory, or
    members sharing compressed data (a zip bomb)."""
    limit = MAX_INFLATED if limit is None else limit
    where = os.fspath(path)
    with open_regular(path, func) as f:
        try:
            z = zipfile.ZipFile(f)
        except (zipfile.BadZipFile, OSError, ValueError, EOFError) as exc:
            raise FileRefused(f"{func}: {where}: not a readable .npz file ({type(exc).__name__}: {exc})") from None
        with z:
            members = z.infolist()
            total = sum(m.file_size for m in members)
            if total > limit:
                raise FileRefused(f"{func}: {where}: its members inflate to {total} bytes (zip directory), more than "
                                  f"the {limit} read")
            spans = sorted(((m.header_offset, m.header_offset + 30 + len(m.filename.encode()) + m.compress_size, m)
                            for m in members), key=lambda span: span[:2])
            for (_, end, a), (start, _, b) in zip(spans, spans[1:]):
                if start < end:
                    raise FileRefused(f"{func}: {where}: members {a.filename!r} and {b.filename!r} share compressed "
                                      "data (a zip bomb)")
            out = {}
            for m in members:
                if not m.filename.endswith(".npy"):
                    raise FileRefused(f"{func}: {where}: member {m.filename!r} is not a .npy array")
                what = f"{where} member {m.filename!r}"
                try:
                    with z.open(m) as s:
                        shape, fortran, dtype, nbytes = _npy_header(s, what, func)
                        if s.tell() + nbytes != m.file_size:
                            raise FileRefused(f"{func}: {what}: its header claims {nbytes} bytes of data (shape "
                                              f"{shape}, {dtype}), the zip directory {m.file_size - s.tell()}")
                        raw = np.empty(nbytes, np.uint8)
                        got = 0
                        while got < nbytes:  # in chunks: the zip reader allocates what it is asked for
                            chunk = s.read(min(nbytes - got, _CHUNK))
                            if not chunk:
                                break
                            raw[got:got + len(chunk)] = np.frombuffer(chunk, np.uint8)
                            got += len(chunk)
                except (zipfile.BadZipFile, OSError, EOFError, NotImplementedError, RuntimeError) as exc:
                    raise FileRefused(f"{func}: {what}: cannot be read ({type(exc).__name__}: {exc})") from None
                if got != nbytes:
                    raise FileRefused(f"{func}: {what}: {got} bytes of data, its header claims {nbytes}")
                out[m.filename[:-4]] = raw.view(dtype).reshape(shape, order="F" if fortran else "C")
            return out
