"""ONNX Runtime's QDQ fusion (ORT_ENABLE_ALL), as dspsim reproduces it for engine "onnxruntime-optimized".

A group ``DequantizeLinear(s) -> op -> QuantizeLinear`` becomes the QLinear operator ORT's
QDQ transformers (onnxruntime/core/optimizer/qdq_transformer/) put in its place, so that it runs
with that operator's integer / table arithmetic instead of float32:

    Conv -> QLinearConv, MatMul -> QLinearMatMul, Gemm -> QGemm, Add -> QLinearAdd, Mul -> QLinearMul,
    GlobalAveragePool -> QLinearGlobalAveragePool, AveragePool -> QLinearAveragePool,
    Sigmoid -> QLinearSigmoid, LeakyRelu -> QLinearLeakyRelu, Softmax -> QLinearSoftmax,
    Concat -> QLinearConcat.

Layout-only groups (MaxPool, Reshape, Flatten, Transpose, Squeeze, Unsqueeze, nearest Resize) and
Relu/Clip are exact on the float values when their Q has the DQ's parameters, so they are left as
they are. Linear Resize stays DQ -> float Resize -> Q in ORT too (observed); 8-bit Resize after a
QLinearConv runs on NHWC codes (:func:`_mark_channels_last_resize`).

Which groups ORT fuses (observed with onnxruntime 1.32 on the golden models): every group of a
uint8-activation model; in an int8-activation (S8S8) model only the groups whose activation
DequantizeLinear feeds the op alone and whose output's DequantizeLinear feeds at most one node, and
no Add with a constant operand. The S8S8 rule is fitted to the observed fused graphs (all 25 golden
models reproduced), not read from ORT's selectors (docs/engines.md "ONNX"). On x86 ORT also carries
the int8 activations of the fused S8S8 groups as uint8 (:func:`_as_uint8`), which puts them on
MLAS's U8S8 kernels.
"""
from __future__ import annotations

import numpy as np

from .proto import AttributeDef, NodeDef

# op -> indices of its quantized data inputs
_FUSED = {"Conv": (0, 1), "MatMul": (0, 1), "Gemm": (0, 1), "Add": (0, 1), "Mul": (0, 1),
          "GlobalAveragePool": (0,), "AveragePool": (0,), "Sigmoid": (0,), "LeakyRelu": (0,), "Softmax": (0,),
          "Concat": None}


def _attr_int(name, v):
    return AttributeDef(name=name, type=2, i=int(v))


def _constant_qparams(node, constants, codes=(np.int8, np.uint8)) -> bool:
    """Whether a QuantizeLinear / DequantizeLinear node's scale and zero point are constants and its zero point of
    a type of ``codes`` (a bias's may be absent): the QLinear nodes a group becomes take their zero points at load,
    and 8-bit codes only."""
    scale, zp = (list(node.inputs[1:3]) + ["", ""])[:2]
    if scale not in constants or (zp and zp not in constants):
        return False
    return getattr(constants[zp], "dtype", None) in codes if zp else np.int32 in codes


def fuse_qdq(nodes, constants, opset=13, ort_rules=True):
    """The node list with every fusable QDQ group replaced by its QLinear node (see the module doc).

    ``ort_rules`` False (a DSP that runs every group in integers): fuse every fusable group and keep
    int8 activations as they are (no S8S8 exceptions, no uint8 conversion)."""
    producer = {o: n for n in nodes for o in n.outputs}
    consumers = {}
    for n in nodes:
        for i in n.inputs:
            consumers.setdefault(i, []).append(n)

    def dq_of(name):
        p = producer.get(name)
        return p if p is not None and p.op_type == "DequantizeLinear" else None

    def single_use(name):
        return len(consumers.get(name, [])) == 1

    removed, replaced = set(), {}
    for n in nodes:
        if n.op_type not in _FUSED or len(n.outputs) != 1:
            continue
        data = range(len(n.inputs)) if _FUSED[n.op_type] is None else _FUSED[n.op_type]
        dqs = [dq_of(n.inputs[k]) for k in data]
        if any(d is None for d in dqs):
            continue
        bias_dq = None
        if n.op_type in ("Conv", "Gemm") and len(n.inputs) > 2 and n.inputs[2]:
            bias_dq = dq_of(n.inputs[2])
            b = None if bias_dq is None else constants.get(bias_dq.inputs[0])
            if b is None or str(getattr(b, "dtype", "")) != "int32":
                continue
        outs = consumers.get(n.outputs[0], [])
        if len(outs) != 1 or outs[0].op_type != "QuantizeLinear":
            continue
        q = outs[0]
        if not all(_constant_qparams(d, constants) for d in dqs + [q]) or \
                (bias_dq is not None and not _constant_qparams(bias_dq, constants, (np.int32,))):
            continue
        if ort_rules and _is_int8(dqs[0], constants):  # the fitted S8S8 rule (module doc)
            if any(not single_use(d.outputs[0]) for d in dqs if d.inputs[0] not in constants):
                continue
            after = [c for c in consumers.get(q.outputs[0], []) if c.op_type == "DequantizeLinear"]
            if any(len(consumers.get(d.outputs[0], [])) > 1 for d in after):
                continue
            if n.op_type in ("Add", "Mul") and any(d.inputs[0] in constants for d in dqs):
                continue
        fused = _qlinear(n, dqs, bias_dq, q, opset)
        to_u8 = ort_rules and _is_int8(dqs[0], constants)
        replaced[id(n)] = _as_uint8(fused, dqs, constants) if to_u8 else [fused]
        removed.add(id(q))
        for d in dqs + ([bias_dq] if bias_dq is not None else []):
            if all(c is n for c in consumers.get(d.outputs[0], [])):
                removed.add(id(d))
    fused_nodes = [m for n in nodes if id(n) not in removed for m in replaced.get(id(n), [n])]
    return _mark_channels_last_resize(fused_nodes)


# ops through which ORT's transpose optimizer carries the NHWC layout of a QLinearConv's output
# (observed: QLinearConv -> Resize, QLinearConv -> MaxPool -> ...); see _mark_channels_last_resize
_LAYOUT_CARRIERS = ("MaxPool", "Resize")


def _mark_channels_last_resize(nodes):
    """Resize nodes that ORT_ENABLE_ALL runs on NHWC tensors get the attribute ``channels_last=1``.

    On x86 ORT's NHWC transformer makes every QLinearConv channels-last and its transpose optimizer
    pushes the Transposes through the Resize nodes after it, whose 8-bit linear kernel is then
    ``NhwcUpsampleBilinearInteger`` (10-bit integer weights) instead of the float-weight NCHW one
    (:func:`.resize.resize_onnxruntime`). Rule (fitted to the golden models): the Resize's data input
    comes from a QLinearConv, directly or through MaxPool / Resize nodes. Float inputs (QDQ graphs)
    take the same float arithmetic in either layout, so only 8-bit Resize is affected."""
    producer = {o: n for n in nodes for o in n.outputs}
    out = []
    for n in nodes:
        p = producer.get(n.inputs[0]) if n.op_type == "Resize" and n.inputs else None
        while p is not None and p.op_type in _LAYOUT_CARRIERS:
            p = producer.get(p.inputs[0])
        if p is not None and p.op_type == "QLinearConv":
            attributes = {**n.attributes, "channels_last": _attr_int("channels_last", 1)}
            n = NodeDef(index=n.index, name=n.name, op_type=n.op_type, domain=n.domain, inputs=list(n.inputs),
                        outputs=list(n.outputs), attributes=attributes)
        out.append(n)
    return out


def _as_uint8(node, dqs, constants):
    """ORT's QDQS8ToU8 transformer (x86): int8 activations are carried as uint8 codes ``+ 128`` with
    zero points ``+ 128`` through the fused op, so that MLAS runs its U8S8 kernels (with their pair
    saturation). The codes' real values are unchanged; only the arithmetic path is. Weights and
    biases stay int8 / int32."""
    pre, inputs = [], list(node.inputs)
    const_inputs = {d.inputs[0] for d in dqs if d.inputs[0] in constants}
    zp_slots = _ACTIVATION_SLOTS[node.op_type](len(inputs))
    for data_k, zp_k in zp_slots:
        name = inputs[data_k]
        if data_k >= 0 and name not in const_inputs:
            pre.append(NodeDef(index=node.index, name=f"{node.name}/s8_to_u8_{data_k}", op_type="_S8ToU8",
                               inputs=[name], outputs=[name + "/u8"]))
            inputs[data_k] = name + "/u8"
        zp = inputs[zp_k]
        if data_k < 0 or name not in const_inputs:
            shifted = zp + "/u8"
            constants[shifted] = (constants[zp].astype(np.int16) + 128).astype(np.uint8)
            inputs[zp_k] = shifted
    out = node.outputs[0]
    fused = NodeDef(index=node.index, name=node.name, op_type=node.op_type, domain=node.domain, inputs=inputs,
                    outputs=[out + "/u8"], attributes=node.attributes)
    post = NodeDef(index=node.index, name=f"{node.name}/u8_to_s8", op_type="_U8ToS8", inputs=[out + "/u8"],
                   outputs=[out])
    return pre + [fused, post]


# (data input index, zero-point input index) of the activation operands and the output (data -1)
_ACTIVATION_SLOTS = {
    "QLinearConv": lambda n: [(0, 2), (-1, 7)],
    "QLinearMatMul": lambda n: [(0, 2), (-1, 7)],
    "QGemm": lambda n: [(0, 2), (-1, 8)],
    "QLinearAdd": lambda n: [(0, 2), (3, 5), (-1, 7)],
    "QLinearMul": lambda n: [(0, 2), (3, 5), (-1, 7)],
    "QLinearGlobalAveragePool": lambda n: [(0, 2), (-1, 4)],
    "QLinearAveragePool": lambda n: [(0, 2), (-1, 4)],
    "QLinearSigmoid": lambda n: [(0, 2), (-1, 4)],
    "QLinearLeakyRelu": lambda n: [(0, 2), (-1, 4)],
    "QLinearSoftmax": lambda n: [(0, 2), (-1, 4)],
    "QLinearConcat": lambda n: [(-1, 1)] + [(k, k + 2) for k in range(2, n, 3)],
}


def _is_int8(dq, constants):
    """Whether a DequantizeLinear reads int8 codes (from its constant input or zero point)."""
    for name in (dq.inputs[0], dq.inputs[2] if len(dq.inputs) > 2 else ""):
        v = constants.get(name)
        if v is not None:
            return str(getattr(v, "dtype", "")) == "int8"
    return False


def _triple(dq):
    return [dq.inputs[0], dq.inputs[1], dq.inputs[2] if len(dq.inputs) > 2 else ""]


def _qlinear(n, dqs, bias_dq, q, opset):
    qy = [q.inputs[1], q.inputs[2] if len(q.inputs) > 2 else ""]
    attrs = dict(n.attributes)
    bias = [bias_dq.inputs[0]] if bias_dq is not None else []
    domain = "com.microsoft"
    if n.op_type == "Conv":
        op, domain, inputs = "QLinearConv", "", _triple(dqs[0]) + _triple(dqs[1]) + qy + bias
    elif n.op_type == "MatMul":
        op, domain, inputs = "QLinearMatMul", "", _triple(dqs[0]) + _triple(dqs[1]) + qy
    elif n.op_type == "Gemm":
        op, inputs = "QGemm", _triple(dqs[0]) + _triple(dqs[1]) + (bias or [""]) + qy
    elif n.op_type in ("Add", "Mul"):
        op, inputs = "QLinear" + n.op_type, _triple(dqs[0]) + _triple(dqs[1]) + qy
    elif n.op_type == "Softmax":
        op, inputs = "QLinearSoftmax", _triple(dqs[0]) + qy
        attrs.setdefault("axis", _attr_int("axis", -1 if opset >= 13 else 1))
        attrs["opset"] = _attr_int("opset", opset)
    elif n.op_type == "Concat":
        op, inputs = "QLinearConcat", qy + [v for d in dqs for v in _triple(d)]
    else:  # GlobalAveragePool, AveragePool, Sigmoid, LeakyRelu
        op, inputs = "QLinear" + n.op_type, _triple(dqs[0]) + qy
    return NodeDef(index=n.index, name=n.name, op_type=op, domain=domain, inputs=inputs, outputs=list(q.outputs),
                   attributes=attrs)
