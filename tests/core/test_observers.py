"""Observers: running min/max, moving average (torch QAT), nearest-rank percentile."""
import warnings

import numpy as np
import pytest

from dspsim import MinMaxObserver, MovingAverageMinMaxObserver, PercentileObserver, choose_qparams


def _batches(seed, shape=(3, 5, 7)):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 6))
    return [(rng.normal(size=shape) * 10 ** rng.uniform(-3, 3) + rng.normal()).astype(np.float32) for _ in range(n)]


def _torch_observer(torch, per_channel, moving, axis, c, dtype, symmetric):
    from torch.ao.quantization import observer as O

    cls = {(False, False): O.MinMaxObserver, (True, False): O.PerChannelMinMaxObserver,
           (False, True): O.MovingAverageMinMaxObserver, (True, True): O.MovingAveragePerChannelMinMaxObserver}
    if per_channel:
        qs = torch.per_channel_symmetric if symmetric else torch.per_channel_affine
    else:
        qs = torch.per_tensor_symmetric if symmetric else torch.per_tensor_affine
    kw = {"dtype": getattr(torch, dtype), "qscheme": qs}
    if per_channel:
        kw["ch_axis"] = axis
    if moving:
        kw["averaging_constant"] = c
    return cls[(per_channel, moving)](**kw)


@pytest.mark.parametrize("symmetric", [False, True])
@pytest.mark.parametrize("dtype", ["quint8", "qint8"])
@pytest.mark.parametrize("moving", [False, True])
@pytest.mark.parametrize("per_channel", [False, True])
def test_observers_equal_torch(per_channel, moving, dtype, symmetric):
    torch = pytest.importorskip("torch")
    scheme = "torch_symmetric" if symmetric else "torch_affine"
    for seed in range(40):
        rng = np.random.default_rng(seed)
        axis = int(rng.integers(0, 3))
        c = float(rng.choice([0.01, 0.1, 0.3, 0.5]))
        t = _torch_observer(torch, per_channel, moving, axis, c, dtype, symmetric)
        ax = axis if per_channel else None
        mine = (MovingAverageMinMaxObserver(dtype, scheme, ax, averaging_constant=c) if moving
                else MinMaxObserver(dtype, scheme, ax))
        for b in _batches(seed):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                t(torch.from_numpy(b))
            assert mine(b) is b
        lo, hi = mine.range()
        np.testing.assert_array_equal(np.asarray(lo).view(np.uint32), t.min_val.numpy().view(np.uint32))
        np.testing.assert_array_equal(np.asarray(hi).view(np.uint32), t.max_val.numpy().view(np.uint32))
        s, z = t.calculate_qparams()
        p = mine.calculate_qparams()
        np.testing.assert_array_equal(np.atleast_1d(p.scale), s.numpy().astype(np.float32).reshape(-1))
        np.testing.assert_array_equal(np.atleast_1d(p.zero_point), z.numpy().reshape(-1))


def test_moving_average_follows_the_float32_formula():
    o = MovingAverageMinMaxObserver("qint8", averaging_constant=0.5)
    o(np.array([0.0, 1.0], np.float32))  # first batch sets the range
    assert o.range() == (0.0, 1.0)
    o(np.array([-1.0, 3.0], np.float32))
    assert o.range() == (-0.5, 2.0)
    o = MovingAverageMinMaxObserver("qint8")  # c = f32(0.01)
    o(np.array([0.0, 1.0], np.float32))
    o(np.array([-1.0, 2.0], np.float32))
    c = np.float32(0.01)
    assert o.range() == (np.float32(0 + c * np.float32(-1.0 - 0)), np.float32(1 + c * np.float32(2.0 - 1)))


def test_minmax_is_independent_of_batch_order_and_moving_average_is_not():
    bs = _batches(5)
    bs = bs + [bs[0] * 3] if len(bs) == 1 else bs
    a, b = MinMaxObserver(), MinMaxObserver()
    ma, mb = MovingAverageMinMaxObserver(), MovingAverageMinMaxObserver()
    for x in bs:
        a(x), ma(x)
    for x in bs[::-1]:
        b(x), mb(x)
    assert a.range() == b.range()
    assert ma.range() != mb.range()


def test_percentile_is_nearest_rank_on_both_sides():
    x = np.arange(1, 11, dtype=np.float32)  # 10 values; 90 % -> k = 9
    o = PercentileObserver("qint8", percentile=90)
    o(x[::-1].copy())
    assert o.range() == (2.0, 9.0)
    o = PercentileObserver("qint8", percentile=95)  # k = ceil(9.5) = 10 -> plain min / max
    o(x)
    assert o.range() == (1.0, 10.0)
    o = PercentileObserver("qint8", percentile=99.99)  # 100 values: k = ceil(99.99) = 100
    o(np.arange(100, dtype=np.float32))
    assert o.range() == (0.0, 99.0)
    o = PercentileObserver("qint8", percentile=99)  # k = 99 exactly (no float rounding of 0.99 * 100)
    o(np.arange(100, dtype=np.float32))
    assert o.range() == (1.0, 98.0)


def test_percentile_clips_an_outlier_and_matches_numpy_inverted_cdf():
    rng = np.random.default_rng(2)
    x = rng.normal(size=(4, 1000)).astype(np.float32)
    x[1, 17] = 1e4
    o = PercentileObserver("qint8", "torch_symmetric", axis=0, percentile=99.9)
    o(x[:, :600])
    o(x[:, 600:])
    lo, hi = o.range()
    assert hi[1] < 10
    np.testing.assert_array_equal(hi, np.quantile(x, 0.999, axis=1, method="inverted_cdf").astype(np.float32))
    np.testing.assert_array_equal(lo, -np.quantile(-x, 0.999, axis=1, method="inverted_cdf").astype(np.float32))
    p, want = o.calculate_qparams(), choose_qparams(lo, hi, "qint8", "torch_symmetric")
    np.testing.assert_array_equal(p.scale, want.scale)
    np.testing.assert_array_equal(p.zero_point, want.zero_point)


def test_percentile_100_equals_minmax_per_channel():
    a, b = PercentileObserver("quint8", axis=1, percentile=100), MinMaxObserver("quint8", axis=1)
    for x in _batches(9):
        a(x), b(x)
    np.testing.assert_array_equal(a.range(), b.range())


def test_observer_options_reach_choose_qparams():
    o = MinMaxObserver("quint8", "torch_affine", reduce_range=True)
    o(np.array([-1.0, 1.0], np.float32))
    assert o.calculate_qparams() == choose_qparams(-1.0, 1.0, "quint8", "torch_affine", reduce_range=True)
    o = MinMaxObserver("int8", "tflite")
    o(np.array([0.5, 2.0], np.float32))
    assert o.calculate_qparams().zero_point == -128


@pytest.mark.parametrize("make,call,exc,msg", [
    (lambda: MinMaxObserver(), lambda o: o(np.zeros(0, np.float32)), ValueError, "MinMaxObserver.observe: x is empty"),
    (lambda: MinMaxObserver(), lambda o: o(np.array([np.nan], np.float32)), ValueError, "finite"),
    (lambda: MinMaxObserver(), lambda o: o(np.array([np.inf], np.float32)), ValueError, "finite"),
    (lambda: MinMaxObserver(), lambda o: o(np.arange(3)), TypeError, "floating-point"),
    (lambda: MinMaxObserver(), lambda o: o.calculate_qparams(), ValueError, "no data observed"),
    (lambda: PercentileObserver(), lambda o: o.range(), ValueError, "no data observed"),
    (lambda: MinMaxObserver(axis=3), lambda o: o(np.zeros((2, 2), np.float32)), ValueError, "out of bounds"),
    (lambda: MinMaxObserver(axis=0), lambda o: (o(np.zeros((2, 2), np.float32)), o(np.zeros((3, 2), np.float32))),
     ValueError, "earlier batches had 2"),
    (lambda: PercentileObserver(percentile=40), None, ValueError, "percentile must be in"),
    (lambda: MovingAverageMinMaxObserver(averaging_constant=0), None, ValueError, "averaging_constant"),
    (lambda: MinMaxObserver(scheme="x"), None, ValueError, "unknown scheme"),
    (lambda: MinMaxObserver("uint8", "symmetric"), None, ValueError, "choose_qparams: .*signed dtype"),
    (lambda: MinMaxObserver(axis=1.0), None, TypeError, "axis must be an int"),
])
def test_observer_refusals(make, call, exc, msg):
    with pytest.raises(exc, match=msg):
        o = make()
        call(o)
