"""Descriptors of the recurrent family: UNIDIRECTIONAL_SEQUENCE_LSTM, SVDF.

Each operator's kernel, its oracle in :mod:`dspsim.oracle`, the tiny calls that compile it and its suite cases (:mod:`dspsim.catalog.descriptor`).
"""
from __future__ import annotations

import numpy as np

from .. import oracle as ref
from ..fixedpoint import quantize_multiplier
from ..kernels.recurrent.lstm import litert_lstm_params, lstm, tflm_lstm_params
from ..kernels.recurrent.svdf import svdf
from .descriptor import Operator, SuiteCase, random_codes, register


def _lstm_case(p, rng):
    n_b, n_t, n_i, n_c = p["batch"], p["time"], p["inputs"], p["cells"]
    build = tflm_lstm_params if p["arithmetic"] == "tflm" else litert_lstm_params
    scales = dict(input_scale=p["input_scale"], input_zero_point=p["input_zero_point"],
                  input_weight_scales=[p["weight_scale"] * (1 + 0.1 * k) for k in range(4)],
                  recurrent_weight_scales=[p["weight_scale"] * (1.2 - 0.1 * k) for k in range(4)],
                  output_state_scale=p["state_scale"], output_state_zero_point=p["state_zero_point"],
                  cell_state_scale=p["cell_scale"], cell_clip=p["cell_clip"])
    if p["arithmetic"] == "litert":
        scales.update(hidden_scale=p["state_scale"], hidden_zero_point=p["state_zero_point"])
    return dict(x=random_codes(rng, (n_b, n_t, n_i), np.int8), input_weights=random_codes(rng, (4, n_c, n_i), np.int8),
                recurrent_weights=random_codes(rng, (4, n_c, n_c), np.int8),
                bias=rng.integers(-2**14, 2**14, (4, n_c)).astype(np.int32),
                output_state=random_codes(rng, (n_b, n_c), np.int8), cell_state=random_codes(rng, (n_b, n_c), np.int16),
                params=build(**scales))


def _register_lstm():
    params = {"arithmetic": "tflm", "batch": 2, "time": 5, "inputs": 12, "cells": 8, "input_scale": 0.06,
              "input_zero_point": -128, "weight_scale": 0.02, "state_scale": 0.0078, "state_zero_point": -3,
              "cell_scale": 2.0**-11, "cell_clip": 10.0}
    rng = np.random.default_rng(0)
    register(Operator(
        "lstm", lstm, ref.lstm_oracle,
        lambda: [_lstm_case({**params, "arithmetic": a, "time": 2, "inputs": 3, "cells": 2}, rng)
                 for a in ("tflm", "litert")],
        "int8 UNIDIRECTIONAL_SEQUENCE_LSTM, int16 gates and cell (TFLM tables or LiteRT gemmlowp int16)",
        generate=_lstm_case, params=params, choices={"arithmetic": ("tflm", "litert")},
        cases=(SuiteCase("lstm-tflm", {}, 2500),
               SuiteCase("lstm-litert", {"arithmetic": "litert"}, 2501),
               SuiteCase("lstm-tflm-saturating-gates", {"weight_scale": 0.2, "cell_clip": 0.0}, 2502),
               SuiteCase("lstm-litert-saturating-gates", {"arithmetic": "litert", "weight_scale": 0.2,
                                                          "cell_scale": 2.0**-12, "cell_clip": 2.0}, 2503))))


def _svdf_case(p, rng):
    b, i, f, m, rank = p["batch"], p["inputs"], p["filters"], p["memory"], p["rank"]
    st = np.dtype(p["state_dtype"])
    m1, s1 = quantize_multiplier(p["feature_scale"])
    m2, s2 = quantize_multiplier(p["output_scale"])
    return dict(x=random_codes(rng, (b, i), np.int8), weights_feature=random_codes(rng, (f, i), np.int8),
                weights_time=random_codes(rng, (f, m), st), bias=rng.integers(-2**20, 2**20, f // rank).astype(np.int32),
                state=random_codes(rng, (b, f * m), st), rank=rank, input_zero_point=p["input_zero_point"],
                state_zero_point=p["state_zero_point"], output_zero_point=p["output_zero_point"],
                feature_multiplier=m1, feature_shift=s1, output_multiplier=m2, output_shift=s2)


def _register_recurrent():
    params = {"batch": 2, "inputs": 40, "filters": 24, "memory": 8, "rank": 2, "state_dtype": "int16",
              "input_zero_point": -3, "state_zero_point": 0, "output_zero_point": 5, "feature_scale": 0.004,
              "output_scale": 2e-5}
    rng = np.random.default_rng(0)
    register(Operator(
        "svdf", svdf, ref.svdf_oracle,
        lambda: [_svdf_case({**params, "state_dtype": dt, "filters": 4, "inputs": 3, "memory": 2}, rng)
                 for dt in ("int16", "int8")],
        "TFLite int8 SVDF, one frame (TFLM EvalIntegerSvdfReference): feature MBQM, state shift, time MBQM",
        generate=_svdf_case, params=params, choices={"state_dtype": ("int16", "int8")},
        cases=(SuiteCase("svdf-int16-state", {}, 2300),
               SuiteCase("svdf-int8-state-zp", {"state_dtype": "int8", "state_zero_point": 7, "output_scale": 0.002},
                         2301),
               SuiteCase("svdf-saturating-feature", {"feature_scale": 0.5, "rank": 1}, 2302))))


_register_lstm()
_register_recurrent()
