"""The record of one primitive (:class:`OpDef`, :class:`Hints`), the registry ``OPS``
that holds them, and the status words records use. The engines' boxes follow the
runtime's box protocol (:mod:`adcompare.runtime.boxes`)."""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

Rule = Callable[..., Any]


#: ``replay`` status of an op that the replay compiler runs only on arrays.
ARRAY_ONLY = "array only"
#: ``complex`` status of an op that is analytic in a complex argument.
HOLOMORPHIC = "holomorphic"
#: ``complex`` status of an op whose value numpy computes for real numbers only.
REAL_ONLY = "is computed for real numbers only"
#: ``sparsity`` of an op each of whose output elements is one input element.
SELECTS = "selects"
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


#: Kinds of :class:`Decision`: what the values of an op's arguments decide.
PERMUTATION = "permutation"
INDEX = "index"
SIGN = "sign"
BRANCH = "branch"
DECISION_KINDS = (PERMUTATION, INDEX, SIGN, BRANCH)


@dataclass(frozen=True)
class Decision:
    """A result or rule input of an op that the values of one argument decide.

    ``kind`` is :data:`PERMUTATION` (the order ``sort`` puts elements in),
    :data:`INDEX` (positions an index argument names), :data:`SIGN` (the sign
    ``slogdet`` returns) or :data:`BRANCH`. ``source`` names the argument or
    parameter whose values decide it, and ``decide(source_value, **params)``
    computes the decision from them as a plain array. Whoever freezes values
    reads these: ``compile`` recomputes each decision at replay or guards it
    (records again where it changes), and a global sparsity pattern takes the
    union over every decision (see :mod:`adcompare.sparsity.tracer`).

    >>> import numpy as np
    >>> order = Decision(PERMUTATION, "x", lambda x, axis=-1: np.argsort(x, axis))
    >>> order.decide(np.array([3.0, 1.0, 2.0]))
    array([1, 2, 0])
    """

    kind: str
    source: str
    decide: Callable


class ComplexNotSupportedError(TypeError):
    """An op met complex input that its rules do not hold for."""


COMPLEX_RULES = (HOLOMORPHIC, WIRTINGER)


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
    slice rather than scattering into zeros first). ``vjp_same(out, x, y,
    out_bar)`` is the sum of both positions' VJPs of a binary op applied to
    one value twice (``x * x``): the sweep calls it once instead of two rules
    and a sum. A built-in op's ``accumulate_vjp`` also takes ``how=``
    ``"subtract"`` (add the share's negation) or ``"negate_add"`` (``total``
    holds the negation of its value: make it the value, plus the share).
    ``vjp_negates`` marks, per position, the rules that return the cotangent
    negated (summed to the argument's shape): the eager sweep then carries the
    sign instead of negating, and folds it into a later sum (``- x`` and
    ``y - x``; see :mod:`adcompare.engines.reverse.sweep`).
    """

    into: Callable | None = None
    vjp_reads: tuple[tuple[str, ...], ...] | None = None
    work: Callable | None = None
    accumulate_vjp: Callable | None = None
    vjp_same: Callable | None = None
    vjp_negates: tuple[bool, ...] | None = None


NO_HINTS = Hints()


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

    What the registry tests visit besides ``domain`` and ``cases``: ``dtypes``
    (``"float32"`` and ``"float64"`` at least, ``"complex128"`` where
    ``complex`` is declared), ``tolerance`` (the relative error each dtype's
    derivatives may have against float64 or the reference), ``special``
    points of an elementwise op (0, pi, ...: a number, or one per argument)
    where both modes must match SymPy, and ``kinks``: ``(point, derivatives)``
    pairs where the derivative is a documented subgradient choice (``abs`` at
    0, a tie of ``maximum``). ``defop`` fills in the default dtypes and
    tolerances and checks every field.

    Which input elements each output element depends on: ``sparsity`` (read by
    :mod:`adcompare.sparsity`). ``None`` for an elementwise op derives it from
    broadcasting and the JVP rules; :data:`SELECTS` says each output element is
    one input element (the value applied to element numbers shows which);
    otherwise a rule ``sparsity(out, *args, local, **params)`` returning
    :class:`adcompare.ops.links.Links`.
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
    hints: Hints = NO_HINTS
    fn: Callable | None = None
    api: Callable | None = None
    module: str = ""
    sparsity: Callable | str | None = None
    # vmap: how a mapped axis passes through (see adcompare.ops.batching).
    batch: Callable | str | None = None
    # Results or rule inputs the arguments' values decide (see Decision).
    decided_by_values: tuple = ()
    # How defop derived the rules: "linear", "bilinear", "slope", or "" (written by hand).
    derived: str = ""
    # What the registry tests visit (as PyTorch's OpInfo and JAX's test specs hold it):
    # dtypes to check, a tolerance per dtype, special points, kinks with their choice.
    dtypes: tuple[str, ...] = ()
    tolerance: dict = dataclasses.field(default_factory=dict)
    special: tuple = ()
    kinks: tuple = ()

    @property
    def built_in(self) -> bool:
        """Whether the op set defines it (rather than a user's ``defop``)."""
        return self.module.startswith("adcompare.ops")

    def __post_init__(self):
        self._hinted_vjp = self.vjp  # the rules the hints were written for
        self._derive()

    def _derive(self) -> None:
        """Work out once what the engines read on every application, from the fields."""
        #: What the tape keeps when every argument needs a gradient (see :meth:`kept`).
        self.keeps = ("args" in self.saves, "out" in self.saves)
        self._kept: dict[tuple[bool, ...], tuple[bool | tuple[bool, ...], bool]] = {}
        #: Whether complex values may pass (read once per application by the dispatch).
        self.takes_complex = self.complex in COMPLEX_RULES
        #: The VJP rules by position for the reverse sweep (``None``: variadic, see vjp_at);
        #: a position without one refuses, saying what differentiates it instead.
        self.vjp_rules = (
            tuple(rule or self._no_vjp(i) for i, rule in enumerate(self.vjp))
            if self.nargs is not None
            else None
        )
        self.into = self.hints.into  # read by the dispatch at every application
        self.accumulate_vjp = self.hints.accumulate_vjp
        self.vjp_same = self.hints.vjp_same
        # Rules swapped in later (a test injecting a wrong one) run: no sign is carried for them.
        self.vjp_negates = self.hints.vjp_negates if self.vjp is self._hinted_vjp else None
        #: Whether every VJP rule is linear in its cotangent, as the op set's are (a
        #: user's custom_vjp need not be): the eager sweep may carry a sign through them.
        self.linear_rules = self.built_in
        #: What the eager sweep reads of the hints, at every record it sweeps.
        self.sweep_hints = (self.accumulate_vjp, self.vjp_negates)
        #: Whether an input's cotangent may come out larger than the input, to be summed
        #: down: elementwise ops of several arguments broadcast. A one-argument one's
        #: output has its argument's shape unless static parameters broadcast against it
        #: (``clip(x, lo, hi)`` with wider bounds): the sweep tests those records too.
        self.unbroadcasts = self.elementwise and self.nargs != 1
        #: Whether the tape keeps what ``saves`` names whichever positions need a gradient.
        self.keeps_all_read = self.hints.vjp_reads is None

    def __setattr__(self, name: str, value: Any) -> None:
        # A field changed after construction (a test injecting a wrong rule, a user
        # swapping hints) changes what was derived from it too.
        object.__setattr__(self, name, value)
        if name in _DERIVED_FROM and "keeps_all_read" in self.__dict__:
            self._derive()

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
        args = tuple(keeps_args and ARG_NAMES[i] in read for i in range(len(needed)))
        return (all(args) if all(args) or not any(args) else args), keeps_out and "out" in read

    def _no_vjp(self, i: int) -> Rule:
        """The reverse sweep's rule for position ``i``, which has no VJP rule: it refuses."""
        jvp = self.jvp if isinstance(self.jvp, tuple) else (self.jvp,)
        if i < len(jvp) and jvp[i] is not None:
            reason = (
                f"op {self.name!r} has a JVP rule but no VJP rule for argument {i}: "
                "differentiate it in forward mode (jvp, jacfwd, grad(f, mode='forward'), "
                "compile(f, ..., mode='forward'))"
            )
        else:
            reason = (
                f"argument {i} of op {self.name!r} has no derivative rule; pass it as a "
                "constant (a plain array)"
            )

        def refuse(*args, **params):
            raise TypeError(reason)

        return refuse

    def jvp_at(self, i: int) -> Rule | None:
        """The JVP rule for argument position ``i`` (ops of fixed arity)."""
        return self.jvp[i]

    def vjp_at(self, i: int) -> Rule | None:
        """The VJP rule for argument position ``i`` (one that refuses where there is none)."""
        if self.nargs is None:
            return functools.partial(self.vjp, i)
        return self.vjp_rules[i]

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


#: The fields :meth:`OpDef._derive` reads.
_DERIVED_FROM = frozenset({"saves", "complex", "vjp", "nargs", "hints", "elementwise"})

OPS: dict[str, OpDef] = {}

#: The vocabulary's names of the primal inputs, in argument order.
ARG_NAMES = ("x", "y", "z")


def keep_number(x, *args, **params):
    """The replay kernel of shape ops and one-element reductions: the number stays."""
    return x


def sum_number(x, *args, **params):
    """The replay kernel of a one-element sum: numpy adds from +0, so -0.0 sums to +0.0.

    >>> sum_number(-0.0), sum_number(2.5)
    (0.0, 2.5)
    """
    return x + 0.0 if type(x) is float else x
