"""Depthwise channel counts that are not a multiple of 16 (microWakeWord hey_jarvis: 30 and 60) in the tap pairs:
a run's last ``n % 16`` values as one overlapping 16-value block, a pixel of 8 <= C < 16 as two overlapping 8-channel
blocks, and the fused store's block shared by consecutive one-pixel images (256 streams of a (T, 1, C) layer), against
the plain-Python oracle (dspsim.oracle) and the core's sums against plain ints.

Compile budget: int8 / uint8 in and out only, the ``_pair_rows`` specializations tests/kernels/test_depthwise_core.py and
tests/kernels/test_depthwise_fused.py compile too."""
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import dspsim
from dspsim import kernels
from dspsim import oracle as ref
from dspsim.kernels.mac import depthwise_core as core
from depthwise_cases import CLAMPS, RANGES, SCHEMES, codes, pairs_only, run_case, run_layer, scheme_kwargs
from oracle_views import oracle_requant

LANE_SCHEMES = [s for s in SCHEMES if s != "single"]  # the schemes whose requantization is fused into the store


@st.composite
def odd_layer_cases(draw):
    xd = draw(st.sampled_from(["int8", "uint8"]))
    kh, kw = draw(st.sampled_from([(3, 3), (5, 1), (2, 3), (1, 1), (9, 1)]))
    return dict(
        b=draw(st.integers(1, 3)), h=draw(st.integers(1, 9)), w=draw(st.integers(1, 6)), c=draw(st.integers(1, 70)),
        k=(kh, kw), stride=(draw(st.integers(1, 2)), draw(st.integers(1, 3))),
        dil=(draw(st.integers(1, 2)), draw(st.integers(1, 2))), pads=[draw(st.integers(0, 2)) for _ in range(4)],
        xd=xd, zx=draw(st.one_of(st.sampled_from(RANGES[xd]), st.integers(*RANGES[xd]))),
        zw=draw(st.integers(-128, 127)), per_channel_zw=draw(st.booleans()), edge=draw(st.booleans()),
        seed=draw(st.integers(0, 2**32 - 1)), scheme=draw(st.sampled_from(LANE_SCHEMES)), out="same",
        clamp=draw(st.integers(0, 3)))


@settings(max_examples=80, deadline=None)
@given(cs=odd_layer_cases())
def test_fused_layer_of_any_channel_count_equals_oracle(cs):
    got, unfused, want = run_layer(cs)
    assert np.array_equal(unfused, want)
    assert np.array_equal(got, want)


@settings(max_examples=60, deadline=None)
@given(c=st.integers(1, 70), data=st.data())
def test_core_sums_of_any_channel_count_equal_plain_ints(c, data):
    xd, wd = data.draw(st.sampled_from(["int8", "uint8"])), data.draw(st.sampled_from(["int8", "uint8"]))
    k = data.draw(st.sampled_from([(3, 3), (5, 1), (2, 3), (1, 1)]))
    cs = dict(b=data.draw(st.integers(1, 3)), h=data.draw(st.integers(1, 7)), w=data.draw(st.integers(1, 5)), c=c,
              mult=1, k=k, stride=(data.draw(st.integers(1, 2)), data.draw(st.integers(1, 3))),
              dil=(data.draw(st.integers(1, 2)), data.draw(st.integers(1, 2))),
              pads=[data.draw(st.integers(0, 2)) for _ in range(4)], xd=xd, wd=wd,
              zx=data.draw(st.integers(*RANGES[xd])), zw=data.draw(st.integers(*RANGES[wd])),
              per_channel_zw=data.draw(st.booleans()), edge=data.draw(st.booleans()),
              seed=data.draw(st.integers(0, 2**32 - 1)), shift=data.draw(st.integers(-5, -3)))
    got, want = run_case(cs)  # also checks depthwise_accumulate's int32 and int64 sums against plain ints
    assert np.array_equal(got, want)


def stream_layer(n, t, c, scheme, xd, rng):
    """A microWakeWord-style layer: ``n`` streams of (T, 1, C), a (T, 1) kernel, VALID: one output pixel each."""
    x = codes(rng, (n, t, 1, c), xd, True)
    w = codes(rng, (1, t, 1, c), "int8", True)
    kw_q, bias, fbias = scheme_kwargs(scheme, rng, c)
    zx = int(rng.integers(*RANGES[xd]))
    zo, lo, hi = CLAMPS[xd][1]
    kw_all = dict(input_zero_point=zx, weight_zero_point=0, output_zero_point=zo, out_dtype=xd, **kw_q)
    want, _, _ = ref.depthwise_conv2d(x.tolist(), w.tolist(), None if fbias is not None else bias.tolist(), zx, 0, zo,
                                      oracle_requant(kw_q["requant"]), lo, hi,
                                      float_bias=None if fbias is None else [Fraction(float(v)) for v in fbias])
    return x, w, bias, kw_all, np.array(want, np.int64)


@pairs_only
@pytest.mark.parametrize("scheme", ["double", "fbgemm", "xnnpack"])
@pytest.mark.parametrize("t, c", [(5, 30), (9, 60), (3, 12), (2, 5), (4, 17)])
def test_streams_of_odd_channels_share_store_blocks_and_equal_oracle(monkeypatch, scheme, t, c):
    """More streams than one store block holds (4096 values): blocks filled by many one-pixel images, cut between
    images; the same codes with blocks of one period (lcm(C, 16) values), and as the unfused path's."""
    rng = np.random.default_rng(c * 100 + t)
    n = 2 * core.CHUNK_VALUES // c + 3
    x, w, bias, kw_all, want = stream_layer(n, t, c, scheme, "int8" if scheme == "double" else "uint8", rng)
    got = kernels.depthwise_conv2d_plan(x.shape, x.dtype, w, bias, **kw_all).run(x)
    assert np.array_equal(got.reshape(want.shape), want)
    assert np.array_equal(dspsim.depthwise_conv2d(x, w, bias, **kw_all), want)
    monkeypatch.setattr(core, "CHUNK_VALUES", 1)
    small = kernels.depthwise_conv2d_plan(x.shape, x.dtype, w, bias, **kw_all).run(x)
    assert np.array_equal(small.reshape(want.shape), want)


def test_pairs8_hold_a_pixels_first_and_last_eight_channels():
    for c, blocks in ((7, 0), (8, 2), (12, 2), (15, 2), (16, 0), (30, 0)):
        w = np.arange(3 * c, dtype=np.int64).reshape(3, 1, c) % 100
        p = core.prepare_depthwise_weights(w.astype(np.int8), np.zeros(c, np.int64))
        assert p.pairs8.shape == (blocks, 2, 16)
        if blocks:  # pair 0 holds taps 0 and 1 interleaved, pair 1 tap 2 and a zero
            for e, first in enumerate((0, c - 8)):
                assert p.pairs8[e, 0, 0::2].tolist() == w[0, 0, first:first + 8].tolist()
                assert p.pairs8[e, 0, 1::2].tolist() == w[1, 0, first:first + 8].tolist()
                assert p.pairs8[e, 1, 1::2].tolist() == [0] * 8
