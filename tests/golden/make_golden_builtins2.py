"""Golden vectors for the rest of TFLite Micro's builtins with an integer, int32 or bool path (issue 27 part 3),
from the four engines (TFLite Micro, LiteRT BUILTIN_REF, LiteRT default, LiteRT without delegates).

One-operator models built from the schema objects (``_tflite_edit.one_op_model``; no TensorFlow needed), kept as
``tests/golden/ops/b2_<case>.tflite``; each runs under every engine of ``make_golden_real_models.ENGINES`` in its
own subprocess (refusals and crashes recorded). Cases:

* the comparisons (EQUAL ... GREATER_EQUAL) on every int8 code pair, with equal and with different input
  quantizations (the reference rescales both to a common scale, ``comparisons.cc``), uint8 and int16 pairs, int32
  broadcast, bool (EQUAL / NOT_EQUAL); LOGICAL_AND / OR / NOT with broadcasting;
* SELECT (same shapes, and a rank-1 condition choosing rows) and SELECT_V2 (broadcast) on int8, int16, int32;
* pure data movement: REVERSE_V2, FILL, ZEROS_LIKE, SPACE_TO_BATCH_ND (pads hold the zero point),
  BATCH_TO_SPACE_ND, BROADCAST_TO, GATHER_ND, EMBEDDING_LOOKUP, DYNAMIC_UPDATE_SLICE (start indices clamped);
* ARG_MIN (ties: the first index wins), REDUCE_MIN, REDUCE_PROD;
* ABS, NEG, SQUARE, FLOOR_DIV, FLOOR_MOD, DIV, ADD_N, CUMSUM on int8 / int16 / int32;
* L2_POOL_2D, SQRT, LOG, SIN, COS, RSQRT on int8 (LiteRT's int8 LOG / SQRT / RSQRT; the float-only ones refused);
* edge cases: DIV of every int8 / uint8 code by every divisor code, with a fused RELU; comparisons without
  broadcast and at rank 5; CUMSUM whose int32 sum wraps, ADD_N of 8 saturating inputs, REDUCE_PROD with zero point
  -128, ARG_MIN on bool, SQRT below the zero point, LOG of inputs <= 0; float32 DIV and SQRT (special values);
  CONCATENATION of int32, int64, bool tensors (MoveNet's int32 concatenation);
* each operator once more at one version above LiteRT BUILTIN_REF's highest (``REF_MAX_VERSIONS``).

Every model runs on ``RUNS`` input sets: make_golden_ops's (run 0 a sweep holding every int8 code, runs 1-2
uniform, run 3 the extremes), bool inputs random bits, index inputs chosen per case (in range; clamped starts
for DYNAMIC_UPDATE_SLICE). Run with the golden venv from the repository root (a few minutes)::

    /tmp/interp/bin/python tests/golden/make_golden_builtins2.py

Output: ``tests/golden/ops/builtins2.npz`` (packed format of make_golden_ops.py, README "Per-operator models").
"""
from __future__ import annotations

import os
import sys
import tempfile
import zlib

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import numpy as np  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import make_golden_ops as G  # noqa: E402
from _tflite_edit import NP_DTYPES, S, one_op_model  # noqa: E402

OP, OPT, T = S.BuiltinOperator, S.BuiltinOptions, S.TensorType
I8, U8, I16, I32, I64, BOOL = T.INT8, T.UINT8, T.INT16, T.INT32, T.INT64, T.BOOL
PAIRS = ((256, 1), (1, 256))
FAMILY = "builtins2"


def _opts(name, **fields):
    o = getattr(S, f"{name}T")()
    for k, v in fields.items():
        setattr(o, k, v)
    return getattr(OPT, name), o


def _case(name, code, opts, tensors, inputs, outputs, what, version=1, **params):
    otype, o = opts if opts is not None else (0, None)
    mb = one_op_model(code, otype, o, tensors, inputs, outputs, version=version)
    return G.Case(FAMILY, f"b2_{name}", mb, what, **params)


def _q(ttype, q):
    return (None, 0) if ttype in (I32, I64, BOOL) or q is None else q


def _t(name, shape, ttype, q=None, data=None):
    s, z = _q(ttype, q)
    return (name, tuple(shape), ttype, s, z, data)


def _binary(name, code, opts, shapes, ttype, quants, out_type=None, what="", consts=(None, None)):
    sa, sb = shapes
    out_shape = tuple(np.broadcast_shapes(sa, sb))
    q1, q2, qo = quants if quants is not None else (None, None, None)
    tensors = [_t("x1", sa, ttype, q1, consts[0]), _t("x2", sb, ttype, q2, consts[1]),
               _t("y", out_shape, ttype if out_type is None else out_type, qo)]
    return _case(name, code, opts, tensors, [0, 1], [2], what)


def _unary(name, code, opts, shape, ttype, q_in, q_out, out_type=None, what=""):
    tensors = [_t("x", shape, ttype, q_in), _t("y", shape, ttype if out_type is None else out_type, q_out)]
    return _case(name, code, opts, tensors, [0], [1], what)


# ----------------------------------------------------------------------------------------------
# comparisons, logical, select
# ----------------------------------------------------------------------------------------------
_CMP = {"equal": (OP.EQUAL, "EqualOptions"), "not_equal": (OP.NOT_EQUAL, "NotEqualOptions"),
        "less": (OP.LESS, "LessOptions"), "less_equal": (OP.LESS_EQUAL, "LessEqualOptions"),
        "greater": (OP.GREATER, "GreaterOptions"), "greater_equal": (OP.GREATER_EQUAL, "GreaterEqualOptions")}


def comparison_cases():
    out = []
    for op, (code, opt) in _CMP.items():
        o = _opts(opt)
        out.append(_binary(f"{op}_int8_same_quant_pairs", code, o, PAIRS, I8, ((0.05, 3), (0.05, 3), None), BOOL,
                           f"{op} on every int8 code pair, one quantization"))
        out.append(_binary(f"{op}_int8_mixed_quant_pairs", code, o, PAIRS, I8, ((0.05, 3), (0.0173, -20), None),
                           BOOL, f"{op} on every int8 code pair, inputs rescaled to a common scale"))
        out.append(_binary(f"{op}_int8_near_quant_pairs", code, o, PAIRS, I8, ((0.0100001, 0), (0.01, 1), None),
                           BOOL, f"{op}, scales 1e-5 apart: the rescaled codes tie or not"))
        out.append(_binary(f"{op}_uint8_mixed_quant_pairs", code, o, PAIRS, U8, ((0.05, 131), (0.0173, 100), None),
                           BOOL, f"{op} on every uint8 code pair, two quantizations"))
        case = _binary(f"{op}_int16_mixed_quant", code, o, ((64, 16), (16,)), I16, ((0.001, 0), (0.0007, 0), None),
                       BOOL, f"{op} on int16, two quantizations, broadcast")
        if op == "greater":  # tflite-micro's Prepare sets the rescaling for int8 only; its int16 Eval reads them unset
            case.params["undefined"] = {"tflm": "comparisons.cc ComparisonsPrepare sets the int16 parameters of "
                                                "GREATER nowhere (persistent buffer read unset)"}
        out.append(case)
        out.append(_binary(f"{op}_int32_broadcast", code, o, ((4, 64), (64,)), I32, None, BOOL,
                           f"{op} on int32, broadcast"))
    for op in ("equal", "not_equal"):
        code, opt = _CMP[op]
        out.append(_binary(f"{op}_bool", code, _opts(opt), ((3, 1, 8), (1, 4, 8)), BOOL, None, BOOL, f"{op} on bool"))
    out.append(_binary("logical_and", OP.LOGICAL_AND, _opts("LogicalAndOptions"), ((4, 1, 3), (1, 5, 3)), BOOL, None,
                       None, "LOGICAL_AND, broadcast"))
    out.append(_binary("logical_or", OP.LOGICAL_OR, _opts("LogicalOrOptions"), ((4, 1, 3), (1, 5, 3)), BOOL, None,
                       None, "LOGICAL_OR, broadcast"))
    out.append(_binary("logical_and_same", OP.LOGICAL_AND, _opts("LogicalAndOptions"), ((6, 7), (6, 7)), BOOL, None,
                       None, "LOGICAL_AND, same shapes"))
    out.append(_unary("logical_not", OP.LOGICAL_NOT, _opts("LogicalNotOptions"), (4, 5, 3), BOOL, None, None,
                      what="LOGICAL_NOT"))
    return out


def select_cases():
    out = []
    q = (0.05, -3)
    for tag, ttype in (("int8", I8), ("int16", I16), ("int32", I32)):
        qq = (0.001, 0) if ttype == I16 else q
        tensors = [_t("c", (4, 6), BOOL), _t("x", (4, 6), ttype, qq), _t("y", (4, 6), ttype, qq),
                   _t("out", (4, 6), ttype, qq)]
        out.append(_case(f"select_{tag}", OP.SELECT, _opts("SelectOptions"), tensors, [0, 1, 2], [3],
                         f"SELECT {tag}, same shapes"))
    tensors = [_t("c", (4,), BOOL), _t("x", (4, 3, 2), I8, q), _t("y", (4, 3, 2), I8, q), _t("out", (4, 3, 2), I8, q)]
    out.append(_case("select_rank1_condition", OP.SELECT, _opts("SelectOptions"), tensors, [0, 1, 2], [3],
                     "SELECT with a rank-1 condition choosing rows"))
    for tag, ttype in (("int8", I8), ("int16", I16), ("int32", I32)):
        qq = (0.001, 0) if ttype == I16 else q
        tensors = [_t("c", (4, 1), BOOL), _t("x", (1, 6), ttype, qq), _t("y", (4, 6), ttype, qq),
                   _t("out", (4, 6), ttype, qq)]
        out.append(_case(f"select_v2_broadcast_{tag}", OP.SELECT_V2, _opts("SelectV2Options"), tensors, [0, 1, 2],
                         [3], f"SELECT_V2 {tag}, broadcast condition and x"))
    tensors = [_t("c", (2, 1, 3), BOOL), _t("x", (5, 1), I8, q), _t("y", (1, 3), I8, q), _t("out", (2, 5, 3), I8, q)]
    out.append(_case("select_v2_broadcast3", OP.SELECT_V2, _opts("SelectV2Options"), tensors, [0, 1, 2], [3],
                     "SELECT_V2, all three broadcast"))
    tensors = [_t("c", (4, 6), BOOL), _t("x", (4, 6), I8, (0.05, -3)), _t("y", (4, 6), I8, (0.1, 7)),
               _t("out", (4, 6), I8, (0.07, 1))]
    out.append(_case("select_v2_mixed_quant", OP.SELECT_V2, _opts("SelectV2Options"), tensors, [0, 1, 2], [3],
                     "SELECT_V2 with three quantizations (the codes are copied raw, or refused)"))
    return out


# ----------------------------------------------------------------------------------------------
# data movement
# ----------------------------------------------------------------------------------------------
def _i32(v):
    return np.asarray(v, np.int32)


def movement_cases():
    out = []
    q = (0.05, -5)
    for tag, ttype, shape, axes in (("int8_axis1", I8, (2, 3, 4, 5), [1]), ("int8_axes12", I8, (2, 3, 4, 5), [1, 2]),
                                    ("int16_last", I16, (3, 4, 5), [-1]), ("int32_axis0", I32, (3, 4, 5), [0]),
                                    ("bool_axis1", BOOL, (3, 4, 5), [1]), ("int8_axes02", I8, (2, 3, 4), [0, 2])):
        qq = (0.001, 0) if ttype == I16 else q
        tensors = [_t("x", shape, ttype, qq), _t("axis", (len(axes),), I32, None, _i32(axes)), _t("y", shape, ttype, qq)]
        out.append(_case(f"reverse_v2_{tag}", OP.REVERSE_V2, _opts("ReverseV2Options"), tensors, [0, 1], [2],
                         f"REVERSE_V2 {tag}"))
    for tag, ttype in (("int8", I8), ("int16", I16), ("int32", I32)):
        qq = (0.001, 0) if ttype == I16 else q
        tensors = [_t("dims", (3,), I32, None, _i32([2, 3, 4])), _t("value", (), ttype, qq),
                   _t("y", (2, 3, 4), ttype, qq)]
        out.append(_case(f"fill_{tag}", OP.FILL, _opts("FillOptions"), tensors, [0, 1], [2], f"FILL {tag}"))
    for tag, ttype in (("int8", I8), ("int16", I16), ("int32", I32)):
        qq = (0.001, 3) if ttype == I16 else q
        out.append(_unary(f"zeros_like_{tag}", OP.ZEROS_LIKE, _opts("ZerosLikeOptions"), (3, 5), ttype, qq, qq,
                          what=f"ZEROS_LIKE {tag} (code 0, not the zero point)"))
    for tag, ttype, shape, block, pads, oshape in (
            ("int8", I8, (2, 5, 4, 3), [2, 2], [[1, 0], [0, 2]], (8, 3, 3, 3)),
            ("int8_rank3", I8, (2, 5, 3), [3], [[1, 0]], (6, 2, 3)),
            ("int16", I16, (1, 4, 4, 2), [2, 2], [[0, 0], [2, 2]], (4, 2, 4, 2)),
            ("int32", I32, (1, 4, 4, 2), [2, 2], [[1, 1], [0, 0]], (4, 3, 2, 2))):
        qq = (0.001, 0) if ttype == I16 else q
        tensors = [_t("x", shape, ttype, qq), _t("block", (len(block),), I32, None, _i32(block)),
                   _t("pads", (len(block), 2), I32, None, _i32(pads)), _t("y", oshape, ttype, qq)]
        out.append(_case(f"space_to_batch_nd_{tag}", OP.SPACE_TO_BATCH_ND, _opts("SpaceToBatchNDOptions"), tensors,
                         [0, 1, 2], [3], f"SPACE_TO_BATCH_ND {tag}, block {block}, paddings {pads}"))
    for tag, ttype, shape, block, crops, oshape in (
            ("int8", I8, (8, 3, 3, 3), [2, 2], [[1, 0], [0, 2]], (2, 5, 4, 3)),
            ("int8_rank3", I8, (6, 2, 3), [3], [[1, 0]], (2, 5, 3)),
            ("int16", I16, (4, 2, 4, 2), [2, 2], [[0, 0], [2, 2]], (1, 4, 4, 2)),
            ("int32", I32, (4, 3, 2, 2), [2, 2], [[1, 1], [0, 0]], (1, 4, 4, 2))):
        qq = (0.001, 0) if ttype == I16 else q
        tensors = [_t("x", shape, ttype, qq), _t("block", (len(block),), I32, None, _i32(block)),
                   _t("crops", (len(block), 2), I32, None, _i32(crops)), _t("y", oshape, ttype, qq)]
        out.append(_case(f"batch_to_space_nd_{tag}", OP.BATCH_TO_SPACE_ND, _opts("BatchToSpaceNDOptions"), tensors,
                         [0, 1, 2], [3], f"BATCH_TO_SPACE_ND {tag}, block {block}, crops {crops}"))
    for tag, ttype, shape, oshape in (("int8", I8, (3, 1, 4), (2, 3, 5, 4)), ("int32", I32, (1, 4), (3, 4)),
                                      ("int16", I16, (2, 1), (2, 2, 3)), ("bool", BOOL, (1, 3), (2, 3))):
        qq = (0.001, 0) if ttype == I16 else q
        tensors = [_t("x", shape, ttype, qq), _t("shape", (len(oshape),), I32, None, _i32(oshape)),
                   _t("y", oshape, ttype, qq)]
        out.append(_case(f"broadcast_to_{tag}", OP.BROADCAST_TO, _opts("BroadcastToOptions"), tensors, [0, 1], [2],
                         f"BROADCAST_TO {tag} {shape} -> {oshape}", version=2))  # LiteRT registers versions 2, 3
    for tag, ttype, pshape, ishape, oshape in (("int8_slices", I8, (4, 5, 3), (2, 3, 2), (2, 3, 3)),
                                               ("int8_elements", I8, (4, 5, 3), (6, 3), (6,)),
                                               ("int16", I16, (4, 5), (3, 1), (3, 5)),
                                               ("int32", I32, (4, 5), (3, 2), (3,))):
        qq = (0.001, 0) if ttype == I16 else q
        tensors = [_t("params", pshape, ttype, qq), _t("indices", ishape, I32), _t("y", oshape, ttype, qq)]
        out.append(_case(f"gather_nd_{tag}", OP.GATHER_ND, _opts("GatherNdOptions"), tensors, [0, 1], [2],
                         f"GATHER_ND {tag} params {pshape} indices {ishape}", index_bound=pshape))
    tensors = [_t("params", (4, 5, 3), I8, q), _t("indices", (2, 3, 2), I32), _t("y", (2, 3, 3), I8, q)]
    out.append(_case("gather_nd_int8_out_of_range", OP.GATHER_ND, _opts("GatherNdOptions"), tensors, [0, 1], [2],
                     "GATHER_ND with indices beyond params' dimensions", index_bound=(9, 9)))
    for tag, vtype in (("int8", I8), ("int16", I16), ("int32", I32)):
        qq = (0.001, 0) if vtype == I16 else q
        tensors = [_t("lookup", (5,), I32), _t("values", (10, 3, 2), vtype, qq), _t("y", (5, 3, 2), vtype, qq)]
        out.append(_case(f"embedding_lookup_{tag}", OP.EMBEDDING_LOOKUP, None, tensors, [0, 1], [2],
                         f"EMBEDDING_LOOKUP {tag} values", index_bound=(10,)))
    tensors = [_t("lookup", (5,), I32), _t("values", (10, 3, 2), I8, q), _t("y", (5, 3, 2), I8, q)]
    out.append(_case("embedding_lookup_out_of_range", OP.EMBEDDING_LOOKUP, None, tensors, [0, 1], [2],
                     "EMBEDDING_LOOKUP with lookups beyond the table", index_bound=(40,)))
    for tag, ttype, itype in (("int8", I8, I32), ("int16", I16, I32), ("int32_int64_indices", I32, I64)):
        qq = (0.001, 0) if ttype == I16 else q
        tensors = [_t("operand", (4, 5, 3), ttype, qq), _t("update", (2, 2, 3), ttype, qq), _t("start", (3,), itype),
                   _t("y", (4, 5, 3), ttype, qq)]
        out.append(_case(f"dynamic_update_slice_{tag}", OP.DYNAMIC_UPDATE_SLICE, _opts("DynamicUpdateSliceOptions"),
                         tensors, [0, 1, 2], [3], f"DYNAMIC_UPDATE_SLICE {tag}, start indices clamped"))
    return out


# ----------------------------------------------------------------------------------------------
# reductions, arithmetic, float-only
# ----------------------------------------------------------------------------------------------
def reduce_cases():
    out = []
    q = (0.05, -5)
    for tag, ttype, otype, axis, shape in (("int8_axis2_int32", I8, I32, 2, (3, 4, 6)),
                                           ("int8_axis0_int64", I8, I64, 0, (3, 4, 6)),
                                           ("uint8_axis1_int32", U8, I32, 1, (3, 4, 6)),
                                           ("int16_axis1_int32", I16, I32, 1, (3, 4, 6)),
                                           ("int32_axis_neg1_int32", I32, I32, -1, (3, 4, 6))):
        oshape = tuple(d for k, d in enumerate(shape) if k != axis % len(shape))
        qq = (0.05, 128) if ttype == U8 else (0.001, 0) if ttype == I16 else q
        tensors = [_t("x", shape, ttype, qq), _t("axis", (1,), I32, None, _i32([axis])), _t("y", oshape, otype)]
        out.append(_case(f"arg_min_{tag}", OP.ARG_MIN, _opts("ArgMinOptions", outputType=otype), tensors, [0, 1], [2],
                         f"ARG_MIN {tag} with ties (first index wins)"))
    for tag, ttype, axes, keep, oshape in (("int8_axis1_keep", I8, [1], True, (3, 1, 6)),
                                           ("int8_axes02", I8, [0, 2], False, (4,)),
                                           ("int16_axis2", I16, [2], False, (3, 4)),
                                           ("int32_axis0", I32, [0], False, (4, 6))):
        qq = (0.001, 0) if ttype == I16 else q
        tensors = [_t("x", (3, 4, 6), ttype, qq), _t("axis", (len(axes),), I32, None, _i32(axes)),
                   _t("y", oshape, ttype, qq)]
        out.append(_case(f"reduce_min_{tag}", OP.REDUCE_MIN, _opts("ReducerOptions", keepDims=keep), tensors, [0, 1],
                         [2], f"REDUCE_MIN {tag}"))
    tensors = [_t("x", (3, 4, 6), I8, (0.05, -5)), _t("axis", (1,), I32, None, _i32([1])), _t("y", (3, 6), I8, (0.1, 2))]
    out.append(_case("reduce_min_int8_requant", OP.REDUCE_MIN, _opts("ReducerOptions", keepDims=False), tensors,
                     [0, 1], [2], "REDUCE_MIN with another output quantization (refused, or codes copied)"))
    for tag, ttype, axes, qi, qo, oshape in (
            ("int8_axis2", I8, [2], (0.5, -3), (0.9, 2), (3, 4)),
            ("int8_axis1_small", I8, [1], (0.02, 1), (1e-5, -7), (3, 6)),
            ("int8_all", I8, [0, 1, 2], (0.7, 0), (3.0, 0), ()),
            ("int16_axis2", I16, [2], (0.01, 0), (0.02, 0), (3, 4)),
            ("int32_axis2", I32, [2], None, None, (3, 4))):
        tensors = [_t("x", (3, 4, 6) if tag != "int8_all" else (2, 2, 2), ttype, qi),
                   _t("axis", (len(axes),), I32, None, _i32(axes)), _t("y", oshape, ttype, qo)]
        out.append(_case(f"reduce_prod_{tag}", OP.REDUCE_PROD, _opts("ReducerOptions", keepDims=False), tensors,
                         [0, 1], [2], f"REDUCE_PROD {tag}"))
    return out


_UNARY = {"abs": (OP.ABS, "AbsOptions"), "neg": (OP.NEG, "NegOptions"), "square": (OP.SQUARE, "SquareOptions"),
          "sqrt": (OP.SQRT, None), "log": (OP.LOG, None), "sin": (OP.SIN, None), "cos": (OP.COS, None),
          "rsqrt": (OP.RSQRT, None)}


def arithmetic_cases():
    out = []
    for op, (code, opt) in _UNARY.items():
        o = None if opt is None else _opts(opt)
        zp = -128 if op in ("sqrt", "rsqrt") else -3  # SQRT / RSQRT fail on codes below the zero point
        out.append(_unary(f"{op}_int8_same_quant", code, o, (256,), I8, (0.05, zp), (0.05, zp),
                          what=f"{op.upper()} on every int8 code, one quantization"))
        out.append(_unary(f"{op}_int8_requant", code, o, (256,), I8, (0.05, zp), (0.037, 11),
                          what=f"{op.upper()} on every int8 code, rescaled"))
        if op in ("abs", "neg", "square", "log", "sqrt"):
            out.append(_unary(f"{op}_int16", code, o, (512,), I16, (0.001, 0), (0.0013, 0) if op != "log" else
                              (0.0004, 0), what=f"{op.upper()} int16"))
        if op in ("abs", "neg", "square"):
            out.append(_unary(f"{op}_int32", code, o, (4, 64), I32, None, None, what=f"{op.upper()} int32"))
    divisors8 = np.array([-128, -127, -64, -7, -5, -3, -2, -1, 1, 2, 3, 4, 5, 7, 64, 127], np.int8)
    divisors32 = np.array([-2**31, -2**31 + 1, -1000, -7, -3, -2, -5, 1, 2, 3, 7, 10, 1000, 2**31 - 1, 65536, -65536],
                          np.int32)  # no -1: INT_MIN / -1 traps (SIGFPE) in every engine
    for op, code, opt in (("floor_div", OP.FLOOR_DIV, "FloorDivOptions"), ("floor_mod", OP.FLOOR_MOD,
                                                                           "FloorModOptions")):
        out.append(_binary(f"{op}_int8", code, _opts(opt), ((16, 16), (16,)), I8, None, None,
                           f"{op.upper()} on raw int8 codes by nonzero constants", consts=(None, divisors8)))
        out.append(_binary(f"{op}_int16", code, _opts(opt), ((16, 16), (16,)), I16, None, None,
                           f"{op.upper()} on raw int16 codes", consts=(None, divisors8.astype(np.int16) * 129)))
        out.append(_binary(f"{op}_int32", code, _opts(opt), ((16, 16), (16,)), I32, None, None,
                           f"{op.upper()} on int32 by nonzero constants (INT_MIN / -1 left out)",
                           consts=(None, divisors32)))
    div_nonzero = np.array([-128, -100, -50, -20, -10, -6, -4, 4, 6, 10, 20, 50, 100, 127, -9, 9], np.int8)
    out.append(_binary("div_int8", OP.DIV, _opts("DivOptions"), ((16, 16), (16,)), I8,
                       ((0.05, -3), (0.02, -2), (0.1, 5)), None, "DIV int8 quantized, constant divisors (none 0)",
                       consts=(None, div_nonzero)))
    out.append(_binary("div_int8_saturate", OP.DIV, _opts("DivOptions"), ((16, 16), (16,)), I8,
                       ((0.5, 0), (0.01, 0), (0.05, 1)), None, "DIV int8 whose quotients saturate",
                       consts=(None, div_nonzero)))
    out.append(_binary("div_int32", OP.DIV, _opts("DivOptions"), ((16, 16), (16,)), I32, None, None,
                       "DIV int32 (truncating?), nonzero constant divisors", consts=(None, divisors32)))
    for tag, ttype, n, qs in (("int8", I8, 3, [(0.05, -3), (0.05, -3), (0.05, -3), (0.05, -3)]),
                              ("int8_mixed", I8, 3, [(0.05, -3), (0.02, 4), (0.1, 0), (0.08, 1)]),
                              ("int32", I32, 4, [None] * 5), ("int16", I16, 2, [(0.001, 0)] * 3)):
        tensors = [_t(f"x{k}", (4, 8), ttype, qs[k]) for k in range(n)] + [_t("y", (4, 8), ttype, qs[n])]
        out.append(_case(f"add_n_{tag}", OP.ADD_N, _opts("AddNOptions"), tensors, list(range(n)), [n],
                         f"ADD_N of {n} {tag} inputs"))
    for tag, ttype, axis, ex, rev, qi, qo in (
            ("int8_axis1", I8, 1, False, False, (0.05, -3), (0.2, 2)),
            ("int8_axis0_exclusive_reverse", I8, 0, True, True, (0.05, -3), (0.3, -1)),
            ("int8_same_quant", I8, 1, False, True, (0.05, 0), (0.05, 0)),
            ("int32_axis1", I32, 1, False, False, None, None),
            ("int32_axis0_exclusive_reverse", I32, 0, True, True, None, None),
            ("int16_axis1", I16, 1, False, False, (0.001, 0), (0.004, 0))):
        tensors = [_t("x", (5, 12), ttype, qi), _t("axis", (), I32, None, _i32(axis)), _t("y", (5, 12), ttype, qo)]
        out.append(_case(f"cumsum_{tag}", OP.CUMSUM, _opts("CumsumOptions", exclusive=ex, reverse=rev), tensors,
                         [0, 1], [2], f"CUMSUM {tag}"))
    tensors = [_t("x", (1, 4, 4, 2), I8, (0.05, -3)), _t("y", (1, 2, 2, 2), I8, (0.05, -3))]
    out.append(_case("l2_pool_2d_int8", OP.L2_POOL_2D,
                     _opts("Pool2DOptions", padding=1, strideW=2, strideH=2, filterWidth=2, filterHeight=2),
                     tensors, [0], [1], "L2_POOL_2D int8 (the engines' float-only kernels refuse it)"))
    return out


def edge_cases():
    """Every DIV divisor code, uint8 DIV, a fused RELU; same-shape and rank-5 comparisons; CUMSUM and ADD_N sums that
    wrap or saturate; REDUCE_PROD with a zero point; ARG_MIN on bool; SQRT below the zero point; LOG mostly <= 0."""
    out = []
    every = np.array([c for c in range(-128, 128) if c != -9], np.int8).reshape(1, 255)
    out.append(_binary("div_int8_every_divisor", OP.DIV, _opts("DivOptions"), ((256, 1), (1, 255)), I8,
                       ((0.05, 7), (0.03, -9), (0.2, -3)), None, "DIV int8: every dividend by every divisor code "
                       "but the zero point", consts=(None, every)))
    out.append(_binary("div_int8_relu", OP.DIV, _opts("DivOptions", fusedActivationFunction=1), ((256, 1), (1, 255)),
                       I8, ((0.05, 7), (0.03, -9), (0.02, -20)), None, "DIV int8 with a fused RELU",
                       consts=(None, every)))
    every_u8 = np.array([c for c in range(256) if c != 120], np.uint8).reshape(1, 255)
    out.append(_binary("div_uint8_every_divisor", OP.DIV, _opts("DivOptions"), ((256, 1), (1, 255)), U8,
                       ((0.05, 135), (0.03, 120), (0.2, 125)), None, "DIV uint8 (LiteRT)", consts=(None, every_u8)))
    for op in ("less", "equal"):
        code, opt = _CMP[op]
        out.append(_binary(f"{op}_int8_mixed_same_shape", code, _opts(opt), ((4, 64), (4, 64)), I8,
                           ((0.05, 3), (0.0173, -20), None), BOOL, f"{op} int8, same shapes (no broadcast)"))
        out.append(_binary(f"{op}_int8_rank5_broadcast", code, _opts(opt), ((2, 1, 3, 1, 4), (1, 2, 1, 3, 4)), I8,
                           ((0.05, 3), (0.0173, -20), None), BOOL, f"{op} int8, rank-5 broadcast"))
    tensors = [_t("x", (2, 40), I8, (0.01, 127)), _t("axis", (), I32, None, _i32(1)), _t("y", (2, 40), I8, (1.0, 0))]
    out.append(_case("cumsum_int8_wrapping_sum", OP.CUMSUM, _opts("CumsumOptions", exclusive=False, reverse=False),
                     tensors, [0, 1], [2], "CUMSUM int8 whose int32 sum of (x - zp) << 19 terms wraps"))
    tensors = [_t(f"x{k}", (4, 16), I8, (0.05, 100)) for k in range(8)] + [_t("y", (4, 16), I8, (0.07, -5))]
    out.append(_case("add_n_int8_eight_saturating", OP.ADD_N, _opts("AddNOptions"), tensors, list(range(8)), [8],
                     "ADD_N of 8 int8 inputs, zero point 100, saturating"))
    tensors = [_t("x", (4, 3, 5), I8, (0.08, -128)), _t("axis", (1,), I32, None, _i32([2])),
               _t("y", (4, 3), I8, (2.0, -100))]
    out.append(_case("reduce_prod_int8_zp", OP.REDUCE_PROD, _opts("ReducerOptions", keepDims=False), tensors, [0, 1],
                     [2], "REDUCE_PROD int8, zero point -128, saturating"))
    tensors = [_t("x", (3, 5), BOOL), _t("axis", (1,), I32, None, _i32([1])), _t("y", (3,), I32)]
    out.append(_case("arg_min_bool", OP.ARG_MIN, _opts("ArgMinOptions", outputType=I32), tensors, [0, 1], [2],
                     "ARG_MIN on bool"))
    out.append(_unary("sqrt_int8_negative", OP.SQRT, None, (256,), I8, (0.05, -100), (0.05, -100),
                      what="SQRT int8 on codes below the zero point (the engines fail)"))
    out.append(_unary("log_int8_mostly_nonpositive", OP.LOG, None, (256,), I8, (0.02, 120), (0.1, 100),
                      what="LOG int8, most inputs <= 0 (the output minimum)"))
    F32 = T.FLOAT32
    out.append(_binary("div_float32", OP.DIV, _opts("DivOptions"), ((16, 16), (16,)), F32, None, None,
                       "DIV float32 (MoveNet's post-processing): zeros, infinities, NaN, denormals"))
    out.append(_binary("div_float32_relu6", OP.DIV, _opts("DivOptions", fusedActivationFunction=3), ((16, 16), (16,)),
                       F32, None, None, "DIV float32 with a fused RELU6"))
    out.append(_unary("sqrt_float32", OP.SQRT, None, (256,), F32, None, None,
                      what="SQRT float32: negatives (NaN), -0, infinities, denormals"))
    for tag, ttype, axis in (("int32", I32, 1), ("int64", I64, -1), ("bool", BOOL, 0)):
        shapes = [(2, 3), (2, 1), (2, 4)] if axis != 0 else [(1, 3), (2, 3)]
        oshape = (2, 8) if axis != 0 else (3, 3)
        tensors = [_t(f"x{k}", sh, ttype) for k, sh in enumerate(shapes)] + [_t("y", oshape, ttype)]
        out.append(_case(f"concatenation_{tag}", OP.CONCATENATION, _opts("ConcatenationOptions", axis=axis), tensors,
                         list(range(len(shapes))), [len(shapes)], f"CONCATENATION {tag} (no quantization)"))
    return out


# the highest version LiteRT 2.3.0's BUILTIN_REF resolver registers (measured by loading these models at every version;
# tflite/kernels/register_ref.cc); the default and no-delegate resolvers register the same but ABS 5, ARG_MIN 3
REF_MAX_VERSIONS = {
    "EQUAL": 5, "NOT_EQUAL": 4, "LESS": 3, "LESS_EQUAL": 2, "GREATER": 2, "GREATER_EQUAL": 3, "LOGICAL_AND": 1,
    "LOGICAL_OR": 1, "LOGICAL_NOT": 1, "SELECT": 4, "SELECT_V2": 2, "REVERSE_V2": 4, "FILL": 5, "ZEROS_LIKE": 1,
    "SPACE_TO_BATCH_ND": 4, "BATCH_TO_SPACE_ND": 4, "BROADCAST_TO": 4, "GATHER_ND": 6, "EMBEDDING_LOOKUP": 5,
    "DYNAMIC_UPDATE_SLICE": 6, "ARG_MIN": 2, "REDUCE_MIN": 3, "REDUCE_PROD": 2, "ABS": 3, "NEG": 1, "FLOOR_DIV": 3,
    "FLOOR_MOD": 2, "DIV": 2, "ADD_N": 1, "CUMSUM": 1, "LOG": 2, "SQRT": 2}


def version_cases(cases):
    """For each operator, its first case at one version above BUILTIN_REF's highest (LiteRT refuses what its resolver
    does not register; tflite-micro reads no version)."""
    from _tflite_edit import load, op_names, save  # noqa: PLC0415
    out, seen = [], set()
    for c in cases:
        m = load(c.model)
        name = op_names(m)[0]
        if name in seen or name not in REF_MAX_VERSIONS or any(k in c.name for k in ("float32", "undefined")):
            continue
        if c.params.get("undefined"):
            continue
        seen.add(name)
        m.operatorCodes[0].version = REF_MAX_VERSIONS[name] + 1
        out.append(G.Case(FAMILY, f"b2_version_{name.lower()}", save(m), f"{name} at version "
                          f"{REF_MAX_VERSIONS[name] + 1}, beyond LiteRT BUILTIN_REF's", **c.params))
    return out


# ----------------------------------------------------------------------------------------------
# inputs
# ----------------------------------------------------------------------------------------------
def make_inputs(model, name, **kw):
    """make_golden_ops's inputs, but bool inputs (random bits, then all true / all false), index inputs (in range,
    drawn per case; DYNAMIC_UPDATE_SLICE's starts include negative and too-large ones, which the kernels clamp),
    FILL's scalar value, and the ZEROS_LIKE / DIV int32 sweeps."""
    sg = model.subgraphs[0]
    arrays = []
    rng = np.random.default_rng(zlib.crc32(name.encode()))
    for k, i in enumerate(sg.inputs):
        tt = sg.tensors[i]
        dt = NP_DTYPES[tt.type]
        shape = tuple(int(v) for v in tt.shape)
        n = int(np.prod(shape))
        tname = tt.name.decode() if isinstance(tt.name, bytes) else tt.name
        runs = G.RUNS
        if dt == np.float32:  # special values, then spreads of magnitudes
            special = np.array([0.0, -0.0, 1.0, -1.0, np.inf, -np.inf, np.nan, 1e-45, -1e-45, 1e-38, 3.4e38, -3.4e38,
                                2.0, 0.5, 3.0, 7.0], np.float32)
            sets = [np.resize(np.roll(special, k), n), rng.normal(0, 10, n), rng.uniform(-1e3, 1e3, n),
                    np.float32(2.0) ** rng.integers(-140, 128, n) * rng.choice([-1, 1], n)]
        elif dt == np.bool_:
            sets = [rng.integers(0, 2, n), rng.integers(0, 2, n), np.ones(n), np.arange(n) % 3 == 0]
        elif tname == "start":
            sets = [np.array(v) for v in ([1, 2, 0], [-3, 9, 1], [2, 3, 0], [3, 4, 5])]
        elif tname in ("indices", "lookup"):
            case = next(c for c in CASES if c.name == name)
            bound = case.params["index_bound"]
            depth = shape[-1] if tname == "indices" else 1
            sets = [np.stack([rng.integers(0, bound[d], n // depth) for d in range(depth)], -1).reshape(-1)
                    for _ in range(runs)]
        else:  # make_golden_ops's sets: the sweep (every int8 code), two uniform draws, the extremes
            info = np.iinfo(dt)
            wide = dt == np.int32 and any(w in name for w in ("div", "mod", "abs", "neg"))
            lo, hi = (int(info.min), int(info.max)) if dt != np.int32 or wide else (-300, 300)
            if dt in (np.int16, np.int32):
                sweep = np.roll(np.round(np.linspace(lo, hi, n)).astype(np.int64), 97 * k)
            else:
                span = hi - lo + 1
                sweep = (np.arange(n) + 97 * k) % min(span, 256) + (lo if span <= 256 else -128)
            sets = [sweep, rng.integers(lo, hi + 1, n), rng.integers(lo, hi + 1, n),
                    np.where((np.arange(n) + k) % 2 == 0, info.min, info.max)]
            if name == "b2_sqrt_int16":  # codes at or above the zero point (0): the engines fail below it
                sets = [np.clip(np.abs(np.asarray(r, np.int64)), 0, hi) for r in sets]
        arrays.append(np.stack([np.asarray(r).reshape(shape) for r in sets[:runs]]).astype(dt))
    return arrays


CASES: list = []


def main():
    CASES.extend(comparison_cases() + select_cases() + movement_cases() + reduce_cases() + arithmetic_cases()
                 + edge_cases())
    CASES.extend(version_cases(CASES))
    if len(sys.argv) > 1:  # a subset by name prefix, for a look (writes nothing)
        CASES[:] = [c for c in CASES if c.name.startswith(tuple(sys.argv[1:]))]
    G.make_inputs = make_inputs  # record_case looks the name up at call time
    os.makedirs(G.HERE, exist_ok=True)
    packer = G.Packer()
    with tempfile.TemporaryDirectory() as tmp:
        for case in CASES:
            meta, inputs, results = G.record_case(case, tmp)
            G.pack_case(packer, meta, inputs, results)
            print(G.describe(meta), flush=True)
    if len(sys.argv) > 1:
        return
    path = os.path.join(G.HERE, f"{FAMILY}.npz")
    packer.write(path, {"family": FAMILY, "versions": G.versions(), "engines": list(G.ENGINES)})
    print(f"wrote {path}: {len(packer.cases)} cases, {os.path.getsize(path)} bytes", flush=True)


if __name__ == "__main__":
    main()
