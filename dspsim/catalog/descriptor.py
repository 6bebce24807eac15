"""The descriptor of an operator: the single place that says what an operator is to the rest of dspsim.

Each family module of :mod:`dspsim.catalog` makes one :func:`register` call per public operator of that
family. Everything that needs "every operator" iterates :func:`operators` instead of keeping a list of its
own:

* :func:`dspsim.warmup` compiles each operator on its :attr:`Operator.examples`;
* the harness's case vocabulary (:func:`dspsim.harness.ops.vocabulary`) offers each operator as a
  suite ``op``: cases call the kernel and the oracle on the same arguments and diff them bit for bit
  (operators with a :attr:`Operator.study` also get that study's float-error and scheme analysis);
* the built-in suite (:func:`dspsim.harness.default_suite.default_suite`) is the union of every
  operator's :attr:`Operator.cases`;
* ``tests/kernels/test_catalog.py`` runs every example through the kernel and the oracle.

The catalog sits above the kernels and the oracle and imports both; neither imports it.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Callable

__all__ = ["Operator", "SuiteCase", "registered", "random_codes", "register"]


@dataclass(frozen=True)
class SuiteCase:
    """A case an operator contributes to the built-in suite: a name, suite parameters and a seed."""

    name: str
    params: dict = field(default_factory=dict)
    seed: int = 0


@dataclass(frozen=True)
class Operator:
    """What dspsim knows about one operator.

    Attributes
    ----------
    name : str
        The operator's name in suites and reports (``"add"``, ``"fully_connected"``).
    kernel : callable
        The public, validating function (``dspsim.kernels.arithmetic.elementwise.add``).
    oracle : callable
        Its plain-Python counterpart in :mod:`dspsim.oracle`, called with the same arguments and
        returning the same integers (ndarray, or a tuple of them).
    examples : callable
        ``examples() -> list of dict``: keyword arguments of tiny calls that compile every numba
        specialisation the kernel has (dtypes, paths). :func:`dspsim.warmup` calls them.
    generate : callable or None
        ``generate(params, rng) -> dict``: the kernel's keyword arguments for one suite case, from
        the case's parameters (:attr:`params` updated) and a seeded ``numpy.random.Generator``.
        None when a :attr:`study` generates the case, or when the operator is not a suite ``op``
        of its own (a dequantizer that its quantizer's study covers).
    params, choices : dict
        Suite parameters with their defaults, and the allowed values of the enumerated ones.
    cases : tuple of SuiteCase
        What the operator contributes to the built-in suite (edge cases: ties, saturation, ...).
    study : str or None
        Name of a richer runner in :mod:`dspsim.harness.studies` (float model, other schemes); it
        then defines the parameters.
    doc : str
        One line for ``dspsim suite --ops``.
    """

    name: str
    kernel: Callable
    oracle: Callable
    examples: Callable[[], list]
    doc: str
    generate: Callable | None = None
    params: dict = field(default_factory=dict)
    choices: dict = field(default_factory=dict)
    cases: tuple = ()
    study: str | None = None


_REGISTRY: dict[str, Operator] = {}


def register(op: Operator) -> Operator:
    """Add ``op`` to the catalog (at import of its family module); a second operator of the same
    name is a programming error (ValueError)."""
    if not isinstance(op, Operator):
        raise TypeError(f"register: expected an Operator, got {type(op).__name__}")
    if op.name in _REGISTRY and _REGISTRY[op.name] is not op:
        raise ValueError(f"register: operator {op.name!r} is registered twice")
    if op.generate is not None and op.study is not None:
        raise ValueError(f"register: operator {op.name!r} has both generate and study")
    if op.cases and op.generate is None and op.study is None:
        raise ValueError(f"register: operator {op.name!r} contributes suite cases but has no generate or study")
    _REGISTRY[op.name] = op
    return op


def registered() -> MappingProxyType:
    """Every operator registered so far, by name, in registration order (:func:`dspsim.catalog.operators`
    is every family's)."""
    return MappingProxyType(_REGISTRY)


# --------------------------------------------------------------------------------------------
# helpers for the descriptors' suite cases
# --------------------------------------------------------------------------------------------
def random_codes(rng, shape, dtype):
    """Random integer codes of ``dtype`` over its whole range, shaped ``shape``, with the type's
    minimum, maximum, -1, 0 and 1 written over the first elements (C order) so that the edges of the
    range are always exercised; a tensor of at least 256 int8/uint8 elements holds every code."""
    import numpy as np

    dt = np.dtype(dtype)
    info = np.iinfo(dt)
    x = rng.integers(int(info.min), int(info.max), size=tuple(shape), endpoint=True).astype(dt)
    flat = x.reshape(-1)
    if dt.itemsize == 1 and flat.size >= 256:
        flat[:256] = rng.permutation(np.arange(int(info.min), int(info.max) + 1)).astype(dt)
    else:
        edges = [v for v in (int(info.min), int(info.max), -1, 0, 1) if info.min <= v <= info.max]
        n = min(len(edges), flat.size)
        flat[:n] = np.array(edges[:n], dt)
    return x
