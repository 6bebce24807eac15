"""The integer helpers the stage kernels share: their home is :mod:`dspsim.kernels.signal._bits`."""
from ..kernels.signal._bits import U64_ONE, U64_TOP, U64_ZERO, as_u64, msb, wrap16, wrap32  # noqa: F401
