"""vmap's box: ``Batched``, a batch of values that ops treat one example at a time.

A mapped argument becomes a :class:`Batched` box: a value whose leading
axis is the batch, and whose ``shape`` is that of one example. Each op on a
box runs its record's batching rule (``OpDef.batch``), which knows how the
batch axis passes through; the engine itself knows no op. Batched values
may hold ``Dual`` or ``Tensor`` values and be held by them, so ``vmap``
composes with every transform.

Python control flow on a batched value (``if x > 0``) is refused, since
each example could take another branch; use ``adcompare.where``.
"""

from __future__ import annotations

import operator

import numpy as np

from adcompare.engines.box import ArrayBox
from adcompare.ops.batching import rule_of
from adcompare.ops.registry import OpDef, raw, shape_of
from adcompare.runtime.batch_arrays import BatchArray, install_box, mark, unmark
from adcompare.runtime.boxes import unbox

__all__ = ["Batched"]


_VALUE = operator.attrgetter("value")


class Batched(ArrayBox):
    """A batch of values, batch axis first, that ops treat as one example each.

    >>> import numpy as np
    >>> import adcompare as ad
    >>> b = Batched(np.arange(6.0).reshape(3, 2), ad.ops.registry.new_level())
    >>> b.shape, ad.sum(b).value
    ((2,), array([1., 5., 9.]))
    """

    __slots__ = ("value",)

    def __init__(self, value, level: int):
        self.value = value
        self.level = level

    @property
    def shape(self) -> tuple[int, ...]:
        """The shape of one example."""
        return shape_of(self.value)[1:]

    def raw_value(self):
        # What a rule reads (``np.sign(raw(x))``) keeps its batch axis marked.
        inner = raw(self.value)
        levels = inner.levels if isinstance(inner, BatchArray) else ()
        return mark(inner, (self.level, *levels))

    @property
    def plain_value(self) -> str:
        """How to take the value without its derivative: as for the box it holds."""
        return getattr(self.value, "plain_value", ArrayBox.plain_value)

    def _carries_derivative(self) -> bool:
        return isinstance(self.value, ArrayBox) and self.value._carries_derivative()

    def _refuse(self, what: str):
        raise TypeError(
            f"vmap: {what} of a batched value needs one answer per example; use "
            "adcompare.where for branches, or return the value and use it outside vmap"
        )

    def __bool__(self) -> bool:
        self._refuse("the truth value")

    def __float__(self) -> float:
        self._refuse("float()")

    def item(self) -> float:
        """Refused: a batched value has one number per example."""
        self._refuse(".item()")

    def __array__(self, dtype=None, copy=None):
        self._refuse("converting to a numpy array")

    def __repr__(self) -> str:
        return f"Batched({self.value!r})"

    # Masks read from a batched value (``x > 0``) are batched values too.
    def astype(self, dtype, copy: bool = True) -> Batched:
        """The batch converted to ``dtype`` (for masks and shares that rules build)."""
        return Batched(self.value.astype(dtype, copy=copy), self.level)

    def __and__(self, other):
        return np.logical_and(raw(self), raw(other))

    def __or__(self, other):
        return np.logical_or(raw(self), raw(other))

    def __invert__(self):
        return np.logical_not(raw(self))

    __rand__, __ror__ = __and__, __or__

    def apply_op(self, op: OpDef, level: int, args: tuple, params: dict):
        values, batched = [], []
        for a, value in zip(args, unbox(op, "Batched", Batched, args, level, _VALUE)):
            if isinstance(a, Batched) and a.level == level:
                values.append(value)
                batched.append(True)
            else:
                value, read_from_batch = unmark(value, level)
                values.append(value)
                batched.append(read_from_batch)
        rule = rule_of(op)
        if rule is None:
            raise TypeError(
                f"vmap cannot batch the op {op.name!r}: it has no batching rule; call it "
                "once per example in a Python loop, or give it one with "
                "defop(..., batch=...) (see adcompare.ops.batching)"
            )
        try:
            return Batched(rule(tuple(values), tuple(batched), **params), level)
        except TypeError as error:
            if str(error).startswith("vmap: np."):  # a rule read a batched value with numpy
                raise TypeError(f"vmap cannot batch the op {op.name!r}: {error}") from None
            raise


install_box(Batched)
