"""The peers' own kernel unit tests (../shared/conformance/peer-tests: 212 TFLite Micro cases from
tensorflow/lite/micro/kernels/*_test.cc, 64 ONNX Runtime quantization-operator cases), as the README there says to
run them: every TFLite Micro case's one-operator model under engine "tflm" against the real interpreter's output
(``engine``), every ONNX Runtime case's call against onnxruntime's own output (``engine``), 0 mismatches. The four
TFLite Micro tests whose model declares an output shape the operator does not compute are refused, saying so.
Skipped on a clean clone, where ../shared is absent."""
from __future__ import annotations

import importlib
import os
import sys
import warnings

import numpy as np
import pytest

import dspsim.tflite as dt

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "support"))
from shared_models import peer_test_vectors  # noqa: E402

TFLM_CASES, TFLM = peer_test_vectors("tflm")
ORT_CASES, ORT = peer_test_vectors("ort")
QUIRK = "tflm_quirk_declared_output_shape"


def _same(got, want):
    """Bit-exact: same dtype and shape (a flat result of the right size is reshaped), floats by their bits."""
    got = np.asarray(got)
    if got.shape != want.shape and got.size == want.size:
        got = got.reshape(want.shape)
    assert got.dtype == want.dtype and got.shape == want.shape, (got.dtype, got.shape, want.dtype, want.shape)
    if want.dtype.kind == "f":
        bits = np.dtype(f"u{want.itemsize}")
        got, want = got.view(bits), want.view(bits)
    bad = np.flatnonzero(got.reshape(-1) != want.reshape(-1))
    assert bad.size == 0, f"{bad.size} of {want.size} values differ, first at {bad[0]}"


def _call(name):
    module, func = name.rsplit(".", 1)
    return getattr(importlib.import_module(module), func)


@pytest.mark.skipif(not TFLM_CASES, reason="../shared/conformance/peer-tests is not on this machine")
@pytest.mark.parametrize("case", TFLM_CASES, ids=[f"{c['id']}-{c['test'][:60]}" for c in TFLM_CASES])
def test_tflite_micro_unit_test_case(case):
    i = case["id"]
    if "call" in case:  # a utility test (QuantizeMultiplier): the literal expected values
        got = _call(case["call"])(*[TFLM[f"{i}:pos:{k}"] for k in range(case["n_pos"])], **case["kwargs"])
        for k in range(case["n_out"]):
            _same(got[k] if case.get("multi_out") else got, TFLM[f"{i}:golden:0:{k}"])
        return
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if case["family"] == QUIRK:  # the test's model declares a shape its operator does not compute
            with pytest.raises(ValueError, match=r"computes shape .* declares"):
                m = dt.load_model(TFLM[f"{i}:model"].tobytes(), engine="tflm")
                m.run([TFLM[f"{i}:in:0:{k}"] for k in range(case.get("n_inputs", 1))])
            return
        m = dt.load_model(TFLM[f"{i}:model"].tobytes(), engine="tflm")
        for step in range(case["invokes"]):
            outs = m.run([TFLM[f"{i}:in:{step}:{k}"] for k in range(case.get("n_inputs", 1))])
            for k in range(case["n_out"]):
                _same(outs[k], TFLM[f"{i}:engine:{step}:{k}"])


@pytest.mark.skipif(not ORT_CASES, reason="../shared/conformance/peer-tests is not on this machine")
@pytest.mark.parametrize("case", ORT_CASES, ids=[f"{c['id']}-{c['test'][:60]}" for c in ORT_CASES])
def test_onnx_runtime_unit_test_case(case):
    i = case["id"]
    args = [ORT[f"{i}:pos:{k}"] if f"{i}:pos:{k}" in ORT.files else None for k in range(case["n_pos"])]
    got = _call(case["call"])(*args, **case["kwargs"])
    got = list(got) if case.get("multi_out") else [got]
    for k in range(case["n_out"]):
        _same(got[k], ORT[f"{i}:engine:0:{k}"])


def test_every_peer_case_is_run_when_the_vectors_are_here():
    if not TFLM_CASES:
        pytest.skip("../shared/conformance/peer-tests is not on this machine")
    assert len(TFLM_CASES) == 212 and len(ORT_CASES) == 64
    assert sum(c["family"] == QUIRK for c in TFLM_CASES) == 4
