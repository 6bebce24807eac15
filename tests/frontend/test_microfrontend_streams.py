"""MicroFrontend(streams=N): N independent streams in one compiled call (split over threads when large) give, stream
by stream, the golden features and what N separate streaming frontends give; bad batches are refused by name."""
from __future__ import annotations

import os

import numba
import numpy as np
import pytest

import dspsim
from dspsim.frontend import FrontendConfig, MicroFrontend, microfrontend

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
    pcm, want = _golden_batch(40)  # 40 streams: enough work to split over 2 threads
    before = dspsim.get_num_threads()
    dspsim.set_num_threads(min(threads, numba.config.NUMBA_NUM_THREADS))
    try:
        got = MicroFrontend(streams=40).process(pcm)
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
