"""A loaded .tflite model: the flatbuffer's operators prepared once by the engine's rules, run by the graph runtime."""
from __future__ import annotations

import numpy as np

from ..engines import ModelFormat
from ..engines import get as engine_profile
from ..engines.device import with_options
from ..graph.executor import Executor, build_steps
from ..graph.model import Model as GraphModel
from ..graph.state import State
from ..graph.stream_plan import LazyStreamPlan
from . import builtins  # noqa: F401  (registers every builtin's Prepare)
from .batching import batch_blocker, with_batch
from .fusion import fuse
from .lowering import lower
from .prepare import BUILTINS, Graph, check_int4_weights, check_registered
from .views import choose_runs


def _check_quantization(sg, where):
    """LiteRT's interpreter refuses, at load, a per-channel quantized tensor whose quantized_dimension
    is not one of its dimensions or whose scale count is not that dimension's size (``Subgraph::
    SetTensorParametersReadOnly``; ``TfliteProfile.checks_quantization``); TFLM reads such tensors without
    checking (person_detect's bias)."""
    for t in sg.tensors:
        if t.scale.size <= 1:
            continue
        rank = len(t.shape)
        if not 0 <= t.quantized_dimension < rank:
            raise ValueError(f"load_model: {where}tensor {t.index} ({t.name!r}): quantized_dimension must be in "
                             f"range [0, {rank}), was {t.quantized_dimension}: LiteRT refuses the model (engine "
                             "'tflm' runs it)")
        if t.scale.size != t.shape[t.quantized_dimension]:
            raise ValueError(f"load_model: {where}tensor {t.index} ({t.name!r}): {t.scale.size} scales for dimension "
                             f"{t.quantized_dimension} of size {t.shape[t.quantized_dimension]}: LiteRT refuses the "
                             "model (engine 'tflm' runs it)")


def _prepare_subgraph(sg, g):
    """Prepare every operator of subgraph ``sg`` in order (refusals name the subgraph when it is not 0)."""
    where = "" if sg.index == 0 else f"subgraph {sg.index} "
    for i in sg.inputs:
        if sg.tensors[i].dtype is None:
            raise ValueError(f"load_model: {where}input tensor {i} has unsupported type "
                             f"{sg.tensors[i].type_name}")
    if g.tflite.checks_quantization:
        _check_quantization(sg, where)
    known = set(sg.inputs) | {t.index for t in sg.tensors if t.data is not None or t.is_variable}
    plan = []
    for op in sg.operators:
        check_registered(op, g)
        check_int4_weights(op, g)
        for i in op.inputs:
            if i >= 0 and i not in known:
                raise ValueError(f"load_model: {where}operator {op.index} ({op.name}) reads tensor {i} "
                                 f"({sg.tensors[i].name!r}) before any operator writes it")
        for i in op.outputs:
            t = sg.tensors[i]
            if t.dtype is None and t.type_name != "RESOURCE":
                raise ValueError(f"load_model: {where}operator {op.index} ({op.name}) writes tensor {i} of "
                                 f"unsupported type {t.type_name}")
        with np.errstate(over="ignore", invalid="ignore", divide="ignore"):  # huge scales: refused below
            try:
                plan.append((op, BUILTINS[op.name](op, g)))
            except IndexError as exc:  # a Prepare reading an input, output or dimension the op lacks
                raise ValueError(f"load_model: {where}operator {op.index} ({op.name}) is malformed: its "
                                 f"{len(op.inputs)} inputs, {len(op.outputs)} outputs or their shapes do not "
                                 f"fit the op ({exc})") from None
            except (ValueError, TypeError) as exc:  # a parameter helper's refusal (tflm_tanh: input_zero_point ...)
                if str(exc).startswith("load_model:"):
                    raise
                raise type(exc)(f"load_model: {where}operator {op.index} ({op.name}): {exc}") from None
            except MemoryError as exc:  # declared shapes beyond this machine (LiteRT's AllocateTensors fails too)
                raise ValueError(f"load_model: {where}operator {op.index} ({op.name}): its declared tensor shapes need "
                                 f"more memory than is available ({exc})") from None
        known.update(op.outputs)
    for i in sg.outputs:
        if i not in known:
            raise ValueError(f"load_model: {where}output tensor {i} is never written")
    return plan


def _check_supported(mdef):
    """Refuse a model with operators dspsim has no Prepare for, naming every one of them (all subgraphs) in one
    error."""
    missing = [f"{'' if sg.index == 0 else f'subgraph {sg.index} '}operator {op.index} is {op.name} (version "
               f"{op.version})" for sg in mdef.subgraphs for op in sg.operators if op.name not in BUILTINS]
    if not missing:
        return
    listed = f"dspsim.tflite.supported_ops() lists the {len(BUILTINS)} it has"
    if len(missing) == 1:
        raise ValueError(f"load_model: {missing[0]}, which dspsim does not support ({listed})")
    names = sorted({op.name for sg in mdef.subgraphs for op in sg.operators if op.name not in BUILTINS})
    raise ValueError(f"load_model: {len(missing)} operators dspsim does not support ({', '.join(names)}): "
                     f"{'; '.join(missing)} ({listed})")


def prepare_model(mdef, profile) -> Executor:
    """The :class:`~dspsim.graph.executor.Executor` of ``mdef`` under ``profile``: every operator of every
    subgraph prepared (its refusals raised), ``run``'s steps fused (:mod:`.fusion`) and given views where safe
    (:mod:`.views`), ``trace``'s steps unfused so that every output is observable; a small streaming main subgraph
    compiled into one call (:mod:`.lowering`, on its second run); a state of its own."""
    _check_supported(mdef)
    state = State()
    made = []
    contexts = [Graph(mdef, profile, sg, state, lambda index: made[0].call(index)) for sg in mdef.subgraphs]
    plans = [_prepare_subgraph(sg, g) for sg, g in zip(mdef.subgraphs, contexts)]
    fused = [fuse(sg, plan, g) for sg, plan, g in zip(mdef.subgraphs, plans, contexts)]
    steps = [build_steps(sg, plan, runs) for sg, plan, runs in zip(mdef.subgraphs, fused, choose_runs(mdef, fused))]
    trace_steps = steps if all(f is p for f, p in zip(fused, plans)) else \
        [build_steps(sg, plan, runs) for sg, plan, runs in zip(mdef.subgraphs, plans, choose_runs(mdef, plans))]
    lowered = [LazyStreamPlan(lambda: lower(mdef.subgraphs[0], plans[0]))] + [None] * (len(plans) - 1)
    made.append(Executor(mdef, state, plans, steps, trace_steps, lowered))
    return made[0]


class Model(GraphModel):
    """An int8 / 16x8 TFLite model, run layer by layer with dspsim's bit-exact kernels.

    Build it with :func:`dspsim.tflite.load_model`. Every operator's integer parameters are derived once, at
    load time, from the float32 scales stored in the flatbuffer, exactly as the engine's Prepare does; models
    the engine refuses are refused there with a ValueError naming the operator. The rest of the interface
    (``run``, ``run_batch``, ``trace``, ``reset``, the tensor and operator reads, ``profile``, ``engine``) is
    :class:`dspsim.graph.model.Model`'s; a batch runs as TFLite runs it after ``resize_tensor_input``
    (:mod:`dspsim.tflite.batching`).
    """

    _KIND = "dspsim.tflite.Model"

    def __init__(self, mdef, engine="litert", accumulator=None, rounding=None, approximate_float=False):
        profile = with_options(engine_profile("litert" if engine is None else engine, "load_model",
                                              ModelFormat.TFLITE), accumulator, rounding, "load_model",
                               approximate_float)
        super().__init__(mdef, profile, prepare_model(mdef, profile))

    def _prepare(self, mdef):
        return prepare_model(mdef, self.profile)

    def _batch_blocker(self):
        return batch_blocker(self._mdef)

    def _batch_def(self, n):
        return with_batch(self._mdef, n)
