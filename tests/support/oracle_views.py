"""The oracle's view of dspsim values (plain lists, exact Fractions), for the tests that compare kernels with
dspsim.oracle."""
from fractions import Fraction

from dspsim import Requant


def oracle_requant(rq: Requant) -> dict:
    """The oracle's view of a Requant (plain lists, exact Fractions)."""
    return {"scheme": rq.scheme, "multiplier": list(rq.multiplier), "shift": list(rq.shift),
            "scale": [Fraction(v) for v in rq.scale], "act_times_w": [Fraction(v) for v in rq.act_times_w],
            "rounding": rq.tie.name.lower(), "reciprocal_bias": rq.reciprocal_bias}
