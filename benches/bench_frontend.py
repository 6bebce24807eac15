"""Per-frame time of the audio front end and per-call time of CMSIS-DSP kernels: the front-end rows of ``dspsim
bench`` (:mod:`dspsim.bench.frontend`), timed here by pytest-benchmark through the same
:func:`dspsim.bench.timing.measure`.

Cases: the microfrontend at batch 1 (a call per 10 ms chunk) and over N streams (``DSPSIM_BENCH_SIZE`` quick: 8
chunks, 8 streams; any other size: 50 chunks, 256 streams: the streams as SIMD lanes), dspsim beside
pymicro-features (the C code; skipped when it is not installed); each stage of the lanes' frame on one block of
streams (no peer: where the N-stream time goes); dspsim's CMSIS-DSP kernels (rfft, FIR, biquad DF1, MFCC, q15),
whose peer cmsisdsp is timed by ``dspsim bench``. The features of the benchmarked calls must equal the C code's.
"""
import numpy as np
import pytest

from dspsim import bench
from dspsim.bench import frontend


def _size():
    return "quick" if bench.env_sizes() == ["quick"] else "full"


@pytest.mark.parametrize("streams", ["batch1", "streams"])
@pytest.mark.parametrize("engine", ["dspsim", "pymicro-features"])
def test_microfrontend_frames_match_the_c_code(benchmark, threads, streams, engine):
    size = _size()
    n_streams, n_chunks = (1 if streams == "batch1" else frontend.STREAMS[size]), frontend.CHUNKS[size]
    make_dspsim_call, peer_call = frontend.stream_calls(frontend.bench_signal(320 + n_chunks * frontend.CHUNK, n_streams),
                                                         n_chunks)
    if peer_call is None:
        pytest.skip("pymicro-features not installed")
    fn = make_dspsim_call() if engine == "dspsim" else peer_call
    t = bench.measure(fn, benchmark=benchmark)
    benchmark.extra_info.update(engine=engine, streams=n_streams, chunks=n_chunks, threads=threads,
                                frames_per_call=n_streams * n_chunks)
    if engine == "dspsim":
        assert np.array_equal(frontend.dspsim_features(t.result, n_streams), frontend.c_features(peer_call()))


@pytest.mark.parametrize("stage", range(6))
def test_microfrontend_lane_stage(benchmark, stage):
    name, call = frontend.lane_stage_calls()[stage]
    bench.measure(call, benchmark=benchmark)
    benchmark.extra_info.update(stage=name)


@pytest.mark.parametrize("case", ["arm_rfft_q15", "arm_fir_q15", "arm_biquad_cascade_df1_q15", "arm_mfcc_q15"])
def test_cmsis_dsp_kernel(benchmark, case):
    calls = frontend.dspsim_dsp_calls(frontend.dsp_problems())
    if case not in calls:
        pytest.skip("the CMSIS-DSP goldens with this kernel's tables are absent")
    t = bench.measure(calls[case], benchmark=benchmark)
    benchmark.extra_info.update(case=case)
    assert np.asarray(t.result).size > 0
