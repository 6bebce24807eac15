"""Packed INT4 weights (FULLY_CONNECTED, CONV_2D, DEPTHWISE_CONV_2D) against every engine that runs them.

The vectors (tests/golden/ops/int4.npz, made by make_golden_int4.py with ai-edge-litert 2.3.0 and tflite-micro):
one-op models whose weights are INT4 codes, two a byte (low nibble first), per channel or per tensor, with int8 and
int16 activations, run by TFLite Micro and LiteRT's three resolvers. Where a real engine refused the model, dspsim
must refuse it too; every other output must be equal.
"""
from __future__ import annotations

import os
import sys
import warnings

import numpy as np
import pytest

from dspsim.tflite import load_model
from dspsim.tflite.flatbuffer import _unpacked_int4

GOLDEN = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "golden")
sys.path.insert(0, GOLDEN)
from golden_io import load_packed  # noqa: E402

ENGINES = {"tflm": "tflm", "litert_ref": "litert", "litert_default": "xnnpack", "litert_optimized": "litert-optimized"}
CASES = load_packed(os.path.join(GOLDEN, "ops", "int4.npz"))[1]


def _output(case, arrays, engine):
    key = f"{engine}/out0"
    while key not in arrays and key in case["aliases"]:
        key = case["aliases"][key]
    return arrays[key]


@pytest.mark.parametrize("golden_engine", list(ENGINES))
@pytest.mark.parametrize("case,arrays", CASES, ids=[c["name"] for c, _ in CASES])
def test_int4_weight_model_matches_the_engine(case, arrays, golden_engine):
    path = os.path.join(GOLDEN, "ops", case["model"])
    engine = ENGINES[golden_engine]
    if case["engines"][golden_engine]["status"] != "ok":
        with pytest.raises(ValueError, match="load_model"):
            load_model(path, engine=engine)
        return
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = load_model(path, engine=engine)
    want = _output(case, arrays, golden_engine)
    for r in range(case["runs"]):
        (got,) = model.run([arrays["in0"][r]])
        assert got.dtype == want.dtype and np.array_equal(got, want[r]), \
            f"run {r}: {np.count_nonzero(got != want[r])} of {got.size} differ"


class _Buf:
    def fail(self, msg):
        raise ValueError(f"load_model: {msg}")


@pytest.mark.parametrize("raw,shape,codes", [
    ([0x81, 0x7F, 0x0A], (5,), [1, -8, -1, 7, -6]),          # an odd count: the last high nibble unused
    ([0x81, 0x7F, 0xEA], (2, 3), [[1, -8, -1], [7, -6, -2]]),
    ([0x10, 0x32, 0x54, 0x76, 0x98, 0xBA, 0xDC, 0xFE], (16,), list(range(8)) + list(range(-8, 0))),
])
def test_int4_codes_unpack_low_nibble_first_and_sign_extend(raw, shape, codes):
    got = _unpacked_int4(_Buf(), np.array(raw, np.uint8), shape, "tensor 1 ('w')")
    assert got.dtype == np.int8 and got.tolist() == codes


def test_int4_data_of_the_wrong_size_is_refused():
    with pytest.raises(ValueError, match=r"tensor 1 \('w'\) has 2 data bytes, INT4 shape \(5,\) needs 3"):
        _unpacked_int4(_Buf(), np.array([1, 2], np.uint8), (5,), "tensor 1 ('w')")
