"""A function at a point, set up for checking: what ``check_grad`` and ``compare`` share."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from adcompare import symbolic
from adcompare.check.arguments import _argnums, _check_scalar, _value
from adcompare.check.derivatives import _reference, derivative_blocks
from adcompare.check.reports import _describe, _labeller
from adcompare.check.tolerances import _checked_tolerances
from adcompare.pytree import flat_call
from adcompare.runtime.dtypes import as_float


@dataclass
class _Case:
    """``f`` at ``args`` (pytrees flattened, differentiated arguments as floats), with its
    value there, the modes to check and the caller's tolerances (``None``: the default)."""

    f: Callable
    args: tuple
    positions: tuple[int, ...]
    modes: tuple[str, ...]
    order: int
    value: np.ndarray
    dtype: np.dtype
    names: list[str]
    rtol: float | None
    atol: float | None

    @property
    def function(self) -> str:
        """The function's name, for reports."""
        return getattr(self.f, "__name__", type(self.f).__name__)

    def arguments(self) -> list[str]:
        """The differentiated arguments as ``name: dtype shape``, for reports."""
        return [f"{self.names[p]}: {_describe(as_float(self.args[p]))}" for p in self.positions]

    def labels(self) -> Callable:
        """The labeller of derivative entries (``x[2]``, ``out[0], x[1]``)."""
        return _labeller(self.names, self.positions, self.args, self.value.shape, self.order)

    def derivative(self, mode: str) -> list:
        """The derivative by ``mode``, as blocks (see ``derivative_blocks``)."""
        return derivative_blocks(
            self.f, self.args, self.positions, mode, self.order, self.value.shape
        )

    def reference(self, against: str) -> list:
        """The derivative by the reference ``against``, computed in float64 where it is exact."""
        return _reference(self.f, self.args, self.positions, against, self.order, self.value.shape)


def _case(f, args, argnums, order: int, modes, rtol, atol, what: str) -> _Case:
    """Check the tolerances, flatten pytrees, and set ``f`` up at ``args`` for ``what``."""
    rtol, atol = _checked_tolerances(rtol, atol, what)
    f, args, argnums = flat_call(f, args, argnums)  # pytrees: one entry per leaf
    if isinstance(modes, str):
        modes = (modes,)
    if order not in (1, 2):
        raise ValueError(f"{what}: order must be 1 or 2, not {order!r}")
    if not modes:
        raise ValueError(f"{what}: no modes to check; pass modes=('forward', 'reverse') or others")
    positions = _argnums(argnums, args, what)
    args = tuple(as_float(a) if i in positions else a for i, a in enumerate(args))
    value = _value_at(f, args, positions, order, what)
    dtype = np.result_type(*[as_float(args[p]) for p in positions])
    if not np.issubdtype(dtype, np.floating):
        dtype = np.dtype(np.float64)
    names = symbolic.argument_names(f, len(args))
    return _Case(f, args, positions, tuple(modes), order, value, dtype, names, rtol, atol)


def _value_at(f, args: tuple, positions: Sequence[int], order: int, what: str) -> np.ndarray:
    """``f(*args)``, refused when it has no derivative entry to compare."""
    try:
        value = _value(f, args)
    except TypeError as error:
        raise TypeError(f"{what}: {error}") from None
    if order == 2:
        _check_scalar(value.shape, f"{what}(order=2)")
    if value.size == 0 or all(np.size(args[p]) == 0 for p in positions):
        empty = "output" if value.size == 0 else "differentiated argument(s)"
        raise ValueError(
            f"{what}: no derivative entry to compare: the {empty} of the function have no "
            "elements; check it at a point where they have some"
        )
    return value
