"""The rest of TFLite Micro's builtins with an integer or bool path (comparisons, logical, select, REVERSE_V2 ...
REDUCE_PROD, DIV, ADD_N, CUMSUM; issue 27 part 3) against the real engines' golden vectors
(tests/golden/ops/builtins2.npz, written by make_golden_builtins2.py): every output of every run, 0 mismatches, under
engine "tflm" (the tflite-micro interpreter), "litert" (LiteRT BUILTIN_REF), "xnnpack" (LiteRT's default
interpreter) and "litert-optimized"; where an engine refused the model (or the case marks its result undefined),
dspsim refuses it too, at load or at run."""
import os
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "support"))
from op_family import GOLDEN as HERE, check_case, family_params  # noqa: E402

# (case prefix, engine) that an engine runs and dspsim does not reproduce: it refuses them by default, saying so
# (XNNPACK's f32 SQRT, 1-2 ulp off: docs/engines.md; approximate_float=True runs it, tests/tflite/test_float_islands)
NOT_MODELLED = {("b2_sqrt_float32", "litert_default")}
# RSQRT is the nonlinear family's (dspsim/tflite/builtins/nonlinear.py, its own tests); recorded here, not checked
OTHERS = ("b2_rsqrt_",)
CASES = family_params("builtins2", OTHERS)


def test_the_golden_file_is_there():
    assert len(CASES) >= 4 * 135


@pytest.mark.parametrize("case,arrays,engine", CASES)
def test_outputs_are_bit_exact_with_the_engine(case, arrays, engine):
    check_case(case, arrays, engine, NOT_MODELLED)


def test_a_model_with_several_missing_operators_names_them_all():
    """load_model names every operator dspsim has no Prepare for (all subgraphs), in one error."""
    import dataclasses

    from dspsim.tflite.flatbuffer import read_model
    from dspsim.tflite.model import Model

    with open(os.path.join(HERE, "ops", "b2_logical_not.tflite"), "rb") as f:
        mdef = read_model(f.read())
    op = mdef.main.operators[0]
    ops = [dataclasses.replace(op, name=n, index=k) for k, n in enumerate(("HASHTABLE", "LOGICAL_NOT", "CUSTOM",
                                                                           "HASHTABLE"))]
    mdef.subgraphs[0] = dataclasses.replace(mdef.main, operators=ops)
    with pytest.raises(ValueError, match=r"3 operators dspsim does not support \(CUSTOM, HASHTABLE\): operator 0 is "
                                         r"HASHTABLE \(version 1\); operator 2 is CUSTOM \(version 1\); operator 3 "
                                         r"is HASHTABLE"):
        Model(mdef, engine="tflm")
    mdef.subgraphs[0] = dataclasses.replace(mdef.main, operators=ops[:2])
    with pytest.raises(ValueError, match=r"operator 0 is HASHTABLE \(version 1\), which dspsim does not support"):
        Model(mdef, engine="tflm")
