"""The int16 variants of issue 27 part 4 (SUM, PRELU, BATCH_MATMUL, SQUARED_DIFFERENCE on int16; 16x8 CONV_2D and
FULLY_CONNECTED with an int32 bias; 16x8 TRANSPOSE_CONV with an int16 bias; the int16 LSTM) against the real
engines' golden vectors (tests/golden/ops/int16_variants.npz, written by make_golden_int16_variants.py): every
output of every run, 0 mismatches, under engine "tflm" (the tflite-micro interpreter), "litert" (LiteRT BUILTIN_REF),
"xnnpack" (LiteRT's default interpreter) and "litert-optimized"; where an engine refused the model, or its result
is undefined (the golden's "undefined" status: LiteRT's reference int16 SUM, the int32 bias of a 16x8 layer read as
int64), dspsim refuses it too."""
import os
import sys
import warnings

import numpy as np
import pytest

import dspsim.tflite as dt

HERE = os.path.join(os.path.dirname(os.path.dirname(__file__)), "golden")
sys.path.insert(0, HERE)
from golden_io import load_packed  # noqa: E402

ENGINES = {"tflm": "tflm", "litert_ref": "litert", "litert_default": "xnnpack", "litert_optimized": "litert-optimized"}
PATH = os.path.join(HERE, "ops", "int16_variants.npz")
def _cases():
    if not os.path.exists(PATH):
        return []
    _, cases = load_packed(PATH)
    return [pytest.param(case, arrays, engine, id=f"{case['name']}-{engine}") for case, arrays in cases
            for engine in ENGINES]


CASES = _cases()


def _resolve(case, arrays, key):
    while key not in arrays and key in case["aliases"]:
        key = case["aliases"][key]
    return arrays[key]


def _load(case, engine):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return dt.load_model(os.path.join(HERE, "ops", case["model"]), engine=ENGINES[engine])


def test_the_golden_file_holds_every_variant():
    names = {p.values[0]["name"] for p in CASES}
    for prefix in ("i16v_sum_", "i16v_prelu_", "i16v_batch_matmul_", "i16v_squared_difference_",
                   "i16v_conv_16x8_int32_bias", "i16v_fully_connected_16x8_int32_bias",
                   "i16v_transpose_conv_16x8_int16_bias", "i16v_lstm_"):
        assert any(n.startswith(prefix) for n in names), prefix


@pytest.mark.parametrize("case,arrays,engine", CASES)
def test_outputs_are_bit_exact_with_the_engine(case, arrays, engine):
    status = case["engines"][engine]
    inputs = [[arrays[f"in{k}"][r] for k in range(len(case["inputs"]))] for r in range(case["runs"])]
    if status["status"] != "ok":  # refused, or undefined (LiteRT reading bytes it does not own): dspsim refuses
        with pytest.raises(ValueError, match="load_model|Model.run"):
            m = _load(case, engine)
            for xs in inputs:
                m.run(xs)
        return
    m = _load(case, engine)
    for r, xs in enumerate(inputs):
        for k, y in enumerate(m.run(xs)):
            want = _resolve(case, arrays, f"{engine}/out{k}")[r]
            assert y.dtype == want.dtype and y.shape == want.shape, (k, y.dtype, y.shape, want.dtype, want.shape)
            bad = np.flatnonzero(y.reshape(-1) != want.reshape(-1))
            assert bad.size == 0, f"run {r} output {k}: {bad.size} of {y.size} differ, first at {bad[0]}: " \
                                  f"{y.reshape(-1)[bad[0]]} vs {want.reshape(-1)[bad[0]]}"
