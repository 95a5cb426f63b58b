"""Tensor contractions: ``einsum`` as the one primitive, and numpy's other
contractions (``tensordot``, ``inner``, ``dot``, ``vdot``, ``kron``, ``cross``)
built from it and from shape ops, so they need no rules of their own.

``einsum``'s subscripts are normalised once, before dispatch, to an explicit
form with one letter per axis: ellipses become letters, the implicit output
is spelled out. Its rules are then einsums again:

- the JVP of operand ``i`` puts the tangent in its place, with a fresh letter
  in front of its term and of the output for the lane axis;
- the VJP of operand ``i`` contracts the output's cotangent with the other
  operands down to operand ``i``'s term. A letter that occurs only in that
  term (summed away by the op) comes back from a constant vector of ones; a
  letter repeated in it (a diagonal) comes back through a constant identity.
"""

from __future__ import annotations

import string

import numpy as np

from adcompare.ops.composite import composite, stack
from adcompare.ops.elementwise import add, multiply, subtract
from adcompare.ops.joining import concatenate
from adcompare.ops.linalg import matmul
from adcompare.ops.links import Links, element_numbers
from adcompare.ops.reductions import sum
from adcompare.ops.registry import (
    ARRAY_ONLY,
    HOLOMORPHIC,
    ComplexNotSupportedError,
    defop,
    ndim_of,
    public_face,
    raw,
    shape_of,
)
from adcompare.ops.shape import getitem, reshape, transpose

_LETTERS = string.ascii_letters
#: The letters numpy's interleaved einsum gives axis numbers 0 to 51.
_AXIS_LETTERS = string.ascii_uppercase + string.ascii_lowercase


def _fresh(used: str, count: int = 1) -> str:
    """``count`` letters that do not occur in ``used``."""
    free = [c for c in _LETTERS if c not in used]
    if len(free) < count:
        raise ValueError("einsum: subscripts use too many letters to differentiate")
    return "".join(free[:count])


def _normalize(subscripts: str, shapes: list[tuple[int, ...]]) -> str:
    """``subscripts`` with an explicit output and one letter per axis (no ``...``)."""
    text = subscripts.replace(" ", "")
    inputs, arrow, output = text.partition("->")
    terms = inputs.split(",")
    if len(terms) != len(shapes):
        raise ValueError(
            f"einsum: subscripts {subscripts!r} name {len(terms)} operand(s), "
            f"got {len(shapes)}; give one term per operand"
        )
    for term in [*terms, output]:
        if any(c not in _LETTERS and c != "." for c in term):
            raise ValueError(
                f"einsum: subscripts {subscripts!r} may hold letters, ',', '->', '...'"
            )
    ellipsis_ranks = [
        len(shape) - len(term.replace("...", "")) for term, shape in zip(terms, shapes)
    ]
    lead = max([r for t, r in zip(terms, ellipsis_ranks) if "..." in t], default=0)
    letters = _fresh(text, lead)
    # Broadcast sizes of the ellipsis axes, right-aligned.
    sizes = [1] * lead
    for term, rank, shape in zip(terms, ellipsis_ranks, shapes):
        for j in range(rank if "..." in term else 0):
            size = shape[j]
            if size != 1:
                sizes[lead - rank + j] = size
    used = text + letters
    spelled = []
    for term, rank, shape in zip(terms, ellipsis_ranks, shapes):
        if "..." not in term:
            if rank != 0:
                raise ValueError(
                    f"einsum: term {term!r} names {len(term)} axes of an operand of shape {shape}"
                )
            spelled.append(term)
            continue
        head = ""
        for j in range(rank):
            position = lead - rank + j
            if shape[j] == 1 and sizes[position] != 1:
                # A broadcast axis of length 1 gets a letter of its own, summed away.
                extra = _fresh(used)
                used += extra
                head += extra
            else:
                head += letters[position]
        spelled.append(term.replace("...", head))
    if arrow:
        out = output.replace("...", letters)
    else:
        counts = {c: inputs.count(c) for c in inputs if c in _LETTERS}
        out = letters + "".join(sorted(c for c, n in counts.items() if n == 1))
    return ",".join(spelled) + "->" + out


def _prepare_einsum(*operands, subscripts: str):
    return {"subscripts": _normalize(subscripts, [shape_of(a) for a in operands])}


def _split(subscripts: str) -> tuple[list[str], str]:
    inputs, _, output = subscripts.partition("->")
    return inputs.split(","), output


def _einsum_jvp(out, arrays, tangents, subscripts):
    terms, output = _split(subscripts)
    lane = _fresh(subscripts)
    total = None
    for i, tangent in enumerate(tangents):
        if tangent is None:
            continue
        spelled = [lane + t if j == i else t for j, t in enumerate(terms)]
        operands = [tangent if j == i else a for j, a in enumerate(arrays)]
        part = _einsum(*operands, subscripts=",".join(spelled) + "->" + lane + output)
        total = part if total is None else add(total, part)
    return total


def _einsum_vjp(i, out, *rest, subscripts):
    *arrays, out_bar = rest
    terms, output = _split(subscripts)
    target = terms[i]
    others = [t for j, t in enumerate(terms) if j != i]
    spelled = [output, *others]
    operands = [out_bar, *[a for j, a in enumerate(arrays) if j != i]]
    shape = shape_of(arrays[i])
    reached = set("".join(spelled))
    used = subscripts
    result = ""
    for position, letter in enumerate(target):
        size = shape[position]
        if letter in result:
            # A repeated letter (a diagonal): a fresh letter tied to the first by an identity.
            fresh = _fresh(used)
            used += fresh
            spelled.append(letter + fresh)
            operands.append(np.eye(size))
            result += fresh
            continue
        if letter not in reached:
            spelled.append(letter)
            operands.append(np.ones(size))
            reached.add(letter)
        result += letter
    return _einsum(*operands, subscripts=",".join(spelled) + "->" + result)


def _einsum_batch(args, batched, subscripts):
    """A batch of einsums: a fresh letter for the batch axis, in front of the batched
    operands' terms and of the output."""
    terms, output = _split(subscripts)
    letter = _fresh(subscripts)
    spelled = [letter + t if flag else t for t, flag in zip(terms, batched)]
    return _einsum(*args, subscripts=",".join(spelled) + "->" + letter + output)


def _einsum_sparsity(out, *operands, local, subscripts):
    """Follow the index structure: over every assignment of the letters, the output element
    the output's letters name depends on the element each operand's letters name, and the
    operands' elements interact pairwise (a product of one element of each operand; each
    operand enters linearly, so none interacts with itself)."""
    terms, output = _split(subscripts)
    letters = output + "".join(sorted({c for t in terms for c in t} - set(output)))
    sizes = dict.fromkeys(letters, 1)
    for term, operand in zip(terms, operands):
        for letter, size in zip(term, shape_of(operand)):
            sizes[letter] = max(sizes[letter], size)
    grid = tuple(sizes[c] for c in letters)
    rows = np.broadcast_to(
        element_numbers(shape_of(out)).reshape(
            grid[: len(output)] + (1,) * (len(grid) - len(output))
        ),
        grid,
    ).ravel()
    elements = []
    for term, operand in zip(terms, operands):
        index = tuple(
            np.arange(size).reshape([-1 if c == letter else 1 for c in letters]) if size > 1 else 0
            for letter, size in zip(term, shape_of(operand))
        )
        elements.append(np.broadcast_to(element_numbers(shape_of(operand))[index], grid).ravel())
    pairs = tuple(
        (i, j, rows, elements[i], elements[j])
        for i in range(len(elements))
        for j in range(i + 1, len(elements))
    )
    return Links(tuple((rows, cols) for cols in elements), pairs)


def _sym_einsum(*operands, subscripts):
    return np.einsum(subscripts, *[np.asarray(a, dtype=object) for a in operands])


_einsum = defop(
    "einsum",
    lambda *operands, subscripts: np.einsum(subscripts, *operands),
    replay=ARRAY_ONLY,
    complex=HOLOMORPHIC,
    nargs=None,
    saves=("args",),
    prepare=_prepare_einsum,
    batch=_einsum_batch,
    cases=[
        (((2, 3), (3, 4)), {"subscripts": "ij,jk->ik"}),
        (((3, 3),), {"subscripts": "ii->i"}),
        (((2, 3), (3,), (2,)), {"subscripts": "ij,j,i"}),
        (((2, 1, 3), (4, 3)), {"subscripts": "...j,kj->...k"}),
    ],
    label="Einsum",
    sparsity=_einsum_sparsity,
    sym=_sym_einsum,
    jvp=_einsum_jvp,
    vjp=_einsum_vjp,
    doc="Einstein summation over the operands (subscripts as a keyword).",
)


@public_face(_einsum)
def einsum(*operands, subscripts: str | None = None):
    """Einstein summation, as ``np.einsum``: any subscripts, with ``...``,
    repeated letters (diagonals, traces) and the implicit output. The
    subscripts come first, or as the keyword ``subscripts``.

    >>> print(einsum("ij,j->i", [[1.0, 2.0], [3.0, 4.0]], [1.0, 1.0]))
    [3. 7.]
    >>> print(einsum("ii", [[1.0, 2.0], [3.0, 4.0]]))
    5.0
    """
    if subscripts is None and operands and isinstance(operands[0], str):
        subscripts, operands = operands[0], operands[1:]
    elif subscripts is None:
        subscripts, operands = _interleaved(operands)
    if not isinstance(subscripts, str):
        raise TypeError(
            "einsum: give the subscripts as a string first, as einsum('ij,jk->ik', x, y), "
            "or numpy's interleaved form, einsum(x, [0, 1], y, [1, 2], [0, 2])"
        )
    return _einsum(*operands, subscripts=subscripts)


def _interleaved(arguments) -> tuple[str | None, tuple]:
    """numpy's interleaved form ``(x, [0, 1], y, [1, 2], [0, 2])`` as subscripts and
    operands (``"AB,BC->AC"``, ``(x, y)``); axis numbers 0 to 51 are the letters numpy
    gives them (``A`` to ``Z``, then ``a`` to ``z``), ``...`` stays. ``(None, arguments)``
    when they are not in that form.

    >>> _interleaved(("x", [0, 1], "y", [1, Ellipsis], [0, Ellipsis]))
    ('AB,B...->A...', ('x', 'y'))
    """
    pairs, output = arguments[: len(arguments) // 2 * 2], arguments[len(arguments) // 2 * 2 :]
    sublists = [*pairs[1::2], *output]
    if not pairs or not all(isinstance(s, (list, tuple)) for s in sublists):
        return None, arguments

    def letters(sublist) -> str:
        return "".join("..." if axis is Ellipsis else _AXIS_LETTERS[int(axis)] for axis in sublist)

    inputs = ",".join(letters(s) for s in pairs[1::2])
    return inputs + ("->" + letters(output[0]) if output else ""), tuple(pairs[0::2])


@composite(cases=[(((3, 2, 4), (2, 5, 3)), {"axes": ([1, 0], [0, 2])}), (((2, 3), (2, 3)), {})])
def tensordot(x, y, axes=2):
    """Sum products over ``axes`` of ``x`` and ``y``, as ``np.tensordot``.

    ``axes`` is a count (the last ``axes`` axes of ``x`` against the first of
    ``y``) or a pair of axis lists.

    >>> print(tensordot([[1.0, 2.0], [3.0, 4.0]], [[1.0, 0.0], [0.0, 1.0]]))
    5.0
    """
    nx, ny = ndim_of(x), ndim_of(y)
    if isinstance(axes, (int, np.integer)):
        x_axes, y_axes = list(range(nx - axes, nx)), list(range(axes))
    else:
        x_axes, y_axes = ([a] if isinstance(a, (int, np.integer)) else list(a) for a in axes)
    if len(x_axes) != len(y_axes):
        raise ValueError(f"tensordot: axes {axes!r} pair {len(x_axes)} axes with {len(y_axes)}")
    x_letters = list(_LETTERS[:nx])
    y_letters = list(_LETTERS[nx : nx + ny])
    for a, b in zip(x_axes, y_axes):
        y_letters[b] = x_letters[a]
    kept = [c for j, c in enumerate(x_letters) if j not in {a % nx for a in x_axes}]
    kept += [c for j, c in enumerate(y_letters) if j not in {b % ny for b in y_axes}]
    subscripts = "".join(x_letters) + "," + "".join(y_letters) + "->" + "".join(kept)
    return einsum(subscripts, x, y)


@composite(cases=[(((2, 3), (4, 3)), {}), (((), (3,)), {})])
def inner(x, y):
    """Sum products over the last axes, as ``np.inner`` (a product for scalars).

    >>> print(inner([[1.0, 2.0], [3.0, 4.0]], [1.0, 1.0]))
    [3. 7.]
    """
    if ndim_of(x) == 0 or ndim_of(y) == 0:
        return multiply(x, y)
    return tensordot(x, y, axes=([-1], [-1]))


@composite(cases=[(((2, 3), (4, 3, 2)), {}), (((3,), (3,)), {}), (((2, 3), (3,)), {})])
def dot(x, y):
    """Dot product as ``np.dot``: a product for scalars, the sum over the last
    axis of ``x`` and the second-to-last of ``y`` (the last if ``y`` is 1-D).

    >>> print(dot([1.0, 2.0], [3.0, 4.0]))
    11.0
    >>> print(dot(np.ones((2, 3, 4)), np.ones((5, 4, 1))).shape)
    (2, 3, 5, 1)
    """
    if ndim_of(x) == 0 or ndim_of(y) == 0:
        return multiply(x, y)
    if ndim_of(x) <= 2 and ndim_of(y) <= 2:
        return matmul(x, y)
    return tensordot(x, y, axes=([-1], [-1 if ndim_of(y) == 1 else -2]))


@composite(cases=[(((2, 3), (3, 2)), {})])
def vdot(x, y):
    """The sum of products of the flattened real arrays, as ``np.vdot``.

    >>> print(vdot([[1.0, 2.0], [3.0, 4.0]], [[1.0, 1.0], [1.0, 1.0]]))
    10.0
    """
    if np.iscomplexobj(raw(x)):
        raise ComplexNotSupportedError(
            "vdot conjugates a complex first argument, which is not differentiated here; "
            "take sum(conj(x) * y) with the complex ops instead"
        )
    return sum(multiply(reshape(x, (-1,)), reshape(y, (-1,))))


@composite(cases=[(((2,), (2, 3)), {}), (((2, 2), (1, 2)), {})])
def kron(x, y):
    """The Kronecker product, as ``np.kron``.

    >>> print(kron([1.0, 2.0], [1.0, 10.0]))
    [ 1. 10.  2. 20.]
    """
    n = max(ndim_of(x), ndim_of(y))
    xs = (1,) * (n - ndim_of(x)) + shape_of(x)
    ys = (1,) * (n - ndim_of(y)) + shape_of(y)
    x_letters, y_letters = _LETTERS[:n], _LETTERS[n : 2 * n]
    interleaved = "".join(a + b for a, b in zip(x_letters, y_letters))
    product = einsum(f"{x_letters},{y_letters}->{interleaved}", reshape(x, xs), reshape(y, ys))
    return reshape(product, tuple(a * b for a, b in zip(xs, ys)))


@composite(
    cases=[
        (((2, 3), (3,)), {}),
        (((3, 2), (3, 2)), {"axis": 0}),
        (((3, 4), (4, 3)), {"axisa": 0, "axisb": 1, "axisc": 0}),
    ]
)
def cross(x, y, axisa: int = -1, axisb: int = -1, axisc: int = -1, axis: int | None = None):
    """The cross product of 2- or 3-vectors, as ``np.cross``: the vectors lie along
    ``axisa`` of ``x`` and ``axisb`` of ``y`` (``axis`` sets all three), the result's
    along ``axisc``; two 2-vectors give the scalar ``z`` component, a 2-vector with a
    3-vector one whose third component is 0.

    >>> print(cross([1.0, 0.0, 0.0], [0.0, 1.0, 0.0]))
    [0. 0. 1.]
    >>> print(cross([1.0, 2.0], [3.0, 4.0]))
    -2.0
    """
    if axis is not None:
        axisa = axisb = axisc = axis
    x, y = _last(x, axisa), _last(y, axisb)
    sizes = (shape_of(x)[-1], shape_of(y)[-1])
    if not set(sizes) <= {2, 3}:
        raise ValueError(
            f"cross: vectors of {sizes[0]} and {sizes[1]} components; numpy's cross takes "
            "2- or 3-vectors"
        )
    if sizes == (2, 2):
        return subtract(multiply(_at(x, 0), _at(y, 1)), multiply(_at(x, 1), _at(y, 0)))
    x, y = _three(x), _three(y)
    parts = [
        subtract(multiply(_at(x, i + 1), _at(y, i + 2)), multiply(_at(x, i + 2), _at(y, i + 1)))
        for i in range(3)
    ]
    return stack(parts, axis=axisc)


def _three(x):
    """A vector of 2 components along the last axis with a third, 0."""
    if shape_of(x)[-1] == 3:
        return x
    return concatenate([x, np.zeros(shape_of(x)[:-1] + (1,))], axis=-1)


def _last(x, axis):
    n = ndim_of(x)
    axis %= n
    return transpose(x, tuple(j for j in range(n) if j != axis) + (axis,))


def _at(x, index):
    return getitem(x, (Ellipsis, index % 3))
