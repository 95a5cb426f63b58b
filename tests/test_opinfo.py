"""What each op record asks its tests to visit (dtypes, tolerances, special points,
kinks), visited; the rules ``defop`` derives from structure; and ``defop``'s checks of a
record's fields."""

from __future__ import annotations

import functools
import math
import zlib

import numpy as np
import pytest
import sympy
from scipy import special

import adcompare as ad
from adcompare.ops import OPS
from adcompare.ops.registry import HOLOMORPHIC, LINEAR, SLOPE, Hints, defop

from .opcases import domain_of, has_interval_domain

BUILT_IN = [op for op in OPS.values() if op.built_in]
#: Elementwise records drawn on intervals: their derivatives at a point are numbers.
POINTWISE = [
    op
    for op in BUILT_IN
    if op.elementwise and op.nargs and op.test_params is None and has_interval_domain(op)
]


def ids(op):
    return op.name


def _forward(op, args):
    """Each argument's derivative at ``args`` by forward mode."""
    found = []
    for i in op.differentiable:
        tangents = tuple(
            np.ones_like(a) if j == i else np.zeros_like(a) for j, a in enumerate(args)
        )
        found.append(ad.jvp(op.fn, args, tangents)[1])
    return np.array(found)


def _derivatives(op, point, dtype):
    """Each argument's derivative at ``point``, by reverse and by forward mode."""
    args = tuple(np.asarray(v, dtype=dtype) for v in point)
    return np.array(ad.grad(op.fn, argnums=op.differentiable)(*args)), _forward(op, args)


def _exact(op, point) -> np.ndarray:
    """SymPy's derivative in each position at ``point`` (its limit where the formula is 0/0)."""
    symbols = sympy.symbols(f"a0:{op.nargs}")
    expression = op.sym(*symbols)
    exact = []
    for i in op.differentiable:
        derivative = sympy.diff(expression, symbols[i])
        at = dict(zip(symbols, map(_number, point)))
        value = derivative.subs(at)
        if not value.is_finite:
            others = {s: v for s, v in at.items() if s is not symbols[i]}
            value = sympy.limit(derivative.subs(others), symbols[i], sympy.nsimplify(point[i]))
        exact.append(complex(value.evalf(30)))
    return np.array(exact)


def _number(value):
    """The float (or complex) ``value`` exactly, as a 30-digit SymPy number."""
    value = complex(value)
    return sympy.Float(value.real, 30) + sympy.I * sympy.Float(value.imag, 30)


def _points(op, count, seed):
    rng = np.random.default_rng(seed)
    return [tuple(rng.uniform(*domain_of(op, i)) for i in range(op.nargs)) for _ in range(count)]


@pytest.mark.parametrize("op", POINTWISE, ids=ids)
def test_every_declared_dtype_agrees_with_float64_within_the_records_tolerance(op):
    """float32 derivatives come back in float32 and match float64 within the record's
    tolerance; a holomorphic op's derivative at a complex point matches SymPy's."""
    (point,) = _points(op, 1, zlib.crc32(op.name.encode()))
    reverse64, forward64 = _derivatives(op, point, np.float64)
    np.testing.assert_allclose(forward64, reverse64, rtol=op.tolerance["float64"])
    reverse32, forward32 = _derivatives(op, point, np.float32)
    assert reverse32.dtype == forward32.dtype == np.float32
    for found in (reverse32, forward32):
        np.testing.assert_allclose(found, reverse64, rtol=op.tolerance["float32"], atol=1e-6)
    if "complex128" in op.dtypes and op.complex == HOLOMORPHIC and op.sym is not None:
        at = tuple(v + 0.125j for v in point)
        forward = _forward(op, tuple(np.asarray(v) for v in at))
        np.testing.assert_allclose(forward, _exact(op, at), rtol=op.tolerance["complex128"])


SPECIAL = [(op, p) for op in BUILT_IN for p in op.special]


@pytest.mark.parametrize("op,point", SPECIAL, ids=[f"{op.name}-{p}" for op, p in SPECIAL])
def test_both_modes_match_sympy_at_the_records_special_points(op, point):
    point = point if isinstance(point, tuple) else (point,)
    exact = _exact(op, point).real
    for found in _derivatives(op, point, np.float64):
        np.testing.assert_allclose(found, exact, rtol=op.tolerance["float64"], atol=1e-15)


KINKS = [(op, point, grads) for op in BUILT_IN for point, grads in op.kinks]


@pytest.mark.parametrize("op,point,grads", KINKS, ids=[f"{k[0].name}-{k[1]}" for k in KINKS])
def test_both_modes_take_the_documented_subgradient_at_a_kink(op, point, grads):
    point = point if isinstance(point, tuple) else (point,)
    grads = grads if isinstance(grads, tuple) else (grads,)
    for found in _derivatives(op, point, np.float64):
        np.testing.assert_array_equal(found, grads)


def test_the_records_visit_special_points_and_kinks():
    assert {op.name for op, _ in SPECIAL} >= {"sin", "cos", "exp", "log", "sqrt", "sinc"}
    assert {op.name for op, _, _ in KINKS} >= {"abs", "maximum", "minimum"}
    assert all(op.tolerance.keys() == set(op.dtypes) for op in BUILT_IN)


# --- rules derived from structure ---------------------------------------------------


@pytest.mark.parametrize("op", [op for op in BUILT_IN if op.derived == LINEAR], ids=ids)
def test_a_linear_ops_jvp_is_the_op_applied_to_the_tangent(op):
    """Bit for bit: the tangent goes through the same numpy value as the primal."""
    shapes, params = op.cases[0] if op.cases else (((3,),), {})
    rng = np.random.default_rng(zlib.crc32(op.name.encode()))
    x = rng.uniform(0.5, 1.5, shapes[0])
    tangent = rng.uniform(-1.0, 1.0, shapes[0])
    _, found = ad.jvp(lambda a: op.fn(a, **params), (x,), (tangent,))
    prepared = op.prepare(tangent, **params) if op.prepare else {}
    np.testing.assert_array_equal(found, op.value(tangent, **prepared))


#: The hand-written rules the slope records replaced, as numpy formulas of (x, out, t):
#: the derived JVP and VJP give these numbers bit for bit.
REPLACED = {
    "sin": lambda x, out, t: np.cos(x) * t,
    "cos": lambda x, out, t: -np.sin(x) * t,
    "tan": lambda x, out, t: (1.0 + out * out) * t,
    "arcsin": lambda x, out, t: t / np.sqrt(1.0 - x * x),
    "arctan": lambda x, out, t: t / (1.0 + x * x),
    "exp": lambda x, out, t: out * t,
    "log": lambda x, out, t: t / x,
    "log1p": lambda x, out, t: t / (1.0 + x),
    "expm1": lambda x, out, t: (out + 1.0) * t,
    "tanh": lambda x, out, t: (1.0 - out * out) * t,
    "sqrt": lambda x, out, t: t / (2.0 * out),
}


@pytest.mark.parametrize("name", sorted(REPLACED))
def test_slope_records_give_the_numbers_of_the_rules_they_replace_bit_for_bit(name):
    """The quotient form divides once (x_dot / x differs in the last bits from
    x_dot * (1 / x)); the others multiply by the slope once."""
    op = OPS[name]
    rng = np.random.default_rng(zlib.crc32(name.encode()))
    x, t = rng.uniform(*op.domain, 1000), rng.uniform(-1.0, 1.0, 1000)
    expected = REPLACED[name](x, op.value(x), t)
    np.testing.assert_array_equal(ad.jvp(op.fn, (x,), (t,))[1], expected)
    np.testing.assert_array_equal(ad.vjp(op.fn, x)[1](t)[0], expected)
    assert op.derived == SLOPE


def _wins(x, y):
    return (x > y) + 0.5 * (x == y)


#: The same for the records of two arrays: one formula of (x, y, out, t) per position.
REPLACED_PAIRS = {
    "arctan2": (
        lambda x, y, out, t: y / (x * x + y * y) * t,
        lambda x, y, out, t: -(x / (x * x + y * y)) * t,
    ),
    "hypot": (lambda x, y, out, t: x / out * t, lambda x, y, out, t: y / out * t),
    "logaddexp": (
        lambda x, y, out, t: np.exp(x - out) * t,
        lambda x, y, out, t: np.exp(y - out) * t,
    ),
    "logaddexp2": (
        lambda x, y, out, t: np.exp2(x - out) * t,
        lambda x, y, out, t: np.exp2(y - out) * t,
    ),
    "maximum": (lambda x, y, out, t: _wins(x, y) * t, lambda x, y, out, t: _wins(y, x) * t),
    "fmin": (lambda x, y, out, t: _wins(y, x) * t, lambda x, y, out, t: _wins(x, y) * t),
    "betaln": (
        lambda x, y, out, t: (special.digamma(x) - special.digamma(x + y)) * t,
        lambda x, y, out, t: (special.digamma(y) - special.digamma(x + y)) * t,
    ),
    "xlogy": (lambda x, y, out, t: np.log(y) * t, lambda x, y, out, t: x / y * t),
    "xlog1py": (lambda x, y, out, t: np.log1p(y) * t, lambda x, y, out, t: x / (1.0 + y) * t),
}


@pytest.mark.parametrize("name", sorted(REPLACED_PAIRS))
def test_slope_records_of_two_arrays_give_the_numbers_of_the_rules_they_replace(name):
    op = OPS[name]
    rng = np.random.default_rng(zlib.crc32(name.encode()))
    x, y = (rng.uniform(*domain_of(op, i), 500) for i in range(2))
    t = rng.uniform(-1.0, 1.0, 500)
    out = op.value(x, y)
    cotangents = ad.vjp(op.fn, x, y)[1](t)
    for i, formula in enumerate(REPLACED_PAIRS[name]):
        expected = formula(x, y, out, t)
        tangents = (t, np.zeros_like(t)) if i == 0 else (np.zeros_like(t), t)
        # The other position's tangent is zero: the sum adds exact zeros.
        np.testing.assert_array_equal(ad.jvp(op.fn, (x, y), tangents)[1], expected)
        np.testing.assert_array_equal(cotangents[i], expected)
    assert op.derived == SLOPE


def test_the_quotient_form_is_not_a_product_with_the_reciprocal():
    rng = np.random.default_rng(7)
    x, t = rng.uniform(0.5, 1.5, 1000), rng.uniform(-1.0, 1.0, 1000)
    assert not np.array_equal(t / x, t * (1.0 / x))
    np.testing.assert_array_equal(ad.jvp(ad.ops.log, (x,), (t,))[1], t / x)


def test_saves_follow_from_what_the_rules_read():
    """arctan2's rules read x and y, not its output, so the tape keeps only the arguments;
    rfftn's transpose reads only the input's shape, so it keeps nothing."""
    assert OPS["arctan2"].saves == {"args"}
    assert OPS["rfftn"].saves == frozenset()
    x, y = np.linspace(0.5, 1.0, 1000), np.linspace(1.0, 2.0, 1000)
    with ad.count() as counted:
        ad.grad(lambda a, b: ad.ops.arctan2(a, b).sum(), argnums=(0, 1))(x, y)
    assert counted.tape_bytes == x.nbytes + y.nbytes  # before: the output too, 24000 bytes


# --- defop's checks ------------------------------------------------------------------


def _define(**fields):
    rules = {"jvp": lambda out, x, x_dot: x_dot, "vjp": lambda out, x, out_bar: out_bar}
    try:
        return defop("opinfo_example", np.positive, numpy=(), **{**rules, **fields})
    finally:
        OPS.pop("opinfo_example", None)


@pytest.mark.parametrize(
    "fields,message",
    [
        ({"saves": ("args",)}, "saves=('args',), but its VJP rules read the values of nothing"),
        (
            {"vjp": lambda out, x, out_bar: out_bar * out, "saves": ("args",)},
            "set saves=('out',)",
        ),
        (
            {"nargs": 2, "jvp": (None, None), "vjp": (None, lambda out, x, y, out_bar: x)}
            | {"hints": Hints(vjp_reads=((), ("y",)))},
            "Hints.vjp_reads=((), ('y',)), but its VJP rules read the values of ((), ('x',))",
        ),
        ({"dtypes": ("float64",)}, "list float32 and float64"),
        ({"dtypes": ("float32", "float64", "complex128")}, "dtypes lists complex128"),
        ({"tolerance": {"float16": 1e-2}}, "give a positive number per dtype"),
        ({"special": (0.0,)}, "special points and kinks are for elementwise ops"),
        ({"elementwise": True, "kinks": ((0.0, (1.0, 2.0)),)}, "has not 1 number(s)"),
        ({"linear": lambda out, x, out_bar: out_bar}, "linear, jvp, vjp all give rules"),
        ({"jvp": None}, "give both jvp= and vjp="),
        ({"jvp": None, "vjp": None, "bilinear": (None,)}, "takes the two transposes"),
        ({"jvp": None, "vjp": None, "nargs": 2, "linear": None}, "linear= is for an op of one"),
        (
            {"jvp": None, "vjp": None, "elementwise": True, "slope": (None, None)},
            "slope= gives 2 slope(s) for nargs=1; give one per argument",
        ),
        ({"saves": ("x",)}, "saves=('x',); name what the VJP rules read"),
        # A rule whose reads defop cannot see (a partial) was accepted, then failed in the sweep.
        (
            {"saves": ("x",), "vjp": functools.partial(lambda k, out, x, out_bar: k * x, 2.0)},
            "with the words 'args' (the inputs) and 'out'",
        ),
        ({"saves": "args"}, "saves='args'; name what the VJP rules read"),
        ({"replay": "scalar"}, "give a scalar kernel or ARRAY_ONLY"),
        ({"sparsity": "selects all"}, "give a rule sparsity(out, *args, local, **params)"),
        ({"batch": "leading"}, "give a rule batch(args, batched, **params) or LEADING_AXIS"),
        ({"complex": True}, "complex=True; give HOLOMORPHIC, WIRTINGER or a sentence"),
        ({"nargs": 0}, "nargs=0; give 1 to 3 or None"),
        ({"domain": (2.0, -2.0)}, "give (low, high) with low < high"),
        ({"domain": ((0.0, 1.0), (1.0, 1.0))}, "give (low, high) with low < high"),
    ],
)
def test_a_bad_record_raises_at_definition_naming_the_op_and_the_field(fields, message):
    with pytest.raises((ValueError, TypeError), match="opinfo_example") as raised:
        _define(**fields)
    assert message in str(raised.value)


def test_a_records_saves_default_to_what_its_rules_read():
    fn = _define(jvp=None, vjp=None, linear=lambda out, x, out_bar: out_bar * math.pi)
    assert fn.op.saves == frozenset() and fn.op.derived == LINEAR
    fn = _define(vjp=lambda out, x, out_bar: reshape_like(out_bar, x))
    assert fn.op.saves == {"args"}


def reshape_like(value, x):
    return np.reshape(value, np.shape(x))
