"""What the evals with a scalar objective share: reading their input, and a gradient by mode.

lse, llsq, det, kmeans and ode each differentiate one scalar function
``f(x, *constants)`` with respect to its first argument. :class:`ByMode`
answers that in each of the modes of :data:`~adcompare.gradbench.evals.MODES`:
``reverse`` (:func:`adcompare.grad`), ``forward`` (:func:`adcompare.jacfwd`,
one lane per input), ``replay`` (:func:`adcompare.compile`, one recording per
input shape, the latest kept). The input readers turn a message's fields into
arrays or raise :class:`~adcompare.gradbench.evals.InputError` with one
sentence.

>>> import adcompare as ad
>>> square_norm = ByMode("demo", lambda x, scale: ad.sum(x * x) * scale)
>>> x = np.array([1.0, 2.0])
>>> [square_norm.gradient(mode, x, 3.0).tolist() for mode in ("reverse", "replay")]
[[6.0, 12.0], [6.0, 12.0]]
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

import adcompare as ad
from adcompare.gradbench.evals import Eval, InputError, Workload

__all__ = [
    "FORWARD_BUDGET",
    "SEED",
    "ByMode",
    "field_array",
    "fields",
    "gradient_eval",
    "message",
    "seeded_workloads",
    "whole_number",
]

#: The most lane-elements forward mode takes on: (inputs, one lane each) × (elements
#: of one pass). Measured at 1–7·10⁸ lane-elements a second, this is minutes at the
#: most; the default workloads past it would take hours (GradBench's forward-mode
#: tools time out there too), and reverse and replay answer them.
FORWARD_BUDGET = 2e10


def fields(value: Any, eval_name: str, names: Sequence[str]) -> Mapping[str, Any]:
    """The input object of an evaluate message, checked to hold every field in ``names``.

    >>> fields({"x": [1.0]}, "lse", ["x"])["x"]
    [1.0]
    >>> fields({"y": 1}, "lse", ["x"])
    Traceback (most recent call last):
    ...
    adcompare.gradbench.evals.InputError: lse input lacks the field 'x'; send an object with x
    """
    if not isinstance(value, Mapping):
        raise InputError(
            f"{eval_name} takes an object with fields {', '.join(names)}, "
            f"not {type(value).__name__}"
        )
    for name in names:
        if name not in value:
            raise InputError(
                f"{eval_name} input lacks the field {name!r}; "
                f"send an object with {', '.join(names)}"
            )
    return value


def field_array(value: Mapping, name: str, eval_name: str, ndim: int) -> np.ndarray:
    """Field ``name`` as a float64 array of ``ndim`` dimensions, non-empty and finite.

    >>> field_array({"A": [[1, 2], [3, 4]]}, "A", "det", 2).dtype
    dtype('float64')
    >>> field_array({"x": [1.0, float("nan")]}, "x", "lse", 1)
    Traceback (most recent call last):
    ...
    adcompare.gradbench.evals.InputError: lse's x holds a non-finite number at index 1; send ...
    """
    shape = "a list of numbers" if ndim == 1 else f"{ndim}-deep nested lists of numbers"
    raw = value[name]
    if not isinstance(raw, list) or _holds_bool(raw):
        raise InputError(f"{eval_name}'s {name} must be {shape}, not {type(raw).__name__}")
    try:
        array = np.asarray(raw, dtype=np.float64)
    except (TypeError, ValueError):
        raise InputError(f"{eval_name}'s {name} must be {shape} with rows of one length") from None
    if array.ndim != ndim or array.size == 0:
        raise InputError(
            f"{eval_name}'s {name} must be {shape}, non-empty; it has shape {array.shape}"
        )
    bad = np.flatnonzero(~np.isfinite(array.ravel()))
    if bad.size:
        index = np.unravel_index(bad[0], array.shape)
        where = index[0] if ndim == 1 else tuple(int(i) for i in index)
        raise InputError(
            f"{eval_name}'s {name} holds a non-finite number at index {where}; send finite numbers"
        )
    return array


def _holds_bool(raw: list) -> bool:
    """Whether the first element reached through the first items is a bool (JSON true)."""
    first = raw
    while isinstance(first, list) and first:
        first = first[0]
    return isinstance(first, bool)


def whole_number(value: Mapping, name: str, eval_name: str, minimum: int) -> int:
    """Field ``name`` as an int of at least ``minimum``.

    >>> whole_number({"s": 10}, "s", "ode", 1)
    10
    >>> whole_number({"s": 2.5}, "s", "ode", 1)
    Traceback (most recent call last):
    ...
    adcompare.gradbench.evals.InputError: ode's s must be a whole number of at least 1, not 2.5
    """
    raw = value[name]
    if isinstance(raw, bool) or not isinstance(raw, int) or raw < minimum:
        raise InputError(
            f"{eval_name}'s {name} must be a whole number of at least {minimum}, not {raw!r}"
        )
    return raw


def message(**values) -> dict:
    """An evaluate message's input: ``values`` with GradBench's default runs fields.

    >>> message(x=[1.0])
    {'x': [1.0], 'min_runs': 1, 'min_seconds': 1}
    """
    return {**values, "min_runs": 1, "min_seconds": 1}


class ByMode:
    """The gradient of a scalar ``f(x, *constants)`` with respect to ``x``, in each mode.

    ``constants`` are not differentiated: arrays and numbers the function
    reads, ints that decide its shape. ``work(x, *constants)`` is the number of
    elements one pass of ``f`` touches (by default ``x.size``): ``forward``
    refuses a gradient whose lanes × work exceeds :data:`FORWARD_BUDGET`,
    saying which mode to use instead. ``replay_gradient(x, *constants)``, where
    given, answers ``replay`` in place of one recording of the whole of ``f``
    (ode's: one recorded step, replayed along the steps).
    """

    def __init__(
        self,
        eval_name: str,
        f: Callable,
        work: Callable | None = None,
        replay_gradient: Callable | None = None,
    ):
        self.eval_name = eval_name
        self.f = f
        self.work = work or (lambda x, *constants: x.size)
        self.replay_gradient = replay_gradient
        # The latest compiled program: (its key, it, which constants it takes as arguments).
        self._latest: tuple = ((), None, None)

    def gradient(self, mode: str, x: np.ndarray, *constants) -> np.ndarray:
        """``∇ₓ f(x, *constants)`` computed in ``mode`` (``reverse``, ``forward`` or ``replay``)."""
        if mode == "replay" and self.replay_gradient is None:  # first: a timed call's path
            compiled, arrays = self._compiled(x, constants, "reverse")
            return compiled.grad(x, *arrays)
        if mode == "forward":
            self.check_forward(x.size, self.work(x, *constants))
            return ad.jacfwd(self.f)(x, *constants)
        if mode == "replay":
            return self.replay_gradient(x, *constants)
        return ad.grad(self.f)(x, *constants)

    def check_forward(self, lanes: int, pass_elements: int) -> None:
        """Refuse a forward computation of ``lanes`` lanes over passes of ``pass_elements``."""
        if lanes * pass_elements > FORWARD_BUDGET:
            raise InputError(
                f"{self.eval_name} in forward mode needs {lanes} tangent lanes through a function "
                f"of {pass_elements} elements ({lanes * pass_elements:.1e} lane-elements, past "
                f"forward mode's {FORWARD_BUDGET:.0e}: minutes to hours); use mode reverse or "
                "replay for this size"
            )

    def replay(self, x: np.ndarray, constants: tuple, *, mode: str = "reverse"):
        """The compiled program (of :func:`adcompare.compile`'s ``mode``) for arguments of
        these shapes: recorded on first use, and only the latest one kept (a session's
        workloads grow, and each program holds its buffers). Int constants are bound into
        the recording (they decide its shapes), the other constants are its arguments."""
        return self._compiled(x, constants, mode)[0]

    def _compiled(self, x: np.ndarray, constants: tuple, mode: str) -> tuple:
        """:meth:`replay`'s program and the constants it takes (all but the ints)."""
        # Built at every timed call of a small gradient (lse's at n = 2500 replays in
        # 12 µs), and compared with the latest key alone: no hash of its dtypes.
        types = tuple(map(type, constants))
        if type(x) is np.ndarray and _NUMBERS.issuperset(types):  # lse's shift: x.max()
            key = (mode, x.shape, x.dtype, types)
        else:
            key = (mode, _signature(x), *map(_signature, constants))
        latest = self._latest
        if key != latest[0]:
            self._latest = ((), None, None)  # the latest program dropped before the next records
            picks = tuple(i for i, c in enumerate(constants) if not _is_int(c))
            picks = None if len(picks) == len(constants) else picks
            latest = self._latest = (key, self._record(x, constants, mode), picks)
        _, compiled, picks = latest
        return compiled, (constants if picks is None else tuple(map(constants.__getitem__, picks)))

    def _record(self, x: np.ndarray, constants: tuple, mode: str):
        """``f`` compiled with ``constants``' ints bound, taking ``x`` and the others."""

        def bound(x, *arrays):
            given = iter(arrays)
            return self.f(x, *(c if _is_int(c) else next(given) for c in constants))

        arrays = [c for c in constants if not _is_int(c)]
        return ad.compile(bound, x, *arrays, mode=mode)


#: Constants whose type alone decides their shape and dtype: numbers, none of them ints.
_NUMBERS = frozenset({float, complex, np.float64, np.float32, np.complex128, np.complex64})


#: The seed GradBench's evals give numpy's legacy generator (``np.random.seed(31337)``).
SEED = 31337


def seeded_workloads(
    sizes: Sequence, describe: Callable, shape: Callable, values: Callable
) -> tuple[Workload, ...]:
    """One workload per size, its numbers drawn as GradBench's evals draw them.

    One legacy generator (``numpy.random.RandomState``) seeded with
    :data:`SEED`, and uniform draws on [0, 1) of ``shape(size)`` for each size
    in turn, so a workload's draw follows all earlier ones'. ``describe(size)``
    is the description, ``values(draw, size)`` the input's fields (the runs
    fields are added).

    >>> workloads = seeded_workloads([2, 3], str, lambda n: (n,), lambda x, n: {"x": x.tolist()})
    >>> [w.description for w in workloads], len(workloads[1].make()["x"])
    (['2', '3'], 3)
    """
    shapes = [shape(size) for size in sizes]

    def make(i: int) -> dict:
        generator = np.random.RandomState(SEED)
        for earlier in shapes[:i]:
            generator.random_sample(earlier)
        return message(**values(generator.random_sample(shapes[i]), sizes[i]))

    return tuple(Workload(describe(size), lambda i=i: make(i)) for i, size in enumerate(sizes))


def gradient_eval(
    name: str,
    by_mode: ByMode,
    prepare: Callable,
    workloads: Callable,
    *,
    primal: Callable | None = None,
    arguments: Callable = lambda *prepared: prepared,
    auto: str = "reverse",
) -> Eval:
    """An eval whose functions are ``primal`` and ``gradient`` (lse, llsq, det, ode).

    ``prepare`` returns a tuple; in the timed call ``arguments(*prepared)``
    gives the function's arguments (a shift found on the values, say). The
    primal is ``primal`` (by default ``by_mode.f``) on them, the gradient
    ``by_mode``'s. Its objective (for the harness) is ``by_mode.f`` as a function of
    ``x`` alone, the constants bound.

    >>> import adcompare as ad
    >>> demo = gradient_eval("demo", ByMode("demo", ad.sum), lambda x: (np.asarray(x),), tuple)
    >>> demo.encode("gradient", demo.functions["gradient"](demo.prepare([1.0, 2.0]), "replay"))
    [1.0, 1.0]
    """
    value = primal or by_mode.f

    def objective(prepared):
        x, *constants = arguments(*prepared)
        return (lambda x: by_mode.f(x, *constants)), (x,)

    return Eval(
        name=name,
        prepare=prepare,
        functions={
            "primal": lambda prepared, mode: value(*arguments(*prepared)),
            "gradient": lambda prepared, mode: by_mode.gradient(mode, *arguments(*prepared)),
        },
        encode=lambda function, result: np.asarray(result).tolist(),
        primal="primal",
        derivative="gradient",
        auto=auto,
        workloads=workloads,
        objective=objective,
    )


def _is_int(value) -> bool:
    return isinstance(value, (int, np.integer)) and not isinstance(value, bool)


def _signature(value) -> tuple:
    """What an argument contributes to a replay's key: its shape and dtype, and an int's value.

    >>> _signature(np.zeros((2, 3))), _signature(4), _signature(1.5)
    (('shape', (2, 3), dtype('float64')), ('int', 4), ('shape', (), <class 'float'>))
    """
    if type(value) is np.ndarray:
        return ("shape", value.shape, value.dtype)
    if isinstance(value, np.inexact):  # a numpy float, as x.max() gives: before the int tests
        return ("shape", (), value.dtype)
    if _is_int(value):
        return ("int", int(value))
    shape = getattr(value, "shape", None)  # a numpy scalar's: np.shape takes 10 times longer
    return (
        "shape",
        np.shape(value) if shape is None else shape,
        getattr(value, "dtype", type(value)),
    )
