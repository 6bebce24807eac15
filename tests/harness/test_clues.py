"""dspsim.harness.clues: each pattern found where exactly it is injected into a dump, and no clue where none is.

The "dumps" are a seeded random int8 tensor (NHWC, values in [-100, 100), so no value sits at the int8 range ends)
and the same tensor with one pattern written in: a bit forced, a clamp, an offset, a scale, a transpose, values
moved in one channel or at one position. Each test states which patterns must be found and nothing else."""
import numpy as np
import pytest

from dspsim.harness import clues as cl

NHWC = cl.layout("tflite", 4)


def _ref(shape=(1, 8, 8, 16), seed=0):
    return np.random.default_rng(seed).integers(-100, 100, size=shape).astype(np.int8)


def _analyze(ref, dev, **kw):
    return cl.analyze(ref, dev, **{**NHWC, **kw})


def _found(r):
    return [p["pattern"] for p in r["patterns"]]


def _stuck_in_channel_5(ref):
    dev = ref.copy()
    dev[..., 5] |= 64
    return dev


def _one_position(ref):
    dev = ref.copy()
    dev[0, 3, 7, :] += np.arange(1, 17, dtype=np.int8) % 3 + 1
    return dev


def _border(ref):
    dev = ref.copy()
    edge = np.ones((8, 8), bool)
    edge[1:-1, 1:-1] = False
    dev[0, edge, :] += np.int8(2)
    dev[0, 0, 0, :] += np.int8(1)  # two differences: no constant offset either
    return dev


def _row(ref):
    dev = ref.copy()
    dev[0, 2, :, :] += (np.arange(128, dtype=np.int8) % 5 + 1).reshape(8, 16)
    return dev


def _column(ref):
    dev = ref.copy()
    dev[0, :, 6, :] -= (np.arange(128, dtype=np.int8) % 5 + 1).reshape(8, 16)
    return dev


def _region(ref):
    dev = ref.copy()
    dev[0, 2:4, 3:5, :] += (np.arange(64, dtype=np.int8) % 7 + 1).reshape(2, 2, 16)
    return dev


INJECTED = {  # name: (inject, patterns found, words of the clue)
    "stuck_bit_in_a_channel": (_stuck_in_channel_5, ["per_channel", "stuck_bit"],
                               "every difference is +64, all in channel 5: bit 6 stuck at 1"),
    "one_output_position": (_one_position, ["per_position"], "all at one output position (row 3, column 7)"),
    "border_only": (_border, ["per_position"], "all on the border"),
    "one_row": (_row, ["per_position"], "all in row 2"),
    "one_column": (_column, ["per_position"], "all in column 6"),
    "a_region": (_region, ["per_position"], "all within rows 2..3, columns 3..4 (4 of 64 positions)"),
    "offset_in_a_channel": (lambda r: r + (np.arange(16) == 9).astype(np.int8) * 3, ["per_channel", "constant_offset"],
                            "every difference is +3, all in channel 9: every value there is off by +3"),
    "constant_offset": (lambda r: r + np.int8(3), ["constant_offset"], "a constant offset of +3 (a zero point)"),
    "device_clamp": (lambda r: np.minimum(r, 60).astype(np.int8), ["saturation"],
                     "every differing device value is 60: the device clips at 60 where the reference reaches 99"),
    "scale_ratio": (lambda r: np.round(r / 2).astype(np.int8), ["scale_ratio"],
                    "the reference's x0.500 about the zero point 0 (2^-1: the shift off by 1)"),
    "nchw_for_nhwc": (lambda r: np.ascontiguousarray(r.transpose(0, 3, 1, 2)).reshape(r.shape), ["swapped_layout"],
                      "the device wrote the reference's values in NCHW order for the model's NHWC: a swapped layout"),
    "off_by_one": (lambda r: r + (np.random.default_rng(1).random(r.shape) < 0.1).astype(np.int8), ["off_by_one"],
                   "every difference is +1: rounding"),
}


@pytest.mark.parametrize("name", sorted(INJECTED))
def test_an_injected_pattern_is_found_and_nothing_else(name):
    inject, patterns, words = INJECTED[name]
    ref = _ref()
    r = _analyze(ref, inject(ref))
    assert _found(r) == patterns
    assert words in r["clue"]


@pytest.mark.parametrize("seed", range(5))
def test_scattered_differences_of_several_sizes_give_no_clue(seed):
    ref = _ref(seed=seed)
    rng = np.random.default_rng(100 + seed)
    dev = ref.copy()
    hit = rng.random(ref.shape) < 0.2
    dev[hit] += rng.choice([-3, -2, -1, 1, 2, 3], size=int(hit.sum())).astype(np.int8)
    r = _analyze(ref, dev)
    assert r["patterns"] == [] and r["clue"] is None
    assert sum(r["histogram"].values()) == int(hit.sum())


def test_two_scattered_differences_give_no_location():
    ref = _ref()
    dev = ref.copy()
    dev[0, 1, 1, 1] += 5
    dev[0, 5, 2, 9] -= 2
    assert _analyze(ref, dev)["clue"] is None


def test_the_histogram_counts_every_distinct_difference_exactly():
    ref = np.zeros(400, np.int16)
    dev = ref.copy()
    dev[:312] = 64
    dev[312:315] = -64
    dev[315:317] = 1000
    assert cl.exact_histogram(ref, dev) == {"+64": 312, "-64": 3, "+1000": 2}
    assert cl.histogram_text(cl.exact_histogram(ref, dev)) == "+64: 312 values, -64: 3, +1000: 2"


def test_the_histogram_pools_only_beyond_its_limit_of_distinct_values():
    ref = np.zeros(10, np.int32)
    h = cl.exact_histogram(ref, np.arange(1, 11, dtype=np.int32), limit=4)
    assert list(h) == ["+1", "+2", "+3", "+4", "other (6 values)"] and h["other (6 values)"] == 6


def test_a_bit_stuck_at_0_and_the_sign_bit_stuck_at_1():
    ref = _ref()
    r = _analyze(ref, ref & np.int8(~8))
    assert r["clue"] == "every difference is -8: bit 3 stuck at 0"
    r = _analyze(ref, ref | np.int8(-128))
    assert r["clue"] == "every difference is -128: bit 7 stuck at 1"


def test_a_bit_set_in_only_some_values_of_its_channel_is_not_called_stuck():
    ref = _ref()
    dev = ref.copy()
    c = dev[..., 5]
    flip = (c & 64) == 0
    flip[0, :4] = False  # half of the rows keep bit 6 clear: not stuck
    c[flip] |= 64
    r = _analyze(ref, dev)
    assert _found(r) == ["per_channel"] and "stuck" not in r["clue"]


def test_the_reference_clamp_the_device_does_not_apply_is_saturation_of_the_reference():
    dev = _ref()
    r = _analyze(np.clip(dev, -20, 50).astype(np.int8), dev)
    assert _found(r) == ["saturation"]
    assert "the reference clips at 50 where the device reaches 99 and clips at -20 where the device reaches -100" \
        in r["clue"]


def test_a_shuffle_that_is_no_transpose_is_a_permutation():
    ref = _ref()
    dev = np.random.default_rng(3).permutation(ref.reshape(-1)).reshape(ref.shape)
    r = _analyze(ref, dev)
    assert _found(r) == ["swapped_layout"] and "a permutation of the reference's" in r["clue"]
    assert r["patterns"][0]["axes"] is None


def test_one_lsb_differences_at_ties_are_the_tie_rule():
    real = np.arange(-8, 8) + 0.5
    ref = np.round(real + 1e-9).astype(np.int8)  # ties up
    dev = np.where(real > 0, ref, ref - 1).astype(np.int8)  # ties away from zero
    r = cl.analyze(ref, dev, real=real)
    assert r["clue"] == "every difference is -1: rounding, all at ties (x.5): the tie rule"
    r = cl.analyze(ref, dev, real=real + 0.25)
    assert "0 of 8 at ties" in r["clue"]


def test_onnx_tensors_take_channels_on_axis_1():
    ref = _ref((1, 16, 8, 8))
    dev = ref.copy()
    dev[:, 5] |= 64
    r = cl.analyze(ref, dev, **cl.layout("onnx", 4))
    assert r["clue"] == "every difference is +64, all in channel 5: bit 6 stuck at 1"


def test_identical_tensors_have_no_histogram_and_no_clue():
    ref = _ref()
    assert _analyze(ref, ref.copy()) == {"histogram": {}, "patterns": [], "clue": None}


def test_bad_input_names_the_function_and_the_rule():
    with pytest.raises(TypeError, match="analyze: needs integer tensors"):
        cl.analyze(np.zeros(3, np.float32), np.zeros(3, np.int8))
    with pytest.raises(ValueError, match="analyze: the tensors must have one shape"):
        cl.analyze(np.zeros(3, np.int8), np.zeros(4, np.int8))


def test_a_few_values_off_by_one_amount_among_clipped_ones_are_no_offset():
    ref = np.array([127, 127, -128, -128, 127, 5, -7], np.int8)  # an FC output mostly at the range ends
    dev = ref.copy()
    dev[:2] = -128  # two values wrap from the top to the bottom: -255 each
    r = cl.analyze(ref, dev, channel_axis=0)
    assert r["histogram"] == {"-255": 2} and "constant_offset" not in _found(r)


def test_half_of_a_wide_tensors_channels_moved_alike_is_located_without_overflow():
    ref = _ref((1, 2, 2, 2048))
    dev = ref.copy()
    dev[..., :1024] += np.int8(3)
    r = _analyze(ref, dev)
    assert r["clue"] == ("every difference is +3, all in channels 0..1023 (1024 of 2048): every value there is off "
                         "by +3 (a zero point or a bias)")


def test_a_bit_stuck_everywhere_is_not_placed_in_the_channels_it_could_change():
    ref = _ref()
    ref[..., 2:7] = -128  # dead channels after a ReLU: bit 3 is 0 there already
    r = _analyze(ref, ref & np.int8(~8))
    assert r["clue"] == "every difference is -8: bit 3 stuck at 0" and _found(r) == ["stuck_bit"]


def test_rounding_differences_in_one_channel_keep_their_location():
    ref = _ref()
    dev = ref.copy()
    dev[0, :, :, 3] += (np.random.default_rng(4).random((8, 8)) < 0.3).astype(np.int8)  # scattered in channel 3
    r = _analyze(ref, dev)
    assert r["clue"] == "every difference is +1, all in channel 3: rounding"
