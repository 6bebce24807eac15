"""What dspsim writes, and the rules that keep it from writing anywhere else (issue 31).

Every verb that writes goes through this module:

* **Names** that become file or directory names (a suite's name, a case's name, a report's name) are
  refused unless they are 1 to :data:`NAME_MAX` characters of ``A-Z a-z 0-9 _ . ^ + = , -``, starting
  with a letter, a digit or ``_`` (:func:`check_name`): no ``/``, no ``..``, no hidden file, no option.
* **Output folders** (``--out``) are checked before any work (:func:`check_output_dir`): a symlink is
  refused; a folder that is, or holds, one of the run's inputs (a model, a dump folder, a data set,
  an earlier export read as dumps) is refused; an existing folder is replaced only if it is empty or
  holds nothing but what dspsim wrote there: the file list in its :data:`MARKER` (names and sizes).
* **Replacing** is atomic (:func:`atomic_dir`): the new output is written into a fresh temporary
  sibling (``tempfile.mkdtemp``), its marker last, then exchanged with the old one in one rename
  (``renameat2(RENAME_EXCHANGE)`` on Linux; elsewhere two renames with Ctrl-C and SIGTERM held back
  between them), so that the folder holds either the old output or the new one, whole. On any
  exception, KeyboardInterrupt and SIGTERM (:func:`sigterm_as_interrupt`) included, the temporary is
  removed and the old output left as it was.
* **Output files** (``--json``): the same refusals (:func:`check_output_file`), written through a
  ``tempfile.mkstemp`` sibling (``O_EXCL``, an unpredictable name) renamed into place
  (:func:`atomic_write_text`).
* **A full disk** (``OSError`` ENOSPC, wherever it shows: a write, the final ``fsync``) removes the
  temporary like any other error and reaches the CLI, which says so in one line (exit 3): no empty or
  half report is ever put in place. (Nothing dspsim writes is memory-mapped, where a full disk would
  be a SIGBUS instead.)
* **Text for a terminal** from a model or a file (tensor and operator names, error messages) is
  printed through :func:`terminal_text`, which escapes control and format characters.
"""
from __future__ import annotations

import contextlib
import ctypes
import errno
import json
import os
import re
import shutil
import signal
import stat
import tempfile
import threading
import unicodedata
from pathlib import Path

#: Written into every directory dspsim creates (a JSON list of the files it wrote, with their sizes);
#: only such directories, holding nothing else, or empty ones are replaced.
MARKER = ".dspsim-output"

#: The longest name (suite, case, report) that becomes a file name: well under the 255 bytes of a
#: file name, with room for a timestamp and an extension.
NAME_MAX = 128

_SAFE_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.^+=,-]*")
_MARKER_HEAD = "dspsim-output/1"


class OutDirError(ValueError):
    """An output folder or file that cannot be used or put in place (the CLI exits 2 with this one line)."""


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised as an interrupt so that every ``except BaseException`` cleanup runs."""


# =============================================================================================
# names and text
# =============================================================================================
def check_name(name, what: str = "name", func: str = "check_name") -> str:
    """``name`` if it is safe as a file name (module docstring), else a ValueError naming ``func``."""
    if not isinstance(name, str):
        raise TypeError(f"{func}: {what} must be a string, got {type(name).__name__}")
    if len(name) > NAME_MAX:
        raise ValueError(f"{func}: {what} {name[:40]!r}... is {len(name)} characters long; at most {NAME_MAX}")
    if not _SAFE_NAME.fullmatch(name):
        raise ValueError(f"{func}: {what} {name[:80]!r} is not a safe file name: use letters, digits and "
                         "_ . ^ + = , - (starting with a letter, a digit or _), no / or spaces")
    return name


def terminal_text(text, one_line: bool = False) -> str:
    """``text`` with every control or format character (ANSI escapes, C1 controls, bidi overrides)
    written as a Python escape; newlines and tabs are kept unless ``one_line``."""
    keep = "" if one_line else "\n\t"
    return "".join(c if c in keep or unicodedata.category(c) not in ("Cc", "Cf", "Zl", "Zp", "Cs")
                   else ascii(c)[1:-1] for c in str(text))


# =============================================================================================
# output paths
# =============================================================================================
def _same(a: Path, b: Path) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def _check_inputs(out: Path, inputs, what: str, folder: bool) -> None:
    """Refuse ``out`` when it is one of ``inputs`` or (a folder) holds one of them."""
    for inp in inputs:
        if inp is None:
            continue
        p = Path(os.path.abspath(os.fspath(inp)))
        if not os.path.lexists(p):
            continue
        chain = [p, *p.parents] if folder else [p]
        real = Path(os.path.realpath(p))
        chain += [real, *real.parents] if folder else [real]
        if any(_same(q, out) or q == Path(os.path.abspath(out)) for q in chain):
            kind = "is" if _same(p, out) else "holds"
            raise OutDirError(f"{what} {out}: {kind} the input {os.fspath(inp)!r}; refusing to replace it (an input "
                              "is never overwritten: choose another path)")


def check_output_dir(out, inputs=(), what: str = "--out") -> Path:
    """Raise :class:`OutDirError` unless ``out`` can become this run's output folder: not a symlink, not
    one of ``inputs`` nor a folder holding one, absent or replaceable (:func:`check_replaceable`), and
    creatable. Returns ``out`` as a Path."""
    out = Path(out)
    if os.path.islink(out):
        raise OutDirError(f"{what} {out}: is a symbolic link; refusing to write through it (give the real path)")
    _check_inputs(out, inputs, what, folder=True)
    try:
        check_replaceable(out)
    except OutDirError:
        raise
    except ValueError as exc:
        raise OutDirError(str(exc)) from None
    check_writable(out)
    return out


def check_output_file(path, inputs=(), what: str = "--json") -> Path:
    """Raise :class:`OutDirError` unless ``path`` can be written as an output file: not a symlink, not
    a folder, not one of ``inputs``, its folder creatable."""
    path = Path(path)
    if os.path.islink(path):
        raise OutDirError(f"{what} {path}: is a symbolic link; refusing to write through it (give the real path)")
    if path.is_dir():
        raise OutDirError(f"{what} {path}: is a directory, expected a file name")
    _check_inputs(path, inputs, what, folder=False)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        if not os.access(path.parent, os.W_OK):
            raise PermissionError(errno.EACCES, os.strerror(errno.EACCES))
    except OSError as exc:
        raise OutDirError(f"{what} {path}: cannot write there ({exc.strerror or exc})") from None
    return path


def _marker_text(directory: Path) -> str:
    files = {}
    for root, _dirs, names in os.walk(directory):
        for n in names:
            full = Path(root) / n
            rel = full.relative_to(directory).as_posix()
            if rel != MARKER:
                files[rel] = full.lstat().st_size
    return json.dumps({"marker": _MARKER_HEAD, "note": "written by dspsim; `dspsim --out` may replace this "
                       "directory while it holds only these files", "files": dict(sorted(files.items()))},
                      indent=1) + "\n"


def write_marker(directory) -> None:
    """Write :data:`MARKER` into ``directory``: the list of every file in it now (names and sizes)."""
    directory = Path(directory)
    (directory / MARKER).write_text(_marker_text(directory), encoding="utf-8")


def _foreign_entry(fd: int) -> str | None:
    """Why the directory open as ``fd`` is not only what dspsim wrote (a phrase), or None."""
    try:  # (not blocking on a FIFO, not following a link)
        mfd = os.open(MARKER, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0), dir_fd=fd)
    except FileNotFoundError:
        return "was not written by dspsim"
    except OSError:
        return "has a marker dspsim cannot read"
    if not stat.S_ISREG(os.fstat(mfd).st_mode):
        os.close(mfd)
        return "has a marker that is not a file"
    try:
        with os.fdopen(mfd, "rb") as f:
            raw = f.read(1 << 22)
        doc = json.loads(raw.decode("utf-8"))
        listed = doc["files"] if doc.get("marker") == _MARKER_HEAD else None
        if not isinstance(listed, dict):
            raise ValueError
    except (ValueError, KeyError, TypeError, AttributeError, UnicodeDecodeError):
        return "has a marker without the list of the files dspsim wrote (an older dspsim's output?)"
    dirs = {str(Path(p).parent) for p in listed} | {"."}
    dirs = {d2 for d in dirs for d2 in [d, *(str(q) for q in Path(d).parents)]}
    for root, subdirs, names, rootfd in os.fwalk(".", dir_fd=fd):
        for n in subdirs:
            rel = os.path.normpath(os.path.join(root, n))
            if rel not in dirs or stat.S_ISLNK(os.stat(n, dir_fd=rootfd, follow_symlinks=False).st_mode):
                return f"holds {rel!r}, which dspsim did not write"
        for n in names:
            rel = Path(os.path.normpath(os.path.join(root, n))).as_posix()
            if rel == MARKER:
                continue
            st = os.stat(n, dir_fd=rootfd, follow_symlinks=False)
            if not stat.S_ISREG(st.st_mode) or rel not in listed:
                return f"holds {rel!r}, which dspsim did not write"
            if listed[rel] != st.st_size:
                return f"holds {rel!r}, changed since dspsim wrote it"
    return None


def check_replaceable(out) -> None:
    """Raise OutDirError unless ``out`` is absent, an empty directory, or a directory that dspsim wrote
    and that holds nothing else (every file listed, with its size, in its :data:`MARKER`).

    The directory is read through one handle and judged only if it is still at ``out`` afterwards: a
    run finishing into the same ``out`` swaps the previous report out and its own in, so a listing of
    a directory that has left ``out`` says nothing about ``out``. A directory that has been published
    at ``out`` never changes while it is there."""
    out = Path(out)
    try:
        mode = os.lstat(out).st_mode
    except (FileNotFoundError, NotADirectoryError):  # absent (check_writable says whether it can be made)
        return
    if stat.S_ISLNK(mode):
        raise OutDirError(f"{out} is a symbolic link; refusing to replace it (give the real path)")
    if not stat.S_ISDIR(mode):
        raise OutDirError(f"{out} exists and is not a directory")
    for _ in range(100):
        try:
            fd = os.open(out, os.O_RDONLY | os.O_DIRECTORY | getattr(os, "O_NOFOLLOW", 0))
        except (FileNotFoundError, NotADirectoryError):  # swapped out by another run: nothing to replace now
            return
        try:
            try:
                names = os.listdir(fd)
                foreign = _foreign_entry(fd) if names else None
                complete = True
            except FileNotFoundError:  # removed while read: it has left ``out``
                complete = False
            here = os.fstat(fd)
            try:
                now = os.stat(out)
                still_out = (now.st_dev, now.st_ino) == (here.st_dev, here.st_ino)
            except FileNotFoundError:
                still_out = False
        finally:
            os.close(fd)
        if still_out and complete:
            if foreign is not None:
                raise OutDirError(f"{out} exists and {foreign}; refusing to replace it (choose another --out)")
            return


def check_writable(out) -> None:
    """Raise OutDirError unless a directory can be created at ``out`` (its parents are created)."""
    out = Path(out)
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        with _signals_held():
            os.rmdir(tempfile.mkdtemp(prefix=_temp_prefix(out, "probe"), dir=out.parent))
    except OSError as exc:
        raise OutDirError(f"{out}: cannot write a report there ({exc.strerror or exc})") from None


def _temp_prefix(out: Path, what: str) -> str:
    return f".{out.name[:64]}.{what}-"


# =============================================================================================
# signals
# =============================================================================================
@contextlib.contextmanager
def _signals_held():
    """Hold SIGINT and SIGTERM back for the block (in the main thread; elsewhere a no-op), then deliver
    the first one that arrived."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    caught = []
    previous = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    for s in previous:
        signal.signal(s, lambda signum, frame: caught.append(signum))
    try:
        yield
    finally:
        for s, h in previous.items():
            signal.signal(s, h)
        if caught:
            h = previous[caught[0]]
            if callable(h):
                h(caught[0], None)
            elif h == signal.SIG_DFL:
                raise KeyboardInterrupt if caught[0] == signal.SIGINT else Terminated("SIGTERM")


def _raise_terminated(signum, frame):
    raise Terminated("SIGTERM")


@contextlib.contextmanager
def sigterm_as_interrupt():
    """In the block (main thread), SIGTERM raises :class:`Terminated` (a KeyboardInterrupt), so that
    temporaries are removed as on Ctrl-C."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGTERM, _raise_terminated)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


# =============================================================================================
# atomic replacement
# =============================================================================================
_AT_FDCWD, _RENAME_EXCHANGE = -100, 2


def _renameat2():
    try:
        f = ctypes.CDLL(None, use_errno=True).renameat2
    except (AttributeError, OSError):
        return None
    f.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    f.restype = ctypes.c_int
    return f


_RENAMEAT2 = _renameat2()


def _exchange(a: Path, b: Path) -> bool:
    """Swap ``a`` and ``b`` in one atomic rename; False where the system cannot (then nothing moved)."""
    if _RENAMEAT2 is None:
        return False
    if _RENAMEAT2(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE) == 0:
        return True
    e = ctypes.get_errno()
    if e in (errno.EINVAL, errno.ENOSYS, errno.ENOTSUP, errno.EOPNOTSUPP):
        return False
    if e == errno.ENOENT:  # ``b`` vanished (another run swapped it out): the caller retries
        raise FileNotFoundError(e, os.strerror(e), os.fspath(b))
    raise OSError(e, os.strerror(e), os.fspath(b))


def _rmtree(path: Path) -> None:
    with _signals_held():
        shutil.rmtree(path, ignore_errors=True)


def _swap_into_place(tmp: Path, out: Path) -> None:
    """Put the finished ``tmp`` at ``out``; the previous ``out`` (dspsim's, checked again once it is
    out of the way) is removed. At every moment ``out`` is the old output or the new one, whole.
    Runs that finish into the same ``out`` at the same moment each land in turn: the last one wins."""
    for _ in range(1000):
        with _signals_held():
            try:
                os.replace(tmp, out)
                return  # ``out`` was absent (or an empty directory)
            except OSError as exc:
                if exc.errno not in (errno.ENOTEMPTY, errno.EEXIST, errno.ENOTDIR, errno.EISDIR):
                    raise
            try:
                swapped = _exchange(tmp, out)
            except FileNotFoundError:
                continue
            if swapped:  # ``tmp`` now holds the previous output
                try:
                    check_replaceable(tmp)
                except ValueError:
                    _exchange(tmp, out)  # not ours after all: put it back
                    raise OutDirError(f"{out} changed during the run and holds what dspsim did not write; "
                                      "refusing to replace it") from None
                shutil.rmtree(tmp, ignore_errors=True)
                return
            # no atomic exchange here: move the old output aside, then the new one in, signals held between
            old = Path(tempfile.mkdtemp(prefix=_temp_prefix(out, "old"), dir=out.parent))
            try:
                os.replace(out, old)  # onto an empty directory: allowed
            except OSError as exc:
                os.rmdir(old)
                if isinstance(exc, FileNotFoundError):  # another run moved it first
                    continue
                raise
            try:
                check_replaceable(old)
            except ValueError:
                os.replace(old, out)
                raise OutDirError(f"{out} changed during the run and holds what dspsim did not write; "
                                  "refusing to replace it") from None
            try:
                os.replace(tmp, out)
            except OSError as exc:
                if exc.errno not in (errno.ENOTEMPTY, errno.EEXIST):
                    with contextlib.suppress(OSError):
                        os.replace(old, out)  # put the old output back where nothing has taken its place
                    shutil.rmtree(old, ignore_errors=True)
                    raise
                shutil.rmtree(old, ignore_errors=True)  # another run landed first (whole): try again after it
                continue
            shutil.rmtree(old, ignore_errors=True)
            return
    raise OSError(errno.EBUSY, f"{out} keeps being replaced by other runs")


@contextlib.contextmanager
def atomic_dir(out, inputs=()):
    """Yield a fresh temporary directory beside ``out``; on success it becomes ``out``, whole.

    ``out`` is checked first (:func:`check_output_dir`: not a symlink, not an input, replaceable,
    creatable; OutDirError otherwise). On any exception (KeyboardInterrupt and SIGTERM included) the
    temporary is removed and ``out`` left as it was."""
    out = check_output_dir(out, inputs)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = None
    try:
        with _signals_held():  # a Ctrl-C here lands once ``tmp`` is known, inside the try
            tmp = Path(tempfile.mkdtemp(prefix=_temp_prefix(out, "tmp"), dir=out.parent))
        with sigterm_as_interrupt():
            yield tmp
            write_marker(tmp)
            try:
                _swap_into_place(tmp, out)
            except OutDirError:
                raise
            except OSError as exc:
                if exc.errno == errno.ENOSPC:
                    raise
                raise OutDirError(f"{out}: cannot put the report in place ({exc.strerror or exc})") from None
    except BaseException:
        if tmp is not None:
            _rmtree(tmp)
        raise


def atomic_write_text(path, text: str) -> Path:
    """Write ``text`` to ``path`` through a ``tempfile.mkstemp`` sibling renamed into place: an
    interrupted or failed write (a full disk) leaves the previous file, or none."""
    path = Path(path)
    tmp = None
    try:
        with _signals_held():
            fd, tmp = tempfile.mkstemp(prefix=_temp_prefix(path, "tmp"), dir=path.parent)
        with sigterm_as_interrupt(), os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, 0o666 & ~_umask())
        os.replace(tmp, path)
    except BaseException:
        if tmp is not None:
            with _signals_held(), contextlib.suppress(OSError):
                os.unlink(tmp)
        raise
    return path


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask
