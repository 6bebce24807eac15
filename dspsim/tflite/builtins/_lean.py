"""Lean operator runs: a kernel's ``*_plan`` built once at load, called on every run.

A model's values have the dtypes and shapes of their tensors (``Model`` checks each operator's
outputs and the model inputs), so a plan made from the tensors' shapes and dtypes needs no checks at
run time; :func:`planned` keeps the one case where the old public call failed only at run time (a
plan that refuses, e.g. shapes that do not broadcast) failing there, with the same message.
"""
from __future__ import annotations

from ..prepare import at_run, check_shape


def planned(plan, *args, **kw):
    """``plan(*args, **kw)`` (a kernel's lean run), or, where the plan refuses its arguments, a run that
    raises that refusal, as the kernel call did at run time (call it through :func:`at_run`, which names
    the operator: ``Model.run: operator k (NAME): ...``)."""
    try:
        return plan(*args, **kw)
    except (ValueError, TypeError) as exc:
        error = exc

        def refused(*_):
            raise error

        return refused


def binary_run(op, g, plan, *args, **kw):
    """The ``run(inputs)`` of a two-input elementwise op: ``plan(shape1, shape2, dtype, *args, **kw)``
    from the input tensors, its output checked against the declared shape."""
    t1, t2, t_out = g.tensor(op.inputs[0]), g.tensor(op.inputs[1]), g.tensor(op.outputs[0])
    run = planned(plan, tuple(t1.shape), tuple(t2.shape), t1.dtype, *args, **kw)
    shape = tuple(t_out.shape)

    def lean(inputs):
        y = at_run(op, run, inputs[0], inputs[1])  # data errors (NaN, out-of-range codes) name the op
        return y if y.shape == shape else check_shape(op, y, t_out)

    return lean


def unary_run(op, g, plan, *args, shape_only=False, **kw):
    """The ``run(inputs)`` of a one-input op: ``plan(shape, dtype, *args, **kw)`` (``plan(shape, ...)`` with
    ``shape_only``) from the input tensor, its output checked against the declared shape."""
    t_in, t_out = g.tensor(op.inputs[0]), g.tensor(op.outputs[0])
    spec = (tuple(t_in.shape),) if shape_only else (tuple(t_in.shape), t_in.dtype)
    run = planned(plan, *spec, *args, **kw)
    shape = tuple(t_out.shape)

    def lean(inputs):
        y = at_run(op, run, inputs[0])
        return y if y.shape == shape else check_shape(op, y, t_out)

    return lean


def reshaped_run(op, g, plan, *args, **kw):
    """The ``run(inputs)`` of a reduction: ``plan(shape, dtype, *args, **kw)`` from the input tensor, its
    output reshaped to the declared shape (a reduction's kept or dropped unit dimensions)."""
    t_in, t_out = g.tensor(op.inputs[0]), g.tensor(op.outputs[0])
    run = planned(plan, tuple(t_in.shape), t_in.dtype, *args, **kw)
    shape = tuple(t_out.shape)
    return lambda inputs: at_run(op, run, inputs[0]).reshape(shape)
