"""MicroFrontend(streams=N): N independent streams in one compiled call (split over threads when large) give, stream
by stream, the golden features and what N separate streaming frontends give; bad batches are refused by name.

The streams run as SIMD lanes (dspsim/frontend/lanes.py: blocks of LANES streams; a block of fewer than SCALAR_BELOW
streams runs each stream's own frame): stream counts below, at and above those sizes, and not multiples of them,
on silent, dithered, quiet, loud, full-scale, DC and random streams side by side, so that one block holds lanes whose
FFT input shifts (the block floating point) differ."""
from __future__ import annotations

import os

import numba
import numpy as np
import pytest

import dspsim
from hypothesis import given, settings
from hypothesis import strategies as st

from dspsim.frontend import FrontendConfig, MicroFrontend, apply_window, microfrontend
from dspsim.frontend.lanes import LANES, SCALAR_BELOW
from dspsim.oracle import frontend as ora

GOLDEN = np.load(os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "golden",
                          "microfrontend.npz"))
KINDS = ("speech_okay_nabu", "noise_1000", "noise_12000", "tone_1k_full_scale", "nyquist_square", "dc_min", "random_int16")
SAMPLES = 4000  # 23 frames per stream


def _golden_batch(streams: int):
    """(streams, SAMPLES) PCM cycling through KINDS, and each stream's golden features."""
    pcm = np.stack([GOLDEN[f"{KINDS[s % len(KINDS)]}/pcm"][:SAMPLES] for s in range(streams)])
    want = np.stack([GOLDEN[f"{KINDS[s % len(KINDS)]}/features"][:(SAMPLES - 480) // 160 + 1]
                     for s in range(streams)])
    return pcm, want


@pytest.mark.parametrize("threads", [1, 2])
def test_many_streams_give_each_streams_golden_features(threads):
    n = LANES + SCALAR_BELOW  # two blocks of lanes: enough work to split over 2 threads
    pcm, want = _golden_batch(n)
    before = dspsim.get_num_threads()
    dspsim.set_num_threads(min(threads, numba.config.NUMBA_NUM_THREADS))
    try:
        got = MicroFrontend(streams=n).process(pcm)
    finally:
        dspsim.set_num_threads(before)
    assert got.dtype == np.uint16 and got.shape == want.shape
    assert np.array_equal(got, want), f"{np.count_nonzero(got != want)} mismatches"


def test_streams_in_any_chunks_equal_separate_streaming_frontends():
    cfg = FrontendConfig.tflm_defaults()  # another window, step and channel count than the goldens'
    rng = np.random.default_rng(3)
    pcm = rng.integers(-32768, 32768, (5, 3000)).astype(np.int16)
    batch, frames, pos = MicroFrontend(cfg, streams=5), [], 0
    while pos < pcm.shape[1]:
        n = min(int(rng.integers(1, 500)), pcm.shape[1] - pos)
        feats, used = batch.process_samples(pcm[:, pos:pos + n])
        pos += used
        if feats is not None:
            frames.append(feats)
    singles = [MicroFrontend(cfg).process(p) for p in pcm]
    assert np.array_equal(np.stack(frames, axis=1), np.stack(singles))
    assert np.array_equal(np.stack(singles), np.stack([microfrontend(p, cfg) for p in pcm]))


def test_each_stream_keeps_its_own_noise_estimate_and_reset_clears_them():
    pcm, _ = _golden_batch(3)
    fe = MicroFrontend(streams=3)
    fe.process(pcm)
    for s in range(3):
        est = np.zeros(40, np.int64)
        microfrontend(pcm[s], estimate=est)
        assert np.array_equal(fe.estimate[s], est)
    fe.reset()
    assert not fe.estimate.any()


@pytest.mark.parametrize("kwargs, chunk, words", [
    (dict(streams=0), None, "streams must be None or an int >= 1"),
    (dict(streams=2.0), None, "streams must be None or an int >= 1"),
    (dict(streams=3), np.zeros((2, 160), np.int16), "one row per stream"),
    (dict(streams=3), np.zeros(160, np.int16), "must have 2 dimension"),
    (dict(), np.zeros((1, 160), np.int16), "must have 1 dimension"),
    (dict(streams=2), np.zeros((2, 160), np.float32), "must be int16 PCM"),
])
def test_bad_batches_are_refused_naming_the_method(kwargs, chunk, words):
    with pytest.raises((TypeError, ValueError), match=words) as err:
        MicroFrontend(**kwargs).process_samples(chunk)
    assert "MicroFrontend" in str(err.value)


# --- lanes: bit for bit each stream's own frontend ----------------------------------------------------------------

LEVELS = ("silence", "dither", "quiet", "speech", "loud", "full_scale", "dc_min", "nyquist", "uniform")


def _stream(kind: str, n: int, seed: int) -> np.ndarray:
    """n int16 samples of one kind of stream."""
    rng = np.random.default_rng(seed)
    if kind == "silence":
        return np.zeros(n, np.int16)
    if kind == "dither":
        return rng.integers(-1, 2, n).astype(np.int16)
    if kind == "dc_min":
        return np.full(n, -32768, np.int16)
    if kind == "nyquist":
        return np.resize(np.array([32767, -32768], np.int16), n)
    if kind == "uniform":
        return rng.integers(-32768, 32768, n).astype(np.int16)
    sigma = {"quiet": 30.0, "speech": 2000.0, "loud": 12000.0, "full_scale": 40000.0}[kind]
    return np.clip(np.round(rng.normal(0, sigma, n)), -32768, 32767).astype(np.int16)


def _separately(pcm, cfg=None):
    return np.stack([MicroFrontend(cfg).process(p) for p in pcm])


def _input_shifts(pcm, cfg=None):
    """Each stream's FFT input shift in its first window (15 - bit length of the window's largest magnitude)."""
    t = MicroFrontend(cfg).tables
    return {15 - int(apply_window(p[:t.config.window_size], t.window)[1]).bit_length() for p in pcm}


@settings(max_examples=12, deadline=None)
@given(st.sampled_from([1, SCALAR_BELOW - 1, SCALAR_BELOW, 37, LANES - 1, LANES + 3, LANES + SCALAR_BELOW + 1]),
       st.lists(st.sampled_from(LEVELS), min_size=1, max_size=12), st.integers(1, 700), st.integers(0, 2 ** 16))
def test_lanes_equal_separate_frontends_on_mixed_streams(streams, kinds, chunk, seed):
    pcm = np.stack([_stream(kinds[s % len(kinds)], 480 + 160 * 4, seed + s) for s in range(streams)])
    batch, frames, pos = MicroFrontend(streams=streams), [], 0
    while pos < pcm.shape[1]:
        feats, used = batch.process_samples(pcm[:, pos:pos + chunk])
        pos += used
        if feats is not None:
            frames.append(feats)
    assert np.array_equal(np.stack(frames, axis=1), _separately(pcm))


def test_a_block_of_lanes_with_every_kind_of_stream_and_differing_input_shifts():
    """One block of LANES + 5 streams (a full block of lanes and a tail of five), every kind side by side; TFLM's
    configuration too (another window, FFT and channel count)."""
    n = LANES + 5
    pcm = np.stack([_stream(LEVELS[s % len(LEVELS)], 400 + 160 * 6, s) for s in range(n)])
    assert len(_input_shifts(pcm)) >= 5  # 0, 2, 8, 14 and 15 bits
    for cfg in (None, FrontendConfig.tflm_defaults()):
        fe = MicroFrontend(cfg, streams=n)
        assert np.array_equal(fe.process(pcm), _separately(pcm, cfg))
        est = np.zeros(fe.config.num_channels, np.int64)
        microfrontend(pcm[n - 1], cfg, estimate=est)
        assert np.array_equal(fe.estimate[n - 1], est)


def test_lanes_match_the_oracle():
    """Three lanes of a full block (quiet, loud, uniform), two frames each, against the plain-Python oracle."""
    n = SCALAR_BELOW + 1
    kinds = ("quiet", "loud", "uniform")
    pcm = np.stack([_stream(kinds[s % 3], 480 + 160, s) for s in range(n)])
    got = MicroFrontend(streams=n).process(pcm)
    for s in range(3):
        assert np.array_equal(got[s], np.array(ora.Frontend().run(pcm[s]), np.uint16).reshape(-1, 40))
