"""Arm CMSIS-DSP's fixed-point kernels, bit for bit with the library's C code (``cmsisdsp`` 1.10.3 on the host:
the generic C paths), one module per family:

* :mod:`.basic`: add, sub, mult, negate, abs, scale, shift, dot_prod (q7 q15 q31), offset (q31);
* :mod:`.fir`: arm_fir, arm_fir_fast, arm_fir_decimate(_fast), arm_fir_interpolate (q15 q31), arm_fir_q7;
* :mod:`.biquad`: arm_biquad_cascade_df1, _fast (q15 q31), arm_biquad_cas_df1_32x64_q31;
* :mod:`.fft`: arm_cfft, arm_rfft (q15 q31, every length);
* :mod:`.matrix`: arm_mat_mult (q7 q15 q31), _fast (q15 q31), _opt (q31), arm_mat_vec_mult (q15 q31);
* :mod:`.fastmath`: arm_sin, arm_cos, arm_sqrt, arm_divide (q15 q31), arm_vlog (q15 q31);
* :mod:`.complex_math`: arm_cmplx_mag(_fast), _mag_squared, _mult_cmplx; :mod:`.statistics`: arm_absmax, arm_power, arm_mean,
  arm_rms;
* :mod:`.conv`: arm_conv, arm_correlate (q7 q15 q31);
* :mod:`.mfcc`: arm_mfcc (q15 q31).

The names are the C functions'; the arithmetic of each, and what was measured, is in docs/dsp.md. The oracle is
:mod:`dspsim.oracle.dsp`.
"""
from .basic import (  # noqa: F401
    arm_abs_q7,
    arm_abs_q15,
    arm_abs_q31,
    arm_add_q7,
    arm_add_q15,
    arm_add_q31,
    arm_dot_prod_q7,
    arm_dot_prod_q15,
    arm_dot_prod_q31,
    arm_mult_q7,
    arm_mult_q15,
    arm_mult_q31,
    arm_negate_q7,
    arm_negate_q15,
    arm_negate_q31,
    arm_offset_q31,
    arm_scale_q7,
    arm_scale_q15,
    arm_scale_q31,
    arm_shift_q7,
    arm_shift_q15,
    arm_shift_q31,
    arm_sub_q7,
    arm_sub_q15,
    arm_sub_q31,
)
from .biquad import (  # noqa: F401
    BiquadDf1Instance,
    BiquadDf1x64Instance,
    arm_biquad_cas_df1_32x64_init_q31,
    arm_biquad_cas_df1_32x64_q31,
    arm_biquad_cascade_df1_fast_q15,
    arm_biquad_cascade_df1_fast_q31,
    arm_biquad_cascade_df1_init_q15,
    arm_biquad_cascade_df1_init_q31,
    arm_biquad_cascade_df1_q15,
    arm_biquad_cascade_df1_q31,
)
from .complex_math import (  # noqa: F401
    arm_cmplx_mag_fast_q15,
    arm_cmplx_mag_q15,
    arm_cmplx_mag_q31,
    arm_cmplx_mag_squared_q15,
    arm_cmplx_mag_squared_q31,
    arm_cmplx_mult_cmplx_q15,
    arm_cmplx_mult_cmplx_q31,
)
from .conv import (  # noqa: F401
    arm_conv_q7,
    arm_conv_q15,
    arm_conv_q31,
    arm_correlate_q7,
    arm_correlate_q15,
    arm_correlate_q31,
)
from .fastmath import (  # noqa: F401
    arm_cos_q15,
    arm_cos_q31,
    arm_divide_q15,
    arm_divide_q31,
    arm_sin_q15,
    arm_sin_q31,
    arm_sqrt_q15,
    arm_sqrt_q31,
    arm_vlog_q15,
    arm_vlog_q31,
)
from .fft import (  # noqa: F401
    CfftInstance,
    RfftInstance,
    arm_cfft_init_q15,
    arm_cfft_init_q31,
    arm_cfft_q15,
    arm_cfft_q31,
    arm_rfft_init_q15,
    arm_rfft_init_q31,
    arm_rfft_q15,
    arm_rfft_q31,
)
from .fir import (  # noqa: F401
    FirDecimateInstance,
    FirInstance,
    FirInterpolateInstance,
    arm_fir_decimate_fast_q15,
    arm_fir_decimate_fast_q31,
    arm_fir_decimate_init_q15,
    arm_fir_decimate_init_q31,
    arm_fir_decimate_q15,
    arm_fir_decimate_q31,
    arm_fir_fast_q15,
    arm_fir_fast_q31,
    arm_fir_init_q7,
    arm_fir_init_q15,
    arm_fir_init_q31,
    arm_fir_interpolate_init_q15,
    arm_fir_interpolate_init_q31,
    arm_fir_interpolate_q15,
    arm_fir_interpolate_q31,
    arm_fir_q7,
    arm_fir_q15,
    arm_fir_q31,
)
from .matrix import (  # noqa: F401
    arm_mat_mult_fast_q15,
    arm_mat_mult_fast_q31,
    arm_mat_mult_opt_q31,
    arm_mat_mult_q7,
    arm_mat_mult_q15,
    arm_mat_mult_q31,
    arm_mat_vec_mult_q15,
    arm_mat_vec_mult_q31,
)
from .mfcc import (  # noqa: F401
    MfccInstance,
    arm_mfcc_init_q15,
    arm_mfcc_init_q31,
    arm_mfcc_q15,
    arm_mfcc_q31,
)
from .statistics import (  # noqa: F401
    arm_absmax_q15,
    arm_absmax_q31,
    arm_mean_q15,
    arm_mean_q31,
    arm_power_q7,
    arm_power_q15,
    arm_power_q31,
    arm_rms_q15,
    arm_rms_q31,
)


def warmup() -> None:
    """Compile every kernel of dspsim.dsp on tiny inputs (numba caches them on disk)."""
    import numpy as np

    from . import basic, biquad, complex_math, conv, fastmath, fft, fir, matrix, mfcc

    for q, t in (("q7", np.int8), ("q15", np.int16), ("q31", np.int32)):
        a = np.arange(4, dtype=t)
        for name in ("add", "sub", "mult", "dot_prod"):
            getattr(basic, f"arm_{name}_{q}")(a, a)
        for name in ("negate", "abs"):
            getattr(basic, f"arm_{name}_{q}")(a)
        getattr(basic, f"arm_scale_{q}")(a, 1, 0)
        getattr(basic, f"arm_shift_{q}")(a, 1)
        getattr(matrix, f"arm_mat_mult_{q}")(a.reshape(2, 2), a.reshape(2, 2))
        getattr(conv, f"arm_conv_{q}")(a, a)
        getattr(conv, f"arm_correlate_{q}")(a, a[:2])
        if q == "q7":
            continue
        S = getattr(fir, f"arm_fir_init_{q}")(np.ones(2, t))
        getattr(fir, f"arm_fir_{q}")(S, a)
        getattr(fir, f"arm_fir_fast_{q}")(S, a)
        S = getattr(fir, f"arm_fir_decimate_init_{q}")(np.ones(2, t), 2)
        getattr(fir, f"arm_fir_decimate_{q}")(S, a)
        getattr(fir, f"arm_fir_decimate_fast_{q}")(S, a)
        S = getattr(fir, f"arm_fir_interpolate_init_{q}")(np.ones(4, t), 2)
        getattr(fir, f"arm_fir_interpolate_{q}")(S, a)
        per = 6 if q == "q15" else 5
        S = getattr(biquad, f"arm_biquad_cascade_df1_init_{q}")(1, np.zeros(per, t), 1)
        getattr(biquad, f"arm_biquad_cascade_df1_{q}")(S, a)
        getattr(biquad, f"arm_biquad_cascade_df1_fast_{q}")(S, a)
        if q == "q31":
            S = biquad.arm_biquad_cas_df1_32x64_init_q31(1, np.zeros(5, t), 1)
            biquad.arm_biquad_cas_df1_32x64_q31(S, a)
        for n in (16, 32):
            S = getattr(fft, f"arm_cfft_init_{q}")(n)
            getattr(fft, f"arm_cfft_{q}")(S, np.zeros(2 * n, t), False, True)
            getattr(fft, f"arm_cfft_{q}")(S, np.zeros(2 * n, t), True, False)
        for ifft in (False, True):
            S = getattr(fft, f"arm_rfft_init_{q}")(32, ifft)
            getattr(fft, f"arm_rfft_{q}")(S, np.zeros(32 + 2 * ifft, t))
        for name in ("sin", "cos", "sqrt"):
            getattr(fastmath, f"arm_{name}_{q}")(a)
        getattr(complex_math, f"arm_cmplx_mag_{q}")(a)
        getattr(complex_math, f"arm_cmplx_mag_squared_{q}")(a)
        getattr(complex_math, f"arm_cmplx_mult_cmplx_{q}")(a, a)
        getattr(matrix, f"arm_mat_vec_mult_{q}")(a.reshape(2, 2), a[:2])
        S = getattr(mfcc, f"arm_mfcc_init_{q}")(32, 1, 1, np.ones(1, t), [0], [2], np.ones(2, t), np.ones(32, t))
        getattr(mfcc, f"arm_mfcc_{q}")(S, np.arange(32, dtype=t))
    fastmath.arm_vlog_q31(np.arange(4, dtype=np.int32))
    fastmath.arm_vlog_q15(np.arange(4, dtype=np.int16))
    complex_math.arm_cmplx_mag_fast_q15(np.arange(4, dtype=np.int16))
    fir.arm_fir_q7(fir.arm_fir_init_q7(np.ones(3, np.int8)), np.arange(4, dtype=np.int8))
    basic.arm_offset_q31(np.arange(4, dtype=np.int32), 1)
