"""Issue 31: a .tflite costs the memory of what it holds, not of what it claims: tensors that point at one table (or
one buffer) share its decoded array, a variable tensor that no operator uses is never given a value, whatever
size it declares, and a declared shape's size is a product of Python ints (never wrapped to a small number)."""
import tracemalloc

import numpy as np
from handmade_tflite import one_table_many_times, unused_huge_variable

from dspsim.tflite import load_model
from dspsim.tflite.flatbuffer import read_model


def _peak(fn):
    tracemalloc.start()
    try:
        fn()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_tensors_pointing_at_one_table_share_one_array():
    data = one_table_many_times(1000, 1 << 16)  # 70 KB of file; a copy per tensor would be 64 MiB
    peak = _peak(lambda: read_model(data))
    assert peak < 40 * len(data), peak
    tensors = read_model(data).subgraphs[0].tensors
    assert len(tensors) == 1000 and all(t.data is tensors[0].data for t in tensors)


def test_a_huge_variable_tensor_that_nothing_uses_costs_nothing():
    model = load_model(unused_huge_variable())  # 2^31 - 1 int8 values reset to its zero point 5: 2 GiB
    x = np.arange(4, dtype=np.int8).reshape(1, 4)
    outputs = []
    peak = _peak(lambda: outputs.extend(model.run([x])))
    assert np.array_equal(outputs[0], x)
    assert peak < 1 << 20, peak


def test_the_peak_of_a_declared_shape_whose_product_wraps_64_bits_is_not_zero():
    from toy_models import tensor_record

    from dspsim.graph.executor import Executor
    from dspsim.graph.ir import ModelDef, SubgraphDef
    from dspsim.graph.state import State

    sg = SubgraphDef(0, "main", [tensor_record(0, "x", np.int8, shape=(1 << 32, 1 << 32))], (0,), (0,), [])
    ex = Executor(ModelDef(3, [sg], None), State(), [None], steps=[[]], trace_steps=[[]])
    assert ex.peak_bytes() == 1 << 64  # np.prod's int64 made it 0: a batch of any size looked free
