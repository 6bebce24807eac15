"""What ONNX Runtime computes on a host with VNNI: the golden vectors of the ``onnxruntime-vnni`` engine.

MLAS sums uint8 x int8 GEMMs with ``vpdpbusd`` where the CPU has AVX-512 VNNI or AVX-VNNI (exact int32 sums)
and with ``vpmaddubsw`` elsewhere (adjacent products summed with int16 saturation first): the ``onnxruntime``
engine is the latter, as ``make_golden_onnx_models.py`` recorded on an AVX2 host. This script runs the same
uint8 x int8 models (``tests/golden/onnx/models/*_u8s8_*.onnx``) on the same inputs (``models_<net>.npz``,
``<model>/r<k>/in``) under ONNX Runtime on this host, which must have VNNI (it refuses otherwise), graph
optimizations off, one thread, and keeps every integer node output and the graph output:

    tests/golden/onnx/ort_vnni.npz: <model>/r<k>/ort/<tensor>; meta (0-d JSON: versions, cpu flags, models)

    python tests/golden/make_golden_onnx_vnni.py        # a few seconds, deterministic
"""
import glob
import json
import os
import sys

import numpy as np
import onnx
import onnxruntime as ort

HERE = os.path.dirname(__file__)
MODELS = os.path.join(HERE, "onnx", "models")
OUT = os.path.join(HERE, "onnx", "ort_vnni.npz")
VNNI_FLAGS = {"avx512_vnni", "avx_vnni"}


def cpu_flags():
    with open("/proc/cpuinfo") as f:
        flags = set(f.read().split())
    return sorted(flags & {"avx2", "fma", "avx512f", "avx512bw", "avx512_vnni", "avx_vnni"})


def with_integer_outputs(m):
    """``m`` with every node output that shape inference types as an 8- or 32-bit integer a graph output."""
    typed = onnx.shape_inference.infer_shapes(m)
    made = {o for n in m.graph.node for o in n.output}
    have = {o.name for o in m.graph.output}
    ints = (onnx.TensorProto.UINT8, onnx.TensorProto.INT8, onnx.TensorProto.INT32)
    m.graph.output.extend(v for v in typed.graph.value_info
                          if v.name in made and v.name not in have and v.type.tensor_type.elem_type in ints)
    return m


def run(path, x):
    m = with_integer_outputs(onnx.load(path))
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    so.intra_op_num_threads = 1
    s = ort.InferenceSession(m.SerializeToString(), so, providers=["CPUExecutionProvider"])
    return dict(zip([o.name for o in s.get_outputs()], s.run(None, {"input": x})))


def main():
    flags = cpu_flags()
    if not VNNI_FLAGS & set(flags):
        sys.exit(f"this host has no VNNI ({flags}): its ONNX Runtime saturates uint8 x int8 product pairs")
    arrays, names = {}, []
    for path in sorted(glob.glob(os.path.join(MODELS, "*_u8s8_*.onnx"))):
        name = os.path.basename(path)[:-5]
        with np.load(os.path.join(HERE, "onnx", f"models_{name.split('_')[0]}.npz")) as z:
            inputs = [z[f"{name}/r{r}/in"] for r in range(2)]
        for r, x in enumerate(inputs):
            for tensor, value in run(path, x).items():
                arrays[f"{name}/r{r}/ort/{tensor}"] = value
        names.append(name)
    meta = dict(versions=dict(onnx=onnx.__version__, onnxruntime=ort.__version__, numpy=np.__version__, cpu=flags),
                models=names)
    np.savez_compressed(OUT, meta=np.asarray(json.dumps(meta)), **arrays)
    print(f"wrote {OUT}: {len(names)} models, {len(arrays)} tensors")


if __name__ == "__main__":
    main()
