"""``compile`` of a function of pytrees: the leaves are the compiled function's arrays.

Static leaves (``None``, strings, ints inside a container) are bound at
recording; a call with other static leaves, or another structure, is refused
rather than replayed with the recorded ones.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from adcompare.pytree import is_differentiable_leaf, tree_flatten, tree_unflatten

__all__ = ["TreeCompiledFunction"]


class TreeCompiledFunction:
    """A compiled function of pytree arguments; see :func:`adcompare.compile`.

    >>> import numpy as np
    >>> import adcompare as ad
    >>> params = {"w": np.array([1.0, 2.0]), "scale": 3.0, "tag": None}
    >>> compiled = ad.compile(lambda p: p["scale"] * ad.sum(p["w"] ** 2), params)
    >>> g = compiled.grad({"w": np.array([3.0, 4.0]), "scale": 1.0, "tag": None})
    >>> print(g["w"], float(g["scale"]), g["tag"])
    [6. 8.] 25.0 None
    """

    def __init__(self, f: Callable, argnums, example_args: tuple, make_compiled: Callable):
        self._many = isinstance(argnums, (tuple, list))
        positions = tuple(argnums) if self._many else (argnums,)
        self._positions = tuple(int(p) % len(example_args) for p in positions)
        self._trees = [tree_flatten(a) for a in example_args]
        # Per argument: for each leaf, its index among the arrays, or None when static.
        self._slots, self._static = [], {}
        arrays, self._active = [], set()
        for position, (leaves, treedef) in enumerate(self._trees):
            slots = []
            for k, leaf in enumerate(leaves):
                differentiable = treedef.kind is None or is_differentiable_leaf(leaf)
                if differentiable or isinstance(leaf, np.ndarray):
                    if differentiable and position in self._positions:
                        self._active.add(len(arrays))
                    slots.append(len(arrays))
                    arrays.append(leaf)
                else:
                    slots.append(None)
                    self._static[(position, k)] = leaf
            self._slots.append(slots)
        self._flat_argnums = tuple(sorted(self._active))

        def of_arrays(*values):
            return f(*self._rebuild(values))

        of_arrays.__name__ = getattr(f, "__name__", "f")
        self.compiled = make_compiled(of_arrays, self._flat_argnums, tuple(arrays))

    @property
    def recordings(self) -> int:
        """How often ``f`` was recorded (see :class:`~adcompare.CompiledFunction`)."""
        return self.compiled.recordings

    def __call__(self, *args):
        """``f(*args)`` by replay."""
        return self.compiled(*self._arrays(args))

    def value_and_grad(self, *args):
        """``(f(*args), gradient)``, the gradient shaped like the arguments ``argnums`` names."""
        value, grads = self.compiled.value_and_grad(*self._arrays(args))
        by_array = dict(zip(self._flat_argnums, grads))
        trees = []
        for position in self._positions:
            treedef = self._trees[position][1]
            trees.append(tree_unflatten(treedef, [by_array.get(s) for s in self._slots[position]]))
        return value, (tuple(trees) if self._many else trees[0])

    def grad(self, *args):
        """The gradient alone (see :meth:`value_and_grad`)."""
        return self.value_and_grad(*args)[1]

    def _rebuild(self, values):
        return [
            tree_unflatten(
                treedef,
                [
                    self._static[(p, k)] if s is None else values[s]
                    for k, s in enumerate(self._slots[p])
                ],
            )
            for p, (_, treedef) in enumerate(self._trees)
        ]

    def _arrays(self, args: tuple) -> list:
        if len(args) != len(self._trees):
            raise TypeError(
                f"compiled function takes {len(self._trees)} argument(s) (as recorded), "
                f"got {len(args)}"
            )
        arrays = []
        for p, arg in enumerate(args):
            leaves, treedef = tree_flatten(arg)
            if treedef != self._trees[p][1]:
                raise TypeError(
                    f"compiled function: argument {p} has structure {treedef}, but it was "
                    f"recorded with {self._trees[p][1]}; compile again for the new structure"
                )
            for k, (leaf, s) in enumerate(zip(leaves, self._slots[p])):
                if s is not None:
                    arrays.append(leaf)
                elif leaf != self._static[(p, k)]:
                    raise TypeError(
                        f"compiled function: argument {p} has the static leaf {leaf!r} where "
                        f"{self._static[(p, k)]!r} was recorded; static leaves are part of "
                        "the recording, so compile again"
                    )
        return arrays
