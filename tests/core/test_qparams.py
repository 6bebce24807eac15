"""choose_qparams: every scheme against its framework (TFLite golden file, live torch), plus rules."""
import math
import os
import warnings
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dspsim import choose_qparams, pof2_frac_bits, quantize_per_tensor, quantize_pof2, tflite_quantize
from dspsim.qparams import SCHEMES

GOLDEN = os.path.join(os.path.dirname(os.path.dirname(__file__)), "golden", "qparams_tflite.npz")


@pytest.fixture(scope="module")
def golden():
    with np.load(GOLDEN) as z:
        d = dict(z)
    return d, [str(n) for n in d["cases"]], [str(m) for m in d["modes"]]


# --------------------------------------------------------------------------------------------
# TFLite converter (golden file written by TF 2.21)
# --------------------------------------------------------------------------------------------
def test_tflite_activation_params_equal_the_converter(golden):
    z, names, modes = golden
    checked = 0
    for n, m in zip(names, modes):
        p = choose_qparams(z[f"{n}__rmin"], z[f"{n}__rmax"], "int8" if m == "a8" else "int16", "tflite")
        assert p.scale.view(np.uint32) == z[f"{n}__in_scale"].view(np.uint32)[0], n
        assert p.zero_point == z[f"{n}__in_zp"][0], n
        checked += 1
    assert checked == 40


def test_tflite_weight_params_equal_the_converter_per_channel(golden):
    z, names, modes = golden
    channels = 0
    for n, m in zip(names, modes):
        W = z[f"{n}__W"]  # (K, N): FULLY_CONNECTED weights are (N, K), quantized along N
        assert z[f"{n}__w_axis"] == 0
        p = choose_qparams(W.min(axis=0), W.max(axis=0), "int8", "tflite_weight")
        want = z[f"{n}__w_scale"]
        nonzero = np.any(W != 0, axis=0)
        if m == "a16":  # 16x8 mode writes scale 0 for an all-zero channel (docs/engines.md)
            assert np.all(want[~nonzero] == 0)
        ok = nonzero | (m == "a8")
        np.testing.assert_array_equal(p.scale[ok].view(np.uint32), want[ok].view(np.uint32), err_msg=n)
        assert np.all(z[f"{n}__w_zp"] == 0) and np.all(p.zero_point == 0)
        channels += int(ok.sum())
    assert channels >= 155


def test_tflite_weight_codes_equal_tflite_quantize_with_the_chosen_scales(golden):
    z, names, _ = golden
    codes = 0
    for n in names:
        W = z[f"{n}__W"].T.copy()
        p = choose_qparams(W.min(axis=1), W.max(axis=1), "int8", "tflite_weight")
        ok = z[f"{n}__w_scale"] > 0  # (16x8 mode: all-zero channels get scale 0)
        got = tflite_quantize(W[ok], p.scale[ok], 0, "int8", axis=0)
        np.testing.assert_array_equal(got, z[f"{n}__w_q"][ok], err_msg=n)
        codes += got.size
    assert codes == 1264


def test_tflite_widens_to_zero_and_grows_tiny_ranges():
    assert choose_qparams(0.5, 2.0, "int8", "tflite") == choose_qparams(0.0, 2.0, "int8", "tflite")
    p = choose_qparams(0.0, 1e-7, "int8", "tflite")  # [-1e-6, 1.1e-6] as the converter does
    assert p.scale == np.float32(np.float32(np.float32(1.1e-6) - np.float32(-1e-6)) / np.float32(255))
    assert p.zero_point == -7


def test_mlir_nudged_formula_is_not_what_the_converter_writes(golden):
    """The double-precision MLIR nudging differs from the PTQ converter's float32 DownCastScale."""
    z, names, modes = golden
    differ = 0
    for n, m in zip(names, modes):
        if m != "a8":
            continue
        lo, hi = min(float(z[f"{n}__rmin"]), 0.0), max(float(z[f"{n}__rmax"]), 0.0)
        if hi - lo < 1e-6:
            continue
        p = choose_qparams(lo, hi, "int8", "mlir_nudged")
        differ += p.scale != z[f"{n}__in_scale"][0] or p.zero_point != z[f"{n}__in_zp"][0]
    assert differ == 10


def test_mlir_nudged_takes_the_zero_point_from_the_end_with_smaller_error():
    # [-10, 0.1]: from max: 127 - 0.1 / s = 124.475..., from min: -128 + 10 / s = 124.475...
    p = choose_qparams(-10.0, 0.1, "int8", "mlir_nudged")
    s = 10.1 / 255
    assert p.scale == np.float32(s)
    err_min, err_max = 128 + 10 / s, 127 + 0.1 / s
    assert err_max < err_min and p.zero_point == round(127 - 0.1 / s)
    assert choose_qparams(1.0, 1.0, "int8", "mlir_nudged")[:2] == (np.float32(1.0), -128)


# --------------------------------------------------------------------------------------------
# PyTorch observers (live)
# --------------------------------------------------------------------------------------------
def _torch_params(torch, lo, hi, dtype, symmetric, **kw):
    from torch.ao.quantization import MinMaxObserver

    qs = torch.per_tensor_symmetric if symmetric else torch.per_tensor_affine
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        o = MinMaxObserver(dtype=getattr(torch, dtype), qscheme=qs, **kw)
    o.min_val = torch.tensor(np.float32(lo))
    o.max_val = torch.tensor(np.float32(hi))
    s, z = o.calculate_qparams()
    return np.float32(s.item()), int(z.item()), o.quant_min, o.quant_max


TORCH_CONFIGS = [
    ("quint8", {}), ("qint8", {}), ("qint32", {}), ("quint8", {"reduce_range": True}),
    ("qint8", {"reduce_range": True}), ("qint8", {"quant_min": -127, "quant_max": 127}),
    ("quint8", {"quant_min": 0, "quant_max": 15}), ("qint8", {"quant_min": -8, "quant_max": 7, "reduce_range": True}),
    ("int16", {}), ("uint16", {}), ("int8", {}), ("uint8", {}), ("qint8", {"eps": 1e-3}),
]


def _ranges(seed, n):
    rng = np.random.default_rng(seed)
    out = [(-1.0, 1.0), (0.0, 0.0), (0.0, 1.0), (-1.0, 0.0), (0.5, 2.0), (-3.0, -1.0), (-1e-9, 1e-9), (-3e3, 1e-2)]
    for _ in range(n):
        a = -abs(rng.normal()) * 10 ** rng.uniform(-6, 4) * rng.integers(0, 2)
        b = abs(rng.normal()) * 10 ** rng.uniform(-6, 4) * rng.integers(0, 2)
        out.append((float(np.float32(a)), float(np.float32(b))))
    return out


@pytest.mark.parametrize("symmetric", [False, True])
@pytest.mark.parametrize("dtype,kw", TORCH_CONFIGS)
def test_torch_schemes_equal_minmax_observer(dtype, kw, symmetric):
    torch = pytest.importorskip("torch")
    if symmetric and kw.get("reduce_range") and dtype == "quint8":
        pytest.skip("torch refuses this combination (tested below)")
    scheme = "torch_symmetric" if symmetric else "torch_affine"
    for lo, hi in _ranges(hash((dtype, symmetric)) % 1000, 300):
        want = _torch_params(torch, lo, hi, dtype, symmetric, **kw)
        p = choose_qparams(lo, hi, dtype, scheme, **kw)
        assert (p.scale, p.zero_point, p.quant_min, p.quant_max) == want, (lo, hi)
        assert p.scale.view(np.uint32) == want[0].view(np.uint32)


def test_torch_per_channel_observer_equals_the_vector_form():
    torch = pytest.importorskip("torch")
    from torch.ao.quantization import PerChannelMinMaxObserver

    rng = np.random.default_rng(3)
    w = (rng.normal(size=(6, 5)) * 10 ** rng.uniform(-3, 2, size=(6, 1))).astype(np.float32)
    w[2] = np.abs(w[2])
    w[4] = 0.0
    for qs, scheme in ((torch.per_channel_affine, "torch_affine"), (torch.per_channel_symmetric, "torch_symmetric")):
        o = PerChannelMinMaxObserver(ch_axis=0, dtype=torch.qint8, qscheme=qs)
        o(torch.from_numpy(w))
        s, z = o.calculate_qparams()
        p = choose_qparams(w.min(1), w.max(1), "qint8", scheme)
        np.testing.assert_array_equal(p.scale.view(np.uint32), s.numpy().astype(np.float32).view(np.uint32))
        np.testing.assert_array_equal(p.zero_point, z.numpy())


def test_torch_qint32_zero_point_wraps_like_torch():
    # min/scale below -2^31: .to(torch.int) gives INT32_MIN on x86, so the zero point becomes 0
    p = choose_qparams(-387.06732, 0.0, "qint32", "torch_affine")
    assert p.scale == np.float32(np.finfo(np.float32).eps) and p.zero_point == 0


def test_torch_affine_rounds_the_zero_point_half_to_even():
    # [-0.5 * s, 254.5 * s] with s = 1: min / s = -0.5 exactly -> rint -> 0 (ties to even), zp = 0
    p = choose_qparams(-0.5, 254.5, "quint8", "torch_affine")
    assert p.scale == 1.0 and p.zero_point == 0
    p = choose_qparams(-1.5, 253.5, "quint8", "torch_affine")
    assert p.scale == 1.0 and p.zero_point == 2


@settings(max_examples=300, deadline=None)
@given(st.floats(-1e4, 0, width=32), st.floats(0, 1e4, width=32), st.sampled_from(["quint8", "qint8"]))
def test_torch_affine_hypothesis(lo, hi, dtype):
    torch = pytest.importorskip("torch")
    want = _torch_params(torch, lo, hi, dtype, False)
    p = choose_qparams(lo, hi, dtype, "torch_affine")
    assert (p.scale, p.zero_point) == want[:2]


# --------------------------------------------------------------------------------------------
# textbook, symmetric, power of two
# --------------------------------------------------------------------------------------------
def test_textbook_truncates_where_rounding_goes_up():
    p = choose_qparams(-0.3, 1.0, "uint8", "textbook")
    exact = Fraction(0.3) * 255 / (Fraction(1.0) + Fraction(0.3))  # 58.846...
    assert p.zero_point == 58 == math.floor(exact)
    assert choose_qparams(-0.3, 1.0, "uint8", "torch_affine").zero_point == 59 == round(exact)
    assert p.scale == np.float32(1.3 / 255)


def test_textbook_differs_from_rounding_on_about_half_of_ranges():
    rng = np.random.default_rng(11)
    differ = total = 0
    for _ in range(2000):
        lo, hi = -rng.uniform(0, 5), rng.uniform(0.01, 5)
        z_trunc = choose_qparams(lo, hi, "uint8", "textbook").zero_point
        z_round = round((hi * 0 - lo * 255) / (hi - lo))
        assert z_round - z_trunc in (0, 1)  # z >= 0 here, so int() = floor
        differ += z_round != z_trunc
        total += 1
    assert 0.4 < differ / total < 0.6


def test_textbook_negative_zero_point_truncates_toward_zero():
    # int8 [-1, 10]: z = (10 * -128 - (-1) * 127) / 11 = -104.818..., int() gives -104, round() -105
    p = choose_qparams(-1.0, 10.0, "int8", "textbook")
    assert p.zero_point == -104


def test_symmetric_has_zero_point_0_exact_zero_and_narrow_range():
    p = choose_qparams(-2.0, 0.5, "int8", "symmetric")
    assert (p.zero_point, p.quant_min, p.quant_max) == (0, -127, 127)
    assert p.scale == np.float32(2.0 / 127)
    q = quantize_per_tensor(np.array([-2.0, 0.0, 2.0], np.float32), float(p.scale), 0, "qint8")
    assert q.tolist() == [-127, 0, 127]
    assert choose_qparams(-2.0, 0.5, "int8", "symmetric", narrow_range=False).quant_min == -128
    assert choose_qparams(0.0, 0.0, "int16", "symmetric").scale == 1.0


@pytest.mark.parametrize("lo,hi,bits", [(-1.0, 1.0, 8), (-0.3, 6.0, 8), (-1e-3, 2e-4, 8), (-300.0, 5.0, 16),
                                        (0.0, 0.9921875, 8), (-1.0, 0.5, 4)])
def test_pof2_is_the_smallest_power_of_two_range_covering_the_data(lo, hi, bits):
    dtype = "int8" if bits <= 8 else "int16"
    p = choose_qparams(lo, hi, dtype, "pof2", bits=bits)
    f = pof2_frac_bits(np.array([lo, hi]), bits)
    assert p.scale == np.float32(2.0**-f) and p.zero_point == 0
    qmax = (1 << (bits - 1)) - 1
    q = quantize_pof2(np.array([lo, hi]), f, bits)  # no saturation at f ...
    assert np.all(np.abs(q) <= qmax) and np.all(np.abs(np.array([lo, hi]) * 2.0**f) <= qmax)
    assert np.any(np.abs(np.array([lo, hi]) * 2.0 ** (f + 1)) > qmax)  # ... but at f + 1


def test_per_channel_inputs_give_arrays():
    p = choose_qparams([-1.0, -2.0, 0.0], [1.0, 0.5, 3.0], "int8", "tflite_weight")
    assert p.scale.dtype == np.float32 and p.zero_point.dtype == np.int64 and p.scale.shape == (3,)
    np.testing.assert_array_equal(p.scale, np.float32([1 / 127, 2 / 127, 3 / 127]))


def test_every_scheme_gives_a_zero_point_inside_its_range():
    for scheme in SCHEMES:
        dtype = "int8"
        for lo, hi in [(-1.0, 1.0), (-0.1, 5.0), (-5.0, 0.1), (-1e-5, 1e-5)]:
            p = choose_qparams(lo, hi, dtype, scheme)
            assert p.quant_min <= p.zero_point <= p.quant_max and p.scale > 0, (scheme, lo, hi)


# --------------------------------------------------------------------------------------------
# refusals
# --------------------------------------------------------------------------------------------
@pytest.mark.parametrize("args,kw,exc,msg", [
    ((1.0, -1.0), {}, ValueError, "min must be <= max"),
    ((float("nan"), 1.0), {}, ValueError, "finite"),
    ((-1.0, float("inf")), {}, ValueError, "finite"),
    (([], []), {}, ValueError, "empty"),
    (([0.0, 1.0], [1.0]), {}, ValueError, "same shape"),
    (("a", 1.0), {}, TypeError, "real number"),
    ((-1.0, 1.0, "uint8", "symmetric"), {}, ValueError, "signed dtype"),
    ((-1.0, 1.0, "uint8", "pof2"), {}, ValueError, "signed dtype"),
    ((-1.0, 1.0, "uint16", "tflite"), {}, ValueError, "int8 .asymmetric. and int16"),
    ((-1.0, 1.0, "uint8", "tflite_weight"), {}, ValueError, "symmetric int8"),
    ((-1.0, 1.0, "int8", "nope"), {}, ValueError, "unknown scheme"),
    ((-1.0, 1.0, "float32"), {}, ValueError, "unknown integer type"),
    ((-1.0, 1.0, np.float32), {}, TypeError, "integer type"),
    ((-1.0, 1.0, "quint8", "torch_symmetric"), {"reduce_range": True}, ValueError, "cannot reduce range"),
    ((-1.0, 1.0, "qint8", "torch_affine"), {"quant_min": 1, "quant_max": 7}, ValueError, "quant_min <= 0"),
    ((-1.0, 1.0, "qint8", "torch_affine"), {"quant_min": -200, "quant_max": 7}, ValueError, "does not fit"),
    ((-1.0, 1.0, "qint8", "torch_affine"), {"quant_min": -2}, ValueError, "both quant_min"),
    ((-1.0, 1.0, "qint8", "tflite"), {"reduce_range": True}, ValueError, "torch schemes only"),
    ((0.5, 1.0, "uint8", "textbook"), {}, ValueError, "min <= 0 <= max"),
    ((0.0, 0.0, "int16", "tflite"), {}, ValueError, "all-zero range"),
    ((-1.0, 1.0, "int8", "pof2"), {"bits": 9}, ValueError, "bits must be"),
])
def test_bad_input_is_refused_naming_the_rule(args, kw, exc, msg):
    with pytest.raises(exc, match=f"choose_qparams: .*{msg}"):
        choose_qparams(*args, **kw)
