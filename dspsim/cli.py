"""The dspsim command line: ``dspsim suite | drift | export | compare | bench | run-tflite``.

``bench`` forwards its arguments to :func:`dspsim.bench.main`; ``run-tflite`` (present when
:mod:`dspsim.tflite` is installed) to :func:`dspsim.tflite.cli_main`.

Exit status: 0 success; 1 a bit-exactness check failed (suite, export) or the files differ
(compare); 2 bad input (bad TOML, unknown op or case, missing or corrupt file), reported as one
line on stderr; 130 interrupted (no half-written report is left behind).
"""
from __future__ import annotations

import argparse
import datetime as _dt
import os
import platform
import sys
import time
from pathlib import Path

EXIT_OK, EXIT_FAIL, EXIT_USAGE, EXIT_INTERRUPTED = 0, 1, 2, 130


class UsageError(Exception):
    """Bad input from the user: printed as one line, exit status 2."""


def _stamp() -> str:
    return _dt.datetime.now(_dt.timezone.utc).strftime("%Y%m%d-%H%M%S")


def _default_out(name: str) -> Path:
    return Path("reports") / f"{name}-{_stamp()}"


def _meta(argv) -> dict:
    import numpy

    try:
        import numba

        numba_version = numba.__version__
    except ImportError:  # pragma: no cover - numba is a dependency
        numba_version = None
    try:
        from importlib.metadata import version

        dspsim_version = version("dspsim")
    except Exception:  # noqa: BLE001 - not installed as a distribution
        dspsim_version = None
    return {
        "started": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "argv": ["dspsim", *argv],
        "dspsim": dspsim_version,
        "python": platform.python_version(),
        "numpy": numpy.__version__,
        "numba": numba_version,
        "platform": platform.platform(terse=True),
        "cpus": os.cpu_count(),
    }


def _err(msg: str) -> None:
    print(f"dspsim: error: {msg}", file=sys.stderr)


def _out_dir(args, name: str) -> Path:
    """``--out`` or ``reports/<name>-<timestamp>``, checked before any work is done."""
    from .harness.report import check_replaceable

    out = Path(args.out) if args.out else _default_out(name)
    try:
        check_replaceable(out)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    return out


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
            print("dspsim: --quick applies to the built-in suite only; running every case of the file",
                  file=sys.stderr)
        return name, cases
    quick = getattr(args, "quick", False)
    return ("default-quick" if quick else "default"), default_suite(quick=quick)


def _cmd_suite(args, argv) -> int:
    from .harness.report import write_suite_report
    from .harness.suite import run_suite

    name, cases = _load_cases(args)
    if args.case:
        pats = args.case
        cases = [c for c in cases if any(p in c.name for p in pats)]
        if not cases:
            raise UsageError(f"no case name contains any of {pats}")
    if args.list:
        for c in cases:
            print(f"{c.name:48s} {c.op:18s} seed={c.seed} {c.params}")
        return EXIT_OK
    out = _out_dir(args, name)
    width = len(str(len(cases)))

    def progress(i, n, r):
        checks = r.checks
        mism = sum(c.mismatches for c in checks)
        detail = r.error if r.status == "error" else f"{len(checks)} checks, {mism} mismatches"
        print(f"[{i:{width}d}/{n}] {r.status.upper():5s} {r.case.name:44s} {r.seconds:6.2f}s  {detail}",
              file=sys.stderr, flush=True)

    print(f"dspsim suite {name}: {len(cases)} cases", file=sys.stderr, flush=True)
    result = run_suite(cases, name=name, progress=progress, meta=_meta(argv))
    d = result.to_dict()
    write_suite_report(d, out, plots=not args.no_plots)
    s = d["summary"]
    verdict = "PASS" if result.passed else "FAIL"
    print(f"{verdict}: {s['cases']} cases, {s['passed']} pass, {s['failed']} fail, {s['errors']} error; "
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
        print(f"[drift] {msg}", file=sys.stderr, flush=True)

    d = run_drift(cycles=args.cycles, depth=args.depth, progress=progress)
    d["run"] = {"name": "drift", "seconds": round(time.perf_counter() - t0, 3), **_meta(argv)}
    write_drift_report(d, out, plots=not args.no_plots)
    print(f"drift: {len(d['cycles'])} cycle runs, {len(d['depth'])} chains ({d['run']['seconds']:.1f} s). "
          f"Report: {out}")
    for f in d.get("findings", []):
        print(f"  - {f}")
    return EXIT_OK


# =============================================================================================
# export
# =============================================================================================
def _cmd_export(args, argv) -> int:
    from .harness.report import atomic_dir
    from .harness.suite import SuiteError, find_cases, run_case
    from .harness.vectors import c_header, c_identifier, save_npz

    _, cases = _load_cases(args)
    try:
        chosen = find_cases(args.cases, cases)
    except SuiteError as exc:
        raise UsageError(str(exc)) from None
    out = _out_dir(args, "export")
    status = EXIT_OK
    with atomic_dir(out) as tmp:
        for case in chosen:
            r = run_case(case)
            if r.status == "error":
                raise UsageError(f"case {case.name!r}: {r.error}")
            if r.status == "fail":
                bad = [c.name for c in r.checks if not c.passed]
                print(f"dspsim: warning: {case.name}: dspsim disagrees with {bad}; vectors written anyway",
                      file=sys.stderr)
                status = EXIT_FAIL
            o = r.outcome
            consts = {"op": case.op, "seed": case.seed, **o.constants}
            if args.format == "npz":
                path = save_npz(tmp / f"{case.name}.npz", o.vectors, consts)
            else:
                path = tmp / f"{c_identifier(case.name)}.h"
                path.write_text(c_header(case.name, o.vectors, consts,
                                         comment=f"case {case.name}: op {case.op}, seed {case.seed}; "
                                                 f"'output' is the expected result (checked against dspsim.reference)"),
                                encoding="utf-8")
            print(f"{case.name}: {r.status}, {o.n_outputs} outputs -> {out / path.name}", file=sys.stderr)
    print(f"exported {len(chosen)} case(s) to {out}")
    return status


# =============================================================================================
# compare
# =============================================================================================
def _cmd_compare(args, argv) -> int:
    from .harness.compare import compare
    from .harness.report import write_compare_report
    from .harness.vectors import VectorError, load_vectors

    t0 = time.perf_counter()
    try:
        exp = load_vectors(args.expected, args.key if args.expected.endswith(".npz") else None)
        act = load_vectors(args.actual, args.key if args.actual.endswith(".npz") else None)
    except VectorError as exc:
        raise UsageError(str(exc)) from None
    problems = []
    if len(exp) == 1 and len(act) == 1 and (args.key or not set(exp) & set(act)):
        pairs = [(args.key or next(iter(exp)), next(iter(exp.values())), next(iter(act.values())))]
    else:
        common = [k for k in exp if k in act]
        problems += [f"`{k}` only in expected" for k in exp if k not in act]
        problems += [f"`{k}` only in actual" for k in act if k not in exp]
        if not common:
            raise UsageError(f"no array names in common: expected has {sorted(exp)}, actual has {sorted(act)}; "
                             "pick one with --key")
        pairs = [(k, exp[k], act[k]) for k in common]
    checks = []
    for key, e, a in pairs:
        try:
            checks.append(compare(e, a, key).to_dict())
        except ValueError as exc:
            problems.append(f"`{key}`: {exc}")
    passed = not problems and all(c["passed"] for c in checks)
    d = {"schema": "dspsim.compare/1", "kind": "compare",
         "run": {"name": "compare", "seconds": round(time.perf_counter() - t0, 3), **_meta(argv)},
         "expected": str(args.expected), "actual": str(args.actual), "checks": checks,
         "problems": problems, "passed": passed}
    out = _out_dir(args, "compare")
    write_compare_report(d, out, plots=not args.no_plots)
    for c in checks:
        where = f", first at {tuple(c['first_index'])}: expected {c['expected']}, actual {c['actual']}, " \
                f"max |diff| {c['max_abs_diff']} {c['unit']}" if c["mismatches"] else ""
        print(f"{c['name']}: {c['mismatches']} / {c['count']} mismatches{where}")
    for p in problems:
        print(f"not compared: {p}")
    print(f"{'PASS' if passed else 'FAIL'}. Report: {out}")
    return EXIT_OK if passed else EXIT_FAIL


# =============================================================================================
# bench
# =============================================================================================
def _cmd_bench(args, argv) -> int:
    try:
        from . import bench
    except ImportError as exc:
        if getattr(exc, "name", "") in ("dspsim.bench", None) or "bench" in str(exc):
            raise UsageError("`dspsim bench` needs dspsim/bench.py, which is not part of this installation") from None
        raise
    return int(bench.main(list(args.bench_args)) or 0)


def _tflite_available() -> bool:
    import importlib.util

    return importlib.util.find_spec("dspsim.tflite") is not None


def _cmd_run_tflite(args, argv) -> int:
    from . import tflite

    run = getattr(tflite, "cli_main", None)
    if run is None:
        raise UsageError("`dspsim run-tflite` needs dspsim.tflite.cli_main, which this installation lacks")
    return int(run(list(args.tflite_args)) or 0)


# =============================================================================================
def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="dspsim",
        description="Bit-exact simulation of quantized NN layers on int8 DSP/NPU arithmetic.",
        epilog="Exit status: 0 ok, 1 mismatch / failed check, 2 bad input, 130 interrupted.")
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

    c = sub.add_parser("compare", help="bit-exact diff of two vector files (.npz / .npy)")
    c.add_argument("expected")
    c.add_argument("actual")
    c.add_argument("--key", help="compare only this array (a .npz entry)")
    c.add_argument("--out", help="report directory (default: reports/compare-<UTC timestamp>)")
    c.add_argument("--no-plots", action="store_true", help="skip the PNG plots")

    b = sub.add_parser("bench", help="speed of the kernels next to their peers (dspsim.bench)", add_help=False)
    b.add_argument("bench_args", nargs=argparse.REMAINDER)
    if _tflite_available():
        t = sub.add_parser("run-tflite", help="run an int8 .tflite model through dspsim's kernels (dspsim.tflite)",
                           add_help=False)
        t.add_argument("tflite_args", nargs=argparse.REMAINDER)
    return p


_COMMANDS = {"suite": _cmd_suite, "drift": _cmd_drift, "export": _cmd_export, "compare": _cmd_compare,
             "bench": _cmd_bench, "run-tflite": _cmd_run_tflite}


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser()
    if argv[:1] == ["bench"]:  # everything after `bench` belongs to dspsim.bench
        args = argparse.Namespace(command="bench", bench_args=argv[1:])
    elif argv[:1] == ["run-tflite"] and _tflite_available():  # and after `run-tflite` to dspsim.tflite
        args = argparse.Namespace(command="run-tflite", tflite_args=argv[1:])
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
    try:
        return _COMMANDS[args.command](args, argv)
    except UsageError as exc:
        _err(str(exc))
        return EXIT_USAGE
    except KeyboardInterrupt:
        _err("interrupted; no report written")
        return EXIT_INTERRUPTED
    except BrokenPipeError:  # `dspsim suite --list | head`
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_OK


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
