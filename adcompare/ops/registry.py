"""The op registry: one record per primitive, and the dispatch every op call takes.

Vocabulary used by every rule (as PyTorch's ``derivatives.yaml`` fixes one):

``x, y, z``
    the primal inputs, in argument order;
``out``
    the primal output;
``x_dot`` (``y_dot``, ...)
    the tangent of one input. It carries a leading *lane* axis: its shape is
    ``(k, *x.shape)`` for ``k`` directional derivatives at once. Rules of
    elementwise ops get tangents already padded to the output's rank, so
    numpy broadcasting lines the lanes up; other rules handle the lane axis
    themselves (static ``axis`` parameters are normalised to negative
    numbers, which count from the end and so skip over the lanes);
``out_bar``
    the cotangent of the output, shaped like ``out`` (no lanes).

Rules are given per argument position, so the engines skip the work for
arguments that carry no derivative (HIPS autograd's ``defvjp`` does the
same). A JVP rule returns that argument's contribution to the output
tangent; a VJP rule returns that argument's cotangent. Elementwise VJP rules
may return an output-shaped cotangent: the reverse sweep unbroadcasts it.

Rules are written with the op set's own functions, never with ``np.``
directly, so that they can themselves be differentiated.
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from adcompare.runtime import buffers, cost
from adcompare.runtime.batch_arrays import BatchArray, rebox
from adcompare.runtime.hooks import RECORDING_HOOKS

__all__ = [
    "ARRAY_ONLY",
    "COMPOSITES",
    "HOLOMORPHIC",
    "LEADING_AXIS",
    "NUMPY_NAMES",
    "OPS",
    "WIRTINGER",
    "Box",
    "ComplexNotSupportedError",
    "Composite",
    "Hints",
    "OpDef",
    "anywhere",
    "apply",
    "apply_plain",
    "complex_error",
    "composite",
    "defop",
    "everywhere",
    "keep_number",
    "lane_count",
    "new_level",
    "normalize_axes",
    "pad_lanes",
    "public_face",
    "public_functions",
    "raw",
    "register_numpy_names",
    "unbroadcast",
]

Rule = Callable[..., Any]


class Box:
    """Base of the engines' boxed values (``Dual``, ``Tensor``).

    ``_level`` orders nested boxes: an op is handled by the engine of the
    argument with the highest level, and the values inside that box may be
    boxes of a lower level.
    """

    __slots__ = ("_level",)

    def _apply(self, op: OpDef, level: int, args: tuple, params: dict):
        raise NotImplementedError


#: ``replay`` status of an op that the replay compiler runs only on arrays.
ARRAY_ONLY = "array only"
#: ``complex`` status of an op that is analytic in a complex argument.
HOLOMORPHIC = "holomorphic"
#: ``batch`` of an op whose static axes count from the end: a leading batch axis
#: passes through it as tangent lanes do (see adcompare.ops.batching).
LEADING_AXIS = "leading axis"


#: ``complex`` status of an op that is not holomorphic but whose rules hold for complex
#: input, in JAX's and autograd's convention: the JVP is the real-linear derivative
#: ``df = (∂f/∂z) dz + (∂f/∂z̄) conj(dz)``, and the VJP of a cotangent ``u`` is
#: ``u ∂f/∂z + conj(u ∂f/∂z̄)`` (for real ``f``: ``∂f/∂a - i ∂f/∂b`` at ``z = a + ib``).
WIRTINGER = (
    "is not holomorphic (its rules follow the Wirtinger convention), so the complex "
    "step cannot differentiate it"
)


class ComplexNotSupportedError(TypeError):
    """An op met complex input that its rules do not hold for."""


_COMPLEX_RULES = (HOLOMORPHIC, WIRTINGER)


@dataclass(frozen=True)
class Hints:
    """How to compute an op faster, kept apart from what it computes.

    ``into(out, *args, **params)`` writes the value into a preallocated
    array (large elementwise results reuse cached buffers; elementwise ops
    whose value is a ufunc get it for free). ``vjp_reads`` names, per
    argument position, what that position's VJP rule reads (``"x"``,
    ``"y"``, ..., ``"out"``): the tape then keeps only what the positions
    that need a gradient read, so ``100.0 * p`` does not keep ``p`` alive;
    without it every rule may read everything ``saves`` names.
    ``work(out, *args)`` is the arithmetic one application does, in element
    operations, when that is more than the size of its largest operand
    (``matmul``'s multiply-adds). ``accumulate_vjp(total, out, *args,
    out_bar, **params)`` adds the first argument's cotangent into ``total``,
    a plain array the reverse sweep owns, in place (indexing adds into a
    slice rather than scattering into zeros first).
    """

    into: Callable | None = None
    vjp_reads: tuple[tuple[str, ...], ...] | None = None
    work: Callable | None = None
    accumulate_vjp: Callable | None = None


_NO_HINTS = Hints()


@dataclass(eq=False)
class OpDef:
    """Everything about one primitive, side by side.

    The mathematics: ``value`` computes the op on plain numpy values. ``jvp``
    and ``vjp`` hold one rule per argument position (``None`` where the
    argument is not differentiable, like the condition of ``where``). A
    variadic op such as ``concatenate`` gives one *joint* JVP rule,
    ``jvp(out, arrays, tangents, **params)`` with ``None`` among ``tangents``
    for constant arguments (so the tangents are joined in one step, not one
    step per argument), and one VJP rule that takes the position as its
    first argument. ``sym`` is the SymPy counterpart, an independent oracle
    for the tests. ``domain`` is where tests draw inputs from, one ``(low,
    high)`` pair per argument (or one pair for all); an entry may instead be
    an input maker ``maker(shape, rng)`` for inputs with structure (the
    well-conditioned matrices of ``linalg.py``). ``cases`` lists
    ``(arg_shapes, params)`` examples for ops that are not elementwise
    (elementwise ops are tested over standard broadcast shape groups), and
    ``test_params(shape, rng)`` draws static parameters for elementwise ops
    that have some. ``complex`` is :data:`HOLOMORPHIC` when the rules hold
    for complex arguments, else the reason they do not (``None``: not
    declared, so not trusted).

    ``module`` names the module that defined it.

    Where users reach it: ``api`` is the public function (the registered one
    unless a wrapper with another signature stands in front, as ``where``'s
    does); ``numpy`` lists the numpy names that dispatch to it
    (``"absolute"``, ``"linalg.norm"`` for functions outside numpy's main
    namespace); ``operators`` the Python operators boxes get
    (``("__add__", "__radd__")``, or one unary name); ``method`` the method
    boxes get; :attr:`cli` whether command-line formulas accept it.
    ``replay`` is the scalar kernel the replay compiler emits for
    single-element programs, or :data:`ARRAY_ONLY`.

    How to compute it faster lives apart, in ``hints`` (:class:`Hints`).
    """

    name: str
    value: Callable
    jvp: tuple[Rule | None, ...] | Rule
    vjp: tuple[Rule | None, ...] | Rule
    sym: Callable | None = None
    domain: Any = (-2.0, 2.0)
    nargs: int | None = 1
    elementwise: bool = False
    saves: frozenset = frozenset({"args", "out"})
    prepare: Callable | None = None
    complex: str | None = None
    label: str = ""
    method: str | None = None
    operators: tuple[str, ...] = ()
    numpy: tuple[str, ...] = ()
    replay: Callable | str | None = None
    doc: str = ""
    example: str = ""
    cases: tuple = ()
    test_params: Callable | None = None
    hints: Hints = _NO_HINTS
    fn: Callable | None = None
    api: Callable | None = None
    module: str = ""
    # vmap: how a mapped axis passes through (see adcompare.ops.batching).
    batch: Callable | str | None = None

    @property
    def built_in(self) -> bool:
        """Whether the op set defines it (rather than a user's ``defop``)."""
        return self.module.startswith("adcompare.ops")

    def __post_init__(self):
        #: What the tape keeps when every argument needs a gradient (see :meth:`kept`).
        self.keeps = ("args" in self.saves, "out" in self.saves)
        self._kept: dict[tuple[bool, ...], tuple[bool | tuple[bool, ...], bool]] = {}

    def kept(self, needed: tuple[bool, ...]) -> tuple[bool | tuple[bool, ...], bool]:
        """What the tape keeps when the positions flagged in ``needed`` need a gradient.

        Returns, for the arguments, ``True`` (keep all), ``False`` (keep none)
        or one flag per argument, and a flag for the output.

        >>> from adcompare.ops import OPS
        >>> OPS["multiply"].kept((False, True))  # 3.0 * p keeps 3.0, not p
        ((True, False), False)
        >>> OPS["multiply"].kept((True, True)), OPS["exp"].kept((True,))
        ((True, False), (False, True))
        """
        found = self._kept.get(needed)
        if found is None:
            found = self._kept[needed] = self._compute_kept(needed)
        return found

    def _compute_kept(self, needed: tuple[bool, ...]) -> tuple[bool | tuple[bool, ...], bool]:
        keeps_args, keeps_out = self.keeps
        vjp_reads = self.hints.vjp_reads
        if vjp_reads is None:
            return self.keeps
        read = {name for flag, names in zip(needed, vjp_reads) if flag for name in names}
        args = tuple(keeps_args and _ARG_NAMES[i] in read for i in range(len(needed)))
        return (all(args) if all(args) or not any(args) else args), keeps_out and "out" in read

    def jvp_at(self, i: int) -> Rule | None:
        """The JVP rule for argument position ``i`` (ops of fixed arity)."""
        return self.jvp[i]

    def vjp_at(self, i: int) -> Rule | None:
        """The VJP rule for argument position ``i``."""
        if self.nargs is None:
            return functools.partial(self.vjp, i)
        return self.vjp[i]

    @property
    def cli(self) -> bool:
        """Whether command-line formulas accept it: elementwise, one or two arrays, no
        static parameters."""
        return self.elementwise and self.prepare is None and self.nargs in (1, 2)

    @property
    def differentiable(self) -> tuple[int, ...]:
        """Positions with derivative rules (all positions for variadic ops)."""
        if self.nargs is None:
            return ()
        rules = self.vjp if isinstance(self.vjp, tuple) else (self.vjp,)
        return tuple(i for i, r in enumerate(rules) if r is not None)

    def __repr__(self) -> str:
        return f"<op {self.name}>"


OPS: dict[str, OpDef] = {}

#: The vocabulary's names of the primal inputs, in argument order.
_ARG_NAMES = ("x", "y", "z")

_LEVELS = itertools.count(1)


def new_level() -> int:
    """A fresh nesting level, higher than every level handed out before.

    A transform called inside another gets a higher level, so its boxes wrap
    the outer transform's boxes: that is what keeps nested perturbations
    apart.
    """
    return next(_LEVELS)


def apply(op: OpDef, args: tuple, params: dict):
    """Run ``op`` on ``args``: the engine of the highest-level box handles it."""
    top = None
    for a in args:
        if isinstance(a, Box) and (top is None or a._level > top._level):
            top = a
    if top is None:
        return apply_plain(op, args, params)
    return top._apply(op, top._level, args, params)


def apply_plain(op: OpDef, args: tuple, params: dict):
    """Run ``op`` on arguments that hold no box: its numpy value, counted.

    An engine whose arguments' values are plain calls this directly, skipping
    ``apply``'s search for the highest box.
    """
    if RECORDING_HOOKS:
        recorded = RECORDING_HOOKS[-1](op, args, params)
        if recorded is not None:
            return recorded
    into = op.hints.into
    try:
        out = None if into is None else buffers.run_into(into, args, params)
        if out is None:
            out = op.value(*args, **params)
    except (TypeError, ValueError) as error:
        if op.complex not in _COMPLEX_RULES and any(np.iscomplexobj(a) for a in args):
            raise complex_error(op) from None
        if isinstance(error, TypeError):
            raise
        shapes = ", ".join(str(shape_of(a)) for a in args)
        raise ValueError(f"{op.name}: {error} (argument shapes {shapes})") from None
    if op.complex not in _COMPLEX_RULES and np.result_type(out).kind == "c":
        # numpy computed a complex value (maximum, sign, round) that the rules do not hold for.
        raise complex_error(op)
    if cost._ACTIVE:
        cost.record_numpy(op, args, out)
    if type(out) is not np.ndarray and isinstance(out, BatchArray):
        return rebox(out)  # computed from a value read inside vmap
    return out


def _ufunc_into(value) -> Callable | None:
    """``value(*args, out=out)`` when ``value`` is a numpy ufunc with one output."""
    if not (isinstance(value, np.ufunc) and value.nout == 1):
        return None

    def into(out, *args):
        value(*args, out=out)

    return into


def _tuple_rule(rule) -> tuple:
    if rule is None or isinstance(rule, tuple):
        return rule
    return (rule,)


def keep_number(x, *args, **params):
    """The replay kernel of shape ops and one-element reductions: the number stays."""
    return x


def complex_error(op: OpDef) -> ComplexNotSupportedError:
    """The error for complex input to an op whose rules do not hold for it."""
    reason = op.complex or "declares no complex support (see OpDef.complex)"
    return ComplexNotSupportedError(f"{op.name} {reason}: it takes no complex input")


#: numpy's names (``"sin"``, ``"absolute"``, ``"linalg.norm"``) of the op set's public functions.
NUMPY_NAMES: dict[str, Callable] = {}


def register_numpy_names(names: Sequence[str], fn: Callable) -> None:
    """Let numpy's functions named ``names``, called on a box, dispatch to ``fn``."""
    for name in names:
        if name in NUMPY_NAMES and NUMPY_NAMES[name] is not fn:
            raise ValueError(f"numpy name {name!r} already dispatches to another op")
        NUMPY_NAMES[name] = fn


def defop(
    name: str,
    value: Callable,
    *,
    jvp,
    vjp,
    sym: Callable | None = None,
    domain: Any = (-2.0, 2.0),
    nargs: int | None = 1,
    elementwise: bool = False,
    saves: Sequence[str] = ("args", "out"),
    prepare: Callable | None = None,
    complex: str | None = None,
    label: str = "",
    method: str | None = None,
    operators: Sequence[str] = (),
    numpy: Sequence[str] | None = None,
    replay: Callable | str | None = None,
    doc: str = "",
    example: str = "",
    cases: Sequence = (),
    test_params: Callable | None = None,
    hints: Hints = _NO_HINTS,
    batch: Callable | str | None = None,
) -> Callable:
    """Register a primitive and return its public function.

    The fields are :class:`OpDef`'s. ``saves`` names what the VJP rules need
    from the forward pass: ``"args"`` (the primal inputs) and/or ``"out"``;
    rules receive ``None`` for what is not saved, and the tape holds only
    what is. ``prepare(*args, **params)`` normalises static parameters
    (axes, shapes, indices) once, before dispatch. ``numpy`` defaults to the
    op's own name. ``example`` is a doctest expression whose printed value
    follows after ``->``. ``batch(args, batched, **params)`` is the op's
    batching rule for ``vmap`` (or ``LEADING_AXIS``; see :mod:`adcompare.ops.batching`);
    elementwise ops derive theirs. A user's op is registered the same way:

    >>> import numpy as np
    >>> cube = defop(
    ...     "cube_example", lambda x: x**3, sym=lambda x: x**3, numpy=(),
    ...     jvp=lambda out, x, x_dot: 3.0 * x * x * x_dot,
    ...     vjp=lambda out, x, out_bar: out_bar * 3.0 * x * x)
    >>> import adcompare as ad
    >>> print(ad.grad(cube)(2.0))
    12.0
    >>> del OPS["cube_example"]
    """
    if name in OPS:
        raise ValueError(f"op {name!r} is registered twice")
    if nargs is not None:
        jvp, vjp = _tuple_rule(jvp), _tuple_rule(vjp)
    hints = _checked_hints(name, nargs, hints)
    if elementwise and hints.into is None:
        hints = dataclasses.replace(hints, into=_ufunc_into(value))
    op = OpDef(
        name=name,
        value=value,
        jvp=jvp,
        vjp=vjp,
        sym=sym,
        domain=domain,
        nargs=nargs,
        elementwise=elementwise,
        saves=frozenset(saves),
        prepare=prepare,
        complex=complex,
        label=label or name.capitalize(),
        method=method,
        operators=tuple(operators),
        numpy=default_numpy_names(name) if numpy is None else tuple(numpy),
        replay=replay,
        doc=doc,
        example=example,
        cases=tuple(cases),
        test_params=test_params,
        hints=hints,
        module=sys._getframe(1).f_globals.get("__name__", ""),
        batch=batch,
    )
    op.fn = op.api = _public_function(op)
    OPS[name] = op
    register_numpy_names(op.numpy, op.fn)
    return op.fn


def default_numpy_names(name: str) -> tuple[str, ...]:
    """An op answers to numpy's function of its own name, where numpy has one."""
    return (name,) if callable(getattr(np, name, None)) else ()


def _checked_hints(name: str, nargs: int | None, hints: Hints) -> Hints:
    vjp_reads = hints.vjp_reads
    if vjp_reads is None:
        return hints
    known = {*_ARG_NAMES[: nargs or 0], "out"}
    if len(vjp_reads) != nargs or not all(set(names) <= known for names in vjp_reads):
        raise ValueError(
            f"op {name!r}: vjp_reads needs one tuple per argument position, "
            f"naming only {sorted(known)}"
        )
    return dataclasses.replace(hints, vjp_reads=tuple(tuple(names) for names in vjp_reads))


def _public_function(op: OpDef) -> Callable:
    """The function users call: checks the array count, normalises static parameters."""
    name, nargs, prepare = op.name, op.nargs, op.prepare
    if prepare is None:

        def fn(*args, **params):
            if nargs is not None and len(args) != nargs:
                raise TypeError(f"{name}() takes {nargs} array argument(s), got {len(args)}")
            return apply(op, args, params)

    elif nargs is None:

        def fn(*args, **params):
            return apply(op, args, prepare(*args, **params))

    else:

        def fn(*args, **params):
            # Positional arguments past the arrays are static parameters (axis, shape, ...).
            return apply(op, args[:nargs], prepare(*args, **params))

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = _docstring(op)
    fn.op = op
    return fn


def public_face(op_fn: Callable) -> Callable:
    """Make the decorated wrapper the public function of ``op_fn``'s op.

    For a primitive whose public signature differs from its record's (numpy's
    ``where(cond, x, y)`` in front of a record taking ``cond`` as a keyword):
    exports and numpy dispatch then reach the wrapper.
    """

    def register(wrapper: Callable) -> Callable:
        op = op_fn.op
        op.api = wrapper
        for numpy_name in op.numpy:
            NUMPY_NAMES[numpy_name] = wrapper
        return wrapper

    return register


@dataclass(frozen=True)
class Composite:
    """A composite op, where users reach it and how the tests call it.

    ``method``, ``numpy`` and ``cli`` mean what :class:`OpDef`'s fields of
    those names do. ``cases`` lists ``(arg_shapes, params)`` examples and
    ``domain`` the interval arguments are drawn from: the registry's tests
    check each case's value against numpy's function of the op's first numpy
    name and its derivatives against finite differences in both modes.
    ``listed`` says the arrays are passed as one list (``vstack([a, b])``).
    """

    fn: Callable
    method: str | None = None
    numpy: tuple[str, ...] = ()
    cli: bool = False
    cases: tuple = ()
    domain: tuple[float, float] = (-2.0, 2.0)
    listed: bool = False


COMPOSITES: dict[str, Composite] = {}


def composite(
    method: str | None = None,
    numpy: tuple[str, ...] | None = None,
    cli: bool = False,
    cases: tuple = (),
    domain: tuple[float, float] = (-2.0, 2.0),
    listed: bool = False,
):
    """Register a composite op (the fields are :class:`Composite`'s).

    ``numpy`` defaults to its own name where numpy has a function of that
    name; ``method`` makes it a method of boxes; ``cli`` lets command-line
    formulas call it (functions of one array only).
    """

    def register(fn: Callable) -> Callable:
        names = default_numpy_names(fn.__name__) if numpy is None else numpy
        if fn.__name__ in COMPOSITES:
            raise ValueError(f"composite {fn.__name__!r} is registered twice")
        COMPOSITES[fn.__name__] = Composite(
            fn, method, tuple(names), cli, tuple(cases), domain, listed
        )
        register_numpy_names(names, fn)
        return fn

    return register


def public_functions() -> dict[str, Callable]:
    """Every public function of the op set by name: primitives' and composites'.

    >>> funcs = public_functions()
    >>> funcs["sin"] is OPS["sin"].fn, "softmax" in funcs
    (True, True)
    """
    funcs = {name: op.api for name, op in OPS.items() if not name.startswith("_")}
    funcs.update((name, composite.fn) for name, composite in COMPOSITES.items())
    return funcs


def _docstring(op: OpDef) -> str:
    text = op.doc or f"The primitive ``{op.name}``."
    if op.example:
        expr, _, expected = op.example.partition("->")
        text += f"\n\n>>> print({expr.strip()})\n{expected.strip()}\n"
    return text


# --- helpers shared by rules and engines -------------------------------------


def mixed_levels_error(op: OpDef, engine: str, other: Box) -> TypeError:
    """The error for two engines' boxes meeting at one nesting level."""
    return TypeError(
        f"{op.name}: cannot combine a {engine} and a {type(other).__name__} at the same "
        "nesting level; nest them (Dual(Tensor(...), ...)) or use the transforms"
    )


def anywhere(mask) -> bool:
    """Whether ``mask`` holds anywhere: for rules that skip a guarded path where it cannot matter.

    The guarded path (a ``where`` that masks a singular point) is right
    everywhere; skipping it where the mask is all false only saves work. A
    mask read from a batched value (inside ``vmap``) has no single answer for
    all examples, so it answers True and every example takes the guarded path.

    >>> import numpy as np
    >>> anywhere(np.array([False, True])), anywhere(np.zeros(2, bool))
    (True, False)
    """
    return isinstance(mask, (BatchArray, Box)) or bool(np.any(mask))


def everywhere(mask) -> bool:
    """Whether ``mask`` holds everywhere; a batched mask answers False (see :func:`anywhere`).

    >>> import numpy as np
    >>> everywhere(np.array([True, True])), everywhere(np.array([False, True]))
    (True, False)
    """
    return not isinstance(mask, (BatchArray, Box)) and bool(np.all(mask))


def raw(value):
    """The innermost plain value of a possibly nested box (no derivative)."""
    while isinstance(value, Box):
        value = value._raw_value()
    return value


def shape_of(value) -> tuple[int, ...]:
    """The shape of a plain value or a box."""
    if type(value) is np.ndarray:
        return value.shape
    if type(value) is float or type(value) is int:
        return ()
    shape = getattr(value, "shape", None)
    return tuple(shape) if shape is not None else np.shape(value)


def ndim_of(value) -> int:
    """The rank of a plain value or a box."""
    return len(shape_of(value))


def lane_count(tangent, primal) -> int:
    """How many leading lane axes ``tangent`` has over ``primal`` (0 or 1)."""
    return ndim_of(tangent) - ndim_of(primal)


def pad_lanes(tangent, primal_ndim: int, target_ndim: int):
    """Insert size-1 axes after the lane axis so the tangent has ``target_ndim``.

    A lane-carrying tangent of a rank-``r`` primal has rank ``r + 1``; for
    numpy broadcasting to align it with a rank-``target_ndim`` result, the
    primal part must be left-padded with ones, after the lanes.
    """
    missing = target_ndim - primal_ndim
    if missing <= 0:
        return tangent
    shape = shape_of(tangent)
    return OPS["reshape"].fn(tangent, shape[:1] + (1,) * missing + shape[1:])


def unbroadcast(value, shape: tuple[int, ...]):
    """Sum ``value`` down to ``shape``: the adjoint of numpy broadcasting.

    >>> import numpy as np
    >>> unbroadcast(np.ones((2, 3, 4)), (3, 1)).tolist()
    [[8.0], [8.0], [8.0]]
    """
    value_shape = shape_of(value)
    shape = tuple(shape)
    if value_shape == shape:
        return value
    lead = len(value_shape) - len(shape)
    inner = tuple(lead + i for i, n in enumerate(shape) if n == 1 and value_shape[lead + i] != 1)
    axes = tuple(range(lead)) + inner
    if axes:
        # Summing away leading axes only (no keepdims) leaves exactly ``shape``.
        axes = tuple(a - len(value_shape) for a in axes)
        value = OPS["sum"].fn(value, axis=axes, keepdims=bool(inner))
    return value if shape_of(value) == shape else OPS["reshape"].fn(value, shape)


def normalize_axes(axis, ndim: int) -> tuple[int, ...]:
    """Turn an ``axis`` argument into a sorted tuple of negative axes.

    Negative axes count from the end, so they stay right when a lane axis is
    put in front.

    >>> normalize_axes(0, 3), normalize_axes(None, 2), normalize_axes((-1, 1), 3)
    ((-3,), (-2, -1), (-2, -1))
    """
    if axis is None:
        return tuple(range(-ndim, 0))
    axes = (axis,) if isinstance(axis, (int, np.integer)) else tuple(axis)
    out = []
    for a in axes:
        a = int(a)
        if not -ndim <= a < ndim:
            raise ValueError(
                f"axis {a} is out of range for an array of rank {ndim}; "
                f"use an axis between {-ndim} and {ndim - 1}"
            )
        out.append(a - ndim if a >= 0 else a)
    if len(set(out)) != len(out):
        raise ValueError(f"axis {axis!r} names the same axis twice")
    return tuple(sorted(out))
