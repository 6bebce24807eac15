"""What every TFLite builtin's Prepare shares: the model context, refusals, and the parameter helpers.

A builtin module in :mod:`dspsim.tflite.builtins` registers one prepare function per operator
with :func:`builtin`. ``prepare(op, g)`` does what the engine's Prepare does (checks, integer
parameters from the float32 scales) and returns a :class:`Prepared`: the op's ``run(inputs) ->
output`` (``inputs`` are the arrays of the operator's inputs, None for an absent optional input)
and its integer parameters. Every refusal is a ValueError naming the operator
(``load_model: operator k (NAME): ...``); a kernel error at run time names it too
(``Model.run: operator k (NAME): ...``).

The engine is data: ``g.profile`` (:class:`~dspsim.engines.EngineProfile`), its TFLite rules ``g.tflite`` and
its MAC families' ``g.mac(family)``. A builtin reads their fields (which kernel the engine runs for the op,
the requantization rule, the types it takes) and never names an engine; :func:`check_registered` (what the
engine refuses) runs for every operator before its Prepare.
Sources: google-ai-edge/LiteRT ``tflite/kernels/*.cc`` and ``internal/reference/``, tensorflow/tflite-micro
``tensorflow/lite/micro/kernels/``; docs/semantics.md §2-3.
"""
from __future__ import annotations

import math
import warnings

import numpy as np

from ..engines import ApproximationWarning, EngineDefectWarning, Kernel
from ..graph.executor import Prepared  # noqa: F401  (what every builtin's Prepare returns)
from ..graph.state import State
from ..fixedpoint import quantize_multiplier
from ..kernels.activation import tflite_activation_range
from ..requant import Requant


_BIAS_TYPES = {np.dtype(np.int8): np.dtype(np.int32), np.dtype(np.uint8): np.dtype(np.int32),
               np.dtype(np.int16): np.dtype(np.int64)}


class Graph:
    """What an op's Prepare may read: the decoded model and the subgraph being prepared, the engine's
    :class:`~dspsim.engines.EngineProfile` (``profile``; its TFLite rules as ``tflite``), the model's
    :class:`State`, and ``call(subgraph_index)``, which runs another subgraph (CALL_ONCE)."""

    def __init__(self, mdef, profile, subgraph=None, state=None, call=None):
        self.mdef = mdef
        self.subgraph = mdef.main if subgraph is None else subgraph
        self.profile = profile
        self.tflite = profile.tflite
        self.state = State() if state is None else state
        self.call = call

    def tensor(self, i):
        tensors = self.subgraph.tensors
        if not 0 <= i < len(tensors):
            raise ValueError(f"load_model: tensor index {i} does not exist")
        return tensors[i]

    def kernel(self, op) -> Kernel:
        """The kernel the engine runs for ``op`` (:class:`~dspsim.engines.Kernel`)."""
        return self.tflite.kernel(op.name)

    def mac(self, family: str):
        """The engine's :class:`~dspsim.engines.MacRule` of MAC ``family``."""
        return self.profile.mac.family(family)


BUILTINS: dict = {}


def builtin(*names):
    """Register the decorated ``prepare(op, g) -> Prepared`` for the builtin operators ``names``."""

    def deco(fn):
        for n in names:
            if n in BUILTINS:
                raise ValueError(f"builtin: {n} is registered twice")
            BUILTINS[n] = fn
        return fn

    return deco


def requant_params(quant: dict) -> dict:
    """A MAC op's keywords as operator parameters: the prepared :class:`dspsim.Requant` unfolded into its
    scheme, its tie rule (a :class:`~dspsim.fixedpoint.Rounding`) and its multipliers/shifts (or float scales),
    one value or one per output channel."""
    return {**{k: v for k, v in quant.items() if k != "requant"}, **quant["requant"].params()}


def refuse(op, msg):
    raise ValueError(f"load_model: operator {op.index} ({op.name}): {msg}")


def approximate(op, g, how: str) -> dict:
    """An operator whose engine kernel dspsim does not reproduce (``how``: which kernel, and by how much it differs
    from what dspsim runs, measured). Under a profile with ``TfliteProfile.approximate_float`` it runs with
    TFLite's reference arithmetic: an :class:`~dspsim.engines.ApproximationWarning` names it at load, and the
    returned entry goes into the operator's params (``Model.approximations`` lists them); otherwise it is refused,
    saying how to run it anyway."""
    if not g.tflite.approximate_float:
        refuse(op, f"dspsim does not support float32 {op.name} under engine {g.profile.name!r}: {how}; "
                   "load_model(..., approximate_float=True) (dspsim run --approximate-float) runs it with TFLite's "
                   "reference arithmetic, with a warning")
    warnings.warn(f"load_model: operator {op.index} ({op.name}) is approximated under engine {g.profile.name!r}: "
                  f"{how}", ApproximationWarning, stacklevel=3)
    return {"approximate": how}


def per_tensor_quant(op, t, what):
    """(float32 scale, int zero point) of a per-tensor quantized tensor."""
    if t.scale.size == 0:
        refuse(op, f"{what} tensor {t.index} ({t.name!r}) is not quantized")
    if t.scale.size > 1:
        refuse(op, f"{what} tensor {t.index} ({t.name!r}) is quantized per channel; per-tensor expected")
    zp = int(t.zero_point[0]) if t.zero_point.size else 0
    s = np.float32(t.scale[0])
    if not (np.isfinite(s) and s > 0):
        refuse(op, f"{what} tensor {t.index} ({t.name!r}) has scale {s}; it must be finite and positive")
    return s, zp


def check_dtype(op, t, allowed, what, g=None):
    """``t``'s dtype when it is one of ``allowed``, else a refusal; ``g``: the types are the engine's (named)."""
    if t.dtype not in allowed:
        whose = f" by engine {g.profile.name!r}" if g is not None else ""
        refuse(op, f"{what} tensor {t.index} ({t.name!r}) has type {t.type_name}; supported{whose}: "
                   f"{', '.join(np.dtype(d).name for d in allowed)}")
    return t.dtype


def check_last_axis(op, t):
    """Refuse an input of rank 0: the op normalizes over its last axis (LiteRT's SoftmaxPrepare requires
    ``NumDimensions(input) >= 1``; the LOG_SOFTMAX and L2_NORMALIZATION kernels index dimension ``rank - 1``,
    undefined at rank 0)."""
    if len(t.shape) == 0:
        refuse(op, "a rank-0 input has no last axis to normalize over (SoftmaxPrepare: NumDimensions(input) >= 1)")


def check_arity(op, n_in, n_out=1):
    ok_in = op.inputs and len(op.inputs) in (n_in if isinstance(n_in, tuple) else (n_in,))
    if not ok_in or len(op.outputs) != n_out:
        refuse(op, f"expects {n_in} input(s) and {n_out} output(s), has {len(op.inputs)} and {len(op.outputs)}")
    for k, i in enumerate(op.inputs):
        if i < 0 and k == 0:
            refuse(op, "its data input is absent (tensor index -1)")


def constant(op, g, k, what):
    """The constant data of input ``k`` (None when the optional input is absent); refused if not constant."""
    i = op.inputs[k] if k < len(op.inputs) else -1
    if i < 0:
        return None
    t = g.tensor(i)
    if t.data is None:
        refuse(op, f"{what} (tensor {i}, {t.name!r}) must be a constant")
    return t.data


_ACTIVATIONS = {0: None, 1: "relu", 2: "relu_n1_to_1", 3: "relu6"}


def activation_range(op, code, t_out, kind=None):
    """(act_min, act_max) of a fused activation ``code`` (CalculateActivationRangeQuantized), or of
    the standalone ReLU op ``kind``: :func:`dspsim.kernels.activation.tflite_activation_range`, its refusals
    naming the operator."""
    if code not in _ACTIVATIONS:
        refuse(op, f"fused activation {code} (TANH/SIGN_BIT) is not supported on quantized tensors")
    name = _ACTIVATIONS[code] if kind is None else kind
    if name is None:
        info = np.iinfo(t_out.dtype)
        return int(info.min), int(info.max)
    s, zp = per_tensor_quant(op, t_out, "output")
    return at_prepare(op, tflite_activation_range, name, float(s), zp, t_out.dtype.name, fused=kind is None)


def fixed_point_multiplier(op, real, rounding="double"):
    """``QuantizeMultiplier(real)``, refused where LiteRT's Prepare fails or the kernel would overflow."""
    if not math.isfinite(float(real)) or float(real) <= 0:
        refuse(op, f"the effective scale {float(real)} is not a finite positive number")
    m, s = quantize_multiplier(float(real), rounding)
    if s > 30:
        refuse(op, f"the effective scale {real} needs a left shift of {s} > 30 (1 << {s} overflows int32)")
    return m, s


def weight_scales(op, t_w, axis):
    """float32 scalar (per-tensor) or array (per-channel along ``axis``) and the weight zero point."""
    if t_w.scale.size == 0:
        refuse(op, f"weights tensor {t_w.index} is not quantized")
    if not (np.all(np.isfinite(t_w.scale)) and np.all(t_w.scale > 0)):
        refuse(op, f"weights tensor {t_w.index} has scales that are not finite and positive")
    if t_w.scale.size == 1:
        return np.float32(t_w.scale[0]), int(t_w.zero_point[0]) if t_w.zero_point.size else 0
    if not 0 <= axis < len(t_w.shape) or t_w.quantized_dimension != axis or t_w.scale.size != t_w.shape[axis]:
        refuse(op, f"per-channel weights must have one scale per index of dimension {axis}, got "
                   f"{t_w.scale.size} along {t_w.quantized_dimension}")
    return t_w.scale.astype(np.float32), 0  # per-channel kernels ignore the filter zero point


def padding_name(op, code):
    if code not in (0, 1):
        refuse(op, f"padding {code} is not SAME (0) or VALID (1)")
    return "SAME" if code == 0 else "VALID"


def check_same_shape(op, g):
    """An elementwise op's output tensor must have its input's shape (LiteRT resizes the output to it)."""
    t_in, t_out = g.tensor(op.inputs[0]), g.tensor(op.outputs[0])
    if tuple(t_in.shape) != tuple(t_out.shape):
        refuse(op, f"output tensor {t_out.index} has shape {tuple(t_out.shape)}, its input {t_in.index} has "
                   f"{tuple(t_in.shape)}; an elementwise op keeps the shape")


def check_int_types(op, g, what_in=("input",), allowed=(np.dtype(np.int8),)):
    """The data inputs ``what_in`` and the output have one of the ``allowed`` integer types; uint8 only where
    the engine's kernels take it (``TfliteProfile.takes_uint8``: TFLite Micro's take no uint8 outside QUANTIZE
    and DEQUANTIZE)."""
    if not g.tflite.takes_uint8 and np.dtype(np.uint8) in allowed:
        for t in [g.tensor(op.inputs[k]) for k in range(len(what_in))] + [g.tensor(op.outputs[0])]:
            if t.dtype == np.uint8:
                refuse(op, f"tensor {t.index} ({t.name!r}) is uint8, which engine {g.profile.name!r}'s {op.name} "
                           "kernel does not take")
    for k, what in enumerate(what_in):
        check_dtype(op, g.tensor(op.inputs[k]), allowed, what)
    check_dtype(op, g.tensor(op.outputs[0]), allowed, "output")


def at_prepare(op, fn, *args, **kw):
    """Call a parameter helper at Prepare time; its ValueError becomes a refusal naming the operator."""
    try:
        return fn(*args, **kw)
    except (ValueError, TypeError) as e:
        refuse(op, str(e))


def at_run(op, fn, *args, **kw):
    """Run a kernel at Eval time; an argument error names the operator (``Model.run: operator k (OP)``)."""
    try:
        return fn(*args, **kw)
    except (ValueError, TypeError) as e:
        raise ValueError(f"Model.run: operator {op.index} ({op.name}): {e}") from None
    except MemoryError as e:  # tensor shapes beyond this machine (LiteRT's AllocateTensors would fail)
        raise ValueError(f"Model.run: operator {op.index} ({op.name}): its tensors need more memory than is "
                         f"available ({e})") from None


def check_shape(op, out, t_out):
    """``out`` if it has the output tensor's declared shape, else a ValueError naming the operator."""
    if np.shape(out) != tuple(t_out.shape):
        raise ValueError(f"Model.run: operator {op.index} ({op.name}) computes shape {np.shape(out)} but the model "
                         f"declares {tuple(t_out.shape)}")
    return out


def engine_types(op, g, allowed, role=""):
    """The types the engine's kernel of ``op`` takes for tensor ``role`` (``TfliteProfile.types``, key ``"OP"`` or
    ``"OP.role"``), where they are narrower than ``allowed`` (LiteRT's); numpy dtypes."""
    names = g.tflite.types.get(f"{op.name}.{role}" if role else op.name)
    return allowed if names is None else tuple(np.dtype(n) for n in names)


def check_rank(op, g, t):
    """The engine's Prepare of ``op`` takes inputs of rank at most ``TfliteProfile.max_ranks[op]``."""
    limit = g.tflite.max_ranks.get(op.name)
    if limit is not None and len(t.shape) > limit:
        refuse(op, f"input rank {len(t.shape)} exceeds {limit}: the {op.name} kernel of engine {g.profile.name!r} "
                   "refuses it")


def check_registered(op, g):
    """Refuse an operator the engine has no kernel for (``TfliteProfile.refused``) or whose version its op
    resolver does not register (``TfliteProfile.max_versions``)."""
    why = g.tflite.refused.get(op.name)
    if why is not None:
        refuse(op, f"{why} (engine {g.profile.name!r})")
    top = g.tflite.max_versions.get(op.name)
    if top is not None and op.version > top:
        refuse(op, f"version {op.version}: the op resolver of engine {g.profile.name!r} registers {op.name} versions "
                   f"1 to {top} only, so the engine refuses the model")


def check_int4_weights(op, g):
    """Refuse packed INT4 constants where the engine's kernel does not unpack them (``TfliteProfile.int4_weights``):
    only the weights of a MAC operator, with the activation types and quantization the engine takes."""
    for k, i in enumerate(op.inputs):
        if i < 0 or g.tensor(i).type_name != "INT4":
            continue
        takes = g.tflite.int4_weights.get(op.name, ())
        if k != 1 or not takes:
            refuse(op, f"input {k} (tensor {i}) holds INT4 codes; engine {g.profile.name!r} takes INT4 only as the "
                       f"weights of {sorted(g.tflite.int4_weights)}")
        act = g.tensor(op.inputs[0]).dtype
        act = act.name if act is not None else "?"
        per_channel = g.tensor(i).scale.size > 1
        if act not in takes and (per_channel or f"{act}/per-tensor" not in takes):
            refuse(op, f"INT4 weights {'per channel ' if per_channel else ''}with {act} activations: engine "
                       f"{g.profile.name!r} takes them with {', '.join(takes)} only")


def defect(op, g, which, message):
    """Whether the engine has defect ``which`` (:class:`~dspsim.engines.Defect`); if so, warn at load with
    ``message`` (an :class:`~dspsim.engines.EngineDefectWarning`) and return True: the caller reproduces it."""
    if which not in g.profile.defects:
        return False
    warnings.warn(f"load_model: operator {op.index} ({op.name}): {message}; engine {g.profile.name!r} reproduces "
                  "this", EngineDefectWarning, stacklevel=3)
    return True


def mac_requant(op, g, family, t_in, s_in, s_w, s_out, grouped=False):
    """The :class:`dspsim.Requant` of a layer of MAC ``family``, derived as the engine's Prepare does
    (:func:`mac_rule`, with packed INT4 weights where ``op``'s weights are); a failure is a refusal naming the
    operator."""
    rule = mac_rule(g, family, t_in, grouped, int4=has_int4_weights(op, g))
    return at_prepare(op, Requant.from_rule, rule, s_in, s_w, s_out)


def has_int4_weights(op, g):
    """Whether ``op``'s weights (input 1) are a packed INT4 constant."""
    return len(op.inputs) > 1 and op.inputs[1] >= 0 and g.tensor(op.inputs[1]).type_name == "INT4"


def mac_rule(g, family, t_in, grouped=False, int4=False):
    """The engine's :class:`~dspsim.engines.RequantRule` of a ``family`` layer with input ``t_in``
    (``MacRule.rule_for``): 16x8 for int16 inputs, the INT4-weight layers' or the grouped convolutions' where the
    engine has one, uint8 for uint8 inputs, else the 8-bit rule."""
    return g.mac(family).rule_for(t_in.dtype.name, grouped, int4)


def narrow_16x8_bias(op, g, bias, t_in) -> bool:
    """Whether ``op`` is a 16x8 layer whose bias is the narrower type its engine takes
    (``TfliteProfile.narrow_16x8_bias``): an int32 bias means an int32 accumulator and the 32-bit requantization."""
    return bias is not None and t_in.dtype == np.int16 and bias.dtype.name == g.tflite.narrow_16x8_bias.get(op.name)


def mac_bias(op, g, family, bias, t_in):
    """A MAC layer's constant bias as the engine holds it: the type TFLite requires for the input type (int32;
    int64 for 16x8, or the narrower type the engine's 16x8 kernel takes, widened to int64), then, for 8-bit
    inputs, saturated to the family's ``bias_bits``."""
    if bias is None:
        return None
    want = _BIAS_TYPES.get(np.dtype(t_in.dtype))
    if narrow_16x8_bias(op, g, bias, t_in):
        return bias.astype(np.int64)
    if bias.dtype != want and t_in.dtype == np.int16 and bias.dtype in (np.int16, np.int32):
        refuse(op, f"bias must be int64, got {bias.dtype}: engine {g.profile.name!r}'s 16x8 {op.name} does not take a "
                   f"{bias.dtype} bias (LiteRT's kernels read an int32 one as int64, out of bounds: undefined; "
                   "TfliteProfile.narrow_16x8_bias)")
    if bias.dtype != want:
        refuse(op, f"bias must be {want.name}, got {bias.dtype}")
    bits = g.mac(family).bias_bits
    if t_in.dtype == np.int16 or bits >= 32:
        return bias
    lim = (1 << (bits - 1)) - 1
    return np.clip(bias, -lim - 1, lim).astype(bias.dtype)


def xnnpack_delegates(ratios, lo, hi, hi_open=True):
    """Whether LiteRT's XNNPACK delegate takes a node whose scale ratios are ``ratios`` (else the node
    runs on a builtin kernel, modelled by the reference)."""
    return all(lo <= r < hi if hi_open else lo <= r <= hi for r in ratios)
