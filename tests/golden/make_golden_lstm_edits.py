"""Golden vectors of edited LSTM models: cell clip, saturation, cell scales, the cell-gate activation.

Run with the golden venv from the repository root (about a minute)::

    /work/goldvenv/bin/python tests/golden/make_golden_lstm_edits.py

Each model is ``../shared/models/tflite-micro/trained_lstm_int8.tflite`` with one edit of
``_lstm_edits.EDITS`` applied in memory (the edited bytes go to a temporary file, never into the
repository), recorded exactly as ``make_golden_real_models.golden_one`` records a real model: 24 frames
with the LSTM state carried, TFLM, LiteRT BUILTIN_REF and LiteRT default, each in its own subprocess
(a refusal or a crash is recorded as such), every intermediate by sha256.

Output: ``tests/golden/lstm_edits/<edit>.npz`` (format: tests/golden/README.md, real models; read with
``golden_io.load_real_model``).
"""
from __future__ import annotations

import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import make_golden_real_models as real  # noqa: E402
from _lstm_edits import EDITS, MODEL, apply  # noqa: E402

OUT = os.path.join(real.ROOT, "tests", "golden", "lstm_edits")


def main():
    os.makedirs(OUT, exist_ok=True)
    real.OUT = OUT
    with open(os.path.join(real.SHARED, f"{MODEL}.tflite"), "rb") as f:
        base = f.read()
    with tempfile.TemporaryDirectory() as tmp:
        for name, (what, edits) in EDITS.items():
            path = os.path.join(tmp, f"{name}.tflite")
            with open(path, "wb") as f:
                f.write(apply(base, edits))
            meta = real.golden_one(name, f"shared/models/tflite-micro/{MODEL}.tflite + {name}", path)
            print(name, "-", what, "|", {e: v["status"] for e, v in meta["engines"].items()},
                  {p: {k: d["n_diff"] for k, d in dd.items()} for p, dd in meta["diffs"].items() if dd}, flush=True)


if __name__ == "__main__":
    main()
