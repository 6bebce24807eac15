"""dspsim.frontend: TFLite Micro's audio microfrontend, bit-exact.

* The goldens (tests/golden/microfrontend.npz, make_golden_microfrontend.py): pymicro-features 2.0.2's C
  frontend on speech, loud speech, noise, silence, dither, full-scale tones and random int16, every frame, 0
  mismatches; the oracle (dspsim.oracle.frontend) on the first frames of each kind.
* Every stage kernel against the oracle on hypothesis inputs with the edges (int16 min/max, zeros, alternating
  full scale, every shift), and every table against the oracle's own derivation.
* Bad input refused with ValueError / TypeError naming the function and the rule.
* The microWakeWord pipeline end to end: PCM -> features -> int8 input -> the four pymicro-wakeword models ->
  outputs, against the golden's TFLite Micro (tflite-micro wheel) and LiteRT (the package's C library) outputs.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import hashlib
import json
import math
import os
import subprocess
import sys
import wave

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import dspsim.oracle.frontend as ora
from dspsim.frontend import (
    FrontendConfig,
    MicroFrontend,
    apply_window,
    fft_compute,
    fft_tables,
    filterbank_accumulate,
    filterbank_energy,
    filterbank_sqrt,
    frontend_tables,
    log_scale,
    microfrontend,
    noise_reduction,
    pcan_gain_control,
    quantize_features,
    rfft,
    run_wake_word,
    wide_dynamic_function,
)
from dspsim.frontend.libm import log1pf_fdlibm
from shared_models import fresh_model, pymicro_wakeword_model

Z = np.load(os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "golden", "microfrontend.npz"))
META = json.loads(str(Z["meta"]))
KINDS = sorted(META["kinds"])
CFG = FrontendConfig()
T = frontend_tables(CFG)
FB_ORACLE = ora.filterbank_tables(16000, 512, 40, 125.0, 7500.0)

I16 = st.integers(-32768, 32767)
U32 = st.integers(0, 2 ** 32 - 1)
EDGE16 = st.sampled_from([-32768, -32767, -1, 0, 1, 32766, 32767])


def _int16_signal(n):
    """Lists of n int16 values: random, edges, all zeros, all min/max, alternating full scale."""
    return st.one_of(
        st.lists(st.one_of(I16, EDGE16), min_size=n, max_size=n),
        st.sampled_from([[0] * n, [-32768] * n, [32767] * n, [32767, -32768] * (n // 2),
                         [-32768, 32767] * (n // 2), [-32768, -32768, 32767, 32767] * (n // 4)]))


# --- goldens ------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("kind", KINDS)
def test_every_frame_of_every_golden_matches_pymicro_features(kind):
    got, want = microfrontend(Z[f"{kind}/pcm"]), Z[f"{kind}/features"]
    assert got.dtype == np.uint16 and got.shape == want.shape == (META["kinds"][kind]["frames"], 40)
    bad = np.argwhere(got != want)
    assert bad.shape[0] == 0, f"{bad.shape[0]} mismatches, first (frame, channel) {bad[:5].tolist()}"


@pytest.mark.parametrize("kind", KINDS)
def test_the_oracle_matches_the_golden_on_the_first_frames(kind):
    pcm = Z[f"{kind}/pcm"][:480 + 160 * 7]
    assert np.array_equal(np.array(ora.Frontend().run(pcm), np.uint16).reshape(-1, 40), Z[f"{kind}/features"][:8])


def test_streaming_in_any_chunks_gives_the_same_frames():
    pcm = Z["speech_alexa/pcm"]
    rng = np.random.default_rng(7)
    fe, frames, pos = MicroFrontend(), [], 0
    while pos < len(pcm):
        n = min(int(rng.integers(1, 700)), len(pcm) - pos)
        while n:
            feats, used = fe.process_samples(pcm[pos:pos + n])
            pos, n = pos + used, n - used
            if feats is not None:
                frames.append(feats)
    assert np.array_equal(np.array(frames), Z["speech_alexa/features"])
    fe.reset()
    assert np.array_equal(fe.process(pcm[:4000]), Z["speech_alexa/features"][:(4000 - 480) // 160 + 1])


def test_the_noise_estimate_is_the_state_between_calls():
    pcm = Z["noise_1000/pcm"]
    est = np.zeros(40, np.int64)
    a = microfrontend(pcm[:480 + 160 * 49], estimate=est)
    b = microfrontend(pcm[160 * 50:], estimate=est)
    assert np.array_equal(np.concatenate([a, b]), Z["noise_1000/features"])


# --- tables -------------------------------------------------------------------------------------------------------

def test_every_table_matches_the_oracles_derivation():
    assert T.window.tolist() == ora.window_coefficients(480)
    for key in ("weights", "unweights"):
        assert getattr(T.filterbank, key).tolist() == FB_ORACLE[key]
    assert T.filterbank.channel_frequency_starts.tolist() == FB_ORACLE["freq_starts"]
    assert T.filterbank.channel_weight_starts.tolist() == FB_ORACLE["weight_starts"]
    assert T.filterbank.channel_widths.tolist() == FB_ORACLE["widths"]
    assert (T.filterbank.start_index, T.filterbank.end_index) == (FB_ORACLE["start_index"], FB_ORACLE["end_index"])
    assert T.pcan_lut.tolist() == ora.pcan_lut(0.95, 80.0, 21, 7) and T.snr_shift == 6
    assert T.log_lut.tolist() == ora.log_lut()
    assert T.noise_reduction == (409, 983, 819)
    assert T.fft.twiddles.tolist() == [list(t) for t in ora.twiddles(256)]
    assert T.fft.super_twiddles.tolist() == [list(t) for t in ora.super_twiddles(256)]


@pytest.mark.parametrize("cfg", [FrontendConfig.tflm_defaults(), FrontendConfig(num_channels=80, window_size_ms=64),
                                 FrontendConfig(sample_rate=8000, upper_band_limit=3800.0, num_channels=20),
                                 FrontendConfig(enable_pcan=False, enable_log=False, smoothing_bits=0)])
def test_other_configurations_match_the_oracle(cfg):
    rng = np.random.default_rng(3)
    pcm = rng.integers(-20000, 20000, cfg.window_size + 4 * cfg.window_step).astype(np.int16)
    o = ora.Frontend(cfg.sample_rate, cfg.window_size_ms, cfg.window_step_ms, cfg.num_channels,
                     cfg.lower_band_limit, cfg.upper_band_limit, cfg.smoothing_bits, cfg.even_smoothing,
                     cfg.odd_smoothing, cfg.min_signal_remaining, cfg.enable_pcan, cfg.pcan_strength, cfg.pcan_offset,
                     cfg.gain_bits, cfg.enable_log, cfg.scale_shift)
    assert microfrontend(pcm, cfg).tolist() == o.run(pcm)


@settings(max_examples=300, deadline=None)
@given(st.floats(-0.99609375, 2.0 ** 100, allow_nan=False, width=32))
def test_log1pf_matches_the_oracles_fdlibm(x):
    assert float(log1pf_fdlibm(x)) == ora.log1pf(x)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's log1pf")
def test_log1pf_is_glibcs_where_glibc_is_fdlibm():
    """glibc up to 2.40 computes log1pf with fdlibm's algorithm; newer ones are correctly rounded (skipped)."""
    libc = ctypes.CDLL(ctypes.util.find_library("c"))
    libc.gnu_get_libc_version.restype = ctypes.c_char_p
    major, minor = (int(v) for v in libc.gnu_get_libc_version().decode().split(".")[:2])
    if (major, minor) > (2, 40):
        pytest.skip("glibc > 2.40 has a correctly rounded log1pf")
    libm = ctypes.CDLL(ctypes.util.find_library("m"))
    libm.log1pf.restype, libm.log1pf.argtypes = ctypes.c_float, [ctypes.c_float]
    xs = np.random.default_rng(1).uniform(-0.99, 20, 20000).astype(np.float32)
    assert all(log1pf_fdlibm(x) == np.float32(libm.log1pf(float(x))) for x in xs)


# --- stages against the oracle ------------------------------------------------------------------------------------

@settings(max_examples=60, deadline=None)
@given(_int16_signal(480), st.lists(I16, min_size=480, max_size=480) | st.just(T.window.tolist()))
def test_window(frame, coefficients):
    out, mx = apply_window(np.array(frame, np.int16), np.array(coefficients, np.int16))
    want, want_mx = ora.window(frame, coefficients)
    assert out.tolist() == want and mx == want_mx


def test_the_window_ignores_minus_32768_in_its_maximum():
    out, mx = apply_window(np.array([-32768, 100], np.int16), np.array([4096, 4096], np.int16))
    assert out.tolist() == [-32768, 100] and mx == 100


@settings(max_examples=40, deadline=None)
@given(st.sampled_from([4, 8, 16, 32, 64, 128, 256, 512, 1024]).flatmap(
    lambda n: st.tuples(st.just(n), _int16_signal(n))))
def test_rfft_every_length(n_x):
    n, x = n_x
    got = rfft(np.array(x, np.int16), fft_tables(n))
    assert got.tolist() == [list(c) for c in ora.rfft(x)]


@settings(max_examples=40, deadline=None)
@given(_int16_signal(480), st.integers(0, 15))
def test_fft_compute_every_shift(windowed, shift):
    got = fft_compute(np.array(windowed, np.int16), shift, T.fft)
    assert got.tolist() == [list(c) for c in ora.rfft(ora.fft_input(windowed, shift, 512))]


@settings(max_examples=60, deadline=None)
@given(st.one_of(st.lists(st.tuples(I16, I16), min_size=257, max_size=257),
                 st.sampled_from([[(-32768, -32768)] * 257, [(32767, -32768)] * 257, [(0, 0)] * 257])),
       st.integers(0, 15))
def test_filterbank_energy_accumulate_sqrt(spectrum, shift):
    spec = np.array(spectrum, np.int16)
    e = filterbank_energy(spec, T.filterbank)
    want_e = ora.energy([tuple(map(int, c)) for c in spectrum], T.filterbank.start_index, T.filterbank.end_index)
    assert e.tolist() == want_e
    work = filterbank_accumulate(e, T.filterbank)
    assert [int(w) for w in work] == ora.accumulate(want_e, FB_ORACLE)
    assert filterbank_sqrt(work, shift).tolist() == ora.filterbank_sqrt([int(w) for w in work], shift)


SQRT_EDGES = sorted({v for k in range(64) for v in (2 ** k - 1, 2 ** k, 2 ** k + 1)}
                    | {v * v + d for v in (65535, 65536, 2 ** 32 - 1) for d in (-1, 0, 1)} | {0, 2 ** 64 - 1})


@pytest.mark.parametrize("shift", range(0, 32, 5))
def test_filterbank_sqrt_edges(shift):
    work = np.array([0] + [v for v in SQRT_EDGES if v < 2 ** 64], np.uint64)
    assert filterbank_sqrt(work, shift).tolist() == ora.filterbank_sqrt([int(w) for w in work], shift)


@settings(max_examples=80, deadline=None)
@given(st.lists(st.tuples(U32, U32), min_size=40, max_size=40), st.integers(0, 16),
       st.tuples(st.integers(0, 16384), st.integers(0, 16384), st.integers(0, 16384)))
def test_noise_reduction_every_smoothing_shift(sig_est, bits, q14):
    signal, estimate = (list(v) for v in zip(*sig_est))
    out, est = noise_reduction(np.array(signal, np.uint32), np.array(estimate, np.uint32), smoothing_bits=bits,
                               even_smoothing=q14[0], odd_smoothing=q14[1], min_signal_remaining=q14[2])
    want, want_est = ora.noise_reduction(signal, estimate, bits, *q14)
    assert out.tolist() == want and est.tolist() == want_est


@settings(max_examples=80, deadline=None)
@given(st.lists(st.tuples(U32, U32 | st.sampled_from([0, 1, 2, 3, 2 ** 31, 2 ** 32 - 1])), min_size=40,
                max_size=40),
       st.integers(0, 12))
def test_pcan(sig_est, snr_shift):
    signal, estimate = (list(v) for v in zip(*sig_est))
    lut = T.pcan_lut
    got = pcan_gain_control(np.array(signal, np.uint32), np.array(estimate, np.uint32), lut, snr_shift)
    assert got.tolist() == ora.pcan(signal, estimate, lut.tolist(), snr_shift)


@settings(max_examples=60, deadline=None)
@given(st.lists(I16, min_size=125, max_size=125), st.lists(U32, min_size=20, max_size=20))
def test_wide_dynamic_function_any_table(lut, xs):
    xs = xs + [0, 1, 2, 3, 1023, 1024, 2047, 2048, 2 ** 31, 2 ** 32 - 1]
    assert wide_dynamic_function(np.array(xs, np.uint32), np.array(lut, np.int16)).tolist() == \
        [ora.wide_dynamic_function(x, lut) for x in xs]


LOG_EDGES = sorted({v for k in range(32) for v in (2 ** k - 1, 2 ** k, 2 ** k + 1) if 0 <= v < 2 ** 32})


@pytest.mark.parametrize("scale_shift", range(0, 17))
@pytest.mark.parametrize("correction", [-3, 0, 3, 8])
def test_log_scale_every_shift(scale_shift, correction):
    rng = np.random.default_rng(scale_shift * 100 + correction + 10)
    x = np.concatenate([LOG_EDGES, rng.integers(0, 2 ** 32, 200)]).astype(np.uint32)
    got = log_scale(x, correction_bits=correction, scale_shift=scale_shift)
    assert got.dtype == np.uint16
    assert got.tolist() == ora.log_scale(x.tolist(), correction, scale_shift, True, ora.log_lut())
    assert log_scale(x, correction_bits=correction, enable_log=False).tolist() == \
        ora.log_scale(x.tolist(), correction, 6, False, ora.log_lut())


# --- bad input ----------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("pcm, exc, words", [
    (np.zeros(1000, np.float32), TypeError, "int16 PCM"),
    (np.array([np.nan] * 1000), TypeError, "NaN"),
    (np.full(1000, 40000, np.int32), ValueError, "int16 values"),
    (b"\x00" * 2000, TypeError, "np.frombuffer"),
    (np.zeros((2, 1000), np.int16), ValueError, "dimension"),
    (np.zeros(1000, np.bool_), TypeError, "int16 array"),
])
def test_bad_pcm_is_refused_naming_the_function(pcm, exc, words):
    with pytest.raises(exc, match=f"^microfrontend: .*{words}"):
        microfrontend(pcm)


def test_wrong_sample_rate_is_refused():
    with pytest.raises(ValueError, match="^microfrontend: the signal's sample_rate 44100 Hz is not"):
        microfrontend(np.zeros(1000, np.int16), sample_rate=44100)
    with pytest.raises(ValueError, match="^FrontendConfig: upper_band_limit 7500.0 Hz is above the Nyquist"):
        FrontendConfig(sample_rate=8000)
    with pytest.raises(TypeError, match="^FrontendConfig: sample_rate must be an int"):
        FrontendConfig(sample_rate=16000.0)
    with pytest.raises(ValueError, match="^FrontendConfig: pcan_offset must be a finite number"):
        FrontendConfig(pcan_offset=float("nan"))
    with pytest.raises(ValueError, match="^FrontendConfig: the window step"):
        FrontendConfig(window_step_ms=40)
    with pytest.raises(TypeError, match="^microfrontend: config must be"):
        microfrontend(np.zeros(1000, np.int16), {"sample_rate": 16000})


def test_bad_stage_arguments_are_refused():
    with pytest.raises(ValueError, match="^rfft: x must have the FFT length 512"):
        rfft(np.zeros(480, np.int16), T.fft)
    with pytest.raises(ValueError, match="^fft_tables: the real FFT length must be a power of two"):
        fft_tables(480)
    with pytest.raises(ValueError, match="^fft_compute: input_shift must be an int in 0..15"):
        fft_compute(np.zeros(480, np.int16), 16, T.fft)
    with pytest.raises(ValueError, match="^filterbank_sqrt: scale_down_shift"):
        filterbank_sqrt(np.zeros(41, np.uint64), -1)
    with pytest.raises(TypeError, match="^filterbank_sqrt: work must be a 1-D uint64"):
        filterbank_sqrt(np.zeros(41, np.float64), 0)
    with pytest.raises(ValueError, match="^noise_reduction: signal must hold values in 0..4294967295"):
        noise_reduction(np.array([-1] * 40), np.zeros(40, np.uint32), smoothing_bits=10, even_smoothing=409,
                        odd_smoothing=983, min_signal_remaining=819)
    with pytest.raises(ValueError, match="^noise_reduction: smoothing_bits must be an int in 0..16"):
        noise_reduction(np.zeros(40, np.uint32), np.zeros(40, np.uint32), smoothing_bits=17, even_smoothing=409,
                        odd_smoothing=983, min_signal_remaining=819)
    with pytest.raises(TypeError, match="^pcan_gain_control: signal must be an integer array"):
        pcan_gain_control(np.zeros(40, np.float32), np.zeros(40, np.uint32), T.pcan_lut, 6)
    with pytest.raises(ValueError, match="^log_scale: scale_shift must be an int in 0..16"):
        log_scale(np.zeros(4, np.uint32), correction_bits=3, scale_shift=17)
    with pytest.raises(ValueError, match="^apply_window: frame and coefficients must have the same length"):
        apply_window(np.zeros(4, np.int16), np.zeros(5, np.int16))
    with pytest.raises(TypeError, match="^quantize_features: dtype must be int8 or uint8"):
        quantize_features(np.zeros((3, 40), np.uint16), 0.1, -128, np.int16)


# --- microWakeWord end to end -------------------------------------------------------------------------------------

MODELS = sorted(META["models"])
SPEECH = [k for k in KINDS if k.startswith("speech_")]


def _model(name, engine):
    import dspsim

    path = pymicro_wakeword_model(f"models/{name}.tflite")
    if path is None:
        pytest.skip("pymicro-wakeword is not installed")
    with open(path, "rb") as f:
        assert hashlib.sha256(f.read()).hexdigest() == META["models"][name], "another pymicro-wakeword model"
    return dspsim.load_model(path, engine=engine)


@pytest.mark.parametrize("name", MODELS)
def test_pcm_to_probability_matches_tflite_micro_under_tflm(name):
    model = _model(name, "tflm")
    for kind in SPEECH:
        r = run_wake_word(model, microfrontend(Z[f"{kind}/pcm"]))
        assert np.array_equal(r["inputs"], Z[f"{kind}/{name}/in"]), kind
        got, want = r["outputs"].reshape(-1, 1), Z[f"{kind}/{name}/tflm_out"]
        assert np.array_equal(got, want), f"{kind}: {int(np.sum(got != want))} of {len(want)} steps differ"
        assert np.array_equal(r["probabilities"], want[:, 0].astype(np.float32) * np.float32(0.00390625))


@pytest.mark.parametrize("name", MODELS)
def test_pcm_to_output_matches_pymicro_wakeword_under_litert_optimized(name):
    model = _model(name, "litert-optimized")
    for kind in SPEECH:
        r = run_wake_word(model, microfrontend(Z[f"{kind}/pcm"]))
        got, want = r["outputs"].reshape(-1, 1), Z[f"{kind}/{name}/litert_out"]
        assert np.array_equal(got, want), f"{kind}: {int(np.sum(got != want))} of {len(want)} steps differ"


@pytest.mark.parametrize("name", sorted(META["fresh_models"]))
def test_pcm_to_output_of_the_deployed_microwakeword_models_matches_tflite_micro(name):
    """The nine mww_* models of ../shared/models/fresh (v1: stride 1, v2: stride 3), fed as pymicro-wakeword
    feeds its own, against the tflite-micro wheel (skipped on a clean clone)."""
    import dspsim

    path = fresh_model(f"{name}.tflite")
    if path is None:
        pytest.skip("../shared/models/fresh is not beside the checkout")
    with open(path, "rb") as f:
        assert hashlib.sha256(f.read()).hexdigest() == META["fresh_models"][name], "another model file"
    model = dspsim.load_model(path, engine="tflm")
    for kind in SPEECH:
        r = run_wake_word(model, microfrontend(Z[f"{kind}/pcm"]))
        assert np.array_equal(r["inputs"], Z[f"{kind}/{name}/in"]), kind
        got, want = r["outputs"].reshape(-1, 1), Z[f"{kind}/{name}/tflm_out"]
        assert np.array_equal(got, want), f"{kind}: {int(np.sum(got != want))} of {len(want)} steps differ"


def test_quantization_wraps_as_numpy_casts():
    f = np.array([[0, 1, 2600, 3400, 65535]], np.uint16)
    q = quantize_features(f, np.float32(0.10196078568696976), -128)
    want = np.round(f.astype(np.float32) * np.float32(0.0390625) / float(np.float32(0.10196078568696976)) - 128)
    assert q.tolist() == [[int(v) % 256 - 256 if int(v) % 256 > 127 else int(v) % 256 for v in want[0]]]


# --- the command line ---------------------------------------------------------------------------------------------

def _wav(path, pcm, rate=16000, channels=1):
    with wave.open(str(path), "wb") as w:
        w.setnchannels(channels)
        w.setsampwidth(2)
        w.setframerate(rate)
        w.writeframes(np.asarray(pcm, "<i2").tobytes())


def _dspsim(*args):
    return subprocess.run([sys.executable, "-m", "dspsim.cli", *args], capture_output=True, text=True)


def test_cli_writes_features_and_model_outputs(tmp_path):
    _wav(tmp_path / "a.wav", Z["speech_okay_nabu/pcm"])
    path = pymicro_wakeword_model("models/okay_nabu.tflite")
    args = ["frontend", str(tmp_path / "a.wav"), "--out", str(tmp_path / "out")]
    if path is not None:
        args += ["--model", path, "--engine", "tflm"]
    r = _dspsim(*args)
    assert r.returncode == 0, r.stderr
    got = np.load(tmp_path / "out" / "frontend.npz")
    assert np.array_equal(got["features"], Z["speech_okay_nabu/features"])
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["frames"] == META["kinds"]["speech_okay_nabu"]["frames"]
    if path is not None:
        assert np.array_equal(got["outputs"].reshape(-1, 1), Z["speech_okay_nabu/okay_nabu/tflm_out"])
        assert math.isclose(summary["max_probability"], Z["speech_okay_nabu/okay_nabu/tflm_out"].max() / 256)


@pytest.mark.parametrize("rate, channels, words", [(44100, 1, "sample rate is 44100 Hz"),
                                                   (16000, 2, "mono 16-bit PCM")])
def test_cli_refuses_other_wavs(tmp_path, rate, channels, words):
    _wav(tmp_path / "a.wav", np.zeros(3200, np.int16), rate, channels)
    r = _dspsim("frontend", str(tmp_path / "a.wav"), "--out", str(tmp_path / "out"))
    assert r.returncode == 2 and f"frontend: {tmp_path / 'a.wav'}: " in r.stderr and words in r.stderr
    assert not (tmp_path / "out").exists()
    (tmp_path / "b.wav").write_bytes(b"not a wav")
    r = _dspsim("frontend", str(tmp_path / "b.wav"), "--out", str(tmp_path / "out"))
    assert r.returncode == 2 and "not a PCM WAV file" in r.stderr
