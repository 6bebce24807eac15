"""The integer types of quantized tensors: numpy dtype, range and narrow-range minimum.

TensorFlow spells them ``qint8``/``quint8``/...; PyTorch and ONNX use ``int8``/``uint8``/...;
both spellings name the same :class:`IntType`.  ``narrow_min`` is ``min + 1`` for signed types
(the symmetric range ``[-(2^(b-1) - 1), 2^(b-1) - 1]``) and ``min`` for unsigned ones, except where a
framework says otherwise (TF's quint8 SCALED narrow range starts at 1: see ``quantize.py``).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class IntType:
    """An integer type: ``name``, ``bits``, ``signed`` and its numpy ``dtype``."""

    name: str
    bits: int
    signed: bool

    @property
    def dtype(self) -> np.dtype:
        return np.dtype(f"{'' if self.signed else 'u'}int{self.bits}")

    @property
    def min(self) -> int:
        return -(1 << (self.bits - 1)) if self.signed else 0

    @property
    def max(self) -> int:
        return (1 << (self.bits - 1)) - 1 if self.signed else (1 << self.bits) - 1

    @property
    def narrow_min(self) -> int:
        """Lowest code with narrow range: ``min + 1`` for signed types, ``min`` for unsigned."""
        return self.min + 1 if self.signed else self.min


qint8 = IntType("qint8", 8, True)
quint8 = IntType("quint8", 8, False)
qint16 = IntType("qint16", 16, True)
quint16 = IntType("quint16", 16, False)
qint32 = IntType("qint32", 32, True)

int8 = IntType("int8", 8, True)
uint8 = IntType("uint8", 8, False)
int16 = IntType("int16", 16, True)
uint16 = IntType("uint16", 16, False)
int32 = IntType("int32", 32, True)

TF_TYPES = {t.name: t for t in (qint8, quint8, qint16, quint16, qint32)}
PLAIN_TYPES = {t.name: t for t in (int8, uint8, int16, uint16, int32)}
ALL_TYPES = {**TF_TYPES, **PLAIN_TYPES}


def int_type(name, func: str = "dspsim", allowed=None) -> IntType:
    """Look up an :class:`IntType` by name (``"qint8"``, ``"int8"``, an IntType or a numpy dtype).

    Raises
    ------
    TypeError
        If ``name`` is not a string, IntType or integer numpy dtype.
    ValueError
        If the name is unknown, or not in ``allowed`` (a dict of names), naming ``func``.
    """
    table = ALL_TYPES if allowed is None else allowed
    if isinstance(name, IntType):
        key = name.name
    elif isinstance(name, str):
        key = name
    else:
        try:
            dt = np.dtype(name)
        except TypeError:
            raise TypeError(f"{func}: dtype must be a type name such as 'int8', got {name!r}") from None
        if dt.kind not in "iu":
            raise TypeError(f"{func}: dtype must be an integer type, got {dt}")
        key = dt.name
    if key not in table:
        raise ValueError(f"{func}: unknown integer type {key!r}; expected one of {sorted(table)}")
    return table[key]
