"""The frame's 512-point FFT in int32 on int16 rows (dspsim.frontend.fft._frame_fft256, the frame's
_frame_fft256_energy) bit for bit against the generic int64 kernel (_frame_fft_kernel, kissfft's stages in its
order) and the plain-Python oracle: random, edge, full-scale (+-32767, -32768), alternating and silent windows of
every length the 512-point FFT takes (even, odd, 512 itself), every input shift."""
from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

import dspsim.oracle.frontend as ora
from dspsim.frontend import FrontendConfig, frontend_tables
from dspsim.frontend.fft import _frame_fft256, _frame_fft256_energy, _frame_fft_kernel
from dspsim.frontend.filterbank import _energy_kernel
from dspsim.frontend.plan import _plan, _sections

I16 = st.integers(-32768, 32767)
EDGE16 = st.sampled_from([-32768, -32767, -16384, -1, 0, 1, 16383, 32766, 32767])
T = frontend_tables(FrontendConfig())
(_WIN, TW, STAGES, LEAF, SUPER, *_REST, STX) = _sections(_plan(T))


def _windows():
    """(length, int16 values): random, edges, silent, constant full scale, alternating full scale."""
    n = st.sampled_from([400, 480, 401, 257, 511, 512])

    def of(k):
        return st.one_of(
            st.lists(st.one_of(I16, EDGE16), min_size=k, max_size=k),
            st.sampled_from([[0] * k, [-32768] * k, [32767] * k, [-32767] * k, ([32767, -32768] * k)[:k],
                             ([-32768, 32767] * k)[:k], ([-32768, -32768, 32767, 32767] * k)[:k]]))
    return n.flatmap(of)


def _old(windowed, shift):
    spec = np.empty((257, 2), np.int16)
    _frame_fft_kernel(windowed, shift, TW, STX, STAGES, LEAF, SUPER, spec, np.empty((2, 256), np.int64))
    return spec


@settings(max_examples=150, deadline=None)
@given(_windows(), st.integers(0, 15), st.integers(0, 257), st.integers(0, 257))
def test_the_int32_fft_and_its_energies_are_the_int64_kernels(values, shift, start, end):
    windowed = np.array(values, np.int64)
    want = _old(windowed, shift)
    work = np.full(1280, 12345, np.int16)
    got = np.full((257, 2), 7, np.int16)
    _frame_fft256(windowed, shift, STX, LEAF, SUPER, got, work)
    assert np.array_equal(got, want)
    want_e = np.empty(257, np.int64)
    _energy_kernel(want, start, end, want_e)
    e = np.full(257, -5, np.int64)
    _frame_fft256_energy(windowed, shift, STX, LEAF, SUPER, start, end, e, np.full(1280, -3, np.int16))
    assert np.array_equal(e, want_e)


@settings(max_examples=25, deadline=None)
@given(_windows(), st.integers(0, 15))
def test_the_int32_fft_is_the_oracles(values, shift):
    got = np.empty((257, 2), np.int16)
    _frame_fft256(np.array(values, np.int64), shift, STX, LEAF, SUPER, got, np.empty(1280, np.int16))
    assert got.tolist() == [list(c) for c in ora.rfft(ora.fft_input(values, shift, 512))]
