"""``Parameter``: a leaf tensor that a module registers as one of its weights."""

from __future__ import annotations

from adcompare.engines.reverse import Tensor

__all__ = ["Parameter"]


class Parameter(Tensor):
    """A leaf ``Tensor`` with ``requires_grad=True`` that modules register.

    Assigning a ``Parameter`` to a module attribute makes it appear in
    ``parameters()`` and ``state_dict()``. Integer data becomes float64.

    >>> from adcompare.nn import Parameter
    >>> w = Parameter([1.0, 2.0])
    >>> w.requires_grad, w.is_leaf
    (True, True)
    >>> w
    Parameter containing:
    tensor([1., 2.], requires_grad=True)
    """

    __slots__ = ()

    def __init__(self, data, requires_grad: bool = True):
        super().__init__(data, requires_grad=requires_grad)

    def __repr__(self) -> str:
        return "Parameter containing:\n" + super().__repr__()
