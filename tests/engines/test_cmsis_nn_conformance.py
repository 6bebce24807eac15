"""The CMSIS-NN engines against CMSIS-NN's own unit-test vectors, read where they live (../shared/conformance/cmsis-nn,
INDEX.md there: CMSIS offsets are negated zero points, a positive shift is a left shift).

Each case runs dspsim's kernel with the parameters the CMSIS test passes to its ``arm_*_s8`` function and the
engine's rule for the case's MAC family (the fixed-point build and tie rule of the engine's profile), and must give
every ``output_ref`` value. The cases are skipped on a clean clone, where ../shared is absent.
"""
from __future__ import annotations

import os
import sys

import numpy as np
import pytest

import dspsim
from dspsim import engines
from dspsim.kernels.arithmetic.elementwise import AddParams, add, mul
from dspsim.requant import Requant

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "support"))
from shared_models import cmsis_nn_conformance_cases  # noqa: E402

CMSIS_ENGINES = [name for name in engines.names() if name.startswith("tflm-cmsis-nn")]
FAMILIES = {"conv": "conv_2d", "depthwise": "depthwise_conv_2d", "fully_connected": "fully_connected"}
CASES = cmsis_nn_conformance_cases()


def _int(d, key, default=None):
    return int(d[key]) if key in d.files else default


def _padding(d):
    """(top, bottom), (left, right): CMSIS passes the top and left padding; the rest follows from the output."""
    pads = []
    for axis, size in (("y", "h"), ("x", "w")):
        extent = (int(d[f"filter_{size}"]) - 1) * int(d[f"dilation_{axis}"]) + 1
        needed = (int(d[f"output_{size}"]) - 1) * int(d[f"stride_{axis}"]) + extent
        before = int(d[f"pad_{axis}"])
        pads.append((before, max(0, needed - int(d[f"input_{size}"]) - before)))
    return tuple(pads)


def _mac(d, family, engine):
    rule = engines.get(engine).mac.family(FAMILIES[family]).requant
    requant = Requant.fixed_point(d["output_mult"].astype(np.int64), d["output_shift"].astype(np.int64),
                                  rule.rounding, tie=rule.shift_rounding)
    kw = dict(input_zero_point=-_int(d, "input_offset"), output_zero_point=_int(d, "output_offset"),
              act_min=_int(d, "act_min"), act_max=_int(d, "act_max"), requant=requant)
    x, w, bias = d["input"], d["weights"], d["bias"] if "bias" in d.files else None
    if family == "fully_connected":
        return dspsim.fully_connected(x, w, bias, weight_zero_point=-_int(d, "filter_offset", 0), **kw)
    geometry = dict(stride=(_int(d, "stride_y"), _int(d, "stride_x")), padding=_padding(d),
                    dilation=(_int(d, "dilation_y"), _int(d, "dilation_x")))
    if family == "conv":
        return dspsim.conv2d(x, w, bias, **geometry, **kw)
    return dspsim.depthwise_conv2d(x, w, bias, depth_multiplier=max(1, _int(d, "ch_mult", 1)), **geometry, **kw)


def _elementwise(d, family):
    zps = dict(input1_zero_point=-_int(d, "input1_offset"), input2_zero_point=-_int(d, "input2_offset"),
               output_zero_point=_int(d, "output_offset"), act_min=_int(d, "act_min"), act_max=_int(d, "act_max"))
    if family == "mul":
        return mul(d["input1"], d["input2"], multiplier=_int(d, "output_mult"), shift=_int(d, "output_shift"), **zps)
    params = AddParams(_int(d, "left_shift"), _int(d, "input1_mult"), _int(d, "input1_shift"), _int(d, "input2_mult"),
                       _int(d, "input2_shift"), _int(d, "output_mult"), _int(d, "output_shift"))
    return add(d["input1"], d["input2"], params, **zps)


@pytest.mark.skipif(not CASES, reason="../shared/conformance/cmsis-nn is not on this machine")
@pytest.mark.parametrize("engine", CMSIS_ENGINES)
@pytest.mark.parametrize("path", CASES, ids=[os.path.basename(p)[:-4] for p in CASES])
def test_cmsis_nn_unit_test_vectors_match_the_engine(path, engine):
    d = np.load(path)
    family = os.path.basename(path).split("__")[0]
    got = _elementwise(d, family) if family in ("add", "mul") else _mac(d, family, engine)
    want = d["output_ref"]
    got = np.asarray(got)
    assert got.shape == want.shape and got.dtype == want.dtype
    assert np.count_nonzero(got != want) == 0, f"{np.count_nonzero(got != want)} of {want.size} differ"
