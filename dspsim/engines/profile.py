"""What an engine is, as data: one frozen :class:`EngineProfile` per engine.

An engine (LiteRT's reference kernels, TensorFlow Lite Micro, XNNPACK, ONNX Runtime, a bring-up team's own
DSP) is a set of arithmetic choices per operator family. A profile declares them and nothing else; the
front ends' operators (:mod:`dspsim.tflite.builtins`, :mod:`dspsim.onnx`) and the kernels' ``requant=``
read its fields, and no operator compares engine names.

=============================  =======================================================================
:class:`MacProfile`            per MAC family (FULLY_CONNECTED, CONV_2D, DEPTHWISE_CONV_2D, TRANSPOSE_CONV):
                               the requantization (:class:`RequantRule`) of 8-bit and 16x8 layers, the
                               accumulator register, the bias width
:class:`TfliteProfile`         which kernel the engine runs for each TFLite operator where it is not
                               TFLite's reference kernel (:class:`Kernel`), what it refuses, the types,
                               ranks and versions its kernels take, the build's rounding
:class:`OnnxProfile`           ONNX Runtime or the ONNX reference evaluator, QDQ fusion, contrib ops
:class:`Defect`                engine defects dspsim reproduces (each warns with :class:`EngineDefectWarning`)
=============================  =======================================================================

This module is data: it imports only :mod:`dspsim.fixedpoint` (tie rules) and :mod:`dspsim.accumulator`.
"""
from __future__ import annotations

from dataclasses import dataclass, field, fields, replace
from enum import Enum
from types import MappingProxyType

from ..accumulator import Accumulator
from ..fixedpoint import Rounding

__all__ = ["Defect", "EngineDefectWarning", "EngineProfile", "Kernel", "MacProfile", "MacRule", "ModelFormat",
           "OnnxProfile", "RealMultiplier", "RequantInput", "RequantKind", "RequantRule", "TfliteProfile",
           "MAC_FAMILIES"]


class EngineDefectWarning(UserWarning):
    """The chosen engine has a known defect that dspsim reproduces (docs/engines.md)."""


class ApproximationWarning(UserWarning):
    """An operator runs with arithmetic that is not the engine's own (``TfliteProfile.approximate_float``): its
    outputs, and what follows them, may differ from the engine's by the bound the message states."""


class ModelFormat(str, Enum):
    """The model files an engine runs."""

    TFLITE = "tflite"
    """``.tflite`` flatbuffers (:func:`dspsim.tflite.load_model`)."""
    ONNX = "onnx"
    """ONNX protobufs (:func:`dspsim.onnx.load_model`)."""


class RequantKind(str, Enum):
    """The arithmetic that turns a MAC family's accumulators into output codes (:class:`dspsim.Requant`)."""

    FIXED_POINT = "fixed_point"
    """``QuantizeMultiplier`` at Prepare, ``MultiplyByQuantizedMultiplier`` per output: an integer
    multiplier of :attr:`RequantRule.multiplier_bits` bits and a rounding shift (TFLite, TFLM, CMSIS-NN,
    a DSP)."""
    DOUBLE_SCALE = "double_scale"
    """``std::round(double(acc) * double(real))`` (ties away from zero), an x86 truncating cast: LiteRT's
    reference FULLY_CONNECTED."""
    FLOAT32 = "float32"
    """``f32(acc) * f32(f32(s_in * s_w) / s_out)`` rounded by :attr:`RequantRule.float_rounding`, ``+ zp``
    after rounding (XNNPACK, ONNX Runtime's MLAS)."""
    FLOAT64 = "float64"
    """``rint(float64(acc) * scale + zp)``: the zero point before rounding (the ONNX reference evaluator)."""
    FBGEMM = "fbgemm"
    """PyTorch's FBGEMM ``ReQuantizeOutput`` (float32, float bias modes, ``cvtps2dq``)."""
    ONEDNN = "onednn"
    """PyTorch's oneDNN conv: dequantize, bias, ``1 / s_out``, zero point before rounding."""
    SHIFT = "shift"
    """Power-of-two scales: ``acc * 2^shift`` rounded by :attr:`RequantRule.shift_rounding` (a DSP's
    shift-only requantization; refused where the scales are not powers of two)."""


class RealMultiplier(str, Enum):
    """How a fixed-point Prepare forms the real multiplier from the float32 scales."""

    DOUBLE = "double"
    """``double(s_in) * double(s_w) / double(s_out)`` (TFLite's conv, depthwise, per-channel FC)."""
    FLOAT32_PRODUCT = "float32_product"
    """``double(f32(s_in * s_w)) / double(s_out)`` (TFLite's per-tensor FC, ``GetQuantizedConvolutionMultipler``)."""


class RequantInput(str, Enum):
    """What a fixed-point requantization multiplies: where the accumulator saturates before it."""

    INT32 = "int32"
    """The accumulator saturated to int32 first (TFLite's kernels take an ``int32_t``)."""
    ACCUMULATOR = "accumulator"
    """The accumulator as it is, however wide (a DSP whose multiplier reads the whole register)."""


_ROUNDINGS = ("double", "single", "int64")


@dataclass(frozen=True)
class RequantRule:
    """How an engine requantizes one MAC family, and how its Prepare derives the parameters.

    Attributes
    ----------
    kind : RequantKind
    rounding : "double" | "single" | "int64"
        :attr:`RequantKind.FIXED_POINT`: ``"double"`` SRDHM (the high half rounded, ties toward +inf) then
        the rounding shift; ``"single"`` one rounding shift of the full product (``TFLITE_SINGLE_ROUNDING``);
        ``"int64"`` TFLite's 16x8 overload (the int64 accumulator, the multiplier reduced to 16 bits, one
        rounding, ties toward +inf, the result truncated to int32).
    shift_rounding : Rounding or None
        The tie rule of the final shift (:attr:`RequantKind.FIXED_POINT`, :attr:`RequantKind.SHIFT`); None is
        the rounding's own: half away from zero after SRDHM (gemmlowp's ``RoundingDivideByPOT``), half up
        for single rounding.
    multiplier_bits : int
        The fixed-point multiplier's width: 31 (a Q31 ``int32``), 15 (``int16``), 7 (``int8``); narrower
        ones are the Q31 multiplier rounded to their top bits (as TFLite's 16x8 reduces it to 16 bits), the
        last value saturating at ``2^bits - 1``.
    requant_input : RequantInput
        Whether the accumulator saturates to int32 before the multiply.
    per_tensor_real : RealMultiplier
        The real multiplier of a layer with per-tensor weights (per-channel weights always use
        :attr:`RealMultiplier.DOUBLE`).
    float_rounding : Rounding
        :attr:`RequantKind.FLOAT32`: the tie rule of the float-to-int conversion.
    vector_channels : int
        0: every output channel is requantized alike. Otherwise the engine's vector code takes the channels in
        blocks of this many (with :attr:`tie`) and a scalar loop the last ``C % vector_channels``, whose final
        shift keeps the rounding's own tie rule (LiteRT's optimized DEPTHWISE_CONV_2D: 8, ``optimized_ops::Quantize``).
    """

    kind: RequantKind
    rounding: str = "double"
    shift_rounding: Rounding | None = None
    multiplier_bits: int = 31
    requant_input: RequantInput = RequantInput.INT32
    per_tensor_real: RealMultiplier = RealMultiplier.DOUBLE
    float_rounding: Rounding = Rounding.HALF_TO_EVEN
    vector_channels: int = 0

    def __post_init__(self):
        if not isinstance(self.kind, RequantKind):
            raise TypeError(f"RequantRule: kind must be a RequantKind, got {self.kind!r}")
        if self.rounding not in _ROUNDINGS:
            raise ValueError(f"RequantRule: rounding must be one of {_ROUNDINGS}, got {self.rounding!r}")
        if isinstance(self.multiplier_bits, bool) or self.multiplier_bits not in range(2, 32):
            raise ValueError(f"RequantRule: multiplier_bits must be an int in [2, 31], got {self.multiplier_bits!r}")
        if isinstance(self.vector_channels, bool) or self.vector_channels not in range(0, 65):
            raise ValueError(f"RequantRule: vector_channels must be an int in [0, 64], got {self.vector_channels!r}")

    @property
    def scalar_rule(self) -> "RequantRule":
        """The rule of the channels past the vector blocks: the rounding's own tie rule."""
        return replace(self, shift_rounding=None, vector_channels=0)

    @property
    def tie(self) -> Rounding:
        """The tie rule of the final shift, the rounding's own where :attr:`shift_rounding` is None."""
        if self.shift_rounding is not None:
            return self.shift_rounding
        if self.kind is RequantKind.FIXED_POINT and self.rounding != "double":
            return Rounding.HALF_UP
        return Rounding.HALF_AWAY_FROM_ZERO


MAC_FAMILIES = ("fully_connected", "conv_2d", "depthwise_conv_2d", "transpose_conv")
"""The MAC families a profile (and a device's TOML file) configures one by one."""


@dataclass(frozen=True)
class MacRule:
    """One MAC family's datapath: requantization, accumulator register, bias width.

    Attributes
    ----------
    requant : RequantRule
        Layers with 8-bit activations.
    requant_16x8 : RequantRule
        Layers with int16 activations (int64 accumulator and bias).
    accumulator : Accumulator or None
        The register the products are summed in; None: the exact int32 (int64 for 16x8) of every engine
        dspsim names. Accumulators are simulated MAC by MAC in TFLite's loop order.
    bias_bits : int
        The bias register's width: an int32 bias is saturated to it at Prepare (8-bit activations).
    requant_uint8 : RequantRule or None
        Layers with uint8 activations and weights (legacy asymmetric, per-tensor), where the engine's uint8
        kernel rounds otherwise than its int8 one (LiteRT's optimized uint8 DEPTHWISE_CONV_2D); None:
        :attr:`requant` with the real multiplier of TFLite's uint8 Prepare (:attr:`uint8_requant`).
    requant_grouped : RequantRule or None
        8-bit grouped convolutions (CONV_2D whose filter has fewer input channels than the input), where the engine
        runs another kernel for them: LiteRT's optimized CONV_2D falls back to the reference kernel (``conv.cc``:
        "Grouped convolution is right now only supported on reference kernel"); None: :attr:`requant`. uint8
        layers take it with the uint8 real multiplier.
    requant_int4 : RequantRule or None
        8-bit layers with packed INT4 weights, where the engine runs another kernel for them: XNNPACK's delegate
        leaves INT4 CONV_2D and DEPTHWISE_CONV_2D to LiteRT's optimized kernels (measured); None: :attr:`requant`.
    requant_16x8_int32 : RequantRule or None
        16x8 layers with an int32 bias (``TfliteProfile.narrow_16x8_bias``: an int32 accumulator), where the engine
        runs another kernel for them: XNNPACK's delegate leaves a 16x8 FULLY_CONNECTED to LiteRT's optimized kernel
        (measured); None: :attr:`requant`, the 8-bit layers' rule (TFLM's and LiteRT's int32 paths).
    """

    requant: RequantRule
    requant_16x8: RequantRule
    accumulator: Accumulator | None = None
    bias_bits: int = 32
    requant_uint8: RequantRule | None = None
    requant_grouped: RequantRule | None = None
    requant_int4: RequantRule | None = None
    requant_16x8_int32: RequantRule | None = None

    @property
    def int32_bias_16x8_requant(self) -> RequantRule:
        """The rule of a 16x8 layer with an int32 bias: :attr:`requant_16x8_int32`, else :attr:`requant`."""
        return self.requant_16x8_int32 or self.requant

    @property
    def uint8_requant(self) -> RequantRule:
        """The rule of uint8 layers: :attr:`requant_uint8`, else :attr:`requant` with the per-tensor real multiplier
        ``double(f32(s_in * s_w)) / s_out`` (``PopulateConvolutionQuantizationParams`` takes it from
        ``GetQuantizedConvolutionMultipler`` for uint8 inputs, whatever the family)."""
        if self.requant_uint8 is not None:
            return self.requant_uint8
        return replace(self.requant, per_tensor_real=RealMultiplier.FLOAT32_PRODUCT)

    def rule_for(self, dtype, grouped: bool = False, int4: bool = False) -> RequantRule:
        """The rule of a layer with activations of ``dtype`` (int8, uint8 or int16), a grouped convolution or not,
        with packed INT4 weights or not."""
        if str(dtype) == "int16":
            return self.requant_16x8
        if int4 and self.requant_int4 is not None:
            return self.requant_int4
        if grouped and self.requant_grouped is not None:
            if str(dtype) == "uint8":
                return replace(self.requant_grouped, per_tensor_real=RealMultiplier.FLOAT32_PRODUCT)
            return self.requant_grouped
        return self.uint8_requant if str(dtype) == "uint8" else self.requant

    def __post_init__(self):
        for name in ("requant_uint8", "requant_grouped", "requant_int4", "requant_16x8_int32"):
            value = getattr(self, name)
            if value is not None and not isinstance(value, RequantRule):
                raise TypeError(f"MacRule: {name} must be a RequantRule or None, got {type(value).__name__}")
        if self.accumulator is not None and not isinstance(self.accumulator, Accumulator):
            raise TypeError(f"MacRule: accumulator must be an Accumulator or None, got {type(self.accumulator).__name__}")
        if isinstance(self.bias_bits, bool) or self.bias_bits not in range(8, 33):
            raise ValueError(f"MacRule: bias_bits must be an int in [8, 32], got {self.bias_bits!r}")


@dataclass(frozen=True)
class MacProfile:
    """The MAC families' rules (:data:`MAC_FAMILIES`)."""

    fully_connected: MacRule
    conv_2d: MacRule
    depthwise_conv_2d: MacRule
    transpose_conv: MacRule

    def family(self, name: str) -> MacRule:
        """The rule of family ``name`` (one of :data:`MAC_FAMILIES`)."""
        if name not in MAC_FAMILIES:
            raise ValueError(f"MacProfile.family: family must be one of {MAC_FAMILIES}, got {name!r}")
        return getattr(self, name)

    def with_rules(self, **rules) -> "MacProfile":
        """A copy with some families' rules replaced."""
        return replace(self, **rules)


class Kernel(str, Enum):
    """Which implementation of an operator an engine runs, where it is not TFLite's reference kernel."""

    REFERENCE = "reference"
    """TFLite's reference kernel (LiteRT ``BUILTIN_REF``; TFLM where its kernel computes the same)."""
    TFLM = "tflm"
    """TensorFlow Lite Micro's own kernel and Prepare (``tensorflow/lite/micro/kernels``)."""
    LITERT_OPTIMIZED = "litert-optimized"
    """LiteRT's optimized builtin kernel (``optimized_ops``; on x86 the NEON code through NEON_2_SSE)."""
    XNNPACK = "xnnpack"
    """XNNPACK's kernel where LiteRT's delegate takes the node (``xnnpack_delegate.cc`` decides from the
    types and scales), LiteRT's builtin kernel otherwise."""


@dataclass(frozen=True)
class TfliteProfile:
    """How an engine runs TFLite operators.

    Attributes
    ----------
    kernels : mapping op name -> Kernel
        The kernel for each operator that does not run TFLite's reference kernel (absent: REFERENCE).
    refused : mapping op name -> str
        Operators the engine has no kernel for, and why (the refusal names it).
    max_versions : mapping op name -> int
        The highest version of each operator its op resolver registers (absent: every version).
    types : mapping str -> tuple of str
        The tensor types an operator's kernel takes, where narrower than LiteRT's: key ``"OP"`` for its
        data tensors, ``"OP.<role>"`` for another input (``"GATHER.positions"``).
    max_ranks : mapping op name -> int
        The largest input rank an operator's Prepare takes.
    takes_uint8 : bool
        Whether its kernels take uint8 activations (TFLM's take none outside DEQUANTIZE and QUANTIZE, and QUANTIZE
        only between int8 and uint8: ``quantize_common.cc``).
    checks_quantization : bool
        Whether the interpreter checks per-channel quantization parameters at load (LiteRT's
        ``SetTensorParametersReadOnly``; TFLM reads them unchecked).
    allocates_empty_tensors : bool
        Whether a tensor with no element can be allocated (TFLM's allocator fails on one).
    int32_requantize_pairs : frozenset of (str, str)
        The int -> int QUANTIZE pairs with an int32 end its Prepare takes.
    rounding : "double" | "single"
        The build's ``MultiplyByQuantizedMultiplier`` in the operators outside the MAC families (RELU,
        LEAKY_RELU, RESIZE_BILINEAR): the default build, or ``TFLITE_SINGLE_ROUNDING``.
    quotient : "double" | "float32"
        How a TFLM kernel's Prepare divides two float32 scales where TFLM's source writes ``float / float``
        (LEAKY_RELU, SUB): ``"double"``, the results of the tflite-micro wheel (0.dev20261023); ``"float32"``,
        the source built by GCC (TFLM 90b983c for x86-64 and Cortex-M), whose multipliers keep 24 bits.
    int4_weights : mapping op name -> tuple of str
        The activation types with which a MAC operator takes packed INT4 weights (unpacked to int8 at Prepare):
        ``"int8"`` with weights quantized per tensor or per channel, ``"int8/per-tensor"`` per tensor only. An
        operator or type absent is refused. Default: LiteRT's (every MAC operator but TRANSPOSE_CONV, int8 and
        int16).
    approximate_float : bool
        Run the float32 operators whose engine kernel dspsim does not reproduce (XNNPACK's f32 DIV, SQRT and MUL,
        LiteRT's optimized float LOG_SOFTMAX) with TFLite's reference IEEE arithmetic, each named in an
        :class:`ApproximationWarning` at load with the measured difference (``Model.approximations``); False
        (default): refuse them.
    narrow_16x8_bias : mapping op name -> bias type name
        The bias type narrower than int64 that a 16x8 MAC operator takes: ``"int32"`` (the layer then sums in an
        int32 accumulator, wrapping, and requantizes with the 32-bit ``MultiplyByQuantizedMultiplier``: TFLM's
        ``requires_int32_accum`` in conv.cc and fully_connected.cc), ``"int16"`` (sign-extended to int64 at
        Prepare: TFLM's transpose_conv.cc). Absent: int64 only. Default: none (LiteRT reads an int32 bias of a 16x8
        CONV_2D as int64, out of bounds, and its TRANSPOSE_CONV refuses an int16 one).
    """

    kernels: MappingProxyType = field(default_factory=lambda: MappingProxyType({}))
    refused: MappingProxyType = field(default_factory=lambda: MappingProxyType({}))
    max_versions: MappingProxyType = field(default_factory=lambda: MappingProxyType({}))
    types: MappingProxyType = field(default_factory=lambda: MappingProxyType({}))
    max_ranks: MappingProxyType = field(default_factory=lambda: MappingProxyType({}))
    takes_uint8: bool = True
    checks_quantization: bool = True
    allocates_empty_tensors: bool = True
    int32_requantize_pairs: frozenset = frozenset()
    rounding: str = "double"
    quotient: str = "double"
    int4_weights: MappingProxyType = field(default_factory=lambda: MappingProxyType(
        {op: ("int8", "int16") for op in ("FULLY_CONNECTED", "CONV_2D", "DEPTHWISE_CONV_2D")}))
    narrow_16x8_bias: MappingProxyType = field(default_factory=lambda: MappingProxyType({}))
    approximate_float: bool = False

    def __post_init__(self):
        for name in ("kernels", "refused", "max_versions", "types", "max_ranks", "int4_weights", "narrow_16x8_bias"):
            value = getattr(self, name)
            if not isinstance(value, MappingProxyType):
                object.__setattr__(self, name, MappingProxyType(dict(value)))
        if self.rounding not in ("double", "single"):
            raise ValueError(f"TfliteProfile: rounding must be 'double' or 'single', got {self.rounding!r}")
        if self.quotient not in ("double", "float32"):
            raise ValueError(f"TfliteProfile: quotient must be 'double' or 'float32', got {self.quotient!r}")

    def kernel(self, op: str) -> Kernel:
        """The kernel the engine runs for builtin ``op``."""
        return self.kernels.get(op, Kernel.REFERENCE)

    def __hash__(self):
        return hash((tuple(sorted(self.kernels.items())), tuple(sorted(self.refused.items())),
                     tuple(sorted(self.max_versions.items())), self.takes_uint8, self.checks_quantization,
                     self.allocates_empty_tensors, self.rounding, self.quotient,
                     tuple(sorted(self.int4_weights.items())), tuple(sorted(self.narrow_16x8_bias.items())),
                     self.approximate_float))


class OnnxKernels(str, Enum):
    """Whose ONNX operator implementations an engine runs."""

    ONNXRUNTIME = "onnxruntime"
    """ONNX Runtime's CPU execution provider (MLAS kernels and its float summation orders)."""
    ONNX_REFERENCE = "onnx-reference"
    """``onnx.reference.ReferenceEvaluator`` (numpy, float64 where its code uses it)."""


@dataclass(frozen=True)
class OnnxProfile:
    """How an engine runs ONNX models.

    Attributes
    ----------
    kernels : OnnxKernels
    fuses_qdq : bool
        ONNX Runtime's graph optimizations (``ORT_ENABLE_ALL``): QDQ groups fused into QLinear operators.
    contrib_ops : bool
        Whether it runs the ``com.microsoft`` QOperator contrib operators.
    """

    kernels: OnnxKernels = OnnxKernels.ONNXRUNTIME
    fuses_qdq: bool = False
    contrib_ops: bool = True


class Defect(str, Enum):
    """An engine defect that dspsim reproduces, with an :class:`EngineDefectWarning` at load."""

    LITERT_SUM_INT8_AS_UINT8 = "litert-sum-int8-as-uint8"
    """LiteRT 2.3's reference int8 SUM reads the codes as uint8 and clamps the result to [0, 255]
    (``reduce.cc`` passes ``GetTensorData<uint8_t>`` for int8 tensors)."""

    CMSIS_NN_LSTM_STATE_RESET = "cmsis-nn-lstm-state-reset"
    """TFLM's CMSIS-NN UNIDIRECTIONAL_SEQUENCE_LSTM starts every invocation from the reset state and never writes
    the hidden and cell state tensors: ``kernels/cmsis_nn/unidirectional_sequence_lstm.cc`` passes
    ``arm_lstm_unidirectional_s8`` a zero-initialised context (no hidden state, the cell state in scratch)."""

    CMSIS_NN_SVDF_INT8_STATE = "cmsis-nn-svdf-int8-state"
    """``arm_svdf_s8`` (an SVDF with an int8 state) ignores the state's zero point, storing the new activation
    ``q`` and reading the raw byte, and clamps ``q`` to the int16 range (the glue's ``input_activation``) before
    the store truncates it to int8 (it wraps)."""

    CMSIS_NN_SVDF_MVE_KERNEL_SUMS = "cmsis-nn-svdf-mve-kernel-sums"
    """On Helium (MVE), TFLM's cmsis_nn SVDF glue precomputes kernel sums with ``arm_vector_sum_s8(...,
    lhs_offset=-input_zp, rhs_offset=-state_zp)`` and the MVE ``arm_nn_vec_mat_mult_t_s8`` adds them: every
    int8-state feature accumulator gains ``input_zp * state_zp * input_size`` (the C and DSP paths do not)."""

    CMSIS_NN_TRANSPOSE_CONV_PAD_ROWS = "cmsis-nn-transpose-conv-pad-rows"
    """``arm_transpose_conv_s8`` of the CMSIS-NN commit TFLM 90b983c pins (4ab83cc) misplaces every output row
    after the top padding when ``pad_top % stride_h != 0`` and leaves the last one unwritten (CMSIS-NN issue #230,
    fixed by 4a8f5b5): :attr:`dspsim.kernels.mac.transpose_conv.RowFlush.CMSIS_NN_4AB83CC`."""


@dataclass(frozen=True)
class EngineProfile:
    """One engine as data.

    Attributes
    ----------
    name : str
        The engine's name in every API and CLI verb (``load_model(engine=...)``, ``requant=``, ``--engine``).
    summary : str
        One line for listings.
    formats : frozenset of ModelFormat
        The model files it runs (empty: a kernel-level engine, ``requant=`` only).
    interpreter : str or None
        The real interpreter that computes it, a :class:`dspsim.interpreters.Kind` value (``dspsim validate
        --against-interpreter``), or None.
    mac : MacProfile
    tflite : TfliteProfile or None
    onnx : OnnxProfile or None
    defects : frozenset of Defect
    base : str or None
        The engine it derives from (a device profile's ``engine``), None for a built-in engine.
    """

    name: str
    summary: str
    mac: MacProfile
    formats: frozenset = frozenset()
    interpreter: str | None = None
    tflite: TfliteProfile | None = None
    onnx: OnnxProfile | None = None
    defects: frozenset = frozenset()
    base: str | None = None

    def __post_init__(self):
        if not isinstance(self.name, str) or not self.name:
            raise ValueError("EngineProfile: name must be a non-empty string")
        if (ModelFormat.TFLITE in self.formats) != (self.tflite is not None):
            raise ValueError(f"EngineProfile {self.name!r}: a tflite profile goes with the tflite format")
        if (ModelFormat.ONNX in self.formats) != (self.onnx is not None):
            raise ValueError(f"EngineProfile {self.name!r}: an onnx profile goes with the onnx format")

    def runs(self, fmt: ModelFormat) -> bool:
        """Whether it runs models of format ``fmt``."""
        return fmt in self.formats

    def derive(self, name: str, summary: str | None = None, **changes) -> "EngineProfile":
        """A new profile: this one with ``changes`` (field values), named ``name``, based on this one."""
        known = {f.name for f in fields(self)}
        unknown = sorted(set(changes) - known)
        if unknown:
            raise ValueError(f"EngineProfile.derive: unknown fields {unknown}")
        return replace(self, name=name, summary=summary or f"{self.name}, changed: {', '.join(sorted(changes))}",
                       base=self.name, **changes)

    def __repr__(self):
        return f"<EngineProfile {self.name!r}: {self.summary}>"
