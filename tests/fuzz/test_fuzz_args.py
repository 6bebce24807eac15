"""Property-based fuzzing of the public functions' argument validation (issue 16 §1, §3, §7).

Every function of ``dspsim.__all__`` and ``dspsim.kernels.__all__`` and every registered
operator's kernel is called with one or two arguments of a valid call replaced by hostile values
(tests/fuzz/fuzz_args.py): wrong types, floats for ints, lists for enums, 2^31 / 2^63, NaN / inf /
denormal / 0 scales, empty, 0-d and wrong-dtype arrays, axes beyond the rank... Property: the call
returns a result, or raises a ValueError / TypeError whose message starts with the function's name.

The default run draws a few dozen calls per function; ``-m slow`` draws many more.
"""
import copy

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import fuzz_args as fa

TARGETS = fa.targets()

#: functions with a known defect that is not fixed yet, by function name: the module (held by the engineers
#: of the operators they belong to) and the first signature found. Remove an entry when it is fixed.
KNOWN_DEFECTS = {}

_SETTINGS = dict(deadline=None, derandomize=True, database=None,
                 suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


#: known defects that hang (minutes per call): skipped, not run as xfail, to keep the run bounded.
KNOWN_HANGS = set()


def _params():
    out = []
    for name in sorted(TARGETS):
        marks = [pytest.mark.xfail(reason=KNOWN_DEFECTS[name], strict=False)] if name in KNOWN_DEFECTS else []
        if name in KNOWN_HANGS:
            marks = [pytest.mark.skip(reason=f"hangs: {KNOWN_DEFECTS[name]}")]
        out.append(pytest.param(name, marks=marks, id=name))
    return out


def test_every_public_function_and_kernel_is_a_target_whose_base_calls_pass():
    assert len(TARGETS) >= 100
    assert {"quantize", "requantize", "fully_connected", "conv2d", "choose_qparams", "pad"} <= set(TARGETS)
    for name, (fn, bases) in TARGETS.items():
        assert bases, name
        for kw in bases:
            assert fa.check_call(name, fn, copy.deepcopy(kw)) is None, (name, kw)


def _fuzz_one(name, data):
    fn, bases = TARGETS[name]
    if not bases:
        return
    base = bases[data.draw(st.integers(0, len(bases) - 1), label="base call")]
    kw = dict(base)
    keys = sorted(kw)
    for key in data.draw(st.lists(st.sampled_from(keys), min_size=1, max_size=min(2, len(keys)), unique=True),
                         label="arguments"):
        values = fa.hostile_values(base[key])
        kw[key] = values[data.draw(st.integers(0, len(values) - 1), label=f"{key} value")]
    kw = {k: (v.copy() if isinstance(v, np.ndarray) and v.flags.writeable else v) for k, v in kw.items()}
    bad = fa.check_call(name, fn, kw)
    assert bad is None, f"{bad}\n  call: {name}({', '.join(f'{k}={fa.describe(v)}' for k, v in kw.items())})"


@pytest.mark.parametrize("name", _params())
@settings(max_examples=20, **_SETTINGS)
@given(data=st.data())
def test_hostile_arguments_give_a_result_or_an_error_naming_the_function(name, data):
    _fuzz_one(name, data)


@pytest.mark.slow
@pytest.mark.parametrize("name", _params())
@settings(max_examples=400, **_SETTINGS)
@given(data=st.data())
def test_many_hostile_arguments_give_a_result_or_an_error_naming_the_function(name, data):
    _fuzz_one(name, data)
