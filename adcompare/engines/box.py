"""What ``Dual`` and ``Tensor`` share: operators, methods and numpy interop.

Operators and methods are installed by iterating the op registry, so a new
op becomes a method the moment it exists. numpy functions called on a box
dispatch to the op set (``__array_ufunc__`` / ``__array_function__``);
those that read only the structure or answer without a derivative
(``np.ndim``, ``np.allclose``) answer as ``_QUERIES`` says (see below);
the others without a derivative rule raise a TypeError rather than silently
dropping the derivative.

>>> import numpy as np
>>> import adcompare as ad
>>> def f(x):
...     assert np.ndim(x) == 1 and np.allclose(x, (x * 3.0) / 3.0)
...     return ad.sum(x**2)
>>> print(ad.grad(f)(np.array([1.0, 2.0])))
[2. 4.]
"""

from __future__ import annotations

import functools
import inspect
import sys

import numpy as np

from adcompare.ops import COMPOSITES, OPS, getitem, imag, public_functions, real, stats
from adcompare.ops.registry import NUMPY_NAMES, Box, ndim_of, raw, shape_of

_COMPARISONS = {
    "__lt__": np.less,
    "__le__": np.less_equal,
    "__gt__": np.greater,
    "__ge__": np.greater_equal,
    "__eq__": np.equal,
    "__ne__": np.not_equal,
}
# ufunc.reduce of these is an op-set reduction.
_REDUCTIONS = {"add": "sum", "multiply": "prod", "maximum": "max", "minimum": "min"}
_COMPARISON_UFUNCS = {f.__name__ for f in _COMPARISONS.values()} | {
    "logical_and",
    "logical_or",
    "logical_not",
    "isfinite",
    "isnan",
    "isinf",
}


def _numpy_name(func) -> str:
    """numpy's name for ``func``: ``"sin"``, or ``"linalg.norm"`` outside the main namespace.

    A ufunc that is not numpy's is scipy's (``"scipy.special.gammaln"``).
    """
    if isinstance(func, np.ufunc):
        name = func.__name__
        return name if getattr(np, name, None) is func else f"scipy.special.{name}"
    module = getattr(func, "__module__", None) or "numpy"
    if module.startswith("numpy.") and not module.startswith("numpy._"):
        return f"{module[len('numpy.') :]}.{func.__name__}"
    return func.__name__


class ArrayBox(Box):
    """Common face of the boxed values: shapes, operators, numpy methods."""

    #: How a user takes this box's value without its derivative (said in refusals).
    plain_value = "x.detach() of a Tensor, x.primal of a Dual"

    __slots__ = ()
    __array_priority__ = 100.0

    # --- subclasses provide ---------------------------------------------------
    def raw_value(self):
        """The value one level down (a plain array or a lower-level box)."""
        raise NotImplementedError

    def _carries_derivative(self) -> bool:
        raise NotImplementedError

    # --- shape ------------------------------------------------------------------
    @property
    def shape(self) -> tuple[int, ...]:
        """The shape of the value."""
        return shape_of(self.raw_value())

    @property
    def ndim(self) -> int:
        """The number of axes."""
        return len(self.shape)

    @property
    def size(self) -> int:
        """The number of elements."""
        return int(np.prod(self.shape, dtype=np.int64))

    @property
    def dtype(self) -> np.dtype:
        """The numpy dtype of the value."""
        return np.result_type(raw(self))

    @property
    def T(self):  # noqa: N802 - numpy's name
        """The transpose (axes reversed)."""
        return OPS["transpose"].fn(self)

    def __len__(self) -> int:
        if not self.shape:
            raise TypeError("len() of a 0-d array; use .item() to get its value")
        return self.shape[0]

    def __iter__(self):
        for i in range(len(self)):
            yield self[i]

    def __getitem__(self, index):
        return getitem(self, index)

    def item(self) -> float:
        """The value of a one-element array as a Python number.

        Inside a transform the value carries a derivative that a Python number
        cannot hold, so the conversion is refused rather than silently giving
        a zero derivative (as JAX refuses it). Outside transforms a tensor
        converts, as in PyTorch:

        >>> import adcompare as ad
        >>> ad.Tensor(2.5, requires_grad=True).item()
        2.5
        >>> ad.grad(lambda x: float(x) * x)(3.0)
        Traceback (most recent call last):
        ...
        TypeError: float() of a value that carries a derivative inside a transform ...
        """
        self._refuse_if_traced("item()")
        value = np.asarray(raw(self))
        if value.size != 1:
            raise ValueError(
                f"item(): only one-element arrays convert to a Python number; "
                f"this one has shape {value.shape}"
            )
        return value.item()

    def __float__(self) -> float:
        self._refuse_if_traced("float()")
        return float(self.item())

    def __int__(self) -> int:
        self._refuse_if_traced("int()")
        return int(self.item())

    def _refuse_if_traced(self, conversion: str) -> None:
        # Level 0 is a box the user made (``Tensor(x, requires_grad=True)``);
        # transforms make boxes of higher levels.
        if self.level > 0 and self._carries_derivative():
            raise TypeError(
                f"{conversion} of a value that carries a derivative inside a transform would "
                "drop the derivative (math.sin(x[0]) or float(x) * y silently give 0). Keep "
                "the value an array and use adcompare's functions (ad.sin(x[0])); to use it "
                "as a constant on purpose, take the value without its derivative first "
                f"({self.plain_value}), or call .item() outside the transform"
            )

    def __bool__(self) -> bool:
        return bool(raw(self))

    def reshape(self, *shape):
        """Reshape, as ``ndarray.reshape`` (a tuple or separate integers)."""
        if len(shape) == 1 and not isinstance(shape[0], (int, np.integer)):
            shape = shape[0]
        return OPS["reshape"].fn(self, shape)

    def transpose(self, *axes):
        """Permute the axes, as ``ndarray.transpose``."""
        if len(axes) == 1 and not isinstance(axes[0], (int, np.integer)):
            axes = axes[0]
        return OPS["transpose"].fn(self, axes or None)

    __hash__ = object.__hash__

    # --- numpy interop -----------------------------------------------------------
    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        if method == "__call__" and not kwargs:
            # ``array - tensor`` and ``np.exp(tensor)`` come here once per op: a ufunc's
            # name is worked out once.
            fn = NUMPY_NAMES.get(_UFUNC_NAMES.get(ufunc))
            if fn is not None:
                return fn(*inputs)
        name = _numpy_name(ufunc)
        if method == "__call__" and name in _COMPARISON_UFUNCS:
            return ufunc(*[raw(i) for i in inputs], **kwargs)
        fn = NUMPY_NAMES.get(name)
        if method == "__call__" and fn is not None and not kwargs:
            _UFUNC_NAMES[ufunc] = name
            return fn(*inputs)
        suggestion = _REDUCTIONS.get(name, name) if method == "reduce" else name
        spelled = name if name.startswith("scipy.") else f"np.{name}"
        if any(isinstance(o, Box) for o in kwargs.get("out", ())):
            raise TypeError(
                f"{spelled}(..., out=...) cannot write into an adcompare value; assign the "
                f"result instead (x = adcompare.{NUMPY_NAMES.get(suggestion, ufunc).__name__}(x))"
            )
        return _fallback(
            spelled if method == "__call__" else f"{spelled}.{method}",
            suggestion,
            lambda: getattr(ufunc, method)(*_raws(inputs), **_raws(kwargs)),
            inputs,
            tuple(kwargs) if method == "__call__" else (),
        )

    def __array_function__(self, func, types, args, kwargs):
        query = _QUERIES.get(func)
        if query is not None:  # reads the structure, or values without a derivative
            return query(*args, **kwargs)
        name = _numpy_name(func)
        fn = NUMPY_NAMES.get(name)
        unknown = () if fn is None else unknown_keywords(fn, kwargs)
        if fn is not None and not unknown:
            return fn(*args, **kwargs)
        return _fallback(
            f"np.{name}", name, lambda: func(*_raws(args), **_raws(kwargs)), args, unknown
        )


# --- numpy's questions about a box ----------------------------------------------
# np.ndim, np.shape, np.size, np.iscomplexobj, np.isrealobj and np.result_type
# (and np.min_scalar_type of an array) answer from the box's shape and dtype (one
# example's, for vmap's box) and read no value, so a recording keeps their answer
# as it keeps any shape; np.min_scalar_type of one number reads it (compile guards it).
# np.isclose, np.allclose, np.array_equal, np.iscomplex and np.isreal answer from
# the values, with derivative zero, as a comparison (x > 0) does, and like one
# they run on the plain values (raw): compile records them and guards a Python
# decision taken on their answer (if np.allclose(x, y):), vmap answers per
# example. np.real_if_close is real(x) where numpy drops the imaginary part (a
# decision the values take, guarded the same way), else x.


def _raws(values):
    if isinstance(values, dict):
        return {k: _raws(v) for k, v in values.items()}
    if isinstance(values, (list, tuple)):
        return type(values)(_raws(v) for v in values)
    return raw(values)


def _dtype(a) -> np.dtype:
    return a.dtype if isinstance(a, ArrayBox) else np.asarray(a).dtype


def _size(a, axis=None) -> int:
    shape = shape_of(a)
    axes = range(len(shape)) if axis is None else np.atleast_1d(axis)
    return int(np.prod([shape[i] for i in axes], dtype=np.int64))


def _iscomplexobj(x) -> bool:
    return issubclass(_dtype(x).type, np.complexfloating)


def _isrealobj(x) -> bool:
    return not _iscomplexobj(x)


def _result_type(*arrays_and_dtypes) -> np.dtype:
    return np.result_type(*(a.dtype if isinstance(a, ArrayBox) else a for a in arrays_and_dtypes))


def _min_scalar_type(a) -> np.dtype:
    # An array's dtype; for one number, the smallest dtype that holds it (read from it).
    return np.min_scalar_type(raw(a)) if ndim_of(a) == 0 else _dtype(a)


def _on_values(func):
    """``func`` run on the plain values of its arguments: an answer without a derivative."""

    def on_values(*args, **kwargs):
        return func(*_raws(args), **_raws(kwargs))

    return on_values


def _real_if_close(a, tol=100):
    dtype = _dtype(a)
    if not issubclass(dtype.type, np.complexfloating):
        return a
    if tol > 1:  # numpy's rule: a tolerance above 1 counts machine epsilons
        tol = np.finfo(dtype).eps * tol
    return real(a) if np.all(np.absolute(raw(imag(a))) < tol) else a


#: What each of these numpy functions does when called on a box.
_QUERIES = {
    np.ndim: ndim_of,
    np.shape: shape_of,
    np.size: _size,
    np.iscomplexobj: _iscomplexobj,
    np.isrealobj: _isrealobj,
    np.result_type: _result_type,
    np.min_scalar_type: _min_scalar_type,
    np.real_if_close: _real_if_close,
    **{f: _on_values(f) for f in (np.isclose, np.allclose, np.array_equal)},
    **{f: _on_values(f) for f in (np.iscomplex, np.isreal)},
}


#: numpy's name of each ufunc with an op that was called on a box so far.
_UFUNC_NAMES: dict = {}


def _boxes(values) -> list:
    if isinstance(values, (list, tuple)):
        return [box for v in values for box in _boxes(v)]
    return [values] if isinstance(values, ArrayBox) else []


def _carries(values) -> bool:
    if isinstance(values, (list, tuple)):
        return any(_carries(v) for v in values)
    return isinstance(values, ArrayBox) and values._carries_derivative()


def _fallback(call: str, name: str, compute, inputs, keywords=()):
    """Run a numpy function on plain values if no derivative would be lost."""
    if not _carries(inputs):
        return compute()
    if name in NUMPY_NAMES and keywords:
        spelled = ", ".join(f"{k}=" for k in keywords)
        advice = dict.fromkeys(_KEYWORD_ADVICE.get(k, f"leave out {k}=") for k in keywords)
        hint = f"adcompare.{NUMPY_NAMES[name].__name__} takes no {spelled}; " + "; ".join(advice)
    elif name in NUMPY_NAMES:
        hint = f"use adcompare.{NUMPY_NAMES[name].__name__} (called this way it is not supported)"
    else:
        plain = next(v for v in _boxes(inputs) if v._carries_derivative()).plain_value
        hint = library_alternative() or (
            "adcompare has no derivative rule for it; build it from adcompare ops, "
            f"or take the value without its derivative first if you mean to drop it ({plain})"
        )
    raise TypeError(f"{call} on a value that carries a derivative would drop it: {hint}")


#: What to do instead of numpy's keywords that adcompare's functions do not take.
_KEYWORD_ADVICE = {
    "out": "assign the result (y = adcompare.f(x)) instead of writing into out=",
    "where": "choose the elements with adcompare.where(mask, ...) instead of where=",
    "dtype": "convert the argument with .astype(dtype) instead of dtype=",
    "initial": "combine the result with the initial value (adcompare.maximum, +) instead",
}


def unknown_keywords(fn, keywords) -> tuple[str, ...]:
    """The keywords in ``keywords`` that adcompare's function ``fn`` does not take.

    >>> from adcompare.ops import OPS, COMPOSITES
    >>> unknown_keywords(OPS["max"].fn, ["axis", "initial"])
    ('initial',)
    >>> unknown_keywords(COMPOSITES["median"].fn, ["axis", "out"])
    ('out',)
    """
    if not keywords:  # the common call: no signature to read
        return ()
    op = getattr(fn, "op", None)
    names = _keywords_taken(fn if op is None else op.prepare)
    return () if names is None else tuple(k for k in keywords if k not in names)


@functools.cache
def _keywords_taken(takes) -> frozenset | None:
    """The keyword names ``takes`` accepts (``None``: any, it has ``**kwargs``), read
    once per function: ``inspect.signature`` costs about 12 µs a call."""
    if takes is None:
        return frozenset()
    parameters = inspect.signature(takes).parameters.values()
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters):
        return None
    return frozenset(p.name for p in parameters)


def library_alternative() -> str:
    """For a conversion to a numpy array inside a scipy function that adcompare has too
    (``scipy.special.logsumexp``), or inside ``np.r_`` or ``np.c_``: a sentence pointing
    to adcompare's; else ``""``.

    >>> library_alternative()
    ''
    """
    frame, called = sys._getframe(1), None
    while frame is not None:
        module = frame.f_globals.get("__name__", "")
        joiner = frame.f_locals.get("self") if module.startswith("numpy.lib.") else None
        if joiner is np.r_ or joiner is np.c_:
            name = "r_" if joiner is np.r_ else "c_"
            return (
                f"np.{name} converts its items to numpy arrays, which would drop the "
                f"derivative; use adcompare.{name}[...] instead"
            )
        if module.startswith("scipy.stats"):
            found = _stats_alternative(frame)
            if found:
                return found
        elif module.startswith("scipy."):
            name = frame.f_code.co_name
            if name == "wrapper":  # scipy.linalg's batching decorator, around its function f
                name = getattr(frame.f_locals.get("f"), "__name__", name)
            if name in public_functions():
                called = name  # the outermost: scipy's own helpers run inside it
        frame = frame.f_back
    if called is None:
        return ""
    return (
        f"scipy's {called} converts its argument to a numpy array, which would "
        f"drop the derivative; call adcompare.{called} instead"
    )


def _stats_alternative(frame) -> str:
    """For a frame inside a method of a ``scipy.stats`` distribution (``norm.cdf``): the
    sentence naming ``adcompare.stats``' function of the same name, or what it has."""
    method, generator = frame.f_code.co_name, type(frame.f_locals.get("self")).__name__
    if method.startswith("_") or not generator.endswith("_gen"):
        return ""  # a helper of the method (the caller's frame is read next)
    distribution = generator.removesuffix("_gen")
    call = f"scipy.stats.{distribution}.{method}"
    if distribution not in stats.__all__:
        return (
            f"{call} converts its arguments to numpy arrays, which would drop the "
            f"derivative; adcompare.stats has {', '.join(stats.__all__)}: build "
            f"{distribution}'s from adcompare's functions"
        )
    if hasattr(getattr(stats, distribution), method):
        return (
            f"{call} converts its arguments to numpy arrays, which would drop the "
            f"derivative; call adcompare.stats.{distribution}.{method} instead (the same "
            "signature)"
        )
    offered = ", ".join(sorted(vars(getattr(stats, distribution))))
    return (
        f"{call} converts its arguments to numpy arrays, which would drop the derivative; "
        f"adcompare.stats.{distribution} has {offered}"
    )


def _install() -> None:
    for op in OPS.values():
        _install_operators(op)
        if op.method and not hasattr(ArrayBox, op.method):
            setattr(ArrayBox, op.method, op.fn)
    ArrayBox.__pos__ = lambda self: self
    for name, compare in _COMPARISONS.items():
        setattr(ArrayBox, name, lambda self, other, f=compare: f(raw(self), raw(other)))
    for composite in COMPOSITES.values():
        if composite.method and not hasattr(ArrayBox, composite.method):
            setattr(ArrayBox, composite.method, composite.fn)


def _install_operators(op) -> None:
    """Give boxes the Python operators the record names (``__add__``, ``__radd__``, ``__neg__``)."""
    if len(op.operators) == 1:
        setattr(ArrayBox, op.operators[0], lambda self, fn=op.fn: fn(self))
        return
    if not op.operators:
        return
    name, rname = op.operators
    if op.prepare is None:  # no static parameters to normalise: dispatch directly
        # ``apply``'s choice of engine, written out for two arguments one of which is
        # this box: the box of the higher level, the first one on a tie.

        def forward(self, other, op=op):
            if isinstance(other, Box) and other.level > self.level:
                return other.apply_op(op, other.level, (self, other), {})
            return self.apply_op(op, self.level, (self, other), {})

        def reflected(self, other, op=op):
            if isinstance(other, Box) and other.level >= self.level:
                return other.apply_op(op, other.level, (other, self), {})
            return self.apply_op(op, self.level, (other, self), {})

    else:

        def forward(self, other, fn=op.fn):
            return fn(self, other)

        def reflected(self, other, fn=op.fn):
            return fn(other, self)

    forward.__name__, reflected.__name__ = name, rname
    setattr(ArrayBox, name, forward)
    setattr(ArrayBox, rname, reflected)


_install()
