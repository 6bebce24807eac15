"""SIMD for the host dspsim runs on: LLVM IR through numba intrinsics, chosen at import from the CPU's features
(or a lower level forced by ``DSPSIM_SIMD``).

==================== ==========================================================================================
:mod:`.cpu`          the SIMD level every path obeys (the CPU's best, or ``DSPSIM_SIMD``: :data:`~.cpu.LEVEL`,
                     :data:`~.cpu.HAVE_AVX2`, :data:`~.cpu.HAVE_AVX512`, :data:`~.cpu.HAVE_VNNI`,
                     :func:`~.cpu.describe`), and whether a peer's GEMM takes VNNI here
:mod:`.tiles`        the exact int8 GEMM tiles (AVX-512 VNNI ``vpdpbusd``, AVX2 ``vpmaddwd``)
:mod:`.requant_lanes` TFLite's fixed-point and the float-scale requantizations in int32 / float32 lanes
:mod:`.add_lanes`    TFLite's, LiteRT's optimized and XNNPACK's quantized ADD, and MUL, in int32 lanes
:mod:`.lut_lanes`    8-bit lookup tables over 32 codes a step (byte shuffles)
:mod:`._ir`          the IR types, constants, splats and intrinsic calls the others build with
:mod:`.streaming`    non-temporal (streaming) stores of whole cache lines
==================== ==========================================================================================

Every path gives the integers of the scalar code it replaces; callers keep that code for hosts without the
feature (and under ``NUMBA_DISABLE_JIT``). This package imports nothing of dspsim above
:mod:`dspsim.fixedpoint` and :mod:`dspsim.requant` (the value types whose arithmetic the lanes run).
"""
