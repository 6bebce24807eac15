"""Mutation fuzzing of ``dspsim diagnose`` on malformed dumps (issue 16, "diagnose on malformed dumps").

A case is a valid device dump directory (dspsim's own trace of a committed model, every tensor dumped,
in every dump format) and the model input file, with one to three mutations, each one of:

- a file truncated at a random length, or its bytes replaced by garbage, or one byte flipped;
- a ``.npy`` rewritten with another dtype (float, bool, complex, int64, uint64, float16, big-endian, ...),
  another element count (one more, one less, none, 0-d) or another rank;
- a raw dump (``.bin`` / ``.hex`` / ``.txt``) with an odd byte count, a bad hex word, a value outside the
  type, a float for an integer, NaN, a huge count of values;
- a dump removed, every dump removed (an empty directory), or the directory replaced by a file;
- a dump renamed to a name that matches no tensor (``t99999``, ``t-1``, ``t01``, upper case, spaces,
  non-ASCII), or to a second name of the same tensor; a subdirectory or a dangling symlink named like a
  dump; an ``.npz`` archive saved as ``.npy``;
- the input file truncated, of another dtype or shape, garbage, a directory, missing.

Verdict (:func:`verdict`): the CLI (``dspsim diagnose ... --no-search --json -``, in this process) exits 0
or 1, or exits 2 with exactly one stderr line ``dspsim: error: ...``: never a traceback or another exit.
The API (:func:`dspsim.harness.diagnose.diagnose` after :func:`read_inputs`) returns or raises a
ValueError / TypeError with a one-line message that names the file (a ``DumpError`` / ``VectorError``)
or the function (``load_model:``, ``Model.run``). Anything else is a defect signature (one line).

``python tests/fuzz/fuzz_diagnose.py SEED N`` runs ``N`` cases and prints one line per defect and a summary.
"""
from __future__ import annotations

import contextlib
import io
import os
import shutil
import sys
import tempfile
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parents[1]
MODELS = HERE / "golden" / "models"
CORPUS = ("branches", "cnn", "two_inputs")  # int8 and float inputs, one and two inputs
_FORMATS = ("npy", "bin", "hex", "txt")
_DTYPES = ("float32", "float64", "bool", "complex64", "int64", "uint64", "float16", ">i2", "int16", "uint8", "int32")
_NAMES = ("t99999", "t-1", "t01", "T0", "t 0", "tensor\u00e9", "", "t0.t1", "..", "t", "t2147483648")
API_PREFIXES = ("load_model:", "Model.run", "diagnose", "read_inputs")


def _trace(name):
    from dspsim.tflite import load_model

    m = load_model(MODELS / f"{name}.tflite")
    z = np.load(MODELS / f"{name}.npz")
    inputs = [z[f"r0/in{i}"] for i in range(len(m.inputs))]
    return m, inputs, m.trace(inputs)


def make_case(root: Path, rng, cache: dict) -> tuple:
    """A valid dump directory and input files under ``root`` for a random corpus model:
    ``(model path, [input paths], dump directory)``."""
    from dspsim.harness.vectors import write_array

    name = CORPUS[int(rng.integers(len(CORPUS)))]
    if name not in cache:
        cache[name] = _trace(name)
    _, inputs, trace = cache[name]
    d = root / "dumps"
    d.mkdir()
    for e in trace:
        if e.op_index >= 0:
            fmt = _FORMATS[int(rng.integers(len(_FORMATS)))]
            v = np.asarray(e.value)
            write_array(d / f"t{e.tensor}.{fmt}", v if fmt == "npy" else v.reshape(-1))
    paths = []
    for k, x in enumerate(inputs):
        p = root / f"in{k}.npy"
        np.save(p, x)
        paths.append(p)
    return MODELS / f"{name}.tflite", paths, d


def _files(d: Path) -> list:
    return sorted(p for p in d.iterdir() if p.is_file()) if d.is_dir() else []


def mutate(rng, inputs: list, d: Path) -> str:
    """Apply one mutation to the dump directory ``d`` or an input file; returns what it did."""
    files = _files(d)
    if not d.is_dir():
        return mutate_input(rng, inputs)
    kind = str(rng.choice(["truncate", "garbage", "flip", "dtype", "count", "raw", "remove", "empty", "rename",
                           "duplicate", "subdir", "symlink", "npz", "input", "dir-is-file"]))
    if kind in ("truncate", "garbage", "flip", "dtype", "count", "raw", "remove", "rename", "duplicate", "npz") \
            and not files:
        kind = "input"
    p = files[int(rng.integers(len(files)))] if files else None
    if kind == "truncate":
        data = p.read_bytes()
        n = int(rng.integers(len(data) + 1))
        p.write_bytes(data[:n])
        return f"truncate {p.name} to {n} of {len(data)} bytes"
    if kind == "garbage":
        n = int(rng.choice([0, 1, 7, 64, 4096]))
        p.write_bytes(rng.integers(0, 256, n, dtype=np.uint8).tobytes())
        return f"garbage {p.name} ({n} bytes)"
    if kind == "flip":
        data = bytearray(p.read_bytes())
        if not data:
            return "flip (empty file)"
        k, b = int(rng.integers(len(data))), int(rng.integers(8))
        data[k] ^= 1 << b
        p.write_bytes(bytes(data))
        return f"flip {p.name} byte {k} bit {b}"
    if kind == "dtype":
        dt = _DTYPES[int(rng.integers(len(_DTYPES)))]
        q = p.with_suffix(".npy")
        p.unlink()
        np.save(q, (rng.standard_normal(12) * 300).astype(dt))
        return f"dtype {q.name} -> {dt}"
    if kind == "count":
        what = str(rng.choice(["more", "less", "none", "0-d", "rank"]))
        shape = {"more": (13,), "less": (1,), "none": (0,), "0-d": (), "rank": (1, 1, 1, 1, 1, 1, 1, 1, 1)}[what]
        q = p.with_suffix(".npy")
        p.unlink()
        np.save(q, np.zeros(shape, np.int8))
        return f"count {q.name} -> {what}"
    if kind == "raw":
        fmt = str(rng.choice(["bin", "hex", "txt"]))
        body = {"bin": [b"\x01\x02\x03", b"", b"\x00" * 4097],
                "hex": [b"zz\n", b"@10\n", b"1ffffffffffffffffff\n", b"\xff\xfe\n", b"1_0\n" * 3],
                "txt": [b"1.5\n", b"nan\n", b"99999999999999999999999\n", b"-\n", b"1e400\n", b"0x10\n",
                        b"1," * 100000]}[fmt]
        q = p.with_suffix("." + fmt)
        p.unlink()
        data = body[int(rng.integers(len(body)))]
        q.write_bytes(data)
        return f"raw {q.name} = {data[:20]!r}"
    if kind == "remove":
        p.unlink()
        return f"remove {p.name}"
    if kind == "empty":
        for q in files:
            q.unlink()
        return "empty the directory"
    if kind == "rename":
        new = _NAMES[int(rng.integers(len(_NAMES)))] + p.suffix
        target = d / new
        if new.startswith(".") or target.exists():
            return f"rename {p.name} (skipped: {new!r})"
        p.rename(target)
        return f"rename {p.name} -> {new!r}"
    if kind == "duplicate":
        fmt = "txt" if p.suffix != ".txt" else "bin"
        shutil.copy(p, p.with_suffix("." + fmt))
        return f"duplicate {p.name} as .{fmt}"
    if kind == "subdir":
        (d / f"t{int(rng.integers(3))}.npy").mkdir(exist_ok=True) if not (d / "t0.npy").exists() else None
        (d / "t1.bin").mkdir(exist_ok=True) if not (d / "t1.bin").exists() else None
        return "a subdirectory named like a dump"
    if kind == "symlink":
        q = d / "t2.npy"
        if q.exists() or q.is_symlink():
            q.unlink()
        q.symlink_to(d / "no-such-file.npy")
        return "a dangling symlink t2.npy"
    if kind == "npz":
        np.savez(p.with_suffix(".npy"), a=np.zeros(3, np.int8))
        if p.suffix != ".npy":
            p.unlink()
        return f"an .npz saved as {p.with_suffix('.npy').name}"
    if kind == "dir-is-file":
        shutil.rmtree(d)
        d.write_bytes(b"not a directory")
        return "the dump directory is a file"
    return mutate_input(rng, inputs)


def mutate_input(rng, inputs: list) -> str:
    """Break one of the model input files."""
    q = inputs[int(rng.integers(len(inputs)))]
    what = str(rng.choice(["truncate", "dtype", "shape", "garbage", "directory", "missing", "npz"]))
    if what == "truncate":
        data = q.read_bytes()
        q.write_bytes(data[: int(rng.integers(len(data)))])
    elif what == "dtype":
        np.save(q, np.zeros(324, _DTYPES[int(rng.integers(len(_DTYPES)))]))
    elif what == "shape":
        np.save(q, np.zeros((2, 3), np.int8))
    elif what == "garbage":
        q.write_bytes(b"\x93NUMPY\x01\x00garbage")
    elif what == "directory":
        q.unlink()
        q.mkdir()
    elif what == "missing":
        q.unlink()
    else:
        np.savez(q, a=np.zeros(3))
    return f"input {q.name}: {what}"


def _mutate_once(rng, inputs, d) -> str:
    """:func:`mutate`, or a note when an earlier mutation left nothing for it to act on."""
    try:
        return mutate(rng, inputs, d)
    except OSError as exc:  # e.g. the directory became a file, an input became a directory
        return f"(skipped: {type(exc).__name__})"


def _one_line(exc) -> bool:
    return len(str(exc).strip().splitlines()) == 1


def verdict(model, inputs, dumps) -> str | None:
    """None when the CLI and the API behave (see the module docstring), else a one-line defect signature."""
    from dspsim import cli
    from dspsim.harness.diagnose import diagnose
    from dspsim.harness.dumps import read_inputs
    from dspsim.harness.vectors import VectorError
    from dspsim.tflite import load_model

    argv = ["diagnose", str(model), *sum((["--input", str(p)] for p in inputs), []), "--dumps", str(dumps),
            "--no-search", "--json", "-", "--no-plots"]
    out, err = io.StringIO(), io.StringIO()
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = cli.main(argv)
    except BaseException as exc:  # noqa: BLE001 - the verdict is about what escapes
        if isinstance(exc, KeyboardInterrupt):
            raise
        return f"cli: {type(exc).__name__} escaped: {str(exc).splitlines()[0][:160] if str(exc) else ''}"
    lines = [s for s in err.getvalue().splitlines() if s.strip() and not s.startswith("\r")]
    if "Traceback" in err.getvalue():
        return "cli: a traceback on stderr"
    if code == 2:
        errors = [s for s in lines if "dspsim: error:" in s]
        if len(errors) != 1 or not errors[0].lstrip("\r\x1b[K").startswith("dspsim: error: "):
            return f"cli: exit 2 without exactly one 'dspsim: error:' line: {lines[-3:]}"
    elif code == 3:  # (an unexpected error: one line naming it, as issue 31 asks, but still a defect)
        return f"cli: unexpected error (exit 3): {lines[-1][:200] if lines else ''}"
    elif code not in (0, 1):
        return f"cli: exit {code}"
    try:
        m = load_model(model)
        diagnose(model, read_inputs(m, inputs), dumps, search=False)
    except (ValueError, TypeError) as exc:
        if not _one_line(exc):
            return f"api: {type(exc).__name__} of {len(str(exc).splitlines())} lines"
        if not isinstance(exc, VectorError) and not str(exc).startswith(API_PREFIXES):
            return f"api: {type(exc).__name__} without a file or function name: {str(exc)[:160]!r}"
    except Exception as exc:  # noqa: BLE001
        return f"api: {type(exc).__name__}: {str(exc).splitlines()[0][:160] if str(exc) else ''}"
    return None


def campaign(seed: int, n: int, report=None, budget_s: float = float("inf")) -> tuple:
    """Run ``n`` cases of seed ``seed`` (fewer if ``budget_s`` seconds run out): ``(cases run, defects)``
    with ``defects`` {signature: its first case}."""
    import time

    t0 = time.perf_counter()
    cache, defects, k = {}, {}, 0
    for k in range(n):
        if time.perf_counter() - t0 > budget_s:
            return k, defects
        rng = np.random.default_rng([seed, k])
        with tempfile.TemporaryDirectory(prefix="dspsim-fuzz-diagnose-") as t:
            model, inputs, d = make_case(Path(t), rng, cache)
            what = [_mutate_once(rng, inputs, d) for _ in range(int(rng.choice([1, 1, 2, 3])))]
            bad = verdict(model, inputs, d)
        if bad is not None:
            if bad not in defects and report:
                report(f"{bad}\n    case {seed}/{k}: {model.name}: {'; '.join(what)}")
            defects.setdefault(bad, f"{seed}/{k} {model.name}: {'; '.join(what)}")
    return n, defects


if __name__ == "__main__":
    seed, n = int(sys.argv[1]), int(sys.argv[2])
    os.environ.setdefault("PYTHONWARNINGS", "ignore")
    cases, found = campaign(seed, n, report=lambda s: print(s, flush=True))
    print(f"cases={cases} signatures={len(found)} seed={seed}", flush=True)
