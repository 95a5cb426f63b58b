"""The edges of a linearized graph: local partial derivatives kept as blocks with a structure.

An edge from vertex ``i`` (a value of size ``a``) to vertex ``k`` (size ``b``)
carries the ``b × a`` block ``∂v_k/∂v_i``. Its structure decides what
multiplying by it costs:

=============  =====================================================================
``scalar``     a ``1 × 1`` block: one number
``diagonal``   an elementwise op's partial: only the diagonal is kept (a vector)
``dense``      every entry may be non-zero (a matrix product's partial)
``sparse``     a matrix whose pattern has zeros (a selection, a broadcast)
=============  =====================================================================

A product ``B_kj · B_ji`` costs one multiplication per pair of non-zeros
that meet: ``Σ_t (non-zeros in column t of B_kj) · (non-zeros in row t of
B_ji)``, which is ``n`` for two diagonals, ``nnz(B)`` for a diagonal times
``B`` and ``b·a·c`` for two dense blocks. A sum costs one addition per entry
where both patterns have a non-zero. The patterns are structural: they are
kept apart from the values, so a partial that happens to be zero at this
point still counts once the block is built (its own pattern is the non-zeros
of its values at the point: a local pattern, as
:func:`adcompare.sparsity.jacobian_pattern` with ``local=True`` gives). A
pattern is a boolean matrix; products of patterns run as float32 matrix
products of zeros and ones, exact while a count stays below 2²⁴.

A block built without values (``values=None``) counts the same and computes
nothing: the exact search of :mod:`.orders` runs on such blocks.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np

__all__ = ["Block", "product", "product_multiplications", "total"]


@dataclass(frozen=True)
class Block:
    """One local partial derivative ``∂v_k/∂v_i``, shaped ``(size of v_k, size of v_i)``.

    ``values`` is a vector for a diagonal block, a matrix otherwise (``None``:
    structure only). ``pattern`` is a boolean matrix of the non-zeros,
    or ``None`` when every entry may be non-zero (or the block is diagonal).

    >>> Block.diagonal_of(np.array([1.0, 2.0])).kind, Block.matrix_of(np.ones((2, 3))).kind
    ('diagonal', 'dense')
    >>> Block.matrix_of(np.eye(3)).kind, Block.diagonal_of(np.array([5.0])).kind
    ('sparse', 'scalar')
    """

    shape: tuple[int, int]
    diagonal: bool
    pattern: np.ndarray | None
    values: np.ndarray | None

    @classmethod
    def diagonal_of(cls, values: np.ndarray) -> Block:
        """The diagonal block whose diagonal is ``values``."""
        values = np.asarray(values).ravel()
        return cls((values.size, values.size), True, None, values)

    @classmethod
    def matrix_of(cls, values: np.ndarray) -> Block:
        """The block ``values`` (a matrix), its pattern its non-zeros."""
        values = np.asarray(values)
        return cls(values.shape, False, _normalised(values != 0), values)

    @property
    def kind(self) -> str:
        """``scalar``, ``diagonal``, ``dense`` or ``sparse``."""
        if self.shape == (1, 1):
            return "scalar"
        if self.diagonal:
            return "diagonal"
        return "dense" if self.pattern is None else "sparse"

    @property
    def nnz(self) -> int:
        """The structural non-zeros."""
        if self.diagonal:
            return self.shape[0]
        return self.shape[0] * self.shape[1] if self.pattern is None else int(self.pattern.sum())

    def structure(self) -> Block:
        """The same block without values: it counts alike and computes nothing."""
        return Block(self.shape, self.diagonal, self.pattern, None)

    @cached_property
    def key(self) -> tuple:
        """What the structure is, hashable: equal keys count alike.

        >>> Block.diagonal_of(np.ones(2)).key == Block.diagonal_of(np.zeros(2)).key
        True
        """
        pattern = None if self.pattern is None else np.packbits(self.pattern).tobytes()
        return self.shape, self.diagonal, pattern

    def dense(self) -> np.ndarray:
        """The values as a matrix."""
        return np.diag(self.values) if self.diagonal else self.values

    def full_pattern(self) -> np.ndarray:
        """The pattern as a boolean matrix, whatever the structure."""
        if self.diagonal:
            return np.eye(self.shape[0], dtype=bool)
        if self.pattern is None:
            return np.ones(self.shape, dtype=bool)
        return self.pattern

    def counts_along(self, axis: int) -> np.ndarray:
        """The non-zeros of each column (``axis=0``) or each row (``axis=1``).

        >>> Block.matrix_of(np.array([[1.0, 0.0], [2.0, 3.0]])).counts_along(0).tolist()
        [2, 1]
        """
        if self.diagonal:
            return np.ones(self.shape[1 - axis], dtype=np.int64)
        if self.pattern is None:
            return np.full(self.shape[1 - axis], self.shape[axis], dtype=np.int64)
        return self.pattern.sum(axis=axis, dtype=np.int64)


def _normalised(pattern: np.ndarray) -> np.ndarray | None:
    """``None`` for a pattern with every entry set, else the pattern."""
    return None if pattern.all() else pattern


def product_multiplications(outer: Block, inner: Block) -> int:
    """The multiplications of ``outer · inner``: one per pair of non-zeros that meet.

    >>> d, m = Block.diagonal_of(np.ones(3)), Block.matrix_of(np.ones((2, 3)))
    >>> product_multiplications(d, d), product_multiplications(m, d)
    (3, 6)
    >>> product_multiplications(Block.matrix_of(np.ones((4, 2))), m)  # 4·2·3
    24
    """
    if outer.diagonal:
        return inner.nnz
    if inner.diagonal:
        return outer.nnz
    if outer.pattern is None and inner.pattern is None:
        return outer.shape[0] * outer.shape[1] * inner.shape[1]
    return int(outer.counts_along(0) @ inner.counts_along(1))


def product(outer: Block, inner: Block) -> tuple[Block, int]:
    """``(outer · inner, multiplications)``: the chain rule along two edges.

    >>> d = Block.diagonal_of(np.array([2.0, 3.0]))
    >>> block, mults = product(Block.matrix_of(np.array([[1.0, 1.0]])), d)
    >>> block.values.tolist(), mults
    ([[2.0, 3.0]], 2)
    """
    if outer.shape[1] != inner.shape[0]:
        raise ValueError(
            f"the blocks {outer.shape} and {inner.shape} do not chain: the inner block's "
            "rows must be the outer block's columns"
        )
    numeric = outer.values is not None and inner.values is not None
    if not numeric:
        return _memoised(_product, outer, inner)
    return _product(outer, inner)


def _memoised(combine, first: Block, second: Block) -> tuple[Block, int]:
    """``combine`` of two blocks' structures, computed once per pair of structures (the
    exact search meets the same pairs again and again)."""
    key = (combine, first.key, second.key)
    if key not in _STRUCTURES:
        if len(_STRUCTURES) >= _MEMO_LIMIT:
            _STRUCTURES.clear()
        block, count = combine(first.structure(), second.structure())
        _STRUCTURES[key] = block, count
    return _STRUCTURES[key]


#: The most structures kept before the memo starts afresh (memory stays bounded).
_MEMO_LIMIT = 100_000
#: Products and sums of structures already counted (see :func:`_memoised`).
_STRUCTURES: dict[tuple, tuple[Block, int]] = {}


def _product(outer: Block, inner: Block) -> tuple[Block, int]:
    mults = product_multiplications(outer, inner)
    numeric = outer.values is not None and inner.values is not None
    shape = (outer.shape[0], inner.shape[1])
    if outer.diagonal and inner.diagonal:
        values = outer.values * inner.values if numeric else None
        return Block(shape, True, None, values), mults
    if outer.diagonal or inner.diagonal:
        kept = inner if outer.diagonal else outer
        values = None
        if numeric:
            values = (
                outer.values[:, None] * inner.values
                if outer.diagonal
                else outer.values * inner.values[None, :]
            )
        return Block(shape, False, kept.pattern, values), mults
    pattern = None
    if outer.pattern is not None or inner.pattern is not None:
        paths = outer.full_pattern().astype(np.float32) @ inner.full_pattern().astype(np.float32)
        pattern = _normalised(paths > 0)
    values = outer.values @ inner.values if numeric else None
    return Block(shape, False, pattern, values), mults


def total(first: Block, second: Block) -> tuple[Block, int]:
    """``(first + second, additions)``: two paths' contributions to one edge.

    An addition is counted where both patterns have a non-zero; elsewhere an
    entry is taken from one block.

    >>> d = Block.diagonal_of(np.array([1.0, 2.0]))
    >>> block, adds = total(d, Block.matrix_of(np.array([[0.0, 1.0], [0.0, 0.0]])))
    >>> block.values.tolist(), adds
    ([[1.0, 1.0], [0.0, 2.0]], 0)
    """
    if first.values is None or second.values is None:
        return _memoised(_total, first, second)
    return _total(first, second)


def _total(first: Block, second: Block) -> tuple[Block, int]:
    numeric = first.values is not None and second.values is not None
    if first.diagonal and second.diagonal:
        values = first.values + second.values if numeric else None
        return Block(first.shape, True, None, values), first.shape[0]
    if first.pattern is None and second.pattern is None and not (first.diagonal or second.diagonal):
        pattern, adds = None, first.nnz
    else:
        a, b = first.full_pattern(), second.full_pattern()
        adds = int(np.count_nonzero(a & b))
        pattern = _normalised(a | b)
    values = first.dense() + second.dense() if numeric else None
    return Block(first.shape, False, pattern, values), adds
