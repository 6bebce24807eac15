"""Shared .tflite flatbuffer plumbing for the golden-vector scripts (golden venv only).

``S`` is the TFLite schema's generated Python module (the copy shipped with ai-edge-litert, so that
reading and editing a model does not import TensorFlow); ``load``/``save`` convert between model bytes
and the mutable object API (``S.ModelT``); the other helpers read or rewrite tensors, quantization
and operators in place. ``convert`` (imports TensorFlow on first use) is the full-integer converter
call the scripts share.
"""
from __future__ import annotations

import flatbuffers
import numpy as np
from ai_edge_litert import schema_py_generated as S

OP_NAMES = {v: k for k, v in vars(S.BuiltinOperator).items() if not k.startswith("_")}
TYPE_NAMES = {v: k for k, v in vars(S.TensorType).items() if not k.startswith("_")}
NP_DTYPES = {S.TensorType.FLOAT32: np.float32, S.TensorType.INT8: np.int8, S.TensorType.UINT8: np.uint8,
             S.TensorType.INT16: np.int16, S.TensorType.INT32: np.int32, S.TensorType.INT64: np.int64,
             S.TensorType.BOOL: np.bool_, S.TensorType.FLOAT16: np.float16, S.TensorType.UINT16: np.uint16,
             S.TensorType.UINT32: np.uint32, S.TensorType.FLOAT64: np.float64}


def load(model_bytes):
    """The object-API model (``S.ModelT``) of serialized ``model_bytes``."""
    return S.ModelT.InitFromPackedBuf(bytearray(model_bytes), 0)


def save(model):
    """Serialize an ``S.ModelT`` (file identifier TFL3)."""
    b = flatbuffers.Builder(1024)
    b.Finish(model.Pack(b), file_identifier=b"TFL3")
    return bytes(b.Output())


def op_name(model, op):
    """Builtin operator name of ``op`` (the larger of builtinCode and the deprecated int8 code)."""
    c = model.operatorCodes[op.opcodeIndex]
    return OP_NAMES[max(c.builtinCode, c.deprecatedBuiltinCode)]


def op_names(model, subgraph=0):
    """Builtin operator names of one subgraph, in execution order."""
    return [op_name(model, op) for op in model.subgraphs[subgraph].operators]


def the_op(model):
    """(builtin op code, operator) of the single compute op of a one-op model."""
    ops = model.subgraphs[0].operators
    assert len(ops) == 1, [model.operatorCodes[o.opcodeIndex].builtinCode for o in ops]
    op = ops[0]
    code = model.operatorCodes[op.opcodeIndex]
    return max(code.builtinCode, code.deprecatedBuiltinCode), op


def tensor(model, idx, subgraph=0):
    return model.subgraphs[subgraph].tensors[idx]


def set_quant(model, idx, scale, zero_point, axis=0):
    """Rewrite tensor ``idx``'s scale(s) (float32-rounded) and zero point(s); drops min/max."""
    q = tensor(model, idx).quantization
    q.scale = [float(v) for v in np.atleast_1d(np.float32(scale))]
    q.zeroPoint = [int(v) for v in np.broadcast_to(np.atleast_1d(zero_point), (len(q.scale),))]
    q.quantizedDimension = axis
    q.min = q.max = None


def get_quant(model, idx):
    q = tensor(model, idx).quantization
    return np.asarray(q.scale, np.float32), np.asarray(q.zeroPoint, np.int64)


def set_data(model, idx, arr):
    """Replace constant tensor ``idx``'s buffer by ``arr`` (same shape)."""
    t = tensor(model, idx)
    assert tuple(t.shape) == arr.shape, (t.shape, arr.shape)
    model.buffers[t.buffer].data = np.frombuffer(np.ascontiguousarray(arr).tobytes(), np.uint8)


def get_data(model, idx, dtype):
    t = tensor(model, idx)
    return np.frombuffer(bytes(model.buffers[t.buffer].data), dtype).reshape(t.shape)


def is_constant(model, t):
    """True if tensor object ``t`` has data in its buffer."""
    data = model.buffers[t.buffer].data if t.buffer < len(model.buffers) else None
    return data is not None and len(data) > 0


def written_tensors(model, subgraph=0):
    """Sorted indices of the tensors that some operator of ``subgraph`` writes, except RESOURCE
    handles (VAR_HANDLE outputs: no data, and TFLM crashes reading them)."""
    sg = model.subgraphs[subgraph]
    out = {int(i) for op in sg.operators for i in op.outputs if i >= 0}
    return sorted(i for i in out if sg.tensors[i].type != S.TensorType.RESOURCE)


def expose_tensors(model_bytes, indices, subgraph=0):
    """The model with ``indices`` appended to the subgraph's outputs (after the original ones), so
    that an interpreter which reuses memory (TFLM, XNNPACK) must keep and return them."""
    model = load(model_bytes)
    sg = model.subgraphs[subgraph]
    outs = [int(i) for i in sg.outputs]
    sg.outputs = outs + [int(i) for i in indices if int(i) not in outs]
    return save(model)


def one_op_model(code, options_type, options, tensors, inputs, outputs, version=1):
    """A one-operator model built from the schema objects. ``tensors``: (name, shape, TensorType,
    scale or None, zero point, constant data or None[, extras]) in index order, a scale sequence meaning per-channel
    quantization along ``extras["axis"]`` (default 0, zero points 0); ``extras["variable"]`` marks a variable
    tensor (state); ``inputs``/``outputs``: the operator's tensor indices (constants and variables are left out of
    the subgraph inputs)."""
    model = S.ModelT()
    model.version = 3
    oc = S.OperatorCodeT()
    oc.builtinCode = code
    oc.deprecatedBuiltinCode = min(code, S.BuiltinOperator.PLACEHOLDER_FOR_GREATER_OP_CODES)
    oc.version = version
    model.operatorCodes = [oc]
    model.buffers = [S.BufferT()]
    sg = S.SubGraphT()
    sg.tensors = []
    variables = set()
    for k, (name, shape, ttype, scale, zp, data, *extra) in enumerate(tensors):
        extras = extra[0] if extra else {}
        t = S.TensorT()
        t.name, t.shape, t.type = name, list(shape), ttype
        t.isVariable = bool(extras.get("variable", False))
        if t.isVariable:
            variables.add(k)
        buf = S.BufferT()
        if data is not None:
            buf.data = np.frombuffer(np.ascontiguousarray(data).tobytes(), np.uint8)
        model.buffers.append(buf)
        t.buffer = len(model.buffers) - 1
        if scale is not None:
            t.quantization = S.QuantizationParametersT()
            if np.ndim(scale):
                t.quantization.scale = [float(np.float32(v)) for v in scale]
                t.quantization.zeroPoint = [0] * len(t.quantization.scale)
                t.quantization.quantizedDimension = int(extras.get("axis", 0))
            else:
                t.quantization.scale, t.quantization.zeroPoint = [float(np.float32(scale))], [int(zp)]
        sg.tensors.append(t)
    op = S.OperatorT()
    op.opcodeIndex, op.inputs, op.outputs = 0, list(inputs), list(outputs)
    op.builtinOptionsType, op.builtinOptions = options_type, options
    sg.operators = [op]
    sg.inputs = [i for i in inputs if i >= 0 and tensors[i][5] is None and i not in variables]
    sg.outputs = list(outputs)
    model.subgraphs = [sg]
    return save(model)


def convert(fn, input_shapes, seed, float_io=False, samples=32, int16=False, sigma=1.0, autograph=True):
    """Full-integer model of the tf.function ``fn`` (float32 inputs of ``input_shapes``) from TF's
    converter with a seeded representative dataset of ``samples`` N(0, sigma^2) draws. int8
    activations (``TFLITE_BUILTINS_INT8``), or 16x8 with ``int16``; model inputs/outputs in the
    activation type unless ``float_io`` (then QUANTIZE/DEQUANTIZE at the ends). ``autograph=False``
    traces ``fn`` as it is (autograph re-parses lambdas from source and can pick the wrong one when
    several share a line pattern)."""
    import tensorflow as tf  # noqa: PLC0415 (heavy: only the converting scripts pay for it)

    rng = np.random.default_rng(seed)
    specs = [tf.TensorSpec(s, tf.float32) for s in input_shapes]
    conc = tf.function(fn, input_signature=specs, autograph=autograph).get_concrete_function()

    def rep():
        for _ in range(samples):
            if sigma == 1.0:
                yield [rng.normal(size=s).astype(np.float32) for s in input_shapes]
            else:
                yield [(rng.normal(size=s) * sigma).astype(np.float32) for s in input_shapes]

    conv = tf.lite.TFLiteConverter.from_concrete_functions([conc])
    conv.optimizations = [tf.lite.Optimize.DEFAULT]
    conv.representative_dataset = rep
    if int16:
        conv.target_spec.supported_ops = [
            tf.lite.OpsSet.EXPERIMENTAL_TFLITE_BUILTINS_ACTIVATIONS_INT16_WEIGHTS_INT8]
    else:
        conv.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS_INT8]
    if not float_io:
        conv.inference_input_type = tf.int16 if int16 else tf.int8
        conv.inference_output_type = tf.int16 if int16 else tf.int8
    return conv.convert()
