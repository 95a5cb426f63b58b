"""A problem from any function: :func:`problem`, the one way every problem is defined.

A problem is a family of functions indexed by sizes; building it at a size
gives an :class:`Instance`: the function on one flat float64 vector ``x``,
the point, and the input and output counts ``n`` and ``m``. The built-in
problems, the studies' problems and a user's own function all enter here.

A user's function may take one array ``f(x)`` or several pytrees
``f(*args)``; :func:`ravel` flattens the arguments' floating leaves into the
one vector the harness differentiates, and the instance rebuilds them on
every call. Building checks what the harness relies on (f runs, returns
floats, a scalar or a 1-D array, finite values, the same rank at every size)
and says what to change in one sentence, a :class:`ProblemError`.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from adcompare.pytree import is_differentiable_leaf, tree_flatten, tree_unflatten

__all__ = ["FAMILIES", "Instance", "Problem", "ProblemError", "problem", "ravel", "size_text"]

#: The size parameters each family is swept over.
FAMILIES: dict[str, tuple[str, ...]] = {
    "many-inputs": ("n",),
    "one-input": ("m",),
    "jacobian": ("n", "m"),
    "batch": ("m",),
    "fixed": (),
}


class ProblemError(ValueError):
    """A user's function the harness cannot measure, said in one sentence: which
    function, what went wrong, what to do."""


def size_text(size: dict) -> str:
    """``{"n": 4, "m": 2}`` as ``n = 4, m = 2``; the empty size as ``its one size``.

    >>> size_text({"n": 4, "m": 2}), size_text({})
    ('n = 4, m = 2', 'its one size')
    """
    return ", ".join(f"{k} = {v}" for k, v in size.items()) or "its one size"


@dataclass(frozen=True)
class Instance:
    """One problem at one size: ``f(xp, x)`` at the point ``x``.

    ``x`` is a 1-D float64 array of ``n`` entries; ``f`` returns a scalar
    (``m == 1``) or a 1-D array of ``m`` entries. ``namespaced``: ``f`` runs
    on any array namespace ``xp`` (numpy, adcompare, jax.numpy, torch), so
    the peers can run it too.
    """

    problem: str
    size: dict
    f: Callable
    x: np.ndarray
    n: int
    m: int
    family: str | None = None
    namespaced: bool = True

    def on(self, xp) -> Callable:
        """The function of ``x`` alone, with ``xp`` as its array namespace.

        >>> import numpy as np
        >>> inst = problem(lambda x: np.sum(x**2), name="sq").build(n=3)
        >>> float(inst.on(np)(np.ones(3)))
        3.0
        """
        f = self.f
        return lambda x: f(xp, x)


def ravel(args) -> tuple[np.ndarray, Callable]:
    """The floating leaves of the pytree ``args`` as one float64 vector, and the function
    that rebuilds ``args`` from such a vector (of numpy arrays, adcompare's boxes, or a
    peer's arrays). Leaves that are not floating (ints, ``None``, strings) stay as they are.

    >>> flat, unravel = ravel(({"w": np.ones((2, 2)), "k": 3}, 0.5))
    >>> flat.shape, unravel(np.arange(5.0))
    ((5,), ({'k': 3, 'w': array([[0., 1.],
           [2., 3.]])}, array(4.)))
    """
    leaves, treedef = tree_flatten(args)
    active = [is_differentiable_leaf(leaf) for leaf in leaves]
    arrays = [np.asarray(leaf, dtype=np.float64) for leaf, a in zip(leaves, active) if a]
    shapes = [a.shape for a in arrays]
    ends = np.cumsum([a.size for a in arrays]).tolist()
    flat = np.concatenate([a.reshape(-1) for a in arrays]) if arrays else np.zeros(0)

    def unravel(vector):
        pieces = iter(
            vector[end - int(np.prod(shape, dtype=int)) : end].reshape(shape)
            for end, shape in zip(ends, shapes)
        )
        rebuilt = [next(pieces) if a else leaf for leaf, a in zip(leaves, active)]
        return tree_unflatten(treedef, rebuilt)

    return flat, unravel


#: The family a sweep gives, unless the problem names another (``"batch"``).
_FAMILY_OF_SWEEP = {("n",): "many-inputs", ("m",): "one-input", ("n", "m"): "jacobian", (): "fixed"}


def _kind(out: np.ndarray) -> str:
    return "a scalar" if out.ndim == 0 else "a 1-D array"


@dataclass(frozen=True)
class Problem:
    """A family of functions: ``build(**size)`` gives an :class:`Instance`. Made by
    :func:`problem`, whose keywords are these fields:

    ``f(x)`` takes one array, or ``f(*args)`` several pytrees when ``inputs``
    returns a tuple. ``inputs(**size)`` builds its arguments at a size
    (default, for ``sweep=("n",)``: a seeded standard-normal vector of n). A
    function that itself changes with the size (m outputs, T steps) is given
    as ``build(**size)`` returning ``(f, inputs)`` instead: ``make``.
    ``sweep`` names the size parameters (``("n",)``, ``("m",)``, ``("n",
    "m")``, ``()``, or a study's own such as ``("steps",)``); ``sizes`` the
    default sizes. With ``xp=True`` f is written against an array namespace,
    ``f(xp, x)``, so the peers (JAX, PyTorch, autograd) run it too.
    ``family`` overrides the one the sweep gives; ``limits`` maps a size
    parameter to ``(largest, why)``; ``opt_in`` problems run only when named;
    ``sizing`` says why a built size may differ from the one asked;
    ``studies`` lists the studies that measure it by default (``"bench"``,
    ``"sparse"``, ``"memory"``); ``symmetric``: its Jacobian is symmetric (a
    gradient's).
    """

    name: str
    family: str | None
    description: str
    make: Callable
    sweep: tuple[str, ...] = ("n",)
    sizes: tuple | None = None
    xp: bool = False
    limits: dict = field(default_factory=dict)
    opt_in: bool = False
    sizing: str = ""
    studies: tuple[str, ...] = ("bench",)
    symmetric: bool = False
    #: The rank of f's value at each size built so far (a function must keep it).
    ranks: dict = field(default_factory=dict, compare=False, repr=False)

    @property
    def sweeps(self) -> tuple[str, ...]:
        """The size parameters this problem is swept over."""
        return self.sweep

    def too_large(self, size: dict) -> str | None:
        """Why ``size`` is beyond this problem's limits, or ``None``.

        >>> p = problem(np.sum, name="total", limits={"n": (64, "enough")})
        >>> p.too_large({"n": 128})
        'enough (n ≤ 64)'
        """
        for key, (limit, why) in self.limits.items():
            if size.get(key, 0) > limit:
                return f"{why} ({key} ≤ {limit})"
        return None

    def build(self, *value, **size) -> Instance:
        """The problem at ``size`` (keywords: its size parameters; one swept over a single
        parameter also takes its value alone), checked.

        >>> inst = problem(lambda x: np.sin(x), name="sine").build(n=3)
        >>> inst.n, inst.m, inst.size == problem(np.sin, name="sine").build(3).size
        (3, 3, True)
        """
        if value and len(value) == len(self.sweep) == 1 and not size:
            size = {self.sweep[0]: value[0]}
        if (value and not size) or set(size) != set(self.sweep):
            raise ValueError(
                f"{self.name} is sized by {', '.join(self.sweep) or 'nothing'}; got "
                f"{', '.join(size) or 'none'}"
            )
        where = size_text(size)
        try:
            f, inputs = self.make(**size)
        except ProblemError:
            raise
        except Exception as error:
            raise ProblemError(
                f"building the inputs of {self.name} at {where} raised {type(error).__name__}: "
                f"{error}; fix its inputs (or build) function"
            ) from error
        call, x = self._flat(f, inputs)
        if x.size == 0:
            raise ProblemError(
                f"{self.name} has no floating-point inputs at {where}; give it float arrays "
                "to differentiate"
            )
        try:
            out = np.asarray(call(np, x))
        except Exception as error:
            raise ProblemError(
                f"{self.name} raised {type(error).__name__} at {where}: {error}; make it run "
                "on the inputs built at that size"
            ) from error
        self._check_value(out, size)
        return Instance(self.name, dict(size), call, x, x.size, out.size, self.family, self.xp)

    def _flat(self, f: Callable, inputs) -> tuple[Callable, np.ndarray]:
        """``f`` as a function ``(xp, x)`` of one flat vector, and that vector."""
        if isinstance(inputs, np.ndarray) and inputs.ndim == 1 and inputs.dtype == np.float64:
            return (f if self.xp else lambda xp, x: f(x)), inputs
        x, unravel = ravel(inputs if isinstance(inputs, tuple) else (inputs,))
        if self.xp:
            return (lambda xp, x: f(xp, *unravel(x))), x
        return (lambda xp, x: f(*unravel(x))), x

    def _check_value(self, out: np.ndarray, size: dict) -> None:
        """Refuse a value the harness cannot differentiate, saying what to return instead."""
        where = size_text(size)
        if out.dtype.kind != "f":
            raise ProblemError(
                f"{self.name} returns {out.dtype} values at {where}, not floats; return a "
                "float array (derivatives are taken of real floating-point values)"
            )
        if out.ndim > 1:
            raise ProblemError(
                f"{self.name} returns an array of shape {out.shape} at {where}; return a "
                "scalar or a 1-D array (flatten it with .ravel())"
            )
        if out.size == 0:
            raise ProblemError(
                f"{self.name} returns an empty array at {where}; return at least one value"
            )
        if not np.all(np.isfinite(out)):
            raise ProblemError(
                f"{self.name} returns NaN or inf at {where}; give it inputs where it is "
                "finite (inputs=... in Python, --inputs on the command line)"
            )
        for other, rank in self.ranks.items():
            if rank != out.ndim:
                raise ProblemError(
                    f"{self.name} returns {_kind(out)} at {where} but "
                    f"{'a scalar' if rank == 0 else 'a 1-D array'} at {size_text(dict(other))}; "
                    "return the same kind of value at every size"
                )
        self.ranks[tuple(size.items())] = out.ndim


def _seeded_normal(name: str) -> Callable:
    def inputs(n: int) -> np.ndarray:
        return np.random.default_rng([zlib.crc32(name.encode()), n]).standard_normal(n)

    return inputs


def _maker(f: Callable, inputs: Callable | None, sweep: tuple, name: str) -> Callable:
    """``make(**size)`` of a function whose inputs alone change with the size; refuses a
    function that must change too (one swept over m)."""
    if inputs is None and sweep != ("n",):
        raise ProblemError(
            f"{name} is swept over {', '.join(sweep) or 'no size'}, so the function changes "
            "with its size: give build=, a function of the sizes returning (f, inputs)"
        )
    make_inputs = inputs or _seeded_normal(name)

    def make(**size):
        return f, make_inputs(**size)

    return make


def problem(
    f: Callable | None = None,
    *,
    name: str | None = None,
    inputs: Callable | None = None,
    build: Callable | None = None,
    sweep: tuple[str, ...] = ("n",),
    sizes=None,
    description: str = "",
    xp: bool = False,
    family: str | None = None,
    limits: dict | None = None,
    opt_in: bool = False,
    sizing: str = "",
    studies: tuple[str, ...] = ("bench",),
    symmetric: bool = False,
) -> Problem:
    """Turn a function into a problem the harness, the report and the studies measure
    (the fields: :class:`Problem`).

    >>> def f(x):
    ...     return np.tanh(np.cumsum(x))[-2:]
    >>> inst = problem(f, name="mymodel").build(n=5)
    >>> inst.n, inst.m, inst.family
    (5, 2, 'many-inputs')
    >>> def loss(params, scale):
    ...     return scale * np.sum(params["w"] ** 2) + params["b"]
    >>> p = problem(loss, name="fit", inputs=lambda n: ({"w": np.ones(n), "b": 1.0}, 2))
    >>> inst = p.build(n=3)  # the float leaves b and w, in sorted order; 2 is static
    >>> inst.n, float(inst.on(np)(np.arange(4.0)))
    (4, 28.0)
    """
    if (f is None) == (build is None):
        raise ProblemError("give a problem either its function f or a build function, not both")
    name = name or getattr(f if f is not None else build, "__name__", "")
    if not name or name == "<lambda>":
        raise ProblemError("give the problem a name: problem(f, name='mymodel')")
    if build is not None and inputs is not None:
        raise ProblemError(f"{name}: build returns the inputs with f, so leave out inputs")
    sweep = tuple(sweep)
    return Problem(
        name,
        family or _FAMILY_OF_SWEEP.get(sweep),
        description,
        build or _maker(f, inputs, sweep, name),
        sweep,
        None if sizes is None else tuple(sizes),
        xp,
        dict(limits or {}),
        opt_in,
        sizing,
        tuple(studies),
        symmetric,
    )
