"""The built-in suite: what ``dspsim suite`` runs with no arguments.

It is the union of the cases every registered operator contributes (``Operator.cases``, declared in
the operator's own module; :mod:`dspsim.catalog`): each kernel and each quantize mode over a spread
of shapes and quantization parameters, with the edge cases a bring-up engineer cares about: exact
ties (power-of-two steps and multipliers), saturation, left shifts (multiplier > 1), narrow range,
per-channel parameters, uint8 activations with a zero point, odd lengths (vector bodies and scalar
tails). Seeds are fixed: two runs produce the same tensors. ``quick=True`` keeps one case in three
and every operator at least once.
"""
from __future__ import annotations

from .suite import Case


def default_suite(quick: bool = False) -> list:
    """The built-in cases, in registry order (``quick``: every third one, and every op at least once)."""
    from ..catalog import operators

    cases = [Case(c.name, name, dict(c.params), c.seed) for name, op in operators().items() for c in op.cases]
    if not quick:
        return cases
    keep, seen_ops = [], set()
    for i, c in enumerate(cases):
        if i % 3 == 0 or c.op not in seen_ops:
            keep.append(c)
            seen_ops.add(c.op)
    return keep
