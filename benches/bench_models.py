"""Per-inference time of whole .tflite models in dspsim, batch 1 (``Model.run``) and batch N
(``Model.run_batch``), one row per dspsim engine: the model rows of ``dspsim bench``
(:mod:`dspsim.bench.models`), timed here by pytest-benchmark through the same
:func:`dspsim.bench.timing.measure`.

Models: ``DSPSIM_BENCH_SIZE`` quick (the default: tests/golden/models cnn and mobilenet) or any other
size (the full set: person detection, speech commands, MobileNetV2 224 at batch 16, microWakeWord with
256 streams; those absent here are skipped). The peer interpreters (TFLM, LiteRT BUILTIN_REF, LiteRT
default) are timed in their worker process by ``dspsim bench``; here, when one is reachable
(``DSPSIM_TFLM_PYTHON``, ``DSPSIM_LITERT_PYTHON`` or in-process), the benchmarked outputs are diffed
against it and must match bit for bit.
"""
import numpy as np
import pytest

from dspsim import bench
from dspsim.bench import model_peers, models

MODE_IDS = ("batch1", "batchN")


def _model_size():
    return "quick" if bench.env_sizes() == ["quick"] else "full"


def pytest_generate_tests(metafunc):
    if {"case", "peer", "mode"} <= set(metafunc.fixturenames):
        params = [pytest.param(c, p, m, id=f"{c.name.split()[0]}-{p}-{m}")
                  for c in models.model_cases(_model_size()) for p in model_peers.PEERS for m in MODE_IDS]
        metafunc.parametrize("case,peer,mode", params)


def test_model_inference_matches_run_and_the_peer(benchmark, threads, case, peer, mode):
    import dspsim.tflite

    if case.missing():
        pytest.skip(case.missing())
    try:
        model = dspsim.tflite.load_model(case.path, engine=peer)
    except ValueError as exc:
        pytest.skip(f"dspsim refuses the model with this engine: {exc}")
    x = models.model_inputs(model, case.batch)
    one, many = models.dspsim_calls(model, x)
    t = bench.measure(one if mode == "batch1" else many, benchmark=benchmark)
    out = t.result
    benchmark.extra_info.update(model=case.name, engine=model.engine, mode=mode, batch=case.batch, threads=threads)
    lead = () if mode == "batch1" else (case.batch,)
    assert [o.shape for o in out] == [lead + info.shape for info in model.outputs]
    assert [o.dtype for o in out] == [info.dtype for info in model.outputs]
    check = models.dspsim_check_outputs(model, x, *((out, many()) if mode == "batch1" else (one(), out)))
    if not model.stateful:  # run_batch is N calls of run, bit for bit
        assert all(np.array_equal(b[:1], a) for a, b in zip(check[0], check[1]))
    try:
        model_peers.where(peer)
    except model_peers.PeerUnavailable as exc:
        pytest.skip(f"outputs not diffed against {peer}: {exc}")
    reference, _ = model_peers.peer_outputs_and_timing(peer, case.path, x, len(model.outputs), model.stateful,
                                                       threads, 1, 0.0)
    mismatches, compared = models.count_mismatches(check[0 if mode == "batch1" else 1], reference)
    benchmark.extra_info.update(peer=peer, mismatches=mismatches, compared=compared)
    assert compared > 0 and mismatches == 0
