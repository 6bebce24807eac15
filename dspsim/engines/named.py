"""The engines dspsim names, each one :class:`~dspsim.engines.profile.EngineProfile` (docs/engines.md has the
measurements behind every field).

=========================  ==============================================================================
``"tflm"``                 TensorFlow Lite Micro's reference kernels: what MCU / DSP ports (CMSIS-NN, ESP-NN)
                           must match
``"tflm-cmsis-nn"``        TensorFlow Lite Micro with CMSIS-NN kernels (what Cortex-M devices run): the reference
                           kernels' integers but for the LSTM state reset at every invocation, the int8-state
                           SVDF and the TRANSPOSE_CONV row bug of the CMSIS-NN commit TFLM pins
``"tflm-cmsis-nn-4a8f5b5"`` the same with CMSIS-NN's TRANSPOSE_CONV row fix (4a8f5b5 or later)
``"tflm-cmsis-nn-m55"``    the same on a Cortex-M55 (Helium): its int8-state SVDF adds a zero-point term
``"litert"``               LiteRT's reference kernels (``OpResolverType.BUILTIN_REF``), refusals and defects
                           included
``"xnnpack"``              LiteRT's default interpreter: the XNNPACK delegate where it takes the node, LiteRT's
                           optimized builtin kernels elsewhere
``"litert-optimized"``     LiteRT's optimized builtin kernels without a delegate (``BUILTIN_WITHOUT_DEFAULT_DELEGATES``)
``"onnxruntime"``          ONNX Runtime's CPU provider, graph optimizations off, on an x86 host without VNNI
                           (uint8 x int8 GEMMs saturate product pairs, as the golden vectors were made)
``"onnxruntime-vnni"``     the same on a host with AVX-512 VNNI or AVX-VNNI (those GEMMs exact)
``"onnxruntime-optimized"`` ONNX Runtime with ``ORT_ENABLE_ALL``: QDQ groups fused into QLinear operators
``"onnx-reference"``       ``onnx.reference.ReferenceEvaluator``
``"fbgemm"``, ``"onednn"`` PyTorch's quantized kernels (the MAC kernels' ``requant=`` only)
=========================  ==============================================================================
"""
from __future__ import annotations

from dataclasses import replace
from types import MappingProxyType

from ..accumulator import Accumulator
from .profile import (Defect, EngineProfile, Kernel, MacProfile, MacRule, ModelFormat, OnnxKernels, OnnxProfile,
                      RealMultiplier, RequantKind, RequantRule, Rounding, TfliteProfile)

# --------------------------------------------------------------------------------------------
# MAC rules
# --------------------------------------------------------------------------------------------
_FIXED = RequantRule(RequantKind.FIXED_POINT)
_FIXED_FC = RequantRule(RequantKind.FIXED_POINT, per_tensor_real=RealMultiplier.FLOAT32_PRODUCT)
_INT64 = RequantRule(RequantKind.FIXED_POINT, rounding="int64")
_LITERT_FC = RequantRule(RequantKind.DOUBLE_SCALE)
_FLOAT32 = RequantRule(RequantKind.FLOAT32)


def _mac(fc, conv, depthwise, transpose_conv, fc_16x8=_INT64, accumulator=None, depthwise_accumulator=None,
         depthwise_uint8=None, conv_grouped=None):
    """The MAC families' rules; 16x8 layers: the int64 overload (TRANSPOSE_CONV: the build's fixed point); uint8
    layers: the 8-bit rule (``MacRule.uint8_requant``) but where ``depthwise_uint8`` is given; grouped convs: the
    conv's rule but where ``conv_grouped`` is given."""
    def rule(rq, rq16=_INT64, acc=accumulator, rq_u8=None, rq_grouped=None):
        return MacRule(rq, rq16, acc, requant_uint8=rq_u8, requant_grouped=rq_grouped)

    return MacProfile(rule(fc, fc_16x8), rule(conv, rq_grouped=conv_grouped),
                      rule(depthwise, acc=depthwise_accumulator, rq_u8=depthwise_uint8), rule(transpose_conv, _FIXED))


_TFLITE_MAC = _mac(_FIXED_FC, _FIXED, _FIXED, _FIXED)

# --------------------------------------------------------------------------------------------
# TFLite engines
# --------------------------------------------------------------------------------------------
_I8, _U8, _I16, _I32, _I64, _F32, _BOOL = "int8", "uint8", "int16", "int32", "int64", "float32", "bool"
#: TensorFlow Lite Micro's Signal library custom ops (signal/micro/kernels): only TFLM registers them.
SIGNAL_OPS = tuple(f"CUSTOM(Signal{name})" for name in (
    "Window", "FftAutoScale", "Rfft", "Irfft", "Energy", "FilterBank", "FilterBankSquareRoot",
    "FilterBankSpectralSubtraction", "FilterBankLog", "PCAN", "Framer", "OverlapAdd", "Stacker", "Delay"))

TFLM = EngineProfile(
    "tflm", "TensorFlow Lite Micro's reference kernels (what CMSIS-NN, ESP-NN and DSP ports must match)",
    _TFLITE_MAC, frozenset({ModelFormat.TFLITE}), "tflm",
    TfliteProfile(
        kernels={op: Kernel.TFLM for op in (
            "RELU", "RELU6", "LEAKY_RELU", "LOGISTIC", "TANH", "ELU", "ADD", "SUB", "MUL", "SQUARED_DIFFERENCE",
            "MEAN", "SOFTMAX", "L2_NORMALIZATION", "AVERAGE_POOL_2D", "MAX_POOL_2D", "STRIDED_SLICE", "CAST",
            "UNIDIRECTIONAL_SEQUENCE_LSTM", "SVDF", "GREATER", "DIV", "SPACE_TO_BATCH_ND", "BATCH_TO_SPACE_ND",
            "FILL", *SIGNAL_OPS)},
        refused={"RELU_N1_TO_1": "TensorFlow Lite Micro registers no RELU_N1_TO_1 kernel",
                 "EXP": "TensorFlow Lite Micro's EXP supports float32 only (exp.cc)",
                 "SELECT": "TensorFlow Lite Micro registers no SELECT kernel (SELECT_V2 only)",
                 "REDUCE_PROD": "TensorFlow Lite Micro registers no REDUCE_PROD kernel"},
        types={"STRIDED_SLICE": (_F32, _I8, _I16, _I32), "SLICE": (_F32, _I32, _I8, _I16),
               "SPLIT": (_F32, _I8, _I16, _I32), "SPLIT_V": (_F32, _I8, _I16, _I32), "TRANSPOSE": (_F32, _I8, _I16),
               "GATHER": (_F32, _I8), "GATHER.positions": (_I32,), "PACK": (_F32, _I8, _I16, _I32, _I64),
               "UNPACK": (_F32, _I32, _I16, _I8), "MIRROR_PAD": (_F32, _I8), "SPACE_TO_DEPTH": (_F32, _I8),
               "DEPTH_TO_SPACE": (_F32, _I8), "CAST": (_I8, _I16, _I32, "uint32", _F32),
               "RESIZE_NEAREST_NEIGHBOR": (_F32, _I8, _I16), "RESIZE_BILINEAR": (_I8,), "REDUCE_MAX": (_I8,),
               "ARG_MAX": (_I8,), "ARG_MAX.output": (_I32,), "SUM": (_I8, _I16),
               # tests/golden/ops/builtins2.npz (make_golden_builtins2.py)
               **{op: (_BOOL, _F32, _I32, _I64, _I8) for op in ("EQUAL", "NOT_EQUAL")},
               **{op: (_F32, _I32, _I64, _I8) for op in ("LESS", "LESS_EQUAL", "GREATER_EQUAL")},
               "GREATER": (_F32, _I32, _I64, _I8, _I16), "SELECT_V2": (_F32, _I8, _I16), "FILL": (_F32, _I32, _I8),
               "ZEROS_LIKE": (_I64, _I32, _I8, _F32), "SPACE_TO_BATCH_ND": (_F32, _I8),
               "BATCH_TO_SPACE_ND": (_F32, _I8), "GATHER_ND": (_F32, _I8), "GATHER_ND.indices": (_I32,),
               "EMBEDDING_LOOKUP": (_F32, _I8), "DYNAMIC_UPDATE_SLICE": (_F32, _I8, _I16, _I32),
               "ARG_MIN": (_F32, _I8), "ARG_MIN.output": (_I32,), "REDUCE_MIN": (_F32, _I8), "ABS": (_F32, _I8, _I16),
               **{op: (_F32,) for op in ("NEG", "FLOOR_DIV", "FLOOR_MOD", "LOG", "SQRT")}, "DIV": (_F32, _I8, _I32),
               "ADD_N": (_F32, _I8), "CUMSUM": (_F32, _I8)},
        max_ranks={"STRIDED_SLICE": 4, "SLICE": 5, "TRANSPOSE": 5, "L2_NORMALIZATION": 4},
        takes_uint8=False, checks_quantization=False, allocates_empty_tensors=False,
        int32_requantize_pairs=frozenset({(_I8, _I32), (_I16, _I32), (_I32, _I8), (_I32, _I16)}),
        # fully_connected_common.cc: INT4 weights per tensor only; conv_common.cc / depthwise_conv_common.cc:
        # an int16 layer with INT4 weights is "hybrid"
        int4_weights={"FULLY_CONNECTED": ("int8/per-tensor",), "CONV_2D": (_I8,), "DEPTHWISE_CONV_2D": (_I8,)},
        # conv.cc / fully_connected.cc requires_int32_accum; transpose_conv.cc widens an int16 bias to int64
        narrow_16x8_bias={"CONV_2D": _I32, "FULLY_CONNECTED": _I32, "TRANSPOSE_CONV": _I16}))

TFLM_CMSIS_NN = TFLM.derive(
    "tflm-cmsis-nn", "TensorFlow Lite Micro with CMSIS-NN kernels (OPTIMIZED_KERNEL_DIR=cmsis_nn; CMSIS-NN "
                     "4ab83cc, its C paths, as TFLM 90b983c pins): the reference kernels' integers, its defects "
                     "included", interpreter=None,
    # CMSIS-NN's s16 kernels with a narrow bias are not measured here (no golden): int64 biases only
    tflite=replace(TFLM.tflite, quotient="float32", narrow_16x8_bias={}),
    defects=frozenset({Defect.CMSIS_NN_LSTM_STATE_RESET, Defect.CMSIS_NN_SVDF_INT8_STATE,
                       Defect.CMSIS_NN_TRANSPOSE_CONV_PAD_ROWS}))

TFLM_CMSIS_NN_FIXED = TFLM_CMSIS_NN.derive(
    "tflm-cmsis-nn-4a8f5b5", "tflm-cmsis-nn with CMSIS-NN 4a8f5b5 (its TRANSPOSE_CONV row fix) or later",
    defects=TFLM_CMSIS_NN.defects - {Defect.CMSIS_NN_TRANSPOSE_CONV_PAD_ROWS})
TFLM_CMSIS_NN_M55 = TFLM_CMSIS_NN.derive(
    "tflm-cmsis-nn-m55", "TensorFlow Lite Micro with CMSIS-NN on a Cortex-M55 (Helium/MVE paths): tflm-cmsis-nn, "
                         "and its int8-state SVDF adds input_zp * state_zp * input_size to every feature sum",
    defects=TFLM_CMSIS_NN.defects | {Defect.CMSIS_NN_SVDF_MVE_KERNEL_SUMS})

# the highest versions LiteRT 2.3.0's resolvers register for the builtins of issue 27 part 3 (measured:
# tests/golden/ops/builtins2.npz b2_version_*; BUILTIN_REF's, register_ref.cc; the default and no-delegate resolvers
# register ABS up to 5 and ARG_MIN up to 3)
_LITERT_MAX_VERSIONS = {
    "EQUAL": 5, "NOT_EQUAL": 4, "LESS": 3, "LESS_EQUAL": 2, "GREATER": 2, "GREATER_EQUAL": 3, "LOGICAL_AND": 1,
    "LOGICAL_OR": 1, "LOGICAL_NOT": 1, "SELECT": 4, "SELECT_V2": 2, "REVERSE_V2": 4, "FILL": 5, "ZEROS_LIKE": 1,
    "SPACE_TO_BATCH_ND": 4, "BATCH_TO_SPACE_ND": 4, "BROADCAST_TO": 4, "GATHER_ND": 6, "EMBEDDING_LOOKUP": 5,
    "DYNAMIC_UPDATE_SLICE": 6, "ARG_MIN": 2, "REDUCE_MIN": 3, "REDUCE_PROD": 2, "ABS": 3, "NEG": 1, "FLOOR_DIV": 3,
    "FLOOR_MOD": 2, "DIV": 2, "ADD_N": 1, "CUMSUM": 1, "LOG": 2, "SQRT": 2}
_LITERT_BUILTIN_MAX_VERSIONS = {**_LITERT_MAX_VERSIONS, "ABS": 5, "ARG_MIN": 3}

_LITERT_TFLITE = dict(
    types={"RESIZE_BILINEAR": (_I8, _U8, _I16)},
    # depthwise_conv.cc EvalQuantizedPerChannel16x8 reads INT4 weights unpacked: out of bounds, undefined
    int4_weights={"FULLY_CONNECTED": (_I8, _I16), "CONV_2D": (_I8, _I16), "DEPTHWISE_CONV_2D": (_I8,)},
    int32_requantize_pairs=frozenset({(_I16, _I32), (_I32, _I8), (_I32, _I16)}))

LITERT = EngineProfile(
    "litert", "LiteRT's reference kernels (OpResolverType.BUILTIN_REF), refusals and defects included",
    _mac(_LITERT_FC, _FIXED, _FIXED, _FIXED, fc_16x8=_LITERT_FC), frozenset({ModelFormat.TFLITE}), "litert",
    TfliteProfile(
        refused={"ELU": "LiteRT's reference op resolver (BUILTIN_REF) registers no ELU"},
        # the highest version LiteRT's BUILTIN_REF resolver registers (tflite/kernels/register_ref.cc)
        max_versions={"STRIDED_SLICE": 4, "SLICE": 8, "SPLIT": 5, "SPLIT_V": 3, "TRANSPOSE": 8, "GATHER": 8,
                      "PACK": 5, "UNPACK": 6, "MIRROR_PAD": 3, "SPACE_TO_DEPTH": 2, "DEPTH_TO_SPACE": 1,
                      "RESIZE_BILINEAR": 4, "RESIZE_NEAREST_NEIGHBOR": 4, "REDUCE_MAX": 3, "ARG_MAX": 2,
                      **_LITERT_MAX_VERSIONS},
        **_LITERT_TFLITE),
    defects=frozenset({Defect.LITERT_SUM_INT8_AS_UINT8}))

_HALF_UP = RequantRule(RequantKind.FIXED_POINT, shift_rounding=Rounding.HALF_UP)
_HALF_UP_FC = RequantRule(RequantKind.FIXED_POINT, shift_rounding=Rounding.HALF_UP,
                          per_tensor_real=RealMultiplier.FLOAT32_PRODUCT)

LITERT_OPTIMIZED = EngineProfile(
    "litert-optimized", "LiteRT's optimized builtin kernels without a delegate (BUILTIN_WITHOUT_DEFAULT_DELEGATES; the "
                        "TFLite C library apps embed)",
    # uint8 depthwise (depthwiseconv_uint8.h DepthwiseConvGeneral): gemmlowp's RoundingDivideByPOT, ties away from
    # zero; grouped conv: conv.cc runs the reference kernel
    _mac(_HALF_UP_FC, _HALF_UP, replace(_HALF_UP, vector_channels=8), _FIXED, fc_16x8=_LITERT_FC,
         depthwise_uint8=_FIXED_FC, conv_grouped=_FIXED),
    frozenset({ModelFormat.TFLITE}),
    "litert-optimized",
    TfliteProfile(
        kernels={op: Kernel.LITERT_OPTIMIZED for op in ("ADD", "SOFTMAX", "LOG_SOFTMAX", "RESIZE_NEAREST_NEIGHBOR",
                                                         "LOGISTIC", "TANH", "QUANTIZE", "DEQUANTIZE", "LEAKY_RELU",
                                                         "ELU", "MEAN", "SUM", "RESIZE_BILINEAR", "MUL")},
        # fully_connected.cc: a 16x8 FC with an int32 bias and zero points 0 runs optimized_integer_ops (ruy, int32)
        narrow_16x8_bias={"FULLY_CONNECTED": _I32},
        max_versions=_LITERT_BUILTIN_MAX_VERSIONS, **_LITERT_TFLITE))

_XNNPACK_MAC = _mac(_FLOAT32, _FLOAT32, _FLOAT32, _FLOAT32, fc_16x8=_LITERT_FC)
# the delegate leaves INT4-weight CONV_2D / DEPTHWISE_CONV_2D to LiteRT's optimized kernels (tests/golden/ops/int4.npz)
_XNNPACK_MAC = _XNNPACK_MAC.with_rules(**{f: replace(_XNNPACK_MAC.family(f), requant_int4=LITERT_OPTIMIZED.mac.family(
    f).requant) for f in ("conv_2d", "depthwise_conv_2d")})
# and a 16x8 FULLY_CONNECTED with an int32 bias to the optimized kernel (tests/golden/ops/int16_variants.npz)
_XNNPACK_MAC = _XNNPACK_MAC.with_rules(fully_connected=replace(
    _XNNPACK_MAC.family("fully_connected"),
    requant_16x8_int32=LITERT_OPTIMIZED.mac.family("fully_connected").requant))

XNNPACK = EngineProfile(
    "xnnpack", "LiteRT's default interpreter: the XNNPACK delegate where it takes the node, LiteRT's optimized "
               "builtin kernels elsewhere",
    _XNNPACK_MAC, frozenset({ModelFormat.TFLITE}), "xnnpack",
    TfliteProfile(
        kernels={**{op: Kernel.XNNPACK for op in ("ADD", "SUB", "MUL", "MEAN", "SUM", "LEAKY_RELU", "QUANTIZE",
                                                  "LOGISTIC", "TANH", "ELU", "RESIZE_BILINEAR", "REDUCE_MIN",
                                                  "DIV", "SQRT")},
                 **{op: Kernel.LITERT_OPTIMIZED for op in ("SOFTMAX", "LOG_SOFTMAX", "RESIZE_NEAREST_NEIGHBOR")}},
        narrow_16x8_bias=LITERT_OPTIMIZED.tflite.narrow_16x8_bias,
        max_versions=_LITERT_BUILTIN_MAX_VERSIONS, **_LITERT_TFLITE))

# --------------------------------------------------------------------------------------------
# ONNX engines
# --------------------------------------------------------------------------------------------
_PAIRS = Accumulator(pair_saturation=True)  # MLAS's u8 x s8 GEMMs without VNNI (vpmaddubsw)
_ORT_MAC = _mac(_FLOAT32, _FLOAT32, _FLOAT32, _FLOAT32, accumulator=_PAIRS)

ONNXRUNTIME = EngineProfile(
    "onnxruntime", "ONNX Runtime's CPU provider, graph optimizations off (QDQ nodes as written), on an x86 host "
                   "without VNNI", _ORT_MAC, frozenset({ModelFormat.ONNX}), "onnxruntime", onnx=OnnxProfile())
ONNXRUNTIME_VNNI = ONNXRUNTIME.derive(
    "onnxruntime-vnni", "ONNX Runtime's CPU provider, graph optimizations off, on an x86 host with VNNI (uint8 x "
                        "int8 GEMMs exact)", mac=_mac(_FLOAT32, _FLOAT32, _FLOAT32, _FLOAT32))
ONNXRUNTIME_OPTIMIZED = ONNXRUNTIME.derive(
    "onnxruntime-optimized", "ONNX Runtime with ORT_ENABLE_ALL: QDQ groups fused into QLinear operators",
    onnx=OnnxProfile(fuses_qdq=True), interpreter="onnxruntime-optimized")
ONNX_REFERENCE = EngineProfile(
    "onnx-reference", "onnx.reference.ReferenceEvaluator (numpy; float64 requantization, zero point before "
                      "rounding)",
    _mac(*(RequantRule(RequantKind.FLOAT64),) * 4), frozenset({ModelFormat.ONNX}), "onnx-reference",
    onnx=OnnxProfile(OnnxKernels.ONNX_REFERENCE, contrib_ops=False))

# --------------------------------------------------------------------------------------------
# kernel-level engines (the MAC kernels' requant=)
# --------------------------------------------------------------------------------------------
FBGEMM = EngineProfile("fbgemm", "PyTorch's FBGEMM quantized linear / conv (ReQuantizeOutput)",
                       _mac(*(RequantRule(RequantKind.FBGEMM),) * 4))
ONEDNN = EngineProfile("onednn", "PyTorch's oneDNN quantized conv (the 'x86' engine)",
                       _mac(*(RequantRule(RequantKind.ONEDNN),) * 4))

ENGINES = MappingProxyType({p.name: p for p in (TFLM, LITERT, XNNPACK, LITERT_OPTIMIZED, TFLM_CMSIS_NN, TFLM_CMSIS_NN_FIXED, TFLM_CMSIS_NN_M55, ONNXRUNTIME, ONNXRUNTIME_VNNI,
                                                  ONNXRUNTIME_OPTIMIZED, ONNX_REFERENCE, FBGEMM, ONEDNN)})
"""Every engine dspsim names, by name."""

#: Old engine names and the names that replaced them (a refusal's hint).
RENAMED = MappingProxyType({"tflite": "tflm"})


def named(name: str, func: str, choices=None) -> EngineProfile:
    """The engine named ``name``; a ValueError naming ``func`` and ``choices`` (default every name) otherwise."""
    if name in ENGINES:
        return ENGINES[name]
    hint = f" (engine {name!r} is now {RENAMED[name]!r})" if name in RENAMED else ""
    raise ValueError(f"{func}: engine must be one of {list(choices or ENGINES)} or a device's .toml file, got "
                     f"{name!r}{hint}")
