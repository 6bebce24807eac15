"""The cmsisdsp package (Arm's CMSIS-DSP C code through its Python binding) as a peer of ``dspsim bench``'s
front-end rows: each kernel's output on the bench's inputs and the Timing of one call, by the rule of
:mod:`dspsim.bench.timing`.

Standard library, numpy and cmsisdsp only (no dspsim import), so that it runs as it is in a worker process
(``python cmsisdsp_peer.py IN.npz OUT.npz TIMING.py REPEATS BUDGET``) under the interpreter named by
``DSPSIM_CMSISDSP_PYTHON`` when cmsisdsp is not importable here; in-process, :mod:`dspsim.bench.frontend` calls
:func:`run_cases` itself.

Inputs (``IN.npz``): ``<case>/<array>`` per case of :data:`CASES`, as :func:`dspsim.bench.frontend.dsp_problems`
makes them. Outputs (``OUT.npz``): ``<case>/out`` (the first call's, on a fresh instance), ``<case>/seconds``
(min, median, CPU min) and ``<case>/runs``.
"""
from __future__ import annotations

import importlib.util
import sys

import numpy as np

CASES = ("arm_rfft_q15", "arm_fir_q15", "arm_biquad_cascade_df1_q15", "arm_mfcc_q15")


def calls(p: dict) -> dict:
    """One zero-argument call per case of :data:`CASES` present in ``p`` (a fresh instance each, made here)."""
    import cmsisdsp as dsp

    out = {}
    if "arm_rfft_q15/x" in p:
        x = p["arm_rfft_q15/x"]
        rfft = dsp.arm_rfft_instance_q15()
        assert dsp.arm_rfft_init_q15(rfft, x.shape[0], 0, 1) == 0
        out["arm_rfft_q15"] = lambda: dsp.arm_rfft_q15(rfft, x)
    if "arm_fir_q15/x" in p:
        c, xf = p["arm_fir_q15/coeffs"], p["arm_fir_q15/x"]
        fir = dsp.arm_fir_instance_q15()
        dsp.arm_fir_init_q15(fir, c.shape[0], c, np.zeros(c.shape[0] + xf.shape[0] - 1, np.int16))
        out["arm_fir_q15"] = lambda: dsp.arm_fir_q15(fir, xf)
    if "arm_biquad_cascade_df1_q15/x" in p:
        cb, xb = p["arm_biquad_cascade_df1_q15/coeffs"], p["arm_biquad_cascade_df1_q15/x"]
        stages = cb.shape[0] // 6
        bq = dsp.arm_biquad_casd_df1_inst_q15()
        dsp.arm_biquad_cascade_df1_init_q15(bq, stages, cb, np.zeros(4 * stages, np.int16),
                                            int(p["arm_biquad_cascade_df1_q15/post_shift"]))
        out["arm_biquad_cascade_df1_q15"] = lambda: dsp.arm_biquad_cascade_df1_q15(bq, xb)
    if "arm_mfcc_q15/x" in p:
        k = "arm_mfcc_q15/"
        xm = p[k + "x"]
        mfcc = dsp.arm_mfcc_instance_q15()
        assert dsp.arm_mfcc_init_q15(mfcc, xm.shape[0], p[k + "pos"].shape[0], p[k + "dct"].shape[0]
                                     // p[k + "pos"].shape[0], p[k + "dct"], p[k + "pos"], p[k + "lengths"],
                                     p[k + "coefs"], p[k + "window"]) == 0
        tmp = np.zeros(2 * xm.shape[0], np.int32)

        def run_mfcc():
            res = dsp.arm_mfcc_q15(mfcc, xm, tmp)
            return res[1] if isinstance(res, tuple) else res
        out["arm_mfcc_q15"] = run_mfcc
    return out


def run_cases(p: dict, measure, repeats: int, budget: float) -> dict:
    """``{case/out, case/seconds, case/runs}`` of every case in ``p``, timed by ``measure``
    (:func:`dspsim.bench.timing.measure`)."""
    res = {}
    for case, fn in calls(p).items():
        t = measure(fn, repeats, budget)
        res[f"{case}/out"] = np.asarray(t.result)
        res[f"{case}/seconds"] = np.array([t.min_seconds, t.median_seconds, t.cpu_min_seconds], np.float64)
        res[f"{case}/runs"] = np.int64(t.runs)
    return res


def _main(argv) -> int:  # pragma: no cover - runs in the worker process
    src, dst, timing_path, repeats, budget = argv
    spec = importlib.util.spec_from_file_location("dspsim_bench_timing", timing_path)
    timing = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(timing)
    with np.load(src) as z:
        p = {k: z[k] for k in z.files}
    np.savez(dst, **run_cases(p, timing.measure, int(repeats), float(budget)))
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(_main(sys.argv[1:]))
