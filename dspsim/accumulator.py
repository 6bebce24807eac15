"""PLACEHOLDER (being written): the accumulator model."""


class Accumulator:  # noqa: D101
    pass
