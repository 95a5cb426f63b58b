"""autograd.builtins: Python's containers carry adcompare's boxes as they are; ``isinstance``
and ``type`` look inside a box at its value, as autograd's do."""

import builtins

from adcompare.ops.registry import Box, raw

dict = builtins.dict  # noqa: A001 - autograd's names
list = builtins.list  # noqa: A001
tuple = builtins.tuple  # noqa: A001


def isinstance(value, kinds) -> bool:  # noqa: A001
    """``builtins.isinstance`` of the value a box holds."""
    return builtins.isinstance(raw(value) if builtins.isinstance(value, Box) else value, kinds)


def type(value):  # noqa: A001
    """The type of the value a box holds."""
    return builtins.type(raw(value) if builtins.isinstance(value, Box) else value)
