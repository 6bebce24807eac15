"""``dspsim run MODEL [--input X.npy ...] [--frames N] [--engine E] [--accumulator BITS[:wrap|saturate]]
[--compare-litert] [--stages] [--partial-sums OP:INDEX] [--seed N] [--out DIR]`` (``run-tflite`` is the same verb).

Runs a .tflite or .onnx model (:func:`dspsim.load_model`) through dspsim's kernels (``--engine``: a name or a
device's .toml, default the format's engine; ``--accumulator`` a DSP register for the MAC operators) and
prints every layer. A streaming model (state kept across invocations) runs frame by frame: give inputs with a
leading time axis, or ``--frames N`` random frames; every frame is traced, the state carried from one to the
next; the outputs of the frames before the last are printed, then the last one's layers. ``--out``'s ``trace.npz`` holds every
frame: entry ``t<k>`` per tensor, with a leading frame axis ``(T, *shape)`` when T > 1 (a variable tensor:
its value after each frame); ``report.json`` gives ``frames`` and ``state`` (the tensors written as state).
``--stages`` adds every MAC operator's accumulator stages and ``--partial-sums OP:INDEX`` one output's taps
(:mod:`dspsim.harness.stages`) to trace.npz, and their list (the taps as numbers) to report.json's ``stages``.

With ``--compare-litert`` (a .tflite model; needs ``ai_edge_litert``) it also runs LiteRT three ways on the
same inputs and diffs tensor by tensor:

* reference kernels (``OpResolverType.BUILTIN_REF``, every intermediate tensor kept with
  ``experimental_preserve_all_tensors``) against dspsim as configured: per layer bit-exact or not,
  mismatch count, max |diff| (LSB for integer tensors), and the first diverging layer;
* optimized builtin kernels (``BUILTIN_WITHOUT_DEFAULT_DELEGATES``, also per layer) and the default
  interpreter (XNNPACK delegate; outputs only, the delegate keeps no intermediates) against each
  dspsim engine of the format ("litert", "tflm", "xnnpack"): which of them reproduces them.

Exit status: 0 bit-exact with the reference (or no comparison asked), 1 a reference mismatch,
2 bad input (unreadable/corrupt/unsupported model, bad --input, an ``--out`` that is a symlink, holds an
input or a folder dspsim did not write; with ``--compare-litert``, a model LiteRT's reference or optimized
builtin kernels refuse: the comparison asked for cannot be made on this model, and running it again would not
change that, so it is bad input, not a run that could not finish), printed as one line on stderr. ``--out`` is written as every
report is (:func:`dspsim.harness.safe_io.atomic_dir`: whole or not at all).
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import warnings

import numpy as np

from ..engines import ApproximationWarning, ModelFormat, names
from ..engines import get as engine_profile
from ..engines.device import with_options
from ..interpreters import Interpreter, Kind
from ..load import default_engine, load_model, model_format
from .._io import load_npy, model_bytes
from .safe_io import atomic_dir, check_output_dir, terminal_text
from .stages import NO_STAGES, capture, parse_partial_sums, summary, taps_markdown

ENGINES = names(ModelFormat.TFLITE)

EXIT_OK, EXIT_FAIL, EXIT_USAGE = 0, 1, 2


def _parser():
    p = argparse.ArgumentParser(prog="dspsim run",
                                description="Run a quantized .tflite or .onnx model through dspsim's kernels, layer "
                                            "by layer.")
    p.add_argument("model", help="the .tflite or .onnx file")
    p.add_argument("--input", action="append", metavar="X.npy", default=[],
                   help="one input array per model input, in the model's order (default: seeded random inputs); "
                        "an array with one more leading axis than the input is a sequence of frames, run in "
                        "order with the model's state carried (streaming models)")
    p.add_argument("--frames", type=int, default=1, metavar="N",
                   help="with random inputs: run N frames (default 1), the state carried from one to the next")
    p.add_argument("--engine", metavar="ENGINE",
                   help=f"whose arithmetic dspsim emulates: {', '.join(names())} or a device's .toml file (default: "
                        "litert for .tflite, LiteRT's reference kernels; onnxruntime for .onnx)")
    p.add_argument("--accumulator", metavar="BITS[:wrap|saturate]",
                   help="the MAC operators' accumulator (default int32 wrapping), e.g. 24:saturate")
    p.add_argument("--approximate-float", action="store_true",
                   help="run the float32 operators whose engine kernel dspsim does not reproduce (XNNPACK's f32 "
                        "SQRT, LiteRT's optimized float LOG_SOFTMAX) with TFLite's reference arithmetic instead of "
                        "refusing the model; each is named, with its measured difference, and the run is then not "
                        "bit-exact after it")
    p.add_argument("--compare-litert", action="store_true",
                   help="a .tflite model: also run LiteRT (reference, optimized builtin, XNNPACK) and diff every layer")
    p.add_argument("--stages", action="store_true",
                   help="also capture every MAC operator's (FULLY_CONNECTED, CONV_2D, DEPTHWISE_CONV_2D, "
                        "TRANSPOSE_CONV, BATCH_MATMUL; ONNX QLinearConv, QLinearMatMul, QGemm; MatMulInteger / "
                        "ConvInteger: op<k>_acc only) accumulator before the bias, after it, and the "
                        "requantized value before the output zero point and clamp: trace.npz entries op<k>_acc, "
                        "op<k>_acc_bias, op<k>_requant; UNIDIRECTIONAL_SEQUENCE_LSTM's and SVDF's steps under their "
                        "own names (op<k>_in_acc, op<k>_time_acc, ...: python -m pydoc dspsim.harness.stages)")
    p.add_argument("--partial-sums", metavar="OP:INDEX",
                   help="also capture one output's taps in the engine's accumulation order (x, w, zero points, "
                        "the accumulator after each tap): OP an operator index, INDEX a flat index into its output "
                        "or a multi-index (e.g. 3:0,2,2,5; an LSTM's (batch, step, gate, unit), an SVDF's (batch, "
                        "filter)); trace.npz entries op<k>_taps_<field>")
    p.add_argument("--seed", type=int, default=0, help="seed of the random inputs (default 0)")
    p.add_argument("--out", help="directory for trace.npz and report.json / report.md")
    return p


def _accumulator(text):
    from ..accumulator import Accumulator

    if text is None:
        return None
    bits, _, overflow = text.partition(":")
    try:
        return Accumulator(int(bits), overflow or "wrap")
    except (ValueError, TypeError) as exc:
        raise ValueError(f"--accumulator {text!r}: {exc}") from None


def _frames(model, arrays):
    """Per-frame input lists: each array is one frame (the input's shape) or T frames ((T, *shape)); all
    inputs of a sequence must have the same T."""
    counts = set()
    for k, (a, info) in enumerate(zip(arrays, model.inputs)):
        if a.shape == info.shape:
            counts.add(None)
        elif a.shape[1:] == info.shape and a.ndim == len(info.shape) + 1:
            counts.add(a.shape[0])
        else:
            raise ValueError(f"--input {k} ({info.name!r}): shape {a.shape} is neither the input's {info.shape} "
                             f"nor (frames, *{info.shape})")
    if len(counts) > 1:
        raise ValueError(f"the inputs disagree on the number of frames: {sorted(counts, key=str)}")
    n = counts.pop() if counts else None
    if n is None:
        return [list(arrays)]
    return [[a[t] for a in arrays] for t in range(n)]


_STATE_WRITE = " (state write)"  # how Model.trace names a state write (dspsim.graph.executor)


def _trace_arrays(frame_traces, frame_stages=None) -> dict:
    """trace.npz's entries: ``t<k>`` per tensor (a state write: the variable's value after the frame) and the
    frame's stage vectors (:func:`dspsim.harness.stages.capture`, if any); with T > 1 frames each entry has a leading
    frame axis, ``(T, *shape)``, frame 0 first (a tensor that only some frames show, or with another shape in
    some, as ``t<k>_frame<t>`` per frame instead)."""
    per_frame = [{**{f"t{e.tensor}": np.asarray(e.value) for e in tr}, **st}
                 for tr, st in zip(frame_traces, frame_stages or [{}] * len(frame_traces))]
    if len(per_frame) == 1:
        return per_frame[0]
    out = {}
    for k in dict.fromkeys(k for f in per_frame for k in f):
        vals = [f.get(k) for f in per_frame]
        if all(v is not None and v.shape == vals[0].shape and v.dtype == vals[0].dtype for v in vals):
            out[k] = np.stack(vals)
        else:
            out.update({f"{k}_frame{t}": v for t, v in enumerate(vals) if v is not None})
    return out


def _state_tensors(trace) -> list:
    """The tensors a frame wrote as state (LSTM / SVDF variable tensors, resource variables)."""
    return sorted({e.tensor for e in trace if e.name.endswith(_STATE_WRITE)})


def _describe(a):
    """A frame's output in one short phrase: the values when there are few, else dtype, shape and range."""
    if a.size <= 8:
        return f"{a.dtype} {a.reshape(-1).tolist()}"
    return f"{a.dtype} {list(a.shape)} in [{a.min()}, {a.max()}]"


def _random_inputs(model, seed):
    rng = np.random.default_rng(seed)
    out = []
    for info in model.inputs:
        if info.dtype is None:
            raise ValueError(f"input {info.name!r} has no numpy type ({info.elem_type}); give --input")
        shape = tuple(1 if d is None or d < 0 else d for d in info.shape or ())
        if info.dtype.kind == "f":  # a float input feeds QUANTIZE: cover its output's range
            q = next((model.tensor_info(model.outputs_of(k)[0]) for k, name in model.consumers(info.index)
                      if name == "QUANTIZE"), None)
            if q is not None and q.scale is not None:
                lo, hi = np.iinfo(q.dtype).min, np.iinfo(q.dtype).max
                out.append(rng.uniform((lo - q.zero_point) * q.scale, (hi - q.zero_point) * q.scale,
                                       size=shape).astype(np.float32))
            elif any(name == "QuantizeLinear" for _, name in model.consumers(info.index)):
                out.append((rng.standard_normal(shape) * 1.5).astype(info.dtype))  # an ONNX QDQ model's input
            else:
                raise ValueError(f"input {info.name!r} is float and not quantized by a QUANTIZE; give --input")
        else:
            lo, hi = np.iinfo(info.dtype).min, np.iinfo(info.dtype).max
            out.append(rng.integers(lo, hi, size=shape, endpoint=True).astype(info.dtype))
    return out


def _diff(a, b):
    """(mismatches, max |a - b|) of two tensors; float tensors compared by bit pattern."""
    a, b = np.asarray(a), np.asarray(b)
    if a.shape != b.shape:
        return int(max(a.size, b.size)), float("inf")
    if a.dtype.kind == "f":
        bad = a.view(np.uint32) != b.astype(a.dtype).view(np.uint32)
        return int(np.count_nonzero(bad)), float(np.max(np.abs(a.astype(np.float64) - b), initial=0.0))
    d = np.abs(a.astype(np.int64) - b.astype(np.int64))
    return int(np.count_nonzero(d)), float(d.max(initial=0))


class LiteRTRefused(ValueError):
    """LiteRT's interpreter refused the model (its own message): ``--compare-litert`` cannot compare."""


def _compare(path, model, inputs, traces):
    """The comparison report (a dict) against LiteRT's three kernel sets."""
    data = model_bytes(path, "--compare-litert")
    its = []
    for kind, what in ((Kind.LITERT, "reference kernels"), (Kind.LITERT_OPTIMIZED, "optimized builtin kernels")):
        try:  # LiteRT refuses a model in Prepare (allocate_tensors) or in Invoke, as RuntimeError or ValueError
            it = Interpreter(kind, data, len(model.outputs), preserve_all_tensors=True)
            it.invoke(inputs)
        except (RuntimeError, ValueError) as exc:
            msg = next((ln.strip() for ln in str(exc).splitlines() if ln.strip()), type(exc).__name__)
            raise LiteRTRefused(f"--compare-litert: LiteRT's {what} refuse the model ({msg}); dspsim's run alone: "
                                "leave out --compare-litert") from None
        its.append(it)
    ref, builtin = its
    layers = []
    first = None
    for k, e in enumerate(traces[model.engine]):
        if e.op_index < 0:
            continue
        n, lsb = _diff(e.value, ref.tensor(e.tensor))
        row = {"op_index": e.op_index, "op": e.op, "tensor": e.tensor, "name": e.name, "size": int(e.value.size),
               "mismatches": n, "max_diff": lsb, "bit_exact": n == 0,
               "builtin_matches": [eng for eng, tr in traces.items()
                                   if _diff(tr[k].value, builtin.tensor(e.tensor))[0] == 0]}
        if n and first is None:
            first = row
        layers.append(row)
    try:
        xnn_out = Interpreter(Kind.XNNPACK, data, len(model.outputs)).invoke(inputs)
        out_idx = [i.index for i in model.outputs]
        xnnpack = {eng: sum(_diff(next(e.value for e in tr if e.tensor == i), o)[0] for i, o in zip(out_idx, xnn_out))
                   for eng, tr in traces.items()}
    except (RuntimeError, ValueError) as exc:  # the delegate refused the model
        xnnpack = {"refused": str(exc).splitlines()[0]}
    return {"reference_bit_exact": first is None, "first_diverging_layer": first, "layers": layers,
            "xnnpack_output_mismatches": xnnpack}


def _table(trace, cmp):
    lines = ["| # | op | tensor | shape | dtype | min | max |" + (" ref mismatches | max diff | builtin = |"
                                                                    if cmp else ""),
             "|---|---|---|---|---|---|---|" + ("---|---|---|" if cmp else "")]
    rows = {r["tensor"]: r for r in cmp["layers"]} if cmp else {}
    for e in trace:
        v = np.asarray(getattr(e.value, "codes", e.value))  # an ONNX 4-bit / float8 value: its codes
        line = (f"| {e.op_index if e.op_index >= 0 else '-'} | {e.op} | {e.tensor} {e.name[:40]} | "
                f"{'x'.join(map(str, v.shape))} | {v.dtype} | {v.min():.6g} | {v.max():.6g} |")
        if cmp:
            r = rows.get(e.tensor)
            line += (f" {r['mismatches']} | {r['max_diff']:g} | {', '.join(r['builtin_matches']) or 'none'} |"
                     if r else " | | |")
        lines.append(line)
    return "\n".join(lines)


def _load(path, engine, accumulator, approximate_float=False):
    """The model at ``path`` under ``engine`` (None: its format's), with the ``--accumulator`` and
    ``--approximate-float`` shorthands (an approximated operator's warning printed as a note, not a traceback)."""
    fmt = model_format(model_bytes(path))
    profile = engine_profile(default_engine(fmt) if engine is None else engine, "--engine", fmt)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ApproximationWarning)  # Model.approximations says it, once, below
        return load_model(path, with_options(profile, _accumulator(accumulator), None, "--accumulator",
                                             approximate_float))


def main(argv=None) -> int:
    args = _parser().parse_args(argv)
    try:
        if args.out:  # before any work, as every verb checks it (dspsim.harness.safe_io)
            check_output_dir(args.out, [args.model, *args.input, args.engine])
        model = _load(args.model, args.engine, args.accumulator, args.approximate_float)
        approximations = getattr(model, "approximations", [])
        for index, name, how in approximations:
            print(terminal_text(f"dspsim: note: operator {index} ({name}) is approximated, not bit-exact: {how}"),
                  file=sys.stderr)
        if args.input:
            frames = _frames(model, [load_npy(p, "dspsim run") for p in args.input])
        else:
            if args.frames < 1:
                raise ValueError(f"--frames must be >= 1, got {args.frames}")
            frames = [_random_inputs(model, args.seed + t) for t in range(args.frames)]
        partial = None if args.partial_sums is None else parse_partial_sums(args.partial_sums, model)
        frame_traces, frame_stages = [], []  # every frame's trace, the state carried: trace.npz keeps them all
        for t, inputs in enumerate(frames):
            frame_traces.append(model.trace(inputs))
            frame_stages.append(capture(model, frame_traces[-1], partial and partial[:2])
                                if args.stages or partial else {})
            if t < len(frames) - 1:  # the last frame's outputs are in its table
                values = {e.tensor: e.value for e in frame_traces[-1]}
                print(f"frame {t}: " + "; ".join(_describe(values[o.index]) for o in model.outputs))
        inputs = frames[-1]
        traces = {model.engine: frame_traces[-1]}
    except (OSError, ValueError, TypeError) as exc:
        print(f"dspsim: error: {terminal_text(exc, one_line=True)}", file=sys.stderr)
        return EXIT_USAGE
    cmp = None
    if args.compare_litert:
        if model_format(model_bytes(args.model)) is not ModelFormat.TFLITE:
            print("dspsim: error: --compare-litert compares .tflite models (LiteRT runs no ONNX)", file=sys.stderr)
            return EXIT_USAGE
        try:
            import ai_edge_litert  # noqa: F401
        except ImportError:
            print("dspsim: error: --compare-litert needs the ai_edge_litert package (pip install ai-edge-litert==2.3.0, "
                  "or the [engines] extra)", file=sys.stderr)
            return EXIT_USAGE
        if len(frames) > 1:
            print("dspsim: error: --compare-litert compares one frame; give a single frame", file=sys.stderr)
            return EXIT_USAGE
        for eng in ENGINES:
            traces.setdefault(eng, _load(args.model, eng, args.accumulator).trace(inputs))
        try:
            cmp = _compare(args.model, model, inputs, traces)
        except LiteRTRefused as exc:  # bad input for this comparison: exit 2, one line
            print(f"dspsim: error: {terminal_text(exc, one_line=True)}", file=sys.stderr)
            return EXIT_USAGE
    print(terminal_text(f"{args.model}: {model!r}"))
    if len(frames) > 1:
        print(f"layers of frame {len(frames) - 1} (the last of {len(frames)}; --out's trace.npz holds every frame)")
    print(terminal_text(_table(traces[model.engine], cmp)))
    stage_report = summary(model, frame_stages[-1], partial) if args.stages or partial else None
    if args.stages and not stage_report["operators"]:
        print(f"dspsim: note: {NO_STAGES}", file=sys.stderr)
    if partial:
        ps = stage_report["partial_sums"]
        print(f"partial sums of operator {ps['op_index']}'s output {tuple(ps['index'])}: {len(ps['taps']['x'])} "
              f"taps, acc = {ps['acc']} (trace.npz op{ps['op_index']}_taps_*)")
    if cmp:
        f = cmp["first_diverging_layer"]
        print("LiteRT reference: bit-exact on every layer" if f is None else
              terminal_text(f"LiteRT reference: first diverging layer {f['op_index']} ({f['op']}, tensor "
                            f"{f['tensor']} {f['name']!r}): {f['mismatches']} of {f['size']} differ, max "
                            f"{f['max_diff']:g}"))
        print("XNNPACK (default interpreter) output mismatches per dspsim engine:",
              json.dumps(cmp["xnnpack_output_mismatches"]))
    if args.out:
        try:
            with atomic_dir(args.out, [args.model, *args.input, args.engine]) as tmp:
                np.savez_compressed(tmp / "trace.npz", **_trace_arrays(frame_traces, frame_stages))
                (tmp / "report.json").write_text(json.dumps({"model": args.model, "engine": model.engine,
                                                             "frames": len(frames), "state": _state_tensors(
                                                                 frame_traces[-1]),
                                                             "operators": model.operators, "comparison": cmp,
                                                             "approximated": [
                                                                 {"op_index": i, "op": n, "how": h}
                                                                 for i, n, h in approximations],
                                                             "stages": stage_report},
                                                            indent=1), encoding="utf-8")
                (tmp / "report.md").write_text(f"# {os.path.basename(args.model)} (dspsim engine {model.engine})"
                                               + "".join(f"\n\n**Not bit-exact from operator {i} ({n}) on**: {h}."
                                                         for i, n, h in approximations)
                                               + f"\n\n{_table(traces[model.engine], cmp)}\n"
                                               + (f"\n{taps_markdown(stage_report)}" if partial else ""),
                                               encoding="utf-8")
        except ValueError as exc:  # OutDirError: the folder changed during the run
            print(f"dspsim: error: {terminal_text(exc, one_line=True)}", file=sys.stderr)
            return EXIT_USAGE
        print(terminal_text(f"wrote {args.out}/trace.npz, report.json, report.md"))
    return EXIT_FAIL if cmp and cmp["first_diverging_layer"] is not None else EXIT_OK
