"""What LiteRT's optimized builtin kernels compute: the golden vectors of the ``litert-optimized`` engine.

LiteRT with ``OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES`` runs its optimized kernels (``optimized_ops``,
ruy GEMMs; on x86 the NEON paths through NEON_2_SSE) with no delegate: what the TFLite C library inside apps
(pymicro-wakeword) and Linux/Android builds without XNNPACK compute. This script runs, with that resolver and
``experimental_preserve_all_tensors``, one interpreter per model, each model in its own process (a crash is
recorded, not fatal):

* every per-operator golden model of ``tests/golden/ops/`` on the inputs its family's npz holds (every run, in
  order, state kept: the recurrent models' runs are frames), keeping the outputs;
* every model of ``tests/golden/models/`` on the inputs of its npz (``r<k>/in<j>``), keeping every tensor the
  npz records for the reference kernels (``r<k>/ref/t<i>``).

Output, ``tests/golden/litert_optimized.npz``: ``ops/<case>/out<j>`` (runs, *shape), ``models/<name>/r<k>/t<i>``,
and ``meta`` (0-d JSON: versions; per case and model its status, ``ok`` | ``refused`` (the interpreter refused the
model at allocation or invoke) | ``crashed``, and the message; ``undefined`` where the family's script recorded that
this engine reads out of bounds).

    python tests/golden/make_golden_litert_optimized.py      # ai-edge-litert 2.3.0; about a minute
"""
import glob
import json
import os
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "litert_optimized.npz")


def run_one(model_path, inputs_path, result_path, tensors):
    """In a worker process: the model on every run of ``inputs`` (``in<j>``: (runs, *shape)), one interpreter."""
    from ai_edge_litert.interpreter import Interpreter, OpResolverType

    z = np.load(inputs_path)
    n_in = len([k for k in z.files if k.startswith("in")])
    out = {}
    try:
        it = Interpreter(model_path=model_path, experimental_preserve_all_tensors=True,
                         experimental_op_resolver_type=OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES)
        it.allocate_tensors()
        ins, outs = it.get_input_details(), it.get_output_details()
        runs = z["in0"].shape[0] if n_in else 1
        for r in range(runs):
            for j, d in enumerate(ins):
                it.set_tensor(d["index"], z[f"in{j}"][r])
            it.invoke()
            for j, d in enumerate(outs):
                out.setdefault(f"out{j}", []).append(it.get_tensor(d["index"]).copy())
            for i in tensors:
                out.setdefault(f"t{i}", []).append(it.get_tensor(i).copy())
        np.savez(result_path, status=np.array("ok"), **{k: np.stack(v) for k, v in out.items()})
    except (RuntimeError, ValueError) as exc:
        np.savez(result_path, status=np.array("refused"), error=np.array(str(exc).splitlines()[0][:300]))


def run_isolated(model_path, inputs, tensors=()):
    """(status, error, arrays) of :func:`run_one` in a subprocess."""
    with tempfile.TemporaryDirectory() as tmp:
        src, dst = os.path.join(tmp, "in.npz"), os.path.join(tmp, "out.npz")
        np.savez(src, **{f"in{j}": x for j, x in enumerate(inputs)})
        proc = subprocess.run([sys.executable, __file__, "--one", model_path, src, dst, ",".join(map(str, tensors))],
                              capture_output=True, text=True, timeout=600)
        if proc.returncode != 0 or not os.path.exists(dst):
            return "crashed", proc.stderr.strip().splitlines()[-1:] or [f"exit {proc.returncode}"], {}
        z = np.load(dst)
        arrays = {k: z[k] for k in z.files if k not in ("status", "error")}
        return str(z["status"]), str(z["error"]) if "error" in z.files else None, arrays


def main():
    sys.path.insert(0, HERE)
    from golden_io import load_packed

    import ai_edge_litert
    arrays, meta = {}, {"versions": {"ai_edge_litert": getattr(ai_edge_litert, "__version__", "?"),
                                     "numpy": np.__version__}, "ops": {}, "models": {}}
    for family in sorted(glob.glob(os.path.join(HERE, "ops", "*.npz"))):
        _, cases = load_packed(family)
        for case, a in cases:
            inputs = [a[f"in{j}"] for j in range(len(case["inputs"]))]
            undefined = case.get("engines", {}).get("litert_optimized", {})
            if undefined.get("status") == "undefined":  # the family's script knows it reads out of bounds
                status, error, got = "undefined", undefined.get("error"), {}
            else:
                status, error, got = run_isolated(os.path.join(HERE, "ops", case["model"]), inputs)
            meta["ops"][case["name"]] = {"family": os.path.basename(family)[:-4], "model": case["model"],
                                         "status": status, "error": error}
            for k, v in got.items():
                arrays[f"ops/{case['name']}/{k}"] = v
            print(case["name"], status, error or "", flush=True)
    for npz in sorted(glob.glob(os.path.join(HERE, "models", "*.npz"))):
        name = os.path.basename(npz)[:-4]
        z = np.load(npz)
        runs = sorted({k.split("/")[0] for k in z.files if k.startswith("r") and "/in" in k})
        tensors = sorted({int(k.rsplit("/t", 1)[1]) for k in z.files if "/ref/t" in k})
        n_in = len([k for k in z.files if k.startswith(runs[0] + "/in")])
        inputs = [np.stack([z[f"{r}/in{j}"] for r in runs]) for j in range(n_in)]
        status, error, got = run_isolated(os.path.join(HERE, "models", f"{name}.tflite"), inputs, tensors)
        meta["models"][name] = {"status": status, "error": error, "runs": runs}
        for k, v in got.items():
            if k.startswith("t"):
                for n, r in enumerate(runs):
                    arrays[f"models/{name}/{r}/{k}"] = v[n]
        print(name, status, error or "", flush=True)
    np.savez_compressed(OUT, meta=np.array(json.dumps(meta)), **arrays)
    print("wrote", OUT, os.path.getsize(OUT), "bytes")


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--one":
        run_one(sys.argv[2], sys.argv[3], sys.argv[4], [int(t) for t in sys.argv[5].split(",") if t])
    else:
        main()
