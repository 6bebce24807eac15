"""Arithmetic-operator edge cases that the converter's models do not reach, from the three engines.

Run with the golden venv from the repository root (about a minute)::

    /work/goldvenv/bin/python tests/golden/make_golden_arith_ops.py

One-operator int8 models built from the schema objects with exact float32 scales
(``_tflite_edit.one_op_model``), kept as ``tests/golden/ops/arith_<case>.tflite``; each runs under
``tflm``, ``litert_ref`` and ``litert_default`` (``make_golden_real_models.run_engine``: one
subprocess per engine, crashes recorded). Cases:

* SUB whose scales make tflite-micro's float32 quotients and LiteRT's double quotients give other
  multipliers (and 2 of the 65536 code pairs a different output);
* SUB with exact ties (power-of-two scales; XNNPACK rounds them toward +inf, the reference away from
  zero), with zero points and a fused RELU; uint8 SUB and ADD with ties; SUB and ADD with RELU6 whose
  upper bound 6 / s_out is itself a tie;
* SQUARED_DIFFERENCE on every code pair, and with an output multiplier >= 1 (LiteRT aborts at
  Prepare; tflite-micro shifts left);
* MAXIMUM / MINIMUM with different input and output quantization (the codes are compared raw);
* ADD, SUB, MUL, SQUARED_DIFFERENCE broadcast at rank 6, MAXIMUM at rank 6 (beyond its N = 5 kernel);
  ADD and SUB at rank 5 with a scale ratio XNNPACK does not take (LiteRT's optimized broadcast kernels);
* BATCH_MATMUL whose rhs zero point is 0 (XNNPACK's delegation condition);
* SUM: int8 sums beyond the int8 range (LiteRT BUILTIN_REF's uint8 defect), exact ties, uint8;
* ADD int8 and uint8 through each path of LiteRT's optimized kernels (``optimized_integer_ops/add.h``,
  ``optimized_ops.h``): the non-broadcast elementwise kernel on every code pair, its 16-lane (int8) or 8-lane
  (uint8) blocks and scalar tails, the fivefold broadcast with an inner run of 21 (blocks and tail, both input
  orders), the scalar broadcast with rows of 13, input scales 1,500 apart (input shifts of -11) and an output
  far beyond int16 (the blocks' ``vmovn_s32`` wraps), and scales where the blocks' rounding order (one rounding
  after a combined shift, or a floor shift after the multiply) changes outputs;
* MUL int8 and uint8 with products beyond int16 through the elementwise, scalar-broadcast and fivefold paths of
  LiteRT's optimized kernels (``optimized_integer_ops/mul.h``: saturate to int16, then add the zero point in int16);
* int32 ADD, SUB, MUL (no quantization) with broadcasting and fused RELU / RELU6, small values and values up to
  2^31 whose sums and products wrap.

The two-input elementwise models broadcast (256, 1) against (1, 256) and run once: input k =
``(arange(n) + 97 k) % 256 + type min`` holds every pair of codes. The other models run twice: that
sweep, then uniform random codes (seed crc32 of the name).
Output: ``tests/golden/ops/arith.npz``, the packed format of ``make_golden_ops.py`` (README,
"Per-operator models"; ``golden_io.load_packed``).
"""
from __future__ import annotations

import os
import sys
import tempfile
import zlib

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import numpy as np  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _tflite_edit import S, TYPE_NAMES, load, one_op_model, op_name, op_names, written_tensors  # noqa: E402
from make_golden_ops import Packer, describe, pack_case, versions  # noqa: E402
from make_golden_real_models import ENGINES, quant_of, run_engine, tname  # noqa: E402

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "ops")
RUNS = 2
I8 = S.TensorType.INT8
U8 = S.TensorType.UINT8
OP = S.BuiltinOperator
OPT = S.BuiltinOptions


def _binary(code, opt_type, opt, shapes, quants, ttype=I8):
    (sa, sb), ((s1, z1), (s2, z2), (so, zo)) = shapes, quants
    out_shape = tuple(np.broadcast_shapes(sa, sb))
    return one_op_model(code, opt_type, opt, [("x1", sa, ttype, s1, z1, None), ("x2", sb, ttype, s2, z2, None),
                                              ("y", out_shape, ttype, so, zo, None)], [0, 1], [2])


def _sub(act=0):
    o = S.SubOptionsT()
    o.fusedActivationFunction = act
    return OP.SUB, OPT.SubOptions, o


def _act(options, act):
    options.fusedActivationFunction = act
    return options


PAIRS = ((256, 1), (1, 256))
SAME = ((65536,), (65536,))  # same-shape inputs holding every code pair (make_inputs: digit k of the index)
RANK6 = ((2, 1, 2, 1, 3, 1), (1, 2, 1, 3, 1, 2))


def cases():
    add, mul = S.AddOptionsT(), S.MulOptionsT()
    sqd, mm = S.SquaredDifferenceOptionsT(), S.MaximumMinimumOptionsT()
    q_sub_tflm = ((0.08414804935455322, 3), (0.006911648903042078, -5), (0.0579039603471756, 1))
    q_tie = ((0.0625, 0), (0.0625, 0), (0.125, 0))
    q_tie_zp = ((0.0625, -3), (0.0625, 5), (0.125, -7))
    q_plain = ((0.05, 2), (0.03, -7), (0.07, 4))
    out = [
        ("sub_tflm_quotients_all_pairs", _binary(*_sub(), PAIRS, q_sub_tflm),
         "SUB: float32 (TFLM) and double (LiteRT) quotients give different multipliers"),
        ("sub_ties_all_pairs", _binary(*_sub(), PAIRS, q_tie), "SUB (x1 - x2) / 2: exact ties"),
        ("sub_ties_zp_relu_all_pairs", _binary(*_sub(1), PAIRS, q_tie_zp), "SUB ties with zero points, fused RELU"),
        ("sub_relu6_bound_tie_all_pairs", _binary(*_sub(3), PAIRS, ((1.0, 0), (1.0, 0), (12.0, -3))),
         "SUB + RELU6 with 6 / s_out = 0.5: the activation bound itself is a tie"),
        ("add_relu6_bound_tie_all_pairs", _binary(OP.ADD, OPT.AddOptions, _act(S.AddOptionsT(), 3), PAIRS,
                                                  ((1.0, 0), (1.0, 0), (12.0, -3))),
         "ADD + RELU6 with 6 / s_out = 0.5: the activation bound itself is a tie"),
        ("sub_uint8_ties_all_pairs", _binary(*_sub(), PAIRS, ((0.0625, 128), (0.0625, 120), (0.125, 131)), U8),
         "uint8 SUB with exact ties (XNNPACK qu8-vadd)"),
        ("add_uint8_ties_all_pairs", _binary(OP.ADD, OPT.AddOptions, add, PAIRS,
                                             ((0.0625, 128), (0.0625, 120), (0.125, 131)), U8),
         "uint8 ADD with exact ties (XNNPACK qu8-vadd)"),
        ("squared_difference_all_pairs", _binary(OP.SQUARED_DIFFERENCE, OPT.SquaredDifferenceOptions, sqd, PAIRS,
                                                 ((0.05, 2), (0.03, -7), (0.4, -128))), "SQUARED_DIFFERENCE"),
        ("squared_difference_left_shift", _binary(OP.SQUARED_DIFFERENCE, OPT.SquaredDifferenceOptions, sqd, PAIRS,
                                                  ((0.01, 2), (0.02, -3), (5e-8, -128))),
         "SQUARED_DIFFERENCE with output multiplier ~1.95 (LiteRT aborts; TFLM shifts left)"),
        ("maximum_mixed_quant_all_pairs", _binary(OP.MAXIMUM, OPT.MaximumMinimumOptions, mm, PAIRS,
                                                  ((0.05, 10), (0.2, -20), (0.1, 3))),
         "MAXIMUM with three different quantizations"),
        ("minimum_mixed_quant_all_pairs", _binary(OP.MINIMUM, OPT.MaximumMinimumOptions, mm, PAIRS,
                                                  ((0.05, 10), (0.2, -20), (0.1, 3))),
         "MINIMUM with three different quantizations"),
        ("add_rank6", _binary(OP.ADD, OPT.AddOptions, add, RANK6, q_plain), "ADD broadcast at rank 6"),
        ("mul_rank6", _binary(OP.MUL, OPT.MulOptions, mul, RANK6, q_plain), "MUL broadcast at rank 6"),
        ("sub_rank6", _binary(*_sub(), RANK6, q_plain), "SUB broadcast at rank 6"),
        ("squared_difference_rank6", _binary(OP.SQUARED_DIFFERENCE, OPT.SquaredDifferenceOptions, sqd, RANK6,
                                             ((0.05, 2), (0.03, -7), (0.4, -128))), "SQUARED_DIFFERENCE rank 6"),
        ("add_not_delegated_rank5", _binary(OP.ADD, OPT.AddOptions, add, ((2, 1, 4, 1, 8), (1, 3, 1, 5, 8)),
                                            ((0.0002, 5), (0.3, -4), (0.3, 2))),
         "ADD with s1 / s_out < 2^-10: not delegated, LiteRT's optimized broadcast (fast path) kernel"),
        ("sub_not_delegated_rank5", _binary(*_sub(), ((2, 1, 4, 1, 8), (1, 3, 1, 5, 8)),
                                            ((0.0002, 5), (0.3, -4), (0.3, 2))),
         "SUB with s1 / s_out < 2^-10: not delegated, LiteRT's optimized broadcast kernel"),
        ("maximum_rank6", _binary(OP.MAXIMUM, OPT.MaximumMinimumOptions, mm, RANK6, q_plain),
         "MAXIMUM at rank 6 (its kernel is 5-D)"),
    ]
    q_far = ((0.0002, 5), (0.3, -4), (0.07, 2))  # input multipliers 2^-12.. and 0.5: input shifts -11 and 0
    q_wrap = ((1.0, 3), (1.0, -2), (0.004, 1))  # outputs up to 250 (x1 + x2): beyond int16
    for tag, ttype, z8 in (("", I8, 0), ("uint8_", U8, 128)):
        def q(spec):
            return tuple((s, z + z8) for s, z in spec)
        for shape_tag, shapes in (("elementwise_all_pairs", SAME), ("broadcast_all_pairs", PAIRS),
                                  ("elementwise_tail", ((2, 37), (2, 37))),
                                  ("fivefold_21", ((3, 1, 21), (3, 4, 21))),
                                  ("fivefold_21_switched", ((3, 4, 21), (3, 1, 21))),
                                  ("scalar_rows_13", ((2, 3, 1), (2, 3, 13)))):
            out.append((f"add_optimized_{tag}far_{shape_tag}", _binary(OP.ADD, OPT.AddOptions, add, shapes, q(q_far),
                                                                        ttype),
                        f"{TYPE_NAMES[ttype]} ADD {shapes}, input shifts -11 and 0 (LiteRT's optimized kernel paths)"))
        for shape_tag, shapes in (("elementwise_all_pairs", SAME), ("broadcast_all_pairs", PAIRS)):
            out.append((f"add_optimized_{tag}wrap_{shape_tag}", _binary(OP.ADD, OPT.AddOptions,
                                                                         _act(S.AddOptionsT(), 1), shapes, q(q_wrap),
                                                                         ttype),
                        f"{TYPE_NAMES[ttype]} ADD + RELU {shapes}, outputs beyond int16 (the NEON blocks wrap)"))
    # scales found by a search where the blocks' rounding order changes outputs (4 and 7 of 65,536 pairs)
    q_order_combined = ((0.004386884160339832, 10), (0.005715631414204836, 2), (0.046526338905096054, -3))
    q_order_after = ((0.22879990935325623, 15), (0.0014604281168431044, 13), (0.250219464302063, -9))
    for name, shapes, quant, ttype in (("order_elementwise_all_pairs", SAME, q_order_combined, I8),
                                       ("order_broadcast_all_pairs", PAIRS, q_order_after, I8),
                                       ("uint8_order_elementwise_all_pairs", SAME,
                                        tuple((s, z + 128) for s, z in q_order_after), U8)):
        out.append((f"add_optimized_{name}", _binary(OP.ADD, OPT.AddOptions, add, shapes, quant, ttype),
                    f"{TYPE_NAMES[ttype]} ADD {shapes} whose outputs the optimized blocks' rounding order changes"))
    q_mul_sat = ((1.0, 3), (1.0, -2), (0.4, 50))  # products up to 2.5 * 128^2 = 40,960: past int16, then + 50
    for tag, ttype, z8 in (("", I8, 0), ("uint8_", U8, 128)):
        for shape_tag, shapes in (("elementwise_all_pairs", SAME), ("broadcast_all_pairs", PAIRS),
                                  ("fivefold_21", ((3, 1, 21), (3, 4, 21)))):
            out.append((f"mul_optimized_{tag}sat_{shape_tag}",
                        _binary(OP.MUL, OPT.MulOptions, mul, shapes, tuple((s, z + z8) for s, z in q_mul_sat), ttype),
                        f"{TYPE_NAMES[ttype]} MUL {shapes}, products beyond int16 (the NEON blocks narrow, then add "
                        "the zero point in int16)"))
    i32 = S.TensorType.INT32
    for name, (code, opt_type, opt) in (("add", (OP.ADD, OPT.AddOptions, S.AddOptionsT())), ("sub", _sub()),
                                        ("mul", (OP.MUL, OPT.MulOptions, S.MulOptionsT()))):
        for act, act_tag in ((0, ""), (1, "_relu"), (3, "_relu6")):
            out.append((f"{name}_int32{act_tag}", _binary(code, opt_type, _act(opt, act), ((3, 1, 5), (4, 1)),
                                                          ((None, 0),) * 3, i32),
                        f"int32 {name.upper()} (no quantization), broadcast, fused activation {act}: values up to "
                        "2^31 (wrapping sums and products)"))
    bo = S.BatchMatMulOptionsT()
    bo.adjX, bo.adjY = False, False
    out.append(("batch_matmul_rhs_zp0", one_op_model(
        OP.BATCH_MATMUL, OPT.BatchMatMulOptions, bo,
        [("a", (2, 3, 16), I8, 0.05, 3, None), ("b", (2, 16, 4), I8, 0.04, 0, None),
         ("y", (2, 3, 4), I8, 0.2, -2, None)],
        [0, 1], [2]), "BATCH_MATMUL with rhs zero point 0 (XNNPACK's delegation condition)"))
    for name, ttype, (si, zi), (so_, zo), axis, keep in (
            ("sum_int8_wide_range", I8, (0.05, -128), (0.3, -20), [1], False),
            ("sum_int8_ties_pow2", I8, (0.0625, 7), (0.5, 3), [0, 2], True),
            ("sum_uint8", S.TensorType.UINT8, (0.05, 128), (0.3, 120), [1], True)):
        ro = S.ReducerOptionsT()
        ro.keepDims = keep
        shape = (4, 16, 3)
        oshape = tuple(1 if (d in axis and keep) else n for d, n in enumerate(shape) if keep or d not in axis)
        out.append((name, one_op_model(OP.SUM, OPT.ReducerOptions, ro,
                                       [("x", shape, ttype, si, zi, None),
                                        ("axis", (len(axis),), S.TensorType.INT32, None, 0, np.array(axis, np.int32)),
                                        ("y", oshape, ttype, so_, zo, None)], [0, 1], [2]),
                    f"SUM over {axis} keep_dims {keep}, {TYPE_NAMES[ttype]} (s {si}, zp {zi}) -> (s {so_}, zp {zo})"))
    return out


def runs_of(model):
    """1 for the every-code-pair models (run 0 already holds all 65,536 pairs), else RUNS."""
    sg = model.subgraphs[0]
    return 1 if int(np.prod(sg.tensors[sg.outputs[0]].shape)) == 65536 else RUNS


def make_inputs(model, name):
    sg = model.subgraphs[0]
    rng = np.random.default_rng(zlib.crc32(name.encode()))
    arrays = []
    for k, i in enumerate(sg.inputs):
        shape = tuple(int(v) for v in sg.tensors[i].shape)
        n = int(np.prod(shape))
        if sg.tensors[i].type == S.TensorType.INT32:  # small values (every sign pair), then the whole range
            runs = [np.roll(np.arange(n) - n // 2, 7 * k) * 3, rng.integers(-2**31, 2**31, n)][:runs_of(model)]
            arrays.append(np.stack([np.asarray(r).reshape(shape) for r in runs]).astype(np.int32))
            continue
        dt, lo = (np.uint8, 0) if sg.tensors[i].type == S.TensorType.UINT8 else (np.int8, -128)
        sweep = (np.arange(n) // 256**k if shape == SAME[0] else np.arange(n) + 97 * k) % 256 + lo
        runs = [sweep, rng.integers(lo, lo + 256, n)][:runs_of(model)]
        arrays.append(np.stack([np.asarray(r).reshape(shape) for r in runs]).astype(dt))
    return arrays


def record(name, model_bytes, what, tmp):
    path = os.path.join(HERE, f"arith_{name}.tflite")
    with open(path, "wb") as f:
        f.write(model_bytes)
    model = load(model_bytes)
    sg = model.subgraphs[0]
    inputs = make_inputs(model, name)
    producer = {int(o): k for k, op in enumerate(sg.operators) for o in op.outputs}

    def info(i):
        t = sg.tensors[i]
        return {"index": int(i), "name": tname(t), "dtype": TYPE_NAMES[t.type], "shape": [int(v) for v in t.shape],
                "quant": quant_of(t)}

    meta = {"name": name, "family": "arith", "what": what, "params": {}, "model": f"arith_{name}.tflite",
            "ops": op_names(model), "runs": runs_of(model), "inputs": [info(i) for i in sg.inputs],
            "outputs": [info(i) for i in sg.outputs],
            "tensors": [dict(info(i), op=producer[i], op_name=op_name(model, sg.operators[producer[i]]))
                        for i in written_tensors(model)], "engines": {}}
    results = {}
    for engine in ENGINES:
        status, z = run_engine(engine, path, inputs, tmp)
        meta["engines"][engine] = status
        results[engine] = z
    return meta, inputs, results


def main():
    os.makedirs(HERE, exist_ok=True)
    packer = Packer()
    with tempfile.TemporaryDirectory() as tmp:
        for name, model_bytes, what in cases():
            meta, inputs, results = record(name, model_bytes, what, tmp)
            pack_case(packer, meta, inputs, results)
            print(describe(meta), flush=True)
    path = os.path.join(HERE, "arith.npz")
    packer.write(path, {"family": "arith", "versions": versions(), "engines": list(ENGINES)})
    print(f"wrote {path}: {len(packer.cases)} cases, {os.path.getsize(path)} bytes", flush=True)


if __name__ == "__main__":
    main()
