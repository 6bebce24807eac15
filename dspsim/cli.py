"""The dspsim command line: ``dspsim suite | drift | export | compare | bench | run | diagnose |
export-model | validate``.

``bench`` forwards its arguments to :func:`dspsim.bench.main`; ``run`` (also ``run-tflite``, its old name) to
:func:`dspsim.harness.run_model.main`. ``run``, ``diagnose``, ``export-model`` and ``validate`` take a .tflite or
.onnx model (:func:`dspsim.load_model`) and ``--engine`` an engine name or a device's .toml file. ``dspsim --version`` prints the installed distribution's version.

Exit status: 0 success; 1 a bit-exactness check failed (suite, export), the files differ
(compare), a dump diverges (diagnose) or a layer differs (validate); 2 bad input (bad TOML,
unknown op or case, missing or corrupt file, a bad dump, an --out or --json that would overwrite an
input or a folder dspsim did not write), reported as one line on stderr; 3 the run could not finish
(a full disk, out of memory, an unexpected error), one line on stderr; 130 interrupted, 143 terminated
(SIGTERM): no half-written report and no temporary is left behind.

What dspsim writes, and what it refuses to write, is the business of :mod:`dspsim.harness.safe_io`.
"""
from __future__ import annotations

import argparse
import contextlib
import datetime as _dt
import os
import platform
import sys
import time
from pathlib import Path

EXIT_OK, EXIT_FAIL, EXIT_USAGE, EXIT_ERROR, EXIT_INTERRUPTED, EXIT_TERMINATED = 0, 1, 2, 3, 130, 143


class UsageError(Exception):
    """Bad input from the user: printed as one line, exit status 2."""


def _stamp() -> str:
    return _dt.datetime.now(_dt.timezone.utc).strftime("%Y%m%d-%H%M%S")


def _default_out(name: str) -> Path:
    return Path("reports") / f"{name}-{_stamp()}"


def _meta(argv) -> dict:
    import numba
    import numpy

    from . import __version__

    return {
        "started": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "argv": ["dspsim", *argv],
        "dspsim": __version__,
        "python": platform.python_version(),
        "numpy": numpy.__version__,
        "numba": numba.__version__,
        "platform": platform.platform(terse=True),
        "cpus": os.cpu_count(),
    }


def _print(*parts, **kw) -> None:
    """``print``, with control characters from models and files escaped (:func:`safe_io.terminal_text`)."""
    from .harness.safe_io import terminal_text

    print(*(terminal_text(p) for p in parts), **kw)


def _err(msg: str) -> None:
    from .harness.safe_io import terminal_text

    print(f"dspsim: error: {terminal_text(msg, one_line=True)}", file=sys.stderr)


#: The arguments of the verbs that name files or folders the run reads.
_INPUT_ARGS = ("suite", "expected", "actual", "model", "input", "dumps", "data", "engine", "against")


def _inputs(args, extra=()) -> list:
    """Every file or folder the run reads (the arguments of :data:`_INPUT_ARGS` and ``extra``)."""
    found = []
    for name in _INPUT_ARGS:
        v = getattr(args, name, None)
        found += [x for x in (v if isinstance(v, list) else [v]) if isinstance(x, str)]
    return found + [x for x in extra if x]


def _out_dir(args, name: str, inputs=()) -> Path:
    """``--out`` or ``reports/<name>-<timestamp>``, checked before any work is done
    (:func:`dspsim.harness.safe_io.check_output_dir`), and ``--json`` beside it."""
    from .harness.safe_io import check_name, check_output_dir, check_output_file

    inputs = _inputs(args, inputs)
    if getattr(args, "json", None) not in (None, "-"):
        check_output_file(args.json, inputs, "--json")
    if args.out:
        out = Path(args.out)
    else:
        try:
            out = _default_out(check_name(name, "report name", "dspsim"))
        except ValueError as exc:
            raise UsageError(str(exc)) from None
    return check_output_dir(out, inputs)


# =============================================================================================
# suite
# =============================================================================================
def _load_cases(args):
    from .harness.default_suite import default_suite
    from .harness.suite import SuiteError, load_suite

    if args.suite:
        try:
            name, cases = load_suite(args.suite)
        except SuiteError as exc:
            raise UsageError(str(exc)) from None
        if getattr(args, "quick", False):
            _print("dspsim: --quick applies to the built-in suite only; running every case of the file",
                   file=sys.stderr)
        return name, cases
    quick = getattr(args, "quick", False)
    return ("default-quick" if quick else "default"), default_suite(quick=quick)


def _cmd_suite(args, argv) -> int:
    from .harness.report import write_suite_report
    from .harness.suite import run_suite

    if args.ops:
        from .harness.ops import vocabulary

        for op in vocabulary().values():
            _print(f"{op.name:20s} {op.doc}")
            _print(f"{'':20s} parameters: " + ", ".join(f"{k}={v!r}" for k, v in op.defaults.items()))
        return EXIT_OK
    name, cases = _load_cases(args)
    if args.case:
        pats = args.case
        cases = [c for c in cases if any(p in c.name for p in pats)]
        if not cases:
            raise UsageError(f"no case name contains any of {pats}")
    if args.list:
        for c in cases:
            _print(f"{c.name:48s} {c.op:18s} seed={c.seed} {c.params}")
        return EXIT_OK
    out = _out_dir(args, name, [c.vectors for c in cases])
    width = len(str(len(cases)))

    def progress(i, n, r):
        checks = r.checks
        mism = sum(c.mismatches for c in checks)
        detail = r.error if r.status == "error" else f"{len(checks)} checks, {mism} mismatches"
        _print(f"[{i:{width}d}/{n}] {r.status.upper():5s} {r.case.name:44s} {r.seconds:6.2f}s  {detail}",
               file=sys.stderr, flush=True)

    _print(f"dspsim suite {name}: {len(cases)} cases", file=sys.stderr, flush=True)
    result = run_suite(cases, name=name, progress=progress, meta=_meta(argv))
    d = result.to_dict()
    write_suite_report(d, out, plots=not args.no_plots)
    s = d["summary"]
    verdict = "PASS" if result.passed else "FAIL"
    _print(f"{verdict}: {s['cases']} cases, {s['passed']} pass, {s['failed']} fail, {s['errors']} error; "
           f"{s['mismatches']} mismatches in {s['checks']} checks ({result.seconds:.1f} s). Report: {out}")
    return EXIT_OK if result.passed else EXIT_FAIL


# =============================================================================================
# drift
# =============================================================================================
def _cmd_drift(args, argv) -> int:
    from .harness.drift import run_drift
    from .harness.report import write_drift_report

    if args.cycles < 1 or args.depth < 1:
        raise UsageError("--cycles and --depth must be at least 1")
    out = _out_dir(args, "drift")
    t0 = time.perf_counter()

    def progress(msg):
        _print(f"[drift] {msg}", file=sys.stderr, flush=True)

    d = run_drift(cycles=args.cycles, depth=args.depth, progress=progress)
    d["run"] = {"name": "drift", "seconds": round(time.perf_counter() - t0, 3), **_meta(argv)}
    write_drift_report(d, out, plots=not args.no_plots)
    _print(f"drift: {len(d['cycles'])} cycle runs, {len(d['depth'])} chains ({d['run']['seconds']:.1f} s). "
           f"Report: {out}")
    for f in d.get("findings", []):
        _print(f"  - {f}")
    return EXIT_OK


# =============================================================================================
# export
# =============================================================================================
def _cmd_export(args, argv) -> int:
    from .harness.report import atomic_dir
    from .harness.suite import SuiteError, find_cases, run_case
    from .harness.vectors import c_header, c_names, export_stems, save_npz

    _, cases = _load_cases(args)
    try:
        chosen = find_cases(args.cases, cases)
    except SuiteError as exc:
        raise UsageError(str(exc)) from None
    out = _out_dir(args, "export", [c.vectors for c in chosen])
    try:
        stems = export_stems([c.name for c in chosen], args.format)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    status, defined = EXIT_OK, {}
    with atomic_dir(out) as tmp:
        for case in chosen:
            r = run_case(case)
            if r.status == "error":
                raise UsageError(f"case {case.name!r}: {r.error}")
            if r.status == "fail":
                bad = [c.name for c in r.checks if not c.passed]
                _print(f"dspsim: warning: {case.name}: dspsim disagrees with {bad}; vectors written anyway",
                       file=sys.stderr)
                status = EXIT_FAIL
            o = r.outcome
            consts = {"op": case.op, "seed": case.seed, **o.constants}
            if args.format == "npz":
                path = save_npz(tmp / f"{stems[case.name]}.npz", o.vectors, consts)
            else:
                path = tmp / f"{stems[case.name]}.h"
                text = c_header(case.name, o.vectors, consts,
                                comment=f"case {case.name}: op {case.op}, seed {case.seed}; "
                                        f"'output' is the expected result (checked against dspsim.oracle)")
                for name in c_names(text):  # the headers must compile when a test bench includes them all
                    other = defined.setdefault(name.upper(), case.name)
                    if other != case.name:
                        raise UsageError(f"export: cases {other!r} and {case.name!r} both define {name}; rename one "
                                         "of them")
                path.write_text(text, encoding="utf-8")
            _print(f"{case.name}: {r.status}, {o.n_outputs} outputs -> {out / path.name}", file=sys.stderr)
    _print(f"exported {len(chosen)} case(s) to {out}")
    return status


# =============================================================================================
# compare
# =============================================================================================
def _shape_arg(text):
    try:
        shape = tuple(int(d) for d in text.replace("x", ",").split(",") if d.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a shape like 1,8,8,3") from None
    if not shape or min(shape) < 0:
        raise argparse.ArgumentTypeError(f"{text!r} is not a shape like 1,8,8,3")
    return shape


def _dtype_arg(text):
    import numpy

    try:
        dt = numpy.dtype(text)
    except TypeError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a numpy dtype (int8, int16, int32, float32, ...)") from None
    if dt.kind not in "iuf":
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer or float dtype")
    return dt


def _add_pack(parser) -> None:
    """``--pack N`` / ``--pack-order``: how .hex words hold values (:class:`dspsim.harness.vectors.HexLayout`)."""
    parser.add_argument("--pack", type=int, default=1, metavar="N",
                        help=".hex files: N values per word (default 1), lane 0 in the least significant bits")
    parser.add_argument("--pack-order", choices=("lsb", "msb"), default="lsb",
                        help="with --pack: lane 0 in the least (lsb, default: little-endian) or most significant bits")


def _hex_layout(args):
    from .harness.vectors import HexLayout

    try:
        return HexLayout(args.pack, args.pack_order)
    except ValueError as exc:
        raise UsageError(f"--pack: {exc}") from None


def _out_dir_json_only(args) -> None:
    """Check ``--json FILE`` before any work, when no report folder is written."""
    from .harness.safe_io import check_output_file

    check_output_file(args.json, _inputs(args), "--json")


def _write_json(d: dict, target) -> None:
    """``--json FILE`` (written atomically) or ``--json -`` (stdout)."""
    from .harness.report import json_text, write_json_file

    if target == "-":
        print(json_text(d))
    else:
        write_json_file(d, target)


def _cmd_compare(args, argv) -> int:
    from .harness.compare import compare_files
    from .harness.report import write_compare_report
    from .harness.vectors import VectorError

    out = _out_dir(args, "compare") if args.out or not args.json else None
    if out is None and args.json != "-":
        _out_dir_json_only(args)
    t0 = time.perf_counter()
    try:
        r = compare_files(args.expected, args.actual, args.key, dtype=args.dtype, shape=args.shape,
                          hex_layout=_hex_layout(args))
    except VectorError as exc:
        raise UsageError(str(exc)) from None
    checks, problems, passed = r["checks"], r["problems"], r["passed"]
    d = {"schema": "dspsim.compare/1", "kind": "compare",
         "run": {"name": "compare", "seconds": round(time.perf_counter() - t0, 3), **_meta(argv)},
         "expected": str(args.expected), "actual": str(args.actual), "checks": checks,
         "problems": problems, "notes": r["notes"], "passed": passed}
    if out is not None:
        write_compare_report(d, out, plots=not args.no_plots)
    if args.json:
        _write_json(d, args.json)
    text = sys.stderr if args.json == "-" else sys.stdout  # keep stdout pure JSON
    for c in checks:
        where = f", first at {tuple(c['first_index'])}: expected {c['expected']}, actual {c['actual']}, " \
                f"max |diff| {c['max_abs_diff']} {c['unit']}" if c["mismatches"] else ""
        _print(f"{c['name']}: {c['mismatches']} / {c['count']} mismatches{where}", file=text)
    for n in r["notes"]:
        _print(f"note: {n}", file=text)
    for p in problems:
        _print(f"not compared: {p}", file=text)
    _print(f"{'PASS' if passed else 'FAIL'}." + (f" Report: {out}" if out else ""), file=text)
    return EXIT_OK if passed else EXIT_FAIL


# =============================================================================================
# diagnose, export-model (dspsim.harness.diagnose / .export_model)
# =============================================================================================
def _model_base(args) -> tuple:
    """(the model file's bytes, its format, the device document of --engine (default: the format's engine) with
    --variant applied on top)."""
    from ._io import model_bytes
    from .harness.diagnose import base_document, parse_variant
    from .load import default_engine, model_format

    try:
        data = model_bytes(args.model)
    except (OSError, ValueError, TypeError) as exc:
        raise UsageError(str(exc).splitlines()[0] if str(exc) else type(exc).__name__) from None
    fmt = model_format(data)
    try:
        base = base_document(args.engine or default_engine(fmt))
    except (OSError, ValueError, TypeError) as exc:
        raise UsageError(f"--engine: {exc}") from None
    try:
        return data, fmt, parse_variant(args.variant or "", base)
    except (ValueError, TypeError) as exc:
        raise UsageError(f"--variant: {exc}") from None


def _cmd_diagnose(args, argv) -> int:
    from .harness.clues import histogram_text
    from .harness.diagnose import diagnose, diagnose_frames, variant_profile
    from .harness.dumps import read_frames
    from .harness.progress import Progress
    from .harness.report import write_diagnose_report
    from .load import load_model

    data, fmt, base = _model_base(args)
    out = _out_dir(args, "diagnose") if args.out or not args.json else None
    if out is None and args.json != "-":
        _out_dir_json_only(args)
    t0 = time.perf_counter()
    try:
        frames = read_frames(load_model(data, variant_profile(base, fmt)), args.input)  # (T, *input): T frames
        d = (diagnose if len(frames) == 1 else diagnose_frames)(
            data, frames[0] if len(frames) == 1 else frames, args.dumps, base, search=not args.no_search,
            progress=Progress(label="diagnose", unit="variants"), hex_layout=_hex_layout(args))
        d["model"] = str(args.model)
    except (OSError, ValueError, TypeError) as exc:
        raise UsageError(str(exc).splitlines()[0] if str(exc) else type(exc).__name__) from None
    d["run"] = {"name": "diagnose", "seconds": round(time.perf_counter() - t0, 3), **_meta(argv)}
    if out is not None:
        write_diagnose_report(d, out, plots=not args.no_plots)
    if args.json:
        _write_json(d, args.json)
    text = sys.stderr if args.json == "-" else sys.stdout
    f = d["first_divergence"]
    if f is None:
        _print(f"PASS: all {d['dumped']} dumped tensors"
               + (f" of {d['frames_dumped']} frames (0 .. {d['frame']}, the state carried)" if "frame" in d else "")
               + f" match `{d['engine']}` bit for bit.", file=text)
    else:
        where = "constant" if f["op_index"] is None else "input" if f["op_index"] < 0 else f"op {f['op_index']}"
        _print("FAIL: first divergence at " + (f"frame {d['frame']} of {d['frames']}, " if "frame" in d else "")
               + f"{where} {f['op']} (tensor {f['tensor']} {f['name']!r}): {f['mismatches']} / "
               f"{f['count']} differ, max |diff| {f['max_abs_diff']} LSB, first at {tuple(f['first_index'])} "
               f"(dspsim {f['expected']}, device {f['actual']}); {f['locality'] or 'not an operator'}"
               + (f", inputs {f['undumped_inputs']} not dumped" if f["undumped_inputs"] else ""), file=text)
        if f["exact_histogram"]:
            _print(f"histogram (device - dspsim): {histogram_text(f['exact_histogram'], 12)}", file=text)
        if f["clue"]:
            _print(f"clue: {f['clue']}", file=text)
        if d["search"]["variants"]:
            _print("reproduced by: " + (", ".join(d["reproduced_by"])
                                        or f"none of the {d['search']['variants']} variants searched"), file=text)
            if d["profile_toml"]:
                _print("as a device profile (save as device.toml, run with --engine device.toml):\n"
                       + d["profile_toml"].rstrip(), file=text)
            close = [v for v in d["variants"] if v["same_as"] is None and v["mismatches"] and not v["error"]][:5]
            if close:
                _print("closest others: " + "; ".join(f"{v['variant']} ({v['mismatches']} mismatches)" for v in close),
                       file=text)
        for s in d["search"]["skipped"]:
            _print(f"note: {s}", file=text)
    if d["not_dumped"]["caveat"]:
        _print(f"note: {d['not_dumped']['caveat']}", file=text)
    if out is not None:
        _print(f"Report: {out}", file=text)
    return EXIT_OK if d["passed"] else EXIT_FAIL


def _cmd_export_model(args, argv) -> int:
    from .harness.diagnose import variant_profile, variant_words
    from .harness.dumps import read_frames
    from .harness.export_model import export_frames, export_model
    from .harness.report import atomic_dir
    from .harness.stages import NO_STAGES, parse_partial_sums
    from .load import load_model

    data, fmt, base = _model_base(args)
    out = _out_dir(args, "export-model")
    try:
        model = load_model(data, variant_profile(base, fmt))
        if args.partial_sums is not None:
            parse_partial_sums(args.partial_sums, model)  # refused before any file is written
        frames = read_frames(model, args.input)  # (T, *input): T frames, the state carried
        for inputs in frames:
            model.run(inputs)  # refuse bad inputs before any file is written
        model.reset()
    except (OSError, ValueError, TypeError) as exc:
        raise UsageError(str(exc).splitlines()[0] if str(exc) else type(exc).__name__) from None
    with atomic_dir(out) as tmp:
        kw = dict(hex_style=args.hex_style, model_name=str(args.model), engine=variant_words(base), stages=args.stages,
                  partial_sums=args.partial_sums)
        if len(frames) > 1:
            m = export_frames(model, frames, args.format, tmp, **kw)
            _print(f"exported {m['frames']} frames ({args.format}, state tensors {m['state']}) to {out}/frame0000 .. "
                   f"{m['folders'][-1]}")
            return EXIT_OK
        m = export_model(model, frames[0], args.format, tmp, **kw)
    if args.stages and not m["stages"]["operators"]:
        _print(f"dspsim: note: {NO_STAGES}", file=sys.stderr)
    n_params = sum(len(o["params"]) for o in m["operators"])
    _print(f"exported {len(m['tensors'])} tensors and {n_params} operator parameters ({args.format}) to {out}")
    return EXIT_OK


# =============================================================================================
# validate (dspsim.harness.validate)
# =============================================================================================
def _cmd_validate(args, argv) -> int:
    from .harness.progress import Progress
    from .harness import validate as v
    from .harness.report import atomic_dir

    out = _out_dir(args, "validate") if args.out or not args.json else None
    if out is None and args.json != "-":
        _out_dir_json_only(args)
    try:
        security = v.security_from_args(args)
        with atomic_dir(out) if out is not None else contextlib.nullcontext() as tmp, \
                _one_line_warnings(v.PlaintextSchedulerWarning):
            d = v.validate(args.model, args.data, engine=args.engine, against=args.against,
                           interpreter=args.against_interpreter, scheduler=args.scheduler, security=security,
                           chunk=args.chunk, outputs_dir=tmp, progress=Progress(), float_model=args.float_model,
                           float_executor=args.float_executor)
            d["run"] = {"name": "validate", "seconds": d["seconds"], **_meta(argv)}
            if tmp is not None:
                v.write_report(d, tmp, plots=not args.no_plots)
    except v.ValidateError as exc:
        raise UsageError(str(exc)) from None
    if args.json:
        _write_json(d, args.json)
    text = sys.stderr if args.json == "-" else sys.stdout
    for line in v.summary_lines(d):
        _print(line, file=text)
    if out is not None:
        _print(f"Report: {out}", file=text)
    if d["lost"]:
        _err(v.lost_line(d) + (f" (report: {out})" if out is not None else ""))
        return EXIT_ERROR
    return EXIT_OK if d["passed"] else EXIT_FAIL


@contextlib.contextmanager
def _one_line_warnings(category):
    """Warnings of ``category`` printed as one ``dspsim: warning:`` line on stderr (not Python's two-line form)."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("always", category)
        shown = warnings.showwarning

        def show(message, cat, *rest, **kw):
            if issubclass(cat, category):
                _print(f"dspsim: warning: {message}", file=sys.stderr)
            else:
                shown(message, cat, *rest, **kw)

        warnings.showwarning = show
        yield


# =============================================================================================
# bench
# =============================================================================================
def _cmd_bench(args, argv) -> int:
    from . import bench

    return int(bench.main(list(args.bench_args)) or 0)


def _cmd_run(args, argv) -> int:
    from .harness import run_model

    return int(run_model.main(list(args.run_args)) or 0)


def _cmd_frontend(args, argv) -> int:
    """``dspsim frontend``: a WAV through TFLite Micro's microfrontend (and a model), :mod:`dspsim.frontend.cli`."""
    from .frontend.cli import run_frontend

    return run_frontend(args, _out_dir(args, "frontend", [args.wav]), _meta(argv), _print)


def _cmd_frontend_drift(args, argv) -> int:
    """``dspsim frontend-drift``: the microfrontend's per-stage error, :mod:`dspsim.frontend.error_report`."""
    from .frontend.error_report import run_frontend_drift

    def progress(done, total):
        if done == total or done % 5 == 0:
            print(f"  {done}/{total} signals", file=sys.stderr, flush=True)

    return run_frontend_drift(args, _out_dir(args, "frontend-drift", [args.wav] if args.wav else []), _meta(argv),
                              _print, progress)


# =============================================================================================
_ENGINE_HELP = ("an engine name (dspsim.engines.names(): litert, tflm, xnnpack for .tflite; onnxruntime, "
                "onnxruntime-vnni, ... for .onnx) or a device's .toml file (default: litert for .tflite; for .onnx the "
                "ONNX Runtime this host runs: onnxruntime-vnni with VNNI, else onnxruntime)")


def build_parser() -> argparse.ArgumentParser:
    from . import __version__

    p = argparse.ArgumentParser(
        prog="dspsim",
        description="Bit-exact simulation of quantized NN layers on int8 DSP/NPU arithmetic.",
        epilog="Exit status: 0 ok, 1 mismatch / failed check, 2 bad input, 3 the run could not finish (full disk, "
               "out of memory, an unexpected error), 130 interrupted, 143 terminated.")
    p.add_argument("--version", action="version", version=f"dspsim {__version__}")
    sub = p.add_subparsers(dest="command", metavar="COMMAND")

    s = sub.add_parser("suite", help="run the built-in suite (or a TOML suite) and write a report",
                       description="Run every case: dspsim vs the oracle bit for bit, vs the float model, "
                                   "and across rounding / requantization schemes.",
                       epilog="TOML schema: the docstring of dspsim/harness/suite.py "
                              "(python -c 'import dspsim.harness.suite as s; help(s)').")
    s.add_argument("suite", nargs="?", help="a TOML suite file (default: the built-in suite)")
    s.add_argument("--out", help="report directory (default: reports/<suite>-<UTC timestamp>)")
    s.add_argument("--quick", action="store_true", help="built-in suite: a third of the cases, every op")
    s.add_argument("--case", action="append", metavar="TEXT", help="only cases whose name contains TEXT (repeatable)")
    s.add_argument("--list", action="store_true", help="list the cases and exit")
    s.add_argument("--ops", action="store_true", help="list the operators a case can name (op = ...), with "
                                                      "their parameters, and exit")
    s.add_argument("--no-plots", action="store_true", help="skip the PNG plots")

    d = sub.add_parser("drift", help="error growth over quantize/dequantize cycles and requantization chains")
    d.add_argument("--out", help="report directory (default: reports/drift-<UTC timestamp>)")
    d.add_argument("--cycles", type=int, default=25, help="quantize -> dequantize cycles (default 25)")
    d.add_argument("--depth", type=int, default=16, help="layers in the requantization chains (default 16)")
    d.add_argument("--no-plots", action="store_true", help="skip the PNG plots")

    e = sub.add_parser("export", help="write a case's inputs, parameters and expected outputs for a test bench")
    e.add_argument("cases", nargs="+", metavar="CASE", help="case names (see `dspsim suite --list`)")
    e.add_argument("--format", choices=("npz", "c-header"), default="npz")
    e.add_argument("--suite", help="take the cases from this TOML suite instead of the built-in one")
    e.add_argument("--out", help="output directory (default: reports/export-<UTC timestamp>)")

    c = sub.add_parser("compare", help="bit-exact diff of two vector files (.npz .npy .bin .hex .txt)",
                       epilog="Exit status: 0 identical, 1 a difference (or an array on one side only), 2 bad "
                              "input (unreadable file, --key naming an array a .npz lacks, no array in common), "
                              "3 a full disk or an unexpected error.")
    c.add_argument("expected")
    c.add_argument("actual")
    c.add_argument("--key", help="compare only this array (a .npz entry)")
    c.add_argument("--out", help="report directory (default: reports/compare-<UTC timestamp>)")
    c.add_argument("--no-plots", action="store_true", help="skip the PNG plots")

    c.add_argument("--dtype", type=_dtype_arg, help="dtype of raw .bin/.hex/.txt dumps (default: the other file's)")
    c.add_argument("--shape", type=_shape_arg, help="shape of raw dumps, e.g. 1,8,8,3 (default: the other file's)")
    c.add_argument("--json", metavar="FILE", help="also write the results as JSON to FILE (- for stdout; "
                                                  "without --out no report directory is written)")
    _add_pack(c)

    from .harness.export_model import FORMATS
    from .harness.vectors import HEX_STYLES

    g = sub.add_parser("diagnose", help="diff a device's per-layer dumps against a model; what explains them",
                       description="Compare every dumped tensor with dspsim's run of the model, name the first "
                                   "diverging operator and search the engines, rounding flavours and accumulators "
                                   "dspsim emulates for the one that reproduces the dumps.",
                       epilog="Dumps: one file per tensor, t<index> or the tensor name with characters outside "
                              "[A-Za-z0-9_.-] replaced by _, as .npy, .bin (raw little-endian), .hex ($readmemh) "
                              "or .txt (decimal). Exit status: 0 every dump matches, 1 a divergence, 2 bad input, "
                              "3 a full disk or an unexpected error.")
    g.add_argument("model", help="the .tflite or .onnx file")
    g.add_argument("--input", action="append", required=True, metavar="X.npy",
                   help="the input the device ran on, one per model input, in order; a .npy of (T, *input) is T "
                        "frames, the state carried, with the dumps in --dumps/frame0000/ ...")
    g.add_argument("--dumps", required=True, metavar="DIR", help="the device's dump directory")
    g.add_argument("--engine", help=f"the reference: {_ENGINE_HELP}")
    g.add_argument("--variant", metavar="WORDS", help="on top of --engine, e.g. 'accumulator=24,saturate' "
                                                     "(a reproduced_by entry)")
    g.add_argument("--no-search", action="store_true", help="compare only; do not search the variants")
    g.add_argument("--json", metavar="FILE", help="write the results as JSON to FILE (- for stdout)")
    g.add_argument("--out", help="report directory (default: reports/diagnose-<UTC timestamp> unless --json)")
    g.add_argument("--no-plots", action="store_true", help="skip the PNG plots")
    _add_pack(g)

    x = sub.add_parser("export-model", help="every tensor and operator parameter of one model run, as vectors")
    x.add_argument("model", help="the .tflite or .onnx file")
    x.add_argument("--input", action="append", required=True, metavar="X.npy",
                   help="one per model input, in order; a .npy of (T, *input) is T frames, the state carried, "
                        "exported into frame0000/ ... (one export each)")
    x.add_argument("--format", choices=FORMATS, default="npz")
    x.add_argument("--hex-style", choices=HEX_STYLES, default="readmemh",
                   help="--format hex: one word per line after // comments, bare digits ($readmemh, the default) "
                        "or 0x-prefixed")
    x.add_argument("--engine", help=f"whose arithmetic: {_ENGINE_HELP}")
    x.add_argument("--variant", metavar="WORDS", help="on top of --engine, e.g. 'accumulator=24,saturate'")
    x.add_argument("--out", help="output directory (default: reports/export-model-<UTC timestamp>)")
    x.add_argument("--stages", action="store_true",
                   help="also every MAC operator's (FC, conv, depthwise, transpose conv, batch matmul; ONNX "
                        "QLinearConv, QLinearMatMul, QGemm; MatMulInteger / ConvInteger: op<k>_acc only) accumulator "
                        "before the bias "
                        "(op<k>_acc), after it (op<k>_acc_bias) "
                        "and the requantized value before the output zero point and clamp (op<k>_requant), and "
                        "LSTM's and SVDF's steps under their own names (op<k>_in_acc, op<k>_time_acc, ...), as "
                        "vectors in the chosen format (stages.npz, stages.h or stages/)")
    x.add_argument("--partial-sums", metavar="OP:INDEX",
                   help="also one output's taps in the engine's accumulation order (x, w, zero points, the "
                        "accumulator after each tap): OP an operator index, INDEX a flat or comma-separated "
                        "multi-index into its output (an LSTM's (batch, step, gate, unit), an SVDF's (batch, "
                        "filter)) (op<k>_taps_<field>)")

    from .harness.validate import add_arguments as _validate_arguments

    _validate_arguments(sub.add_parser(
        "validate", help="run a data set through a model, diff every layer against an engine or interpreter",
        description="Run a data set in chunks (run_batch), locally or on a Dask cluster, and diff every layer "
                    "against another dspsim engine or the real interpreter.",
        epilog="Exit status: 0 bit-exact (or no comparison), 1 a mismatch, 2 bad input (data that does not fit "
               "the model, a missing package, an unreachable scheduler), 3 a full disk or an unexpected error, 130 "
               "interrupted (no report written)."))

    fe = sub.add_parser("frontend", help="a 16 kHz mono WAV through TFLite Micro's audio microfrontend (and a "
                        "streaming wake-word model after it)",
                        epilog="Writes frontend.npz (features; with --model the int8 inputs, outputs and "
                               "probabilities) and summary.json / summary.md into --out. Exit status: 0 done, 2 bad "
                               "input (not mono 16-bit 16 kHz PCM, a model that is not (1, stride, 40)), 3 a full "
                               "disk or an unexpected error.")
    fe.add_argument("wav", help="16 kHz mono 16-bit PCM WAV")
    fe.add_argument("--out", help="report folder (default reports/frontend-<timestamp>)")
    fe.add_argument("--model", help="a streaming microWakeWord .tflite model to run on the features")
    fe.add_argument("--engine", default="tflm", help="the model's engine (default tflm)")

    fd = sub.add_parser("frontend-drift", help="the microfrontend's fixed-point error per stage (window, FFT, "
                        "filterbank, noise reduction, PCAN, log) against exact arithmetic, over level and length",
                        epilog="Writes frontend_drift.md / .json and stages_vs_level.png, features_over_time.png "
                               "into --out. Exit status: 0 done, 2 bad input, 3 a full disk or an unexpected error.")
    fd.add_argument("--signals", help="comma-separated: noise, tone (1 kHz), chirp (default all three)")
    fd.add_argument("--levels", help="peak levels in dBFS, comma-separated (default 0,-10,...,-90)")
    fd.add_argument("--seconds", type=float, default=1.0, help="length of each signal (default 1 s; the long "
                    "drift run is max(10 s, this))")
    fd.add_argument("--wav", help="also a 16 kHz mono 16-bit WAV (speech, music) at its own level")
    fd.add_argument("--out", help="report folder (default reports/frontend-drift-<timestamp>)")
    fd.add_argument("--no-plots", action="store_true", help="skip the PNG plots")

    b = sub.add_parser("bench", help="speed of the kernels next to their peers (dspsim.bench)", add_help=False)
    b.add_argument("bench_args", nargs=argparse.REMAINDER)
    for verb in ("run", "run-tflite"):
        t = sub.add_parser(verb, help="run a .tflite or .onnx model through dspsim's kernels, layer by layer"
                           + (" (the old name of run)" if verb != "run" else ""), add_help=False)
        t.add_argument("run_args", nargs=argparse.REMAINDER)
    return p


_COMMANDS = {"suite": _cmd_suite, "drift": _cmd_drift, "export": _cmd_export, "compare": _cmd_compare,
             "bench": _cmd_bench, "run": _cmd_run, "run-tflite": _cmd_run, "diagnose": _cmd_diagnose,
             "export-model": _cmd_export_model, "validate": _cmd_validate, "frontend": _cmd_frontend,
             "frontend-drift": _cmd_frontend_drift}


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser()
    if argv[:1] == ["bench"]:  # everything after `bench` belongs to dspsim.bench
        args = argparse.Namespace(command="bench", bench_args=argv[1:])
    elif argv[:1] in (["run"], ["run-tflite"]):  # and after `run` to dspsim.harness.run_model
        args = argparse.Namespace(command=argv[0], run_args=argv[1:])
    else:
        try:
            args = parser.parse_args(argv)
        except SystemExit as exc:  # argparse printed its usage line
            return EXIT_USAGE if exc.code else EXIT_OK
    if args.command is None:
        parser.print_help()
        return EXIT_USAGE
    if args.command == "export":
        args.quick = False
    return _run_command(args, argv)


def _run_command(args, argv) -> int:
    """The verb, with every failure turned into one line on stderr and its exit status."""
    import errno

    from .harness.safe_io import OutDirError, Terminated, sigterm_as_interrupt

    try:
        with sigterm_as_interrupt():
            return _COMMANDS[args.command](args, argv)
    except (UsageError, OutDirError) as exc:
        _err(str(exc))
        return EXIT_USAGE
    except (ValueError, TypeError) as exc:  # dspsim's rule for bad input: the message names the function and rule
        msg = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        _err(msg)
        return EXIT_USAGE
    except Terminated:
        _err("terminated (SIGTERM); no report written")
        return EXIT_TERMINATED
    except KeyboardInterrupt:
        _err("interrupted; no report written")
        return EXIT_INTERRUPTED
    except BrokenPipeError:  # `dspsim suite --list | head`
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_OK
    except OSError as exc:
        where = f"{exc.filename}: " if exc.filename else ""
        if exc.errno == errno.ENOSPC:
            _err(f"{where}no space left on device; nothing was written (the previous report, if any, is kept)")
        else:
            _err(f"{where}{exc.strerror or exc}")
        return EXIT_ERROR
    except MemoryError:
        _err("out of memory; nothing was written")
        return EXIT_ERROR
    except Exception as exc:  # noqa: BLE001 - a bug or an unforeseen input: one line, not a traceback
        msg = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
        _err(f"unexpected {type(exc).__name__}" + (f": {msg}" if msg else "")
             + " (please report it with the command line)")
        return EXIT_ERROR


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
