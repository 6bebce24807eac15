"""PLACEHOLDER (being written): requantization schemes."""


class Requant:  # noqa: D101
    pass
