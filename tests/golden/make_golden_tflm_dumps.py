"""Per-layer dumps of a real TensorFlow Lite Micro run, laid out as a device's dump directory.

Run with the golden venv (tflite-micro's Python interpreter) from the repository root::

    /work/goldvenv/bin/python tests/golden/make_golden_tflm_dumps.py

For each model of ``tests/golden/models/`` listed in :data:`MODELS`, the first input set of its
LiteRT golden file (``r0/in<k>`` of ``<model>.npz``) is run through TFLM's interpreter built with
``InterpreterConfig.kPreserveAllTensors``, and every tensor an operator writes is read back with
``GetTensor`` (TFLM keeps them all in that configuration, so no flatbuffer edit is needed).

Output, one directory per model, ``tests/golden/dumps/<model>/``: ``input<k>.npy`` (the model
inputs, as given), ``versions.json`` (tflite-micro's version) and ``tflm/t<tensor index>.npy`` (every
operator output, TFLM's bytes): ``tflm/`` is exactly the dump layout ``dspsim diagnose --dumps``
reads. Each model runs in a subprocess (an engine crash cannot take the script down). Takes a few
seconds, deterministic (byte-identical output).
"""
from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np

ROOT = os.path.dirname(os.path.abspath(__file__))
MODELS_DIR = os.path.join(ROOT, "models")
OUT_DIR = os.path.join(ROOT, "dumps")
# (the two_inputs models are left out: TFLM has no RELU_N1_TO_1 kernel and refuses them at allocation)
MODELS = ["cnn", "cnn_half", "cnn_left", "cnn_pot", "branches", "branches_left", "branches_pot", "mobilenet",
          "requantize_third"]


def dump_one(name: str) -> None:
    from tflite_micro.python.tflite_micro import runtime

    golden = np.load(os.path.join(MODELS_DIR, f"{name}.npz"))
    written = [int(i) for i in golden["tensors"]]
    inputs = []
    while f"r0/in{len(inputs)}" in golden.files:
        inputs.append(golden[f"r0/in{len(inputs)}"])
    it = runtime.Interpreter.from_file(os.path.join(MODELS_DIR, f"{name}.tflite"), arena_size=1 << 22,
                                       intrepreter_config=runtime.InterpreterConfig.kPreserveAllTensors)
    for k, x in enumerate(inputs):
        it.set_input(x, k)
    it.invoke()
    out = os.path.join(OUT_DIR, name)
    os.makedirs(os.path.join(out, "tflm"), exist_ok=True)
    for k, x in enumerate(inputs):
        np.save(os.path.join(out, f"input{k}.npy"), x)
    for i in written:
        t = it.GetTensor(i, 0)
        a = np.asarray(t["tensor_data"]).astype(t["dtype"], copy=False).reshape(t["shape"])
        np.save(os.path.join(out, "tflm", f"t{i}.npy"), a)
    try:
        from tflite_micro.python.tflite_micro._version import __version__ as version
    except ImportError:  # pragma: no cover - older wheels
        version = "unknown"
    with open(os.path.join(out, "versions.json"), "w") as f:
        json.dump({"tflite_micro": version, "numpy": np.__version__, "model": f"tests/golden/models/{name}.tflite",
                   "input": "r0 of the model's LiteRT golden npz"}, f, indent=1)
    print(f"{name}: {len(written)} tensors -> {out}")


def main(argv) -> int:
    if argv[:1] == ["--one"]:
        dump_one(argv[1])
        return 0
    failed = []
    for name in argv or MODELS:
        r = subprocess.run([sys.executable, __file__, "--one", name], check=False)
        if r.returncode:
            failed.append(name)
    if failed:
        print(f"TFLM failed on: {failed}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
