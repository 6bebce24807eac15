"""The Signal library kernels (dspsim.kernels.signal) against their plain-Python oracle (dspsim.oracle.signal) on
random and edge inputs (int16 min / max, zero, every shift), the C arithmetic's surprises pinned by hand, and bad
input. The golden vectors of the tflite-micro wheel are checked in tests/tflite/test_signal_models.py."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dspsim.kernels.signal import (
    signal_delay, signal_energy, signal_fft_auto_scale, signal_filter_bank, signal_filter_bank_log,
    signal_filter_bank_spectral_subtraction, signal_filter_bank_square_root, signal_framer, signal_overlap_add,
    signal_irfft, signal_pcan, signal_rfft, signal_stacker, signal_window,
)
from dspsim.oracle import signal as ref

SEEDS = st.integers(0, 2 ** 32 - 1)
I16_EDGES = np.array([-32768, -32767, -32766, -1, 0, 1, 2, 32765, 32766, 32767], np.int16)


def _int16(rng, n):
    """Random int16 with the edges mixed in, at a random level (full scale down to a few bits)."""
    x = rng.integers(-32768, 32768, n) >> int(rng.integers(0, 15))
    x[rng.integers(0, n, max(1, n // 8))] = rng.choice(I16_EDGES, max(1, n // 8))
    return x.astype(np.int16)


def _uint(rng, n, bits):
    x = rng.integers(0, 2 ** 63, n, dtype=np.uint64) >> np.uint64(64 - int(rng.integers(1, bits + 1)))
    x[: min(n, 3)] = [0, 1, 2 ** bits - 1][: min(n, 3)]
    return x.astype(np.uint32 if bits <= 32 else np.uint64)


def _same(got, want):
    if isinstance(want, tuple):
        for g, w in zip(got, want):
            _same(g, w)
        return
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(got, want)


def _both(kernel, oracle, *args, **kw):
    _same(kernel(*args, **kw), oracle(*args, **kw))


@settings(max_examples=40, deadline=None)
@given(SEEDS)
def test_window_matches_oracle_for_every_shift(seed):
    rng = np.random.default_rng(seed)
    w = _int16(rng, 16)
    x = _int16(rng, 48).reshape(3, 16)
    _both(signal_window, ref.signal_window_oracle, x, w, int(rng.integers(0, 32)))


def test_window_saturates_the_product_of_full_scale_values():
    x = np.array([-32768, -32768, 32767, 32767], np.int16)
    w = np.array([-32768, 32767, -32768, 32767], np.int16)
    assert signal_window(x, w, 0).tolist() == [32767, -32768, -32768, 32767]
    assert signal_window(x, w, 31).tolist() == [0, -1, -1, 0]


@settings(max_examples=60, deadline=None)
@given(SEEDS)
def test_fft_auto_scale_matches_oracle(seed):
    rng = np.random.default_rng(seed)
    _both(signal_fft_auto_scale, ref.signal_fft_auto_scale_oracle, _int16(rng, int(rng.integers(1, 64))))


@pytest.mark.parametrize("x, want, bits", [
    ([0, 0, 0], [0, 0, 0], 0),                       # silence: MostSignificantBit32(0) is 32 under GCC -> no shift
    ([1, -1], [16384, -16384], 14),
    ([-16384, 5], [-16384, 5], 0),
    ([-32768, 5], [0, 20480], 12),                   # -(-32768) stored in the int16 maximum wraps; 5 then wins
    ([-32768, -5], [-32768, -5], 0),                 # -5 > -32768: the "maximum" ends at -5, negative: no shift
    ([5, -32768], [5, -32768], 0),                   # the wrapped maximum is -32768: bit 31 set, no shift
])
def test_fft_auto_scale_keeps_the_maximum_in_an_int16(x, want, bits):
    out, got_bits = signal_fft_auto_scale(np.array(x, np.int16))
    assert (out.tolist(), got_bits) == (want, bits)


def _int32(rng, n):
    x = rng.integers(-2 ** 31, 2 ** 31, n) >> int(rng.integers(0, 31))
    x[rng.integers(0, n, max(1, n // 8))] = rng.choice([-2 ** 31, -2 ** 31 + 1, -1, 0, 1, 2 ** 31 - 1], max(1, n // 8))
    return x.astype(np.int32)


@settings(max_examples=16, deadline=None)
@given(SEEDS, st.sampled_from([4, 8, 32, 64]), st.sampled_from([_int16, _int32]))
def test_rfft_matches_oracle_with_zero_padding_int16_and_int32(seed, n, make):
    rng = np.random.default_rng(seed)
    x = make(rng, 2 * int(rng.integers(1, n + 1))).reshape(2, -1)
    _both(signal_rfft, ref.signal_rfft_oracle, x, n)


def test_rfft_of_full_scale_edges_matches_oracle():
    for fill in (-32768, 32767):
        _both(signal_rfft, ref.signal_rfft_oracle, np.full(512, fill, np.int16), 512)
    _both(signal_rfft, ref.signal_rfft_oracle, np.tile(np.array([32767, -32768], np.int16), 240), 512)


@settings(max_examples=16, deadline=None)
@given(SEEDS, st.sampled_from([4, 8, 16, 32, 64]), st.sampled_from([_int16, _int32]))
def test_irfft_matches_oracle_on_any_bins_int16_and_int32(seed, n, make):
    rng = np.random.default_rng(seed)
    _both(signal_irfft, ref.signal_irfft_oracle, make(rng, 2 * (n + 2)).reshape(2, n + 2), n)


def test_irfft_inverts_rfft_up_to_the_block_scaling():
    x = (np.arange(64) * 997 % 4001 - 2000).astype(np.int16)
    y = signal_irfft(signal_rfft(x, 64), 64).astype(np.int64) * 64   # 1/64 forward, 1/2 * 1/32 inverse
    assert np.max(np.abs(y - x)) < 4 * 64   # a few LSB of the 1/64-scaled int16 spectrum


@settings(max_examples=40, deadline=None)
@given(SEEDS)
def test_energy_matches_oracle(seed):
    rng = np.random.default_rng(seed)
    x = _int16(rng, 2 * 20)
    end = int(rng.integers(0, 21))
    _both(signal_energy, ref.signal_energy_oracle, x, int(rng.integers(0, end + 1)), end)


def test_energy_of_minus_full_scale_is_2_to_31():
    assert signal_energy(np.array([-32768, -32768, 1, 1], np.int16), 0, 2).tolist() == [2 ** 31, 2]


def _filter_bank_case(rng, channels=6, bins=32):
    widths = rng.integers(0, 6, channels + 1)
    freq = np.array([rng.integers(0, bins - w + 1) for w in widths])
    wstart = np.concatenate([[0], np.cumsum(widths)[:-1]])
    nw = int(widths.sum()) + 1
    return (_uint(rng, bins, 32), _int16(rng, nw), _int16(rng, nw), freq.astype(np.int16), wstart.astype(np.int16),
            widths.astype(np.int16), channels)


@settings(max_examples=40, deadline=None)
@given(SEEDS)
def test_filter_bank_matches_oracle_wrapping_modulo_2_to_64(seed):
    _both(signal_filter_bank, ref.signal_filter_bank_oracle, *_filter_bank_case(np.random.default_rng(seed)))


@settings(max_examples=40, deadline=None)
@given(SEEDS)
def test_square_root_matches_oracle_for_every_shift(seed):
    rng = np.random.default_rng(seed)
    x = np.concatenate([_uint(rng, 12, 64), _uint(rng, 12, 32).astype(np.uint64)])
    _both(signal_filter_bank_square_root, ref.signal_filter_bank_square_root_oracle, x, int(rng.integers(0, 32)))


def test_square_root_rounds_up_except_at_all_ones():
    x = np.array([0, 1, 2, 3, 2 ** 32 - 1, 2 ** 32, 2 ** 64 - 1, 65535 ** 2 + 65535, 65535 ** 2 + 65536],
                 np.uint64)
    assert signal_filter_bank_square_root(x, 0).tolist() == [0, 1, 1, 2, 65535, 65536, 2 ** 32 - 1, 65535, 65535]


@settings(max_examples=40, deadline=None)
@given(SEEDS, st.booleans())
def test_spectral_subtraction_matches_oracle_over_frames(seed, clamping):
    rng = np.random.default_rng(seed)
    est = np.zeros(8, np.uint32)
    coeffs = dict(smoothing=int(rng.integers(0, 2 ** 14)), one_minus_smoothing=int(rng.integers(0, 2 ** 14)),
                  alternate_smoothing=int(rng.integers(0, 2 ** 32)),
                  alternate_one_minus_smoothing=int(rng.integers(0, 2 ** 32)),
                  smoothing_bits=int(rng.integers(0, 32)), spectral_subtraction_bits=int(rng.integers(0, 64)),
                  min_signal_remaining=int(rng.integers(0, 2 ** 32)), clamping=clamping)
    for _ in range(4):  # the estimate carries over, as the op's state does
        x = _uint(rng, 8, 32)
        out, new = signal_filter_bank_spectral_subtraction(x, est, **coeffs)
        _same((out, new), ref.signal_filter_bank_spectral_subtraction_oracle(x, est, **coeffs))
        est = new


@settings(max_examples=40, deadline=None)
@given(SEEDS)
def test_pcan_matches_oracle(seed):
    rng = np.random.default_rng(seed)
    _both(signal_pcan, ref.signal_pcan_oracle, _uint(rng, 16, 32), _uint(rng, 16, 32), _int16(rng, 125),
          int(rng.integers(0, 64)))


@settings(max_examples=40, deadline=None)
@given(SEEDS)
def test_filter_bank_log_matches_oracle(seed):
    rng = np.random.default_rng(seed)
    scale = int(rng.choice([64, 1 << 16, int(rng.integers(0, 2 ** 32))]))
    _both(signal_filter_bank_log, ref.signal_filter_bank_log_oracle, _uint(rng, 24, 32), scale,
          int(rng.integers(0, 32)))


def test_filter_bank_log_wraps_the_output_scale_product_in_uint32():
    x = np.array([0, 1, 2, 2 ** 32 - 1], np.uint32)
    assert signal_filter_bank_log(x, 64, 0).tolist() == [0, 0, 44, 1420]
    big = signal_filter_bank_log(np.array([2 ** 31], np.uint32), 2 ** 16, 0)  # 2^16 ln(2^31) * 2^16 wraps
    assert big.tolist() == ref.signal_filter_bank_log_oracle(np.array([2 ** 31], np.uint32), 2 ** 16, 0).tolist()
    assert big[0] != min(round(31 * np.log(2) * 2 ** 16), 32767)


@settings(max_examples=25, deadline=None)
@given(SEEDS)
def test_streaming_ops_match_oracle_with_their_state_carried(seed):
    rng = np.random.default_rng(seed)
    rows, step = int(rng.integers(1, 3)), int(rng.integers(1, 4))
    size, n = int(rng.integers(1, 7)), int(rng.integers(1, 3))
    delay = int(rng.integers(0, 9))
    hist = np.zeros((rows, delay), np.int16)
    fifo = np.zeros((rows, size - step if size > step else 0), np.int16)
    prev = np.zeros((rows, n, size), np.int16)
    nc, left, right = int(rng.integers(1, 4)), int(rng.integers(0, 3)), int(rng.integers(0, 3))
    sfifo, sprev, sstep = None, np.zeros((left + right + 1) * nc, np.int16), int(rng.integers(1, left + right + 2))
    buf16, buf32 = np.zeros((rows, size), np.int16), np.zeros((rows, size), np.float32)
    ostep = int(rng.integers(1, size + 1))
    for _ in range(5):
        x = _int16(rng, rows * 8).reshape(rows, 8)
        got = signal_delay(x, hist, delay)
        _same(got, ref.signal_delay_oracle(x, hist, delay))
        hist = got[1]
        xf = _int16(rng, rows * n * step).reshape(rows, n * step)
        got = signal_framer(xf, fifo, prev, size, step)
        _same(got[0], ref.signal_framer_oracle(xf, fifo, prev, size, step)[0])
        assert got[1] == ref.signal_framer_oracle(xf, fifo, prev, size, step)[1]
        _same(got[2], ref.signal_framer_oracle(xf, fifo, prev, size, step)[2])
        prev, fifo = got[0], got[2]
        xs = _int16(rng, nc)
        got = signal_stacker(xs, sfifo, nc, left, right, sstep, sprev)
        want = ref.signal_stacker_oracle(xs, sfifo, nc, left, right, sstep, sprev)
        _same(got[0], want[0])
        _same(got[2], want[2])
        assert got[1] == want[1]
        sprev, sfifo = got[0], got[2]
        xo = _int16(rng, rows * 2 * size).reshape(rows, 2, size)
        got = signal_overlap_add(xo, buf16, ostep)
        _same(got, ref.signal_overlap_add_oracle(xo, buf16, ostep))
        buf16 = got[1]
        xo32 = rng.normal(0, 1e4, (rows, 2, size)).astype(np.float32)
        got = signal_overlap_add(xo32, buf32, ostep)
        _same(got, ref.signal_overlap_add_oracle(xo32, buf32, ostep))
        buf32 = got[1]


def test_overlap_add_saturates_int16_sums():
    out, buf = signal_overlap_add(np.full((1, 2, 4), 30000, np.int16), np.zeros((1, 4), np.int16), 2)
    assert out.tolist() == [[30000, 30000, 32767, 32767]] and buf.tolist() == [[30000, 30000, 0, 0]]


U32_EDGES = np.array([0, 1, 2, 3, 255, 256, 65535, 65536, 2 ** 31 - 1, 2 ** 31, 2 ** 32 - 2, 2 ** 32 - 1], np.uint32)


def test_every_shift_matches_oracle_on_edge_values():
    x = np.tile(I16_EDGES, 2)
    w = np.repeat(I16_EDGES, 2)
    wide = np.concatenate([U32_EDGES.astype(np.uint64), np.array([2 ** 32 + 1, 2 ** 63, 2 ** 64 - 1], np.uint64)])
    lut = np.resize(I16_EDGES, 125)
    for shift in range(32):
        _both(signal_window, ref.signal_window_oracle, x, w, shift)
        _both(signal_filter_bank_square_root, ref.signal_filter_bank_square_root_oracle, wide, shift)
        _both(signal_filter_bank_log, ref.signal_filter_bank_log_oracle, U32_EDGES, 64, shift)
        _both(signal_filter_bank_spectral_subtraction, ref.signal_filter_bank_spectral_subtraction_oracle,
              U32_EDGES, U32_EDGES[::-1].copy(), 409, 15975, 983, 15401, shift, 2 * shift, 819, shift % 2 == 1)
    for shift in range(64):
        _both(signal_pcan, ref.signal_pcan_oracle, U32_EDGES, U32_EDGES[::-1].copy(), lut, shift)
    for k in range(16):  # every scale 0..15 the auto-scale can choose, both signs
        for v in (min(1 << k, 32767), -(1 << k), (1 << k) - 1 if k else 0):
            _both(signal_fft_auto_scale, ref.signal_fft_auto_scale_oracle, np.array([v, 0, -1], np.int16))


@pytest.mark.parametrize("call, message", [
    (lambda: signal_window(np.zeros(5, np.int16), np.zeros(2, np.int16), 1), "signal_window: x's size 5 must be a"),
    (lambda: signal_window(np.zeros(4, np.int16), np.zeros(2, np.int16), 32), "signal_window: shift must be an int"),
    (lambda: signal_window(np.zeros(4, np.float32), np.zeros(2, np.int16), 1), "signal_window: x must have dtype"),
    (lambda: signal_fft_auto_scale(np.zeros((2, 2), np.int16)), "signal_fft_auto_scale: x must have rank 1"),
    (lambda: signal_rfft(np.zeros(8, np.int16), 12), "signal_rfft: fft_length must be a power of two"),
    (lambda: signal_rfft(np.zeros(16, np.int16), 8), "signal_rfft: x's last dimension 16 exceeds"),
    (lambda: signal_irfft(np.zeros(16, np.int16), 16), "signal_irfft: x's last dimension must be fft_length + 2"),
    (lambda: signal_rfft(np.zeros(16, np.float32), 16), "signal_rfft: x must have dtype int16 or int32"),
    (lambda: signal_energy(np.zeros(5, np.int16), 0, 1), "signal_energy: x must hold (re, im) pairs"),
    (lambda: signal_energy(np.zeros(4, np.int16), 0, 3), "signal_energy: end_index must be an int in [0, 2]"),
    (lambda: signal_filter_bank(np.zeros(4, np.uint32), np.zeros(2, np.int16), np.zeros(2, np.int16),
                                np.array([0, 3], np.int16), np.zeros(2, np.int16), np.array([0, 2], np.int16), 1),
     "signal_filter_bank: every channel's bins must lie inside x"),
    (lambda: signal_filter_bank_square_root(np.zeros(2, np.uint32), 0), "signal_filter_bank_square_root: x must "
                                                                        "have dtype uint64"),
    (lambda: signal_filter_bank_spectral_subtraction(np.zeros(2, np.uint32), np.zeros(3, np.uint32), 1, 1, 1, 1, 0,
                                                     64, 0, False),
     "signal_filter_bank_spectral_subtraction: noise_estimate must have x's shape"),
    (lambda: signal_pcan(np.zeros(2, np.uint32), np.zeros(2, np.uint32), np.zeros(124, np.int16), 6),
     "signal_pcan: gain_lut must have at least 125 entries"),
    (lambda: signal_filter_bank_log(np.zeros(2, np.uint32), -1, 0), "signal_filter_bank_log: output_scale must be"),
    (lambda: signal_framer(np.zeros(5, np.int16), np.zeros((1, 0), np.int16), np.zeros((2, 4), np.int16), 4, 2),
     "signal_framer: x's last dimension 5 must be a positive multiple of frame_step 2"),
    (lambda: signal_stacker(np.zeros(2, np.int16), None, 2, 1, 0, 3, np.zeros(4, np.int16)),
     "signal_stacker: step must be an int in [1, 2]"),
    (lambda: signal_overlap_add(np.zeros((2, 4), np.int16), np.zeros((1, 4), np.int16), 5),
     "signal_overlap_add: frame_step must be an int in [1, 4]"),
    (lambda: signal_delay(np.zeros((2, 4), np.int16), np.zeros((1, 3), np.int16), 3),
     "signal_delay: history must have shape (2, 3)"),
])
def test_bad_input_is_refused_naming_the_function_and_the_rule(call, message):
    with pytest.raises((ValueError, TypeError)) as e:
        call()
    assert str(e.value).startswith(message)
