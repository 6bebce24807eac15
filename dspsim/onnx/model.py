"""A loaded ONNX model: its nodes prepared once by the engine's rules, run by the graph runtime."""
from __future__ import annotations

import functools

import numpy as np

from ..engines import ModelFormat, RequantKind
from ..engines import get as engine_profile
from ..graph.executor import Executor, Prepared, TensorInfo
from ..graph.ir import ModelDef as GraphDef
from ..graph.ir import OperatorDef, SubgraphDef, TensorDef
from ..graph.model import Model as GraphModel
from ..graph.state import State
from .ops import PREPARE, Context, check_constant_scales, check_input_count
from .proto import ModelDef
from .types import NATIVE, ElemType, QArray, ml_dtypes_type, type_name

# Opset range of the default domain (ai.onnx) dspsim's operator semantics are written for
# (10: the first quantization operators; 28: the newest the onnx 1.23 backend tests use).
OPSET_MIN, OPSET_MAX = 10, 28
_FUNC = "dspsim.onnx.load_model"
_NO_QUANT = np.zeros(0, np.float32)


def _elem_type(v):
    try:
        return ElemType(v.elem_type)
    except ValueError:
        raise ValueError(f"{_FUNC}: tensor {v.name!r} has unknown element type {v.elem_type}") from None


def _tensor(index, name, elem_type, shape, data=None):
    """A graph tensor of an ONNX value: its numpy dtype where the type has one (None for 4-bit and float8
    codes, held as :class:`QArray`), its declared shape (None where unknown)."""
    return TensorDef(index, name, None if shape is None else tuple(shape), NATIVE.get(elem_type),
                     "UNKNOWN" if elem_type is None else elem_type.name, data, _NO_QUANT, np.zeros(0, np.int64), 0)


def _unprovided(n, name) -> ValueError:
    return ValueError(f"{_FUNC}: {n.label} reads {name!r}, which no node, graph input or initializer provides "
                      "(an initializer that is missing)")


def _fits_or_refused(n, run):
    """``run`` of node ``n``, what its checks let through raised as a ValueError naming the node: an IndexError or
    KeyError (a 0-d or empty tensor where the op indexes one, an input list the op does not expect), a
    ZeroDivisionError (a stride of 0), an OverflowError (a Resize scale of 3e38), a MemoryError (declared sizes
    beyond this machine)."""
    @functools.wraps(run)  # keeps run.stages / run.params
    def checked(*args):
        try:
            return run(*args)
        except (IndexError, KeyError, ZeroDivisionError, OverflowError) as exc:
            raise ValueError(f"{n.label}: its inputs or attributes do not fit the op ({type(exc).__name__}: "
                             f"{exc})") from None
        except MemoryError as exc:
            raise ValueError(f"{n.label}: its tensors need more memory than is available ({exc})") from None
    return checked


def _check_8bit_constants(n, constants) -> None:
    """Refuse an integer MAC or QLinear node reading a constant of a type numpy lacks (int4, float8: a
    :class:`QArray`): those nodes take 8-bit codes and zero points only."""
    if not (n.op_type.startswith("QLinear") or n.op_type in ("ConvInteger", "MatMulInteger", "QGemm")):
        return
    for name in n.inputs:
        if isinstance(constants.get(name), QArray):
            raise ValueError(f"{_FUNC}: {n.label} reads {name!r} of type {type_name(constants[name].type)}; it takes "
                             "8-bit codes and zero points")


def _check_order(nodes, provided) -> None:
    """Refuse a node that reads a tensor no earlier node, graph input or initializer provides: ONNX keeps the nodes
    in topological order, so a node that reads its own output (a cycle) is refused here too."""
    provided = set(provided)
    for n in nodes:
        for name in n.inputs:
            if name and name not in provided:
                raise _unprovided(n, name)
        provided.update(n.outputs)


class Model(GraphModel):
    """A quantized ONNX model run with dspsim's bit-exact kernels (:func:`dspsim.onnx.load_model`).

    Its tensors are numbered as the graph runtime numbers them: the graph inputs, the initializers, then each
    node's outputs in order (``tensor_info(i).name`` is the ONNX name). Besides :class:`dspsim.graph.model.Model`'s
    interface: ``run`` and ``trace`` also take a dict of inputs by name, and a :class:`QArray` or an ``ml_dtypes``
    array (``ml_dtypes.int4``, ``float8_e4m3fn``, ...) for a 2-bit, 4-bit, float8 or float4 input; ``run(inputs,
    as_ml_dtypes=True)`` gives such outputs as ml_dtypes arrays; ``run_batch`` runs the samples one by one (ONNX
    graphs keep no state). ``operator_params(k)`` holds what operator ``k``'s last run prepared (zero points, scales,
    the requantization, geometry, tables: :mod:`dspsim.onnx.ops._params`), empty before the model's first run.

    Attributes
    ----------
    profile : dspsim.engines.EngineProfile
        The engine whose arithmetic is emulated: "onnxruntime" (on an x86 host without VNNI, as the golden
        vectors were made: MLAS's uint8 x int8 GEMMs saturate product pairs to int16, ``vpmaddubsw``),
        "onnxruntime-vnni" (those GEMMs exact), "onnxruntime-optimized" (QDQ groups fused first),
        "onnx-reference", or a device's profile (:class:`dspsim.DeviceProfile`: e.g. QLinearConv, QLinearMatMul
        and QGemm requantizing power-of-two scales by a shift, ``requantization = "shift"``).
    engine : str
        The profile's name.
    opset : int
        The ai.onnx opset the model imports.
    inputs, outputs : list of TensorInfo
        With the ONNX element type as ``elem_type``.
    nodes : list of (index, op_type) in execution order (after fusion for "onnxruntime-optimized")
    """

    _KIND = "dspsim.onnx.Model"

    def __init__(self, mdef: ModelDef, engine="onnxruntime"):
        profile = engine_profile(engine, _FUNC, ModelFormat.ONNX)
        g = mdef.graph
        opset = mdef.opsets.get("", None)
        if opset is None:
            raise ValueError(f"{_FUNC}: the model imports no ai.onnx opset")
        if not OPSET_MIN <= opset <= OPSET_MAX:
            raise ValueError(f"{_FUNC}: ai.onnx opset {opset} is outside the supported range "
                             f"[{OPSET_MIN}, {OPSET_MAX}]")
        for dom in mdef.opsets:
            if dom not in ("", "com.microsoft", "ai.onnx.ml"):
                raise ValueError(f"{_FUNC}: operator domain {dom!r} is not supported")
        if g.sparse:
            raise ValueError(f"{_FUNC}: sparse initializers are not supported")
        self.opset = opset
        self._onnx = mdef
        graph, plan = self._prepare_graph(mdef, profile)
        super().__init__(graph, profile, Executor(graph, State(), [plan]))
        self.nodes = self.operators

    @staticmethod
    def _prepare_graph(mdef, profile):
        """The graph runtime's :class:`~dspsim.graph.ir.ModelDef` of the ONNX graph and its prepared plan."""
        g, opset = mdef.graph, mdef.opsets[""]
        constants = {name: t.array("initializer") for name, t in g.initializers.items()}
        tensors, index = [], {}

        def add(name, elem_type, shape, data=None):
            index[name] = len(tensors)
            tensors.append(_tensor(len(tensors), name, elem_type, shape, data))

        for v in g.inputs:
            if v.name not in constants:
                add(v.name, _elem_type(v), v.shape)
        for name, value in constants.items():
            add(name, ElemType(g.initializers[name].data_type), np.shape(value), value)
        out_info = {v.name: v for v in g.outputs}
        nodes = list(g.nodes)
        for n in nodes:
            check_input_count(n)
        _check_order(nodes, index)  # before fusion: its walks over producers assume a graph without cycles
        if profile.onnx.fuses_qdq:
            from .fusion import fuse_qdq

            # a device that requantizes by shifts runs every group in integers: ORT's x86 exceptions are off
            shifts = profile.mac.conv_2d.requant.kind is RequantKind.SHIFT
            nodes = fuse_qdq(nodes, constants, opset, ort_rules=not shifts)
            for name, value in constants.items():  # the fused groups' converted zero points
                if name not in index:
                    add(name, None, np.shape(value), value)
        ctx = Context(profile, constants, opset)
        table = PREPARE
        plan = []
        for k, n in enumerate(nodes):
            if n.domain not in ("", "ai.onnx", "com.microsoft"):
                raise ValueError(f"{_FUNC}: {n.label}: domain {n.domain!r} is not supported")
            if n.op_type not in table:
                raise ValueError(f"{_FUNC}: {n.label}: operator {n.op_type} is not supported by dspsim.onnx "
                                 f"(supported: {', '.join(sorted(table))})")
            for name in n.inputs:
                if name not in index and name != "":
                    raise _unprovided(n, name)
            _check_8bit_constants(n, constants)
            check_constant_scales(n, constants)
            run = _fits_or_refused(n, table[n.op_type](n, ctx))
            folded = None
            if n.op_type == "Constant":  # folded at load
                folded = constants[n.outputs[0]] = run([])[0]
            for name in n.outputs:
                if name and name not in index:
                    info = out_info.get(name)
                    add(name, None if info is None else _elem_type(info), None if info is None else info.shape,
                        folded)
            op = OperatorDef(k, 0, n.op_type, tuple(index[i] if i else -1 for i in n.inputs),
                             tuple(index[o] if o else -1 for o in n.outputs),
                             {name: a.value for name, a in n.attributes.items()})
            plan.append((op, Prepared(run, getattr(run, "params", {}),  # filled by its runs (ops/_params.py)
                                      stages=getattr(run, "stages", None))))  # a MAC op's stages
        for o in g.outputs:
            if o.name not in index:
                raise ValueError(f"{_FUNC}: graph output {o.name!r} is never written")
        inputs = tuple(index[v.name] for v in g.inputs if v.name not in constants)
        sg = SubgraphDef(0, g.name, tensors, inputs, tuple(index[o.name] for o in g.outputs), [op for op, _ in plan])
        return GraphDef(0, [sg], None), plan

    def _info(self, t):
        info = super()._info(t)
        elem = ElemType[t.type_name] if t.type_name in ElemType.__members__ else None
        return TensorInfo(info.index, info.name, info.shape, info.dtype, info.scale, info.zero_point, elem)

    def _prepare(self, mdef):
        return Executor(self._mdef, State(), [self._prepare_graph(self._onnx, self.profile)[1]])

    def run(self, inputs, *, as_ml_dtypes=False):
        """:meth:`dspsim.graph.model.Model.run`; ``as_ml_dtypes``: outputs of a type numpy lacks as ``ml_dtypes``
        arrays (:meth:`QArray.to_ml_dtypes`) instead of :class:`QArray`."""
        outs = super().run(inputs)
        return [o.to_ml_dtypes() if as_ml_dtypes and isinstance(o, QArray) else o for o in outs]

    def __repr__(self):
        return f"<dspsim.onnx.Model engine={self.engine!r} opset={self.opset}: {len(self.nodes)} nodes>"

    def _inputs(self, inputs, func):
        if isinstance(inputs, dict):
            missing = [i.name for i in self.inputs if i.name not in inputs]
            extra = sorted(set(inputs) - {i.name for i in self.inputs})
            if missing or extra:
                raise ValueError(f"{func}: inputs by name need exactly {[i.name for i in self.inputs]}; "
                                 f"missing {missing}, unknown {extra}")
            inputs = [inputs[i.name] for i in self.inputs]
        elif isinstance(inputs, (np.ndarray, QArray)) or not isinstance(inputs, (list, tuple)):
            inputs = [inputs]
        if len(inputs) != len(self.inputs):
            raise ValueError(f"{func}: the model has {len(self.inputs)} input(s), got {len(inputs)}")
        out = []
        for x, info in zip(inputs, self.inputs):
            if ml_dtypes_type(x) is not None:
                x = QArray.from_ml_dtypes(x)
            if isinstance(x, QArray):
                if x.type != info.elem_type:
                    raise TypeError(f"{func}: input {info.name!r} must be {info.elem_type.name}, got {x.type.name}")
                out.append(x)
                continue
            a = np.asarray(x)
            want = NATIVE.get(info.elem_type)
            if want is None or a.dtype != want:
                raise TypeError(f"{func}: input {info.name!r} must have element type {type_name(info.elem_type)}"
                                f", got numpy dtype {a.dtype}")
            fixed = info.shape is not None and (len(info.shape) != a.ndim or any(
                d is not None and d > 0 and d != s for d, s in zip(info.shape, a.shape)))
            if fixed:
                raise ValueError(f"{func}: input {info.name!r} must have shape {info.shape}, got {a.shape}")
            out.append(a)
        return out
