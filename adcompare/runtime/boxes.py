"""The box protocol: what the op set's dispatch needs from an engine's values.

Every engine carries its values in boxes (``Dual``, ``Tensor``, ``Symbolic``,
a vmap batch, a traced value). A box has

``level``
    its nesting level: 0 for a box a user made, else a number from
    ``adcompare.ops.registry.new_level`` (a transform called inside another
    gets a higher one). An op is handled by the engine of its argument box of
    the highest level, and the values inside that box may be boxes of lower
    levels: that is how transforms nest (``hvp`` is forward over reverse by
    construction) and what keeps nested perturbations apart;
``raw_value()``
    the value one level down: a plain array, or a box of a lower level;
``apply_op(op, level, args, params)``
    runs ``op`` on ``args``, among which this box has the highest level,
    and returns the result as one of its engine's boxes.

An engine reads the arguments of an op at its level with :func:`unbox`.
"""

from __future__ import annotations

from collections.abc import Callable


class Box:
    """Base of the engines' boxed values (see the module's docstring)."""

    __slots__ = ("level",)

    def raw_value(self):
        """The value one level down: a plain array or a box of a lower level."""
        raise NotImplementedError

    def apply_op(self, op, level: int, args: tuple, params: dict):
        """Run ``op`` on ``args`` (this box has the highest ``level`` among them)."""
        raise NotImplementedError


def raw(value):
    """The innermost plain value of a possibly nested box (no derivative).

    >>> raw(2.0)
    2.0
    """
    while isinstance(value, Box):
        value = value.raw_value()
    return value


def mixed_levels_error(op, engine: str, other: Box) -> TypeError:
    """The error for two engines' boxes meeting at one nesting level."""
    return TypeError(
        f"{op.name}: cannot combine a {engine} and a {type(other).__name__} at the same "
        "nesting level; nest them (Dual(Tensor(...), ...)) or use the transforms"
    )


def unbox(op, engine: str, own: type, args: tuple, level: int, inner: Callable) -> list:
    """The arguments of ``op`` one level down, for the engine whose boxes are ``own``.

    Its boxes at ``level`` become ``inner(box)``; every other value (plain
    arrays, boxes of lower levels) passes as it is. A box of another engine at
    the same level is an error: the two engines cannot both handle the op.

    >>> import operator
    >>> class Pair(Box):
    ...     __slots__ = ("value",)
    >>> box = Pair()
    >>> box.level, box.value = 3, 2.0
    >>> unbox(None, "Pair", Pair, (box, 5.0), 3, operator.attrgetter("value"))
    [2.0, 5.0]
    """
    values = []
    for a in args:
        if isinstance(a, Box) and a.level == level:
            if not isinstance(a, own):
                raise mixed_levels_error(op, engine, a)
            values.append(inner(a))
        else:
            values.append(a)
    return values
