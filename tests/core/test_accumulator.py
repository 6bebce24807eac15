"""The accumulator model: narrow, wide, saturating and pair-saturating sums, MAC by MAC, and the fast path."""
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import dspsim
from dspsim import oracle as ref
from dspsim.accumulator import Accumulator
from dspsim.requant import Requant
from oracle_views import oracle_requant

SETTINGS = settings(max_examples=200, deadline=None)
SHIFT = Requant.shift_only(0)  # identity requantization: the output shows the accumulator (int16 range)
RQ = oracle_requant(SHIFT)


def fc(x, w, bias, acc, zx=0, zw=0, stats=True):
    return dspsim.fully_connected(x, w, bias, input_zero_point=zx, weight_zero_point=zw, output_zero_point=0,
                                  requant=SHIFT, out_dtype="int16", accumulator=acc, stats=stats)


@st.composite
def acc_case(draw):
    k, n, m = draw(st.integers(1, 40)), draw(st.integers(1, 3)), draw(st.integers(1, 2))
    xd = draw(st.sampled_from(["int8", "uint8"]))
    lo, hi = (-128, 127) if xd == "int8" else (0, 255)
    extreme = draw(st.booleans())
    xs = st.sampled_from([lo, hi]) if extreme else st.integers(lo, hi)
    ws = st.sampled_from([-128, 127]) if extreme else st.integers(-128, 127)
    x = np.array(draw(st.lists(xs, min_size=m * k, max_size=m * k)), xd).reshape(m, k)
    w = np.array(draw(st.lists(ws, min_size=n * k, max_size=n * k)), np.int8).reshape(n, k)
    bias = draw(st.one_of(st.none(), st.lists(st.integers(-(1 << 31), (1 << 31) - 1), min_size=n, max_size=n)))
    bits = draw(st.sampled_from([16, 17, 20, 24, 31, 32, 33, 40, 64]))
    return dict(x=x, w=w, bias=bias, zx=draw(st.integers(lo, hi)), zw=draw(st.integers(-128, 127)), bits=bits,
                overflow=draw(st.sampled_from(["wrap", "saturate"])),
                pair=xd == "uint8" and draw(st.booleans()), stats=draw(st.booleans()))


@SETTINGS
@given(acc_case())
def test_fully_connected_accumulator_matches_oracle(c):
    acc = Accumulator(c["bits"], c["overflow"], c["pair"])
    if c["pair"]:
        c["zw"] = 0  # FBGEMM's weights are symmetric here; the model takes any zero point, the test keeps it simple
    bias = None if c["bias"] is None else np.array(c["bias"], np.int32)
    res = fc(c["x"], c["w"], bias, acc, c["zx"], c["zw"], stats=c["stats"])
    out, st_ = res if c["stats"] else (res, None)
    want, events, pair_events = ref.fully_connected(c["x"].tolist(), c["w"].tolist(), c["bias"], c["zx"], c["zw"], 0,
                                                    RQ, -32768, 32767, acc_model=(c["bits"], c["overflow"], c["pair"]))
    assert out.tolist() == want
    if st_ is not None:
        assert (st_.overflow_events, st_.pair_saturations) == (events, pair_events)


def test_int16_wrap_and_saturate_differ_exactly():
    x = np.full((1, 4), 127, np.int8)
    w = np.full((1, 4), 127, np.int8)  # partial sums 16129, 32258, 48387 (overflows), 64516
    out_w, st_w = fc(x, w, None, Accumulator(16, "wrap"))
    out_s, st_s = fc(x, w, None, Accumulator(16, "saturate"))
    assert out_w.tolist() == [[64516 - 65536]] and st_w.overflow_events == 1 and not st_w.fast_path
    assert out_s.tolist() == [[32767]] and st_s.overflow_events == 2  # stays saturated: each later MAC re-saturates


def test_saturation_is_order_dependent_like_the_mac_loop():
    # partial sums 16129, 32258, 48387 -> 32767 (saturated), then -16129: 16638, not the exact 32258
    x = np.full((1, 4), 127, np.int8)
    w = np.array([[127, 127, 127, -127]], np.int8)
    out, st_ = fc(x, w, None, Accumulator(16, "saturate"))
    exact, _ = fc(x, w, None, Accumulator(32))
    assert exact.tolist() == [[32258]] and out.tolist() == [[16638]] and st_.overflow_events == 1


def test_pair_saturation_models_vpmaddubsw():
    x = np.array([[255, 255, 255]], np.uint8)
    w = np.array([[127, 127, 127]], np.int8)  # pair 64770 -> 32767, then 32385 alone
    out, st_ = dspsim.fully_connected(x, w, None, input_zero_point=0, output_zero_point=0, requant="shift", shift=-8,
                                      tie="floor", out_dtype="int16",
                                      accumulator=Accumulator(pair_saturation=True),
                                      stats=True)
    assert out.tolist() == [[(32767 + 32385) >> 8]] and st_.pair_saturations == 1


def test_reduce_range_activations_never_pair_saturate_and_take_the_fast_path():
    rng = np.random.default_rng(0)
    x = rng.integers(0, 128, (4, 64)).astype(np.uint8)
    w = rng.integers(-128, 128, (8, 64)).astype(np.int8)
    a, st_a = fc(x, w, None, Accumulator(pair_saturation=True), zx=64)
    b, _ = fc(x, w, None, Accumulator(), zx=64)
    assert np.array_equal(a, b) and st_a.fast_path and st_a.pair_saturations == 0


def test_conv_accumulator_skips_padding_taps():
    x = np.full((1, 2, 2, 1), 127, np.int8)
    w = np.full((1, 3, 3, 1), 127, np.int8)
    out, st_ = dspsim.conv2d(x, w, None, padding="SAME", input_zero_point=0, output_zero_point=0, requant=SHIFT,
                             out_dtype="int16", accumulator=Accumulator(16, "saturate"), stats=True)
    assert out.reshape(-1).tolist() == [32767] * 4 and st_.overflow_events == 4 * 2


@pytest.mark.parametrize("kw,exc,msg", [
    (dict(bits=8), ValueError, r"bits must be in \[16, 64\]"),
    (dict(bits=65), ValueError, "bits must be in"),
    (dict(bits=32.0), TypeError, "bits must be an integer"),
    (dict(overflow="clip"), ValueError, "overflow must be 'wrap' or 'saturate'"),
    (dict(pair_saturation=1), TypeError, "pair_saturation must be a bool"),
])
def test_refusals(kw, exc, msg):
    with pytest.raises(exc, match="^Accumulator: " + msg):
        Accumulator(**kw)


def test_exact_bits_decisions():
    lim31 = (1 << 31) - 1
    assert Accumulator().exact_bits(1 << 40, 1 << 40, 0, False) == 32       # wrap: exact mod 2^32 always
    assert Accumulator().exact_bits(1 << 40, 1 << 40, 0, True) is None      # counting events needs the MAC loop
    assert Accumulator(16, "saturate").exact_bits(32767, 0, 0, True) == 32  # bound fits: no saturation
    assert Accumulator(16, "saturate").exact_bits(32768, 0, 0, False) is None
    assert Accumulator(40).exact_bits(lim31 + 1, lim31, 0, False) == 64     # raw sum exact in int32
    assert Accumulator(40).exact_bits(lim31 + 1, lim31 + 1, 0, False) is None
    assert Accumulator(pair_saturation=True).exact_bits(0, 0, 32768, False) is None


def test_int32_wrap_of_a_long_dot_product_is_exact_on_every_path():
    # 140000 products of (-128)(-128) = 2.29e9 > 2^31: the int32 accumulator wraps (TFLite's C code with -fwrapv)
    k = 140000
    x = np.full((1, k), -128, np.int8)
    w = np.full((1, k), -128, np.int8)
    bias = np.array([12345], np.int32)
    exact = k * 16384 + 12345
    want = ref.wrap(exact, 32)
    rq = Requant.shift_only(-20)
    kw = dict(input_zero_point=0, output_zero_point=0, requant=rq, out_dtype="int16")
    wrap32 = dspsim.fully_connected(x, w, bias, **kw)
    wide = dspsim.fully_connected(x, w, bias, **kw, accumulator=Accumulator(40))  # raw sum beyond int32: MAC loop
    _, st_ = dspsim.fully_connected(x, w, bias, **kw, stats=True)
    assert wrap32.tolist() == [[ref.round_fraction(Fraction(want, 2**20), "half_away_from_zero")]]
    assert wide.tolist() == [[ref.round_fraction(Fraction(exact, 2**20), "half_away_from_zero")]]
    assert st_.overflow_events == 1 and st_.overflowed_outputs == 1
