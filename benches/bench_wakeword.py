"""microWakeWord v1 / v2 streaming at batch 1: dspsim's ``Model.run`` per frame beside the TFLite Micro interpreter's
invoke, in one run (issue 29: >= 1x TFLM per frame, bit-exact).

dspsim (engine ``tflm``) is timed by pytest-benchmark through :func:`dspsim.bench.measure`; TFLM by the same rule
in its process (:mod:`dspsim.bench.model_peers`: in-process, or the python of ``DSPSIM_TFLM_PYTHON``); both after
an untimed warm-up (numba compilation and the lowering at load are kept out). ``extra_info`` holds both times and
``tflm_over_dspsim`` (> 1: dspsim is faster); the frames of the check (:data:`dspsim.bench.models.
STREAM_CHECK_FRAMES`, from a reset) must match TFLM's bit for bit. Models: pymicro-wakeword's ``okay_nabu`` and
:data:`dspsim.bench.models.WAKEWORD_MODELS` from ``../shared/models/fresh`` (skipped where absent).
"""
import pytest

from dspsim import bench
from dspsim.bench import model_peers, models

CASES = [c for c in models.model_cases("full") if c.name in models.WAKEWORD_MODELS or "microWakeWord" in c.name]


@pytest.mark.parametrize("case", CASES, ids=[c.name.split()[0] for c in CASES])
def test_wakeword_frame_against_tflm(benchmark, threads, case):
    import dspsim.tflite

    if case.missing():
        pytest.skip(case.missing())
    try:
        model_peers.where("tflm")
    except model_peers.PeerUnavailable as exc:
        pytest.skip(f"no TFLM to compare with: {exc}")
    model = dspsim.tflite.load_model(case.path, engine="tflm")
    x = models.model_inputs(model, 1)
    one, _ = models.dspsim_calls(model, x)
    t = bench.measure(one, benchmark=benchmark)
    reference, peer = model_peers.peer_outputs_and_timing("tflm", case.path, x, len(model.outputs), True, threads, 3,
                                                          0.3)
    mine = models.dspsim_check_outputs(model, x, t.result, None)[0]
    mismatches, compared = models.count_mismatches(mine, reference)
    benchmark.extra_info.update(model=case.name, tflm_us=peer.min_seconds * 1e6, mismatches=mismatches,
                                compared=compared, threads=threads)
    if t.min_seconds is not None:  # None: pytest-benchmark disabled, only the check ran
        benchmark.extra_info.update(dspsim_us=t.min_seconds * 1e6, tflm_over_dspsim=peer.min_seconds / t.min_seconds)
    assert compared > 0 and mismatches == 0
