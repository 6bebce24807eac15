"""The int32-lane FIXED_POINT_DOUBLE requantization (dspsim.simd.requant_lanes) against the scalar primitive, the oracle."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numba import njit

from dspsim.simd import requant_lanes as simd
from dspsim import oracle as ref
from dspsim.fixedpoint import multiply_by_quantized_multiplier_scalar
from dspsim.requant import Requant, float_bias_arrays
from dspsim.kernels.quantize.requantize import prepare_requantize_into

INT32_MIN, INT32_MAX = -(1 << 31), (1 << 31) - 1
OUT = {"int8": np.int8, "uint8": np.uint8, "int16": np.int16}
# (zp, lo, hi) per output type: full ranges, extreme zero points, a ReLU6-like clamp, a one-value range
CLAMPS = {"int8": [(0, -128, 127), (5, -128, 127), (-128, -128, 127), (127, -128, 127), (-3, 0, 6), (9, 9, 9)],
          "uint8": [(0, 0, 255), (128, 0, 255), (255, 0, 255), (3, 3, 200)],
          "int16": [(0, -32768, 32767), (-32768, -32768, 32767), (32767, -32768, 32767), (100, -200, 300)]}


@njit
def scalar_rows(acc, n, mult, shift, zp, lo, hi, out):
    """The scalar primitive: clamp(MBQM(int64 acc, m, s) + zp, lo, hi), channel = index % n."""
    for i in range(acc.shape[0]):
        v = multiply_by_quantized_multiplier_scalar(np.int64(acc[i]), mult[i % n], shift[i % n]) + zp
        out[i] = min(max(v, lo), hi)


@njit
def vector_row(row, orow, mult, shift, zp, lo, hi):
    return simd.requantize_blocks(row, orow, simd.lane_parameters(mult, shift, row.shape[0], True), 0, zp, lo, hi)


def edge_accumulators():
    specials = [INT32_MIN, INT32_MIN + 1, INT32_MAX, INT32_MAX - 1, 0, 1, -1]
    for i in range(31):
        specials += [1 << i, -(1 << i), (1 << i) + 1, -(1 << i) - 1, (1 << i) - 1, -(1 << i) + 1]
    return np.array(specials, np.int64)


def edge_parameters():
    """64 channels: every shift in [-31, 30] and the edge multipliers 0, 1, 2^30, 2^31 - 1 on many shifts."""
    rng = np.random.default_rng(13)
    shift = np.concatenate([np.arange(-31, 31), [0, -1]])
    mult = rng.integers(0, 1 << 31, 64)
    mult[::4], mult[1::4], mult[2::4] = 0, 1, 1 << 30
    mult[3::8] = INT32_MAX
    return mult.astype(np.int64), shift.astype(np.int64)


def prepared(acc, n, mult, shift, zp, lo, hi, dtype):
    rq = Requant.fixed_point(mult, shift)
    out = np.empty(acc.size, dtype)
    run = prepare_requantize_into(acc.size, n, 32, False, rq, float_bias_arrays(None, rq, n if rq.channels > 1 else 1,
                                                                                 "test"), zp, lo, hi, "test")
    assert run(acc, out) == (0, 0, 0)  # count=False
    return out


@pytest.mark.parametrize("out_name", list(OUT))
def test_vector_blocks_equal_scalar_primitive_on_every_edge(out_name):
    mult, shift = edge_parameters()
    acc = np.repeat(edge_accumulators(), 64).astype(np.int32)  # every edge accumulator on every channel
    acc = np.concatenate([acc, np.random.default_rng(1).integers(INT32_MIN, INT32_MAX + 1, 64 * 64, dtype=np.int32)])
    for zp, lo, hi in CLAMPS[out_name]:
        want = np.empty(acc.size, OUT[out_name])
        scalar_rows(acc, 64, mult, shift, zp, lo, hi, want)
        got = prepared(acc, 64, mult, shift, zp, lo, hi, OUT[out_name])
        assert np.array_equal(got, want), (zp, lo, hi, int((got != want).sum()))
        for r in range(0, acc.size // 64, 7):  # the blocks alone, row by row
            orow = np.zeros(64, OUT[out_name])
            assert vector_row(acc[r * 64:(r + 1) * 64], orow, mult, shift, zp, lo, hi) == 64
            assert np.array_equal(orow, want[r * 64:(r + 1) * 64])


def test_per_tensor_parameters_broadcast_to_the_lanes():
    acc = np.repeat(edge_accumulators(), 37).astype(np.int32)  # 37: rows and blocks do not align
    for m, s in [(0, 0), (1, -31), (1 << 30, 30), (INT32_MAX, -1), (1518500250, -7), (INT32_MAX, 0)]:
        for zp, lo, hi in CLAMPS["int8"]:
            want = np.empty(acc.size, np.int8)
            scalar_rows(acc, 1, np.array([m]), np.array([s]), zp, lo, hi, want)
            assert np.array_equal(prepared(acc, 1, [m], [s], zp, lo, hi, np.int8), want), (m, s, zp, lo, hi)


@pytest.mark.parametrize("out_name", list(OUT))
def test_one_floor_lanes_equal_both_roundings_for_every_right_shift_from_2(out_name):
    """Rows whose every block has right shifts in [2, 31] take the one-floor lanes: each shift on every edge
    accumulator, with the edge multipliers 0, 1, 2^30, 2^31 - 1 and random ones, per tensor and per channel."""
    rng = np.random.default_rng(7)
    edges = edge_accumulators()
    for right in range(2, 32):
        mult = np.concatenate([[0, 1, 1 << 30, INT32_MAX], rng.integers(1 << 30, 1 << 31, 28)]).astype(np.int64)
        shift = np.full(32, -right, np.int64)
        acc = np.repeat(edges, 32).astype(np.int32)
        for zp, lo, hi in CLAMPS[out_name]:
            want = np.empty(acc.size, OUT[out_name])
            scalar_rows(acc, 32, mult, shift, zp, lo, hi, want)
            assert np.array_equal(prepared(acc, 32, mult, shift, zp, lo, hi, OUT[out_name]), want), (right, zp)
            one = np.full(1, mult[3])  # per tensor: INT32_MAX
            scalar_rows(acc, 1, one, shift[:1], zp, lo, hi, want)
            assert np.array_equal(prepared(acc, 1, one, shift[:1], zp, lo, hi, OUT[out_name]), want), (right, zp)


def test_lane_rounding_marks_the_shifts_the_one_floor_lanes_take():
    _, left, right, rounding = simd.lane_parameters(np.full(64, 1 << 30), np.arange(-33, 31), 64, True)[:4]
    assert np.array_equal(right - left, -np.arange(-33, 31))
    takes = (right >= 2) & (right <= 31)
    assert np.array_equal(rounding[takes], 1 << (right[takes] - 2)) and np.all(rounding[~takes] == -1)


def tie_accumulators(mult, right, zp_range=300):
    """For each channel, the accumulators whose one-floor numerator ``x * m + 2^30 + 2^(30 + right) - [x < 0] * 2^31``
    lies within 2 of a multiple of ``2^(31 + right)`` (exact ties and their neighbours), for codes in
    ``[-zp_range, zp_range]``: the values the float lanes must flag."""
    out = []
    d = 1 << (31 + right)
    for m in mult:
        m = int(m)
        for q in range(-zp_range, zp_range + 1, 7):
            for x0 in {(q * d - (1 << 30) - (1 << (30 + right))) // max(m, 1), (q * d - (1 << (30 + right)) + (1 << 30)) // max(m, 1)}:
                out += [x0 + k for k in range(-2, 3) if INT32_MIN <= x0 + k <= INT32_MAX]
    return np.array(out, np.int64)


@pytest.mark.parametrize("out_name", ["int8", "uint8"])
def test_float_lanes_flag_every_tie_and_its_neighbours(out_name):
    """8-bit codes take the float32 lanes first: on accumulators at and next to exact ties of the one floor, for
    every right shift in [2, 31] and multipliers 2^30 (power-of-two scales: many ties), 2^31 - 1 and random,
    they equal the scalar primitive (a flagged block falls back to the exact lanes)."""
    rng = np.random.default_rng(11)
    for right in range(2, 32):
        mult = np.array([1 << 30, INT32_MAX] + rng.integers(1 << 30, 1 << 31, 6).tolist(), np.int64)
        shift = np.full(8, -right, np.int64)
        acc = tie_accumulators(mult, right)
        acc = np.resize(acc, -(-acc.size // 8) * 8).astype(np.int32)  # whole rows of the 8 channels
        for zp, lo, hi in CLAMPS[out_name]:
            want = np.empty(acc.size, OUT[out_name])
            scalar_rows(acc, 8, mult, shift, zp, lo, hi, want)
            assert np.array_equal(prepared(acc, 8, mult, shift, zp, lo, hi, OUT[out_name]), want), (right, zp)


def test_float_lane_parameters_are_the_one_floor_scale_and_nudges():
    mult, shift = np.array([1 << 30, INT32_MAX, 5, 1 << 30]), np.array([-2, -31, -7, 0])
    lanes = simd.lane_parameters(mult, shift, 4, True)
    scale, pos, neg = lanes[4:].view(np.float32)
    right = np.array([2, 31, 7])
    np.testing.assert_array_equal(scale[:3], (mult[:3] * 2.0 ** -(31 + right)).astype(np.float32))
    np.testing.assert_array_equal(pos[:3], (0.5 + 2.0 ** -(1 + right) + simd.FLOAT_MARGIN).astype(np.float32))
    np.testing.assert_array_equal(neg[:3], (0.5 - 2.0 ** -(1 + right) + simd.FLOAT_MARGIN).astype(np.float32))
    assert scale[3] == pos[3] == neg[3] == 0  # shift 0: not a one-floor position


@settings(max_examples=300, deadline=None)
@given(data=st.data(), n=st.integers(1, 200), rows=st.integers(1, 3), out_name=st.sampled_from(list(OUT)),
       per_channel=st.booleans())
def test_random_rows_equal_the_oracle(data, n, rows, out_name, per_channel):
    channels = n if per_channel else 1
    mult = data.draw(st.lists(st.integers(0, INT32_MAX), min_size=channels, max_size=channels))
    shift = data.draw(st.lists(st.integers(-31, 30), min_size=channels, max_size=channels))
    acc = data.draw(st.lists(st.integers(INT32_MIN, INT32_MAX) | st.sampled_from(edge_accumulators().tolist()),
                             min_size=n * rows, max_size=n * rows))
    zp, lo, hi = data.draw(st.sampled_from(CLAMPS[out_name]))
    got = prepared(np.array(acc, np.int32), n, mult, shift, zp, lo, hi, OUT[out_name])
    want = [ref.clamp(ref.multiply_by_quantized_multiplier(a, mult[i % n if per_channel else 0],
                                                           shift[i % n if per_channel else 0]) + zp, lo, hi)
            for i, a in enumerate(acc)]
    assert got.tolist() == want


def test_blocks_cover_the_row_front_in_multiples_of_8():
    mult, shift = edge_parameters()
    for n in (1, 7, 8, 31, 32, 33, 64):
        row = np.arange(n, dtype=np.int32)
        assert vector_row(row, np.zeros(n, np.int8), mult[:n], shift[:n], 0, -128, 127) == n - n % 8


def test_blocks_leave_other_dtypes_to_the_scalar_loop():
    mult, shift = edge_parameters()
    assert vector_row(np.ones(64, np.int64), np.zeros(64, np.int8), mult, shift, 0, -128, 127) == 0
    assert vector_row(np.ones(64, np.int32), np.zeros(64, np.int32), mult, shift, 0, -128, 127) == 0


@pytest.mark.skipif(not simd.HAVE_AVX2, reason="the lanes compile to AVX2 only on an AVX2 target")
def test_blocks_compile_to_vpmuldq_on_32_bit_lanes():
    mult, shift = edge_parameters()
    fresh = njit(vector_row.py_func)  # not cached: its assembly is available
    fresh(np.ones(64, np.int32), np.zeros(64, np.int8), mult, shift, 0, -128, 127)
    asm = next(iter(fresh.inspect_asm().values()))
    assert "vpmuldq" in asm and "vpsravd" in asm  # even/odd int64 products; per-lane int32 shift
    assert "vpacksswb" in asm and "vpaddsw" in asm  # the saturating packs of store_codes
    assert "vfmadd" in asm and "vroundps" in asm  # the float32 lanes of 8-bit codes
