"""The int16 variants of issue 27 part 4 (SUM, PRELU, BATCH_MATMUL, SQUARED_DIFFERENCE on int16; 16x8 CONV_2D and
FULLY_CONNECTED with an int32 bias; 16x8 TRANSPOSE_CONV with an int16 bias; the int16 LSTM) against the real
engines' golden vectors (tests/golden/ops/int16_variants.npz, written by make_golden_int16_variants.py): every
output of every run, 0 mismatches, under engine "tflm" (the tflite-micro interpreter), "litert" (LiteRT BUILTIN_REF),
"xnnpack" (LiteRT's default interpreter) and "litert-optimized"; where an engine refused the model, or its result
is undefined (the golden's "undefined" status: LiteRT's reference int16 SUM, the int32 bias of a 16x8 layer read as
int64), dspsim refuses it too."""
import os
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "support"))
from op_family import check_case, family_params  # noqa: E402

CASES = family_params("int16_variants")


def test_the_golden_file_holds_every_variant():
    names = {p.values[0]["name"] for p in CASES}
    for prefix in ("i16v_sum_", "i16v_prelu_", "i16v_batch_matmul_", "i16v_squared_difference_",
                   "i16v_conv_16x8_int32_bias", "i16v_fully_connected_16x8_int32_bias",
                   "i16v_transpose_conv_16x8_int16_bias", "i16v_lstm_"):
        assert any(n.startswith(prefix) for n in names), prefix


@pytest.mark.parametrize("case,arrays,engine", CASES)
def test_outputs_are_bit_exact_with_the_engine(case, arrays, engine):
    check_case(case, arrays, engine)
