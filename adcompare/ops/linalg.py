"""Linear algebra primitives: matmul (1-D, 2-D and batched, as ``np.matmul``),
inv, solve, det and logabsdet; the factorisations and matrix functions are in
:mod:`~adcompare.ops.matrix_functions`, what both share in :mod:`~adcompare.ops.matrices`.

matmul's rules follow numpy's promotion of 1-D operands: a 1-D left operand
is a row, a 1-D right operand a column, and the added axis is removed again.
The matrix functions act on the last two axes and are batched over the
leading ones, as numpy's are; a tangent's lane axis is one more leading axis,
so their rules are written with batched ``matmul`` and need no lane code.

Each op's oracle in the tests is SymPy on small symbolic matrices (its
``sym``: ``Matrix.inv``, ``det``, ``LUsolve``). The test inputs come from the
makers of :mod:`~adcompare.ops.matrices`, which draw well-conditioned matrices.

Sparsity: matmul and solve follow their index structure (a product's element
reads one row and one column; a solution's column reads the whole matrix and
its own column of ``b``); inv, det and logabsdet are dense within each matrix
and block-diagonal across a batch.
"""

from __future__ import annotations

import operator

import numpy as np
import sympy

from adcompare.ops.elementwise import multiply, negative
from adcompare.ops.links import Links, element_numbers
from adcompare.ops.matrices import (
    defmatrix,
    diagonally_dominant,
    matrix_sparsity,
    prepare_square,
    swap_last,
    sympy_batches,
    sympy_matrix,
    to_object_array,
    trace_product,
)
from adcompare.ops.registry import (
    ARRAY_ONLY,
    HOLOMORPHIC,
    Hints,
    defop,
    ndim_of,
    pad_lanes,
    shape_of,
    unbroadcast,
)
from adcompare.ops.shape import expand_dims, pad_batched, reshape, squeeze, transpose


def _prepare_matmul(x, y):
    xs, ys = shape_of(x), shape_of(y)
    if not xs or not ys:
        raise ValueError(
            f"matmul: operands must have at least one axis, got shapes {xs} and {ys}; "
            "use multiply for a scalar"
        )
    inner_x = xs[-1]
    inner_y = ys[0] if len(ys) == 1 else ys[-2]
    if inner_x != inner_y:
        raise ValueError(
            f"matmul: shapes {xs} and {ys} do not line up: {inner_x} columns "
            f"on the left against {inner_y} rows on the right"
        )
    return {}


def _move_last_to_front(a):
    n = ndim_of(a)
    return transpose(a, (n - 1,) + tuple(range(n - 1)))


def _jvp_x(out, x, y, x_dot):
    if ndim_of(y) == 1:
        return matmul(x_dot, y)
    if ndim_of(x) == 1:
        # A 1-D row against batched matrices: make each lane a 1-row matrix.
        lanes = shape_of(x_dot)[:1]
        rows = reshape(x_dot, lanes + (1,) * (ndim_of(y) - 1) + shape_of(x))
        return squeeze(matmul(rows, y), -2)
    return matmul(pad_lanes(x_dot, ndim_of(x), ndim_of(out)), y)


def _jvp_y(out, x, y, y_dot):
    if ndim_of(y) == 1:
        # Contract against the transposed lanes, then put the lanes back in front.
        return _move_last_to_front(matmul(x, transpose(y_dot, (1, 0))))
    if ndim_of(x) == 1:
        return matmul(x, y_dot)
    return matmul(x, pad_lanes(y_dot, ndim_of(y), ndim_of(out)))


def _vjp_x(out, x, y, out_bar):
    if ndim_of(x) == 2 and ndim_of(y) == 2:
        return matmul(out_bar, transpose.prepared(y, axes=(1, 0)))  # no unbroadcast
    if ndim_of(x) == 1 and ndim_of(y) == 1:
        return out_bar * y
    if ndim_of(x) == 1:
        row = matmul(expand_dims(out_bar, -2), swap_last(y))
        return unbroadcast(squeeze(row, -2), shape_of(x))
    if ndim_of(y) == 1:
        return unbroadcast(multiply(expand_dims(out_bar, -1), y), shape_of(x))
    return unbroadcast(matmul(out_bar, swap_last(y)), shape_of(x))


def _vjp_y(out, x, y, out_bar):
    if ndim_of(x) == 2 and ndim_of(y) == 2:
        return matmul(transpose.prepared(x, axes=(1, 0)), out_bar)  # no unbroadcast
    if ndim_of(x) == 1 and ndim_of(y) == 1:
        return out_bar * x
    if ndim_of(x) == 1:
        return unbroadcast(expand_dims(x, -1) * expand_dims(out_bar, -2), shape_of(y))
    if ndim_of(y) == 1:
        column = matmul(swap_last(x), expand_dims(out_bar, -1))
        return unbroadcast(squeeze(column, -1), shape_of(y))
    return unbroadcast(matmul(swap_last(x), out_bar), shape_of(y))


def _matmul_sparsity(out, x, y, *, local):
    """``out[..., i, k]`` depends on row ``i`` of ``x`` and column ``k`` of ``y``;
    ``x[..., i, j]`` and ``y[..., j, k]`` interact in it (one product per ``j``)."""
    xs, ys = shape_of(x), shape_of(y)
    x_shape = xs if len(xs) > 1 else (1,) + xs
    y_shape = ys if len(ys) > 1 else ys + (1,)
    batch = np.broadcast_shapes(x_shape[:-2], y_shape[:-2])
    (m, inner), p = x_shape[-2:], y_shape[-1]
    grid = batch + (m, p, inner)
    rows = np.broadcast_to(element_numbers(batch + (m, p))[..., None], grid).ravel()
    a = np.broadcast_to(element_numbers(xs).reshape(x_shape)[..., :, None, :], grid).ravel()
    columns = np.swapaxes(element_numbers(ys).reshape(y_shape), -1, -2)
    b = np.broadcast_to(columns[..., None, :, :], grid).ravel()
    return Links(((rows, a), (rows, b)), ((0, 1, rows, a, b),))


def _batch_pair(op, args, batched, *, left_rows: bool):
    """A batch of ``op(x, y)`` on matrices: a 1-D ``y`` becomes one column (a 1-D ``x``
    one row, if ``left_rows``), and batched operands get size-1 axes after the batch axis
    so that numpy's broadcasting of the stack axes lines the examples up."""
    x, y = args
    x_vector = left_rows and ndim_of(x) - batched[0] == 1
    y_vector = ndim_of(y) - batched[1] == 1
    if x_vector:
        x = expand_dims(x, -2)
    if y_vector:
        y = expand_dims(y, -1)
    rank = max(ndim_of(x) - batched[0], ndim_of(y) - batched[1])
    x, y = (pad_batched(a, rank) if b else a for a, b in zip((x, y), batched))
    out = op(x, y)
    if y_vector:
        out = squeeze(out, -1)
    if x_vector:
        out = squeeze(out, -1 if y_vector else -2)
    return out


matmul = defop(
    "matmul",
    np.matmul,
    batch=lambda args, batched: _batch_pair(matmul, args, batched, left_rows=True),
    operators=("__matmul__", "__rmatmul__"),
    replay=operator.mul,
    complex=HOLOMORPHIC,
    nargs=2,
    saves=("args",),
    prepare=_prepare_matmul,
    cases=[
        (((3, 4), (4, 2)), {}),
        (((4,), (4, 2)), {}),
        (((3, 4), (4,)), {}),
        (((4,), (4,)), {}),
        (((2, 3, 4), (4, 5)), {}),
        (((2, 3, 4), (1, 4, 5)), {}),
        (((4,), (2, 4, 3)), {}),
        (((2, 3, 4), (4,)), {}),
    ],
    label="Mm",
    hints=Hints(
        vjp_reads=(("y",), ("x",)),  # each rule reads only the other operand's values
        work=lambda out, x, y: max(np.size(out), 1) * np.shape(x)[-1],
    ),
    sym=lambda x, y: np.matmul(np.asarray(x, dtype=object), np.asarray(y, dtype=object)),
    jvp=(_jvp_x, _jvp_y),
    vjp=(_vjp_x, _vjp_y),
    doc="Matrix product, as ``np.matmul`` and ``x @ y``: 1-D, 2-D and batched.",
    example="matmul([[1.0, 2.0]], [[3.0], [4.0]]) -> [[11.]]",
    sparsity=_matmul_sparsity,
)


# --- inv --------------------------------------------------------------------------------


inv = defmatrix(
    "inv",
    np.linalg.inv,
    numpy=("linalg.inv",),
    complex=HOLOMORPHIC,
    domain=diagonally_dominant,
    saves=("out",),
    sym=lambda x: sympy_batches(lambda a: to_object_array(sympy_matrix(a).inv()), x),
    jvp=lambda out, x, x_dot: negative(matmul(matmul(out, x_dot), out)),
    vjp=lambda out, x, out_bar: negative(matmul(matmul(swap_last(out), out_bar), swap_last(out))),
    doc="The inverse of square matrices, batched over leading axes, as ``np.linalg.inv``.",
    example="inv([[2.0, 0.0], [0.0, 4.0]]) -> [[0.5  0.  ]\n [0.   0.25]]",
)


# --- solve ------------------------------------------------------------------------------


def _prepare_solve(a, b):
    prepare_square(a)
    a_shape, b_shape = shape_of(a), shape_of(b)
    rows = b_shape[0] if len(b_shape) == 1 else (b_shape[-2] if len(b_shape) > 1 else None)
    if rows != a_shape[-1]:
        raise ValueError(
            f"solve: a of shape {a_shape} needs b of shape ({a_shape[-1]},) or "
            f"(..., {a_shape[-1]}, k), got {b_shape}"
        )
    return {}


def _column(value, b):
    """``value`` as columns: numpy's ``solve`` reads a 1-D ``b`` as one column."""
    return expand_dims(value, -1) if ndim_of(b) == 1 else value


def _uncolumn(value, b):
    return squeeze(value, -1) if ndim_of(b) == 1 else value


def _solve_jvp_a(out, a, b, a_dot):
    columns = _column(out, b)
    a_dot = pad_lanes(a_dot, ndim_of(a), ndim_of(columns))
    return _uncolumn(negative(solve(a, matmul(a_dot, columns))), b)


def _solve_jvp_b(out, a, b, b_dot):
    columns = pad_lanes(_column(b_dot, b), ndim_of(_column(b, b)), ndim_of(_column(out, b)))
    return _uncolumn(solve(a, columns), b)


def _solve_vjp_a(out, a, b, out_bar):
    b_bar = solve(swap_last(a), _column(out_bar, b))
    return unbroadcast(negative(matmul(b_bar, swap_last(_column(out, b)))), shape_of(a))


def _solve_vjp_b(out, a, b, out_bar):
    return unbroadcast(_uncolumn(solve(swap_last(a), _column(out_bar, b)), b), shape_of(b))


def _flat(*arrays):
    """The arrays broadcast together, each flattened."""
    return tuple(part.ravel() for part in np.broadcast_arrays(*arrays))


def _solve_sparsity(out, a, b, *, local):
    """Column ``k`` of the solution depends on all of its batch's matrix ``a`` and on
    column ``k`` of ``b``; ``a``'s entries interact with each other and with that column,
    ``b``'s not with each other (the solution is linear in ``b``)."""
    n, b_shape = shape_of(a)[-1], shape_of(b)
    columns = b_shape if len(b_shape) > 1 else b_shape + (1,)
    batch = np.broadcast_shapes(shape_of(a)[:-2], columns[:-2])
    solution = element_numbers(shape_of(out)).reshape(batch + (n, columns[-1], 1))
    matrix = np.broadcast_to(element_numbers(shape_of(a)), batch + (n, n))
    matrix = matrix.reshape(batch + (1, 1, n * n))
    rhs = np.broadcast_to(element_numbers(b_shape).reshape(columns), batch + columns[-2:])
    rhs = np.swapaxes(rhs, -1, -2)[..., None, :, :]  # column k's entries, beside row k

    def pairs() -> tuple:
        first, second = np.triu_indices(n * n)
        rows, p, q = _flat(solution, matrix[..., first], matrix[..., second])
        mixed = _flat(solution[..., None], matrix[..., None], rhs[..., None, :])
        return ((0, 0, rows, p, q), (0, 1, *mixed))

    return Links((_flat(solution, matrix), _flat(solution, rhs)), pairs)


def _sym_solve(a, b):
    b = np.asarray(b, dtype=object)
    if b.ndim == 1:
        return _sym_solve(a, b[:, None])[..., 0]
    return sympy_batches(
        lambda m, r: to_object_array(sympy_matrix(m).LUsolve(sympy_matrix(r))), a, b
    )


solve = defop(
    "solve",
    np.linalg.solve,
    batch=lambda args, batched: _batch_pair(solve, args, batched, left_rows=False),
    numpy=("linalg.solve",),
    replay=ARRAY_ONLY,
    complex=HOLOMORPHIC,
    nargs=2,
    domain=(diagonally_dominant, (-2.0, 2.0)),
    prepare=_prepare_solve,
    cases=[(((2, 2), (2,)), {}), (((2, 2, 2), (2, 1)), {}), (((2, 2), (2, 2, 1)), {})],
    sparsity=_solve_sparsity,
    sym=_sym_solve,
    jvp=(_solve_jvp_a, _solve_jvp_b),
    vjp=(_solve_vjp_a, _solve_vjp_b),
    doc="The solution of ``a @ x = b``, batched, as ``np.linalg.solve`` (a 1-D ``b`` "
    "is one column).",
    example="solve([[2.0, 0.0], [0.0, 4.0]], [1.0, 1.0]) -> [0.5  0.25]",
)


# --- det and logabsdet ------------------------------------------------------------------


def _across_rows_and_columns(p, q, n: int):
    """Which entries of an ``n × n`` matrix meet in det's second derivative: two in
    different rows and columns (det is linear in each row and in each column)."""
    return (p // n != q // n) & (p % n != q % n)


det = defmatrix(
    "det",
    np.linalg.det,
    numpy=("linalg.det",),
    complex=HOLOMORPHIC,
    domain=diagonally_dominant,
    cases=[(((3, 3),), {}), (((2, 2, 2),), {})],
    sparsity=matrix_sparsity(interact=_across_rows_and_columns),
    sym=lambda x: sympy_batches(lambda a: sympy_matrix(a).det(), x),
    # d det = det · trace(inv(x) dx); the inverse is an op, so this differentiates again.
    jvp=lambda out, x, x_dot: multiply(out, trace_product(swap_last(inv(x)), x_dot)),
    vjp=lambda out, x, out_bar: multiply(
        expand_dims(multiply(out_bar, out), (-2, -1)), swap_last(inv(x))
    ),
    doc="The determinant of square matrices, batched, as ``np.linalg.det``.",
    example="det([[2.0, 0.0], [1.0, 3.0]]) -> 6.0",
)


def _logabsdet_value(x):
    return np.linalg.slogdet(x).logabsdet


logabsdet = defmatrix(
    "logabsdet",
    _logabsdet_value,
    numpy=(),
    complex="is log|det x|, not analytic in x",
    domain=diagonally_dominant,
    saves=("args",),
    cases=[(((3, 3),), {}), (((2, 2, 2),), {})],
    # log|det| = log(det²) / 2: smooth wherever det is not 0.
    sym=lambda x: sympy_batches(lambda a: sympy.log(sympy_matrix(a).det() ** 2) / 2, x),
    jvp=lambda out, x, x_dot: trace_product(swap_last(inv(x)), x_dot),
    vjp=lambda out, x, out_bar: multiply(expand_dims(out_bar, (-2, -1)), swap_last(inv(x))),
    doc="``log|det x|``, batched: the second result of ``np.linalg.slogdet``.",
    example="logabsdet([[-2.0, 0.0], [0.0, 0.5]]) -> 0.0",
)
