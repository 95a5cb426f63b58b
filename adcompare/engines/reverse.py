"""The reverse engine: a tape of records and the PyTorch-like ``Tensor``.

Every op on a tensor that requires grad appends a record (a ``Node``) that
holds the op, references to its inputs' records, and only the values read
by the VJP rules of the inputs that need a gradient (``Hints.vjp_reads``:
the record of ``100.0 * q`` keeps ``100.0``, not ``q``). Records are
numbered in execution order, so the tape is a Wengert list: ``backward``
collects the records reachable from the output, walks them in reverse order
of their numbers (a valid reverse topological order), and never recurses,
so a chain of a million ops is fine.

The tape is not a global list: each record is owned by the tensors that
depend on it, so a graph nobody refers to any more is freed by reference
counting. Nodes refer to their inputs, never back to their outputs (a
retained tensor is held by a weak reference), so there are no cycles.

In-place writes are counted per memory, as in PyTorch: a tensor and its views
(a basic slice, a reshape, a transpose, ``detach``) share one version counter,
and a record notes the version of each value it keeps. A write through any of
them after a kept value was saved makes ``backward`` raise; a write to a value
no record kept is allowed. A write that is recorded (grad mode, a tensor that
requires grad) also updates the graph of every other tensor on that memory, so
a base sees a write through its view and a view sees a write on its base.
"""

from __future__ import annotations

import functools
import itertools
import operator
import threading
import weakref
from contextlib import nullcontext

import numpy as np

from adcompare.engines.box import ArrayBox
from adcompare.engines.forward import in_dtype
from adcompare.ops import OpDef, add, assign_at, where
from adcompare.ops.registry import (
    Box,
    apply,
    apply_plain,
    mixed_levels_error,
    new_level,
    raw,
    shape_of,
    unbroadcast,
)
from adcompare.runtime import cost

__all__ = [
    "AccumulateGrad",
    "Node",
    "Tensor",
    "autograd_grad",
    "enable_grad",
    "is_grad_enabled",
    "lift",
    "no_grad",
    "pullback",
]


class _GradState(threading.local):
    enabled = True  # every thread starts with grad mode on


_state = _GradState()
_SEQUENCE = itertools.count()

FREED_GRAPH = (
    "backward through a graph that was already freed: the values saved for the "
    "backward pass were released by an earlier backward call. Pass retain_graph=True "
    "to the earlier backward call if you need to backward through the graph again, "
    "or run the forward computation again."
)


# --- grad mode -------------------------------------------------------------------


def is_grad_enabled() -> bool:
    """Whether operations on tensors are being recorded (thread-local).

    >>> import adcompare as ad
    >>> with ad.no_grad():
    ...     ad.is_grad_enabled()
    False
    """
    return _state.enabled


class _GradMode:
    """Sets grad mode inside a ``with`` block or a decorated function."""

    enabled = True

    def __init__(self):
        self._previous: list[bool] = []

    def __enter__(self):
        self._previous.append(is_grad_enabled())
        _state.enabled = self.enabled
        return self

    def __exit__(self, *exc_info):
        _state.enabled = self._previous.pop()
        return False

    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapped(*args, **kwargs):
            with type(self)():
                return fn(*args, **kwargs)

        return wrapped


class no_grad(_GradMode):  # noqa: N801 - PyTorch's name
    """Do not record operations: results do not require grad.

    Usable as a context manager and as a decorator; thread-local.

    >>> import adcompare as ad
    >>> w = ad.Tensor([1.0], requires_grad=True)
    >>> with ad.no_grad():
    ...     y = w * 2
    >>> y.requires_grad
    False
    """

    enabled = False


class enable_grad(_GradMode):  # noqa: N801 - PyTorch's name
    """Record operations again, inside a ``no_grad`` block.

    >>> import adcompare as ad
    >>> with ad.no_grad(), ad.enable_grad():
    ...     ad.is_grad_enabled()
    True
    """

    enabled = True


# --- the tape's records ---------------------------------------------------------


class _Placeholder:
    """Stands in for a value the tape did not keep: only its shape is known."""

    __slots__ = ("shape",)

    def __init__(self, shape):
        self.shape = shape

    @property
    def ndim(self) -> int:
        return len(self.shape)


class Node:
    """One record on the tape: an op application and what its VJP needs.

    ``next_functions`` lists the records of the inputs (``None`` for inputs
    that need no gradient), as in PyTorch; ``saved_bytes`` is what this
    record keeps alive for the backward pass. A value it did not keep is a
    placeholder that knows only its shape.
    """

    __slots__ = (
        "__weakref__",
        "freed",
        "in_shapes",
        "level",
        "next",
        "op",
        "out_shape",
        "params",
        "retained",
        "saved_args",
        "saved_out",
        "seq",
        "versions",
    )

    def __init__(self, op: OpDef, params, next_nodes, args, out, versions, level):
        # Keep only what the rules of the inputs that need a gradient read; the
        # others become placeholders that know their shape. ``versions`` lists the
        # Tensor arguments' (version counter, version now, position): only the
        # kept ones are checked. ``in_shapes`` is None when the kept values say.
        if op.hints.vjp_reads is None:  # what kept() returns then, without building its key
            keep_args, keep_out = op.keeps
        else:
            keep_args, keep_out = op.kept(tuple([n is not None for n in next_nodes]))
        if keep_args is True:
            self.saved_args = args
            self.in_shapes = None
            self.versions = versions
        elif keep_args is False:
            self.saved_args = None
            self.in_shapes = tuple([shape_of(a) for a in args])
            self.versions = []
        else:
            self.saved_args = tuple(
                [a if keep else _placeholder(shape_of(a)) for a, keep in zip(args, keep_args)]
            )
            self.in_shapes = None
            self.versions = [v for v in versions if keep_args[v[2]]]
        self.saved_out = out if keep_out else None
        self.out_shape = out.shape if type(out) is np.ndarray else shape_of(out)
        self.op = op
        self.params = params
        self.next = next_nodes
        self.seq = next(_SEQUENCE)
        self.level = level
        self.retained = None
        self.freed = False

    @property
    def name(self) -> str:
        """PyTorch-style name, e.g. ``MulBackward``."""
        return f"{self.op.label}Backward"

    @property
    def next_functions(self) -> tuple:
        """The input records as ``(node, 0)`` pairs, PyTorch's layout."""
        return tuple((n, 0) for n in self.next)

    @property
    def saved_values(self) -> tuple:
        """The plain values this record keeps for its VJP (empty once freed)."""
        if self.freed:
            return ()
        values = [*(self.saved_args or ()), self.saved_out]
        return tuple(v for v in values if v is not None and not isinstance(v, _Placeholder))

    @property
    def saved_bytes(self) -> int:
        """Bytes of the arrays this record keeps alive, each array counted once."""
        return _nbytes(self.saved_values)

    def free(self) -> None:
        """Release the saved values (done by a backward sweep)."""
        if cost._ACTIVE:
            cost.record_release(self.saved_bytes)
        self.saved_args = None
        self.saved_out = None
        self.freed = True

    def __repr__(self) -> str:
        return f"<{self.name}>"


class AccumulateGrad:
    """The record of a leaf tensor: gradients arriving here go to ``.grad``."""

    __slots__ = ("__weakref__", "variable")
    seq = -1
    next = ()
    next_functions = ()
    name = "AccumulateGrad"
    freed = False

    def __init__(self, variable: Tensor):
        self.variable = variable

    def __repr__(self) -> str:
        return "<AccumulateGrad>"


def _nbytes(values) -> int:
    seen = set()
    total = 0
    for v in values:
        v = raw(v)
        if id(v) in seen:
            continue
        seen.add(id(v))
        total += int(getattr(v, "nbytes", np.asarray(v).nbytes))
    return total


# --- Tensor ------------------------------------------------------------------------


class Tensor(ArrayBox):
    """An array whose operations are recorded for reverse-mode differentiation.

    >>> import adcompare as ad
    >>> x = ad.Tensor(2.0, requires_grad=True)
    >>> y = ad.Tensor(3.0, requires_grad=True)
    >>> f = 3 * x**2 + x * y + 5 * y**2
    >>> f
    tensor(63., grad_fn=<AddBackward>)
    >>> f.backward()
    >>> x.grad, y.grad
    (tensor(15.), tensor(32.))
    """

    __slots__ = (
        "__weakref__",
        "_accumulator",
        "_data",
        "_grad",
        "_requires_grad",
        "_version",
        "grad_fn",
    )

    def __init__(self, data, requires_grad: bool = False, *, dtype=None):
        if isinstance(data, Tensor):
            data = data._data
        if isinstance(data, Box):
            level = new_level()
        else:
            data = np.array(data, dtype=dtype)
            level = 0
        self._data = data
        self._level = level
        self.grad_fn = None
        self._grad = None
        self._version = [0]
        self._accumulator = None
        self._requires_grad = False
        if requires_grad:
            self.requires_grad = True

    @classmethod
    def _wrap(cls, data, level, grad_fn=None, requires_grad=False, version=None):
        self = object.__new__(cls)
        self._data = data
        self._level = level
        self.grad_fn = grad_fn
        self._requires_grad = requires_grad
        self._grad = None
        self._version = version if version is not None else [0]
        self._accumulator = None
        return self

    # --- the PyTorch-like surface ------------------------------------------------
    @property
    def requires_grad(self) -> bool:
        """Whether gradients flow to or through this tensor (contagious)."""
        return self._requires_grad

    @requires_grad.setter
    def requires_grad(self, flag: bool) -> None:
        if not self.is_leaf:
            raise RuntimeError(
                "requires_grad can only be changed on leaf tensors; this one is computed "
                f"by {self.grad_fn.name}. Use .detach() to get a leaf copy"
            )
        if flag and not isinstance(self._data, Box):
            kind = np.result_type(self._data)
            if np.issubdtype(kind, np.complexfloating):
                raise TypeError("requires_grad needs a real floating dtype, not complex")
            if not np.issubdtype(kind, np.floating):
                # Integer inputs in differentiable positions are promoted.
                self._data = self._data.astype(np.float64)
        self._requires_grad = bool(flag)

    def requires_grad_(self, flag: bool = True) -> Tensor:
        """Set ``requires_grad`` in place and return the tensor."""
        self.requires_grad = flag
        return self

    @property
    def is_leaf(self) -> bool:
        """True for tensors not computed by a recorded op."""
        return self.grad_fn is None

    @property
    def data(self):
        """The underlying array (no graph attached)."""
        return self._data

    @data.setter
    def data(self, value) -> None:
        self._data = np.asarray(value)

    @property
    def grad(self) -> Tensor | None:
        """The accumulated gradient (leaves, and tensors that called ``retain_grad``)."""
        return self._grad

    @grad.setter
    def grad(self, value) -> None:
        if value is not None:
            value = value if isinstance(value, Tensor) else Tensor(value)
            if value.shape != self.shape:
                raise ValueError(
                    f"grad of shape {value.shape} assigned to a tensor of shape {self.shape}"
                )
        self._grad = value

    def numpy(self) -> np.ndarray:
        """The value as a numpy array; refuses if that would drop a derivative."""
        if self._requires_grad:
            raise RuntimeError(
                "numpy() on a tensor that requires grad would silently drop its derivative; "
                "call .detach().numpy() if that is what you want"
            )
        return np.asarray(raw(self._data))

    def __array__(self, dtype=None, copy=None):
        value = self.numpy()
        return value if dtype is None else value.astype(dtype)

    def detach(self) -> Tensor:
        """A tensor sharing this one's data, outside the graph."""
        detached = Tensor._wrap(self._data, self._level, version=self._version)
        _note_alias(self, detached)
        return detached

    def clone(self) -> Tensor:
        """A copy with its own memory that stays in the graph."""
        return add(self, 0.0)

    def retain_grad(self) -> None:
        """Keep ``.grad`` for this non-leaf tensor after ``backward``."""
        if not self._requires_grad:
            raise RuntimeError("retain_grad() on a tensor that does not require grad")
        if self.grad_fn is not None:
            self.grad_fn.retained = weakref.ref(self)

    def backward(self, gradient=None, retain_graph: bool | None = None, create_graph: bool = False):
        """Accumulate the gradient of this tensor into the leaves' ``.grad``.

        ``gradient`` is the cotangent (needed unless the tensor has one
        element). The graph's saved values are freed afterwards unless
        ``retain_graph`` (default: ``create_graph``). With ``create_graph``
        the backward sweep is itself recorded, so ``.grad`` can be
        differentiated again.
        """
        if not self._requires_grad:
            raise RuntimeError(
                "backward() on a tensor that does not require grad and has no grad_fn: "
                "nothing leads back to an input. Create the inputs with requires_grad=True, "
                "and check the computation did not run under no_grad()"
            )
        cotangent = _cotangent(self, gradient, create_graph)
        if retain_graph is None:
            retain_graph = create_graph
        run_backward(
            [self._node()], [cotangent], retain_graph=retain_graph, create_graph=create_graph
        )

    def __repr__(self) -> str:
        data = raw(self._data)
        body = np.array2string(np.asarray(data), separator=", ", prefix="tensor(")
        extra = ""
        if self.grad_fn is not None:
            extra = f", grad_fn=<{self.grad_fn.name}>"
        elif self._requires_grad:
            extra = ", requires_grad=True"
        if np.result_type(data) not in (np.float64, np.int64, np.bool_):
            extra = f", dtype={np.result_type(data)}" + extra
        return f"tensor({body}{extra})"

    # --- engine ------------------------------------------------------------------------
    def _raw_value(self):
        return self._data

    def _carries_derivative(self) -> bool:
        return self._requires_grad

    def _node(self):
        """This tensor's record: its ``grad_fn``, or a leaf's accumulator."""
        if self.grad_fn is not None:
            return self.grad_fn
        acc = self._accumulator() if self._accumulator is not None else None
        if acc is None:
            acc = AccumulateGrad(self)
            self._accumulator = weakref.ref(acc)
        return acc

    def _accumulate(self, gradient) -> None:
        if not isinstance(gradient, Tensor):
            if not isinstance(gradient, Box):
                gradient = np.asarray(gradient)
                if gradient.dtype.kind == "c" and self.dtype.kind != "c":
                    gradient = gradient.real  # a real input's cotangent: the real part
                if gradient.dtype != self.dtype or not gradient.flags.writeable:
                    gradient = gradient.astype(self.dtype)
            gradient = Tensor._wrap(gradient, self._level)
        self._grad = gradient if self._grad is None else add(self._grad, gradient)

    def _apply(self, op: OpDef, level: int, args: tuple, params: dict):
        # One pass over the arguments collects everything a record needs: this
        # runs once per op, so it avoids helper calls and generators.
        values = []
        next_nodes = []
        versions = []  # (version counter, version now, position) of each Tensor argument
        record = False
        nested = False
        for position, a in enumerate(args):
            if isinstance(a, Tensor) and a._level == level:
                data = a._data
                if a._requires_grad:
                    record = True
                    next_nodes.append(a.grad_fn or a._node())
                else:
                    next_nodes.append(None)
                counter = a._version
                versions.append((counter, counter[0], position))
                if type(data) is not np.ndarray and isinstance(data, Box):
                    nested = True
            else:
                data = a
                if isinstance(a, Box):
                    if a._level == level:
                        raise mixed_levels_error(op, "Tensor", a)
                    nested = True
                next_nodes.append(None)
            values.append(data)
        values = tuple(values)
        out = apply(op, values, params) if nested else apply_plain(op, values, params)
        # A view (a basic slice, a reshape, a transpose) shares its input's memory,
        # so it shares its version counter too. Only views have a base.
        if type(out) is np.ndarray and out.base is not None:
            source = _tensor_of_memory(out.base, args, level)
            if source is not None:
                recording = record and _state.enabled
                return _view(source, op, params, next_nodes, values, out, versions, recording)
        if not (record and _state.enabled):
            return Tensor._wrap(out, level)
        node = Node(op, params, tuple(next_nodes), values, out, versions, level)
        version = [0]
        if node.saved_out is not None:
            node.versions.append((version, 0, -1))
        if cost._ACTIVE:
            cost.record_reverse(op.name, out, node.saved_bytes)
        return Tensor._wrap(out, level, node, True, version)

    # --- in-place operations -------------------------------------------------------------
    def _inplace(self, compute, other):
        grad_mode = is_grad_enabled()
        if grad_mode and self.is_leaf and self._requires_grad:
            raise RuntimeError(
                "a leaf tensor that requires grad is used in an in-place operation; "
                "update it inside `with adcompare.no_grad():` (as optimizers do), or "
                "write x = x + ... to make a new tensor"
            )
        recording = grad_mode and (
            self._requires_grad or (isinstance(other, Tensor) and other._requires_grad)
        )
        aliases = _other_aliases(self) if recording else []
        for alias in aliases:
            if alias.is_leaf and alias._requires_grad:
                raise RuntimeError(
                    "an in-place operation on a view of a leaf tensor that requires grad "
                    "(or on a tensor sharing its memory) would change the leaf; update it "
                    "inside `with adcompare.no_grad():` (as optimizers do), or write "
                    "v = v * ... to make a new tensor"
                )
        # The op may need this tensor's old value: give it a copy that will not change.
        source = (
            Tensor._wrap(np.array(self._data), self._level, self.grad_fn, self._requires_grad)
            if recording
            else self
        )
        result = compute(source, other)
        new = raw(result) if not isinstance(result, Tensor) else result._data
        if shape_of(new) != self.shape:
            raise ValueError(
                f"in-place operation would change the shape from {self.shape} to "
                f"{shape_of(new)}; use an out-of-place operation"
            )
        if isinstance(self._data, np.ndarray) and self._data.flags.writeable:
            np.copyto(self._data, new, casting="same_kind")
            self._version[0] += 1  # seen by every tensor sharing this memory
        else:
            # New memory: what was saved from the old memory is still intact, and
            # tensors that shared the old memory keep their counter and graph.
            self._data = np.array(new)
            self._version = [self._version[0] + 1]
            aliases = []
        if recording:
            self.grad_fn = result.grad_fn
            self._requires_grad = True
            if aliases:
                _follow_write(self, aliases)
        return self

    def __iadd__(self, other):
        return self._inplace(add, other)

    def __isub__(self, other):
        return self._inplace(lambda a, b: a - b, other)

    def __imul__(self, other):
        return self._inplace(lambda a, b: a * b, other)

    def __itruediv__(self, other):
        return self._inplace(lambda a, b: a / b, other)

    def __setitem__(self, index, value):
        self._inplace(lambda a, v: assign_at(a, index, v), value)


# --- tensors that share memory ----------------------------------------------------------
#
# A version counter is a list: ``[version]``, and once a view or a detached tensor
# shares the memory, ``[version, aliases]`` with weak references to every tensor
# made on it. The aliases are only read by in-place operations that are recorded.

#: The alias list is pruned of dead references each time its length reaches a
#: power of two from here on, so a loop that takes views keeps it short.
PRUNE_ALIASES_FROM = 32


def _tensor_of_memory(base, args: tuple, level: int) -> Tensor | None:
    """The Tensor argument whose memory is ``base``, if any.

    numpy gives a view of a view the first array that owns the memory as its
    ``base``, so an argument's memory is its own array or that array's base.
    """
    for a in args:
        if isinstance(a, Tensor) and a._level == level:
            data = a._data
            if data is base or (type(data) is np.ndarray and data.base is base):
                return a
    return None


def _view(source: Tensor, op, params, next_nodes, values, out, versions, recording) -> Tensor:
    """``Tensor._apply``'s result when ``out`` is a view of ``source``'s memory.

    As the common path of ``_apply`` (kept inline there, as it runs once per
    op), but the result shares ``source``'s version counter and is noted as
    one of its aliases.
    """
    counter = source._version
    level = source._level
    if not recording:
        view = Tensor._wrap(out, level, version=counter)
    else:
        node = Node(op, params, tuple(next_nodes), values, out, versions, level)
        if node.saved_out is not None:
            node.versions.append((counter, counter[0], -1))
        if cost._ACTIVE:
            cost.record_reverse(op.name, out, node.saved_bytes)
        view = Tensor._wrap(out, level, node, True, counter)
    _note_alias(source, view)
    return view


def _note_alias(source: Tensor, alias: Tensor) -> None:
    """Remember that ``alias`` shares ``source``'s memory (and version counter)."""
    counter = source._version
    if len(counter) == 1:
        counter.append([weakref.ref(source)])
    aliases = counter[1]
    size = len(aliases)
    if size >= PRUNE_ALIASES_FROM and size & (size - 1) == 0:
        aliases[:] = [ref for ref in aliases if ref() is not None]
    aliases.append(weakref.ref(alias))


def _other_aliases(tensor: Tensor) -> list:
    """The live tensors other than ``tensor`` made on its memory."""
    counter = tensor._version
    if len(counter) == 1:
        return []
    others = [ref() for ref in counter[1]]
    return [a for a in others if a is not None and a is not tensor]


def _addresses(array: np.ndarray) -> np.ndarray:
    """The memory address of each element of ``array``, in its shape."""
    addresses = np.full(array.shape, array.__array_interface__["data"][0], dtype=np.intp)
    for axis, (size, stride) in enumerate(zip(array.shape, array.strides)):
        step = np.arange(size, dtype=np.intp) * stride
        addresses += step.reshape((size,) + (1,) * (array.ndim - axis - 1))
    return addresses


def _follow_write(written: Tensor, aliases: list) -> None:
    """Give each alias that overlaps ``written`` a graph that reads the write.

    After a recorded in-place write, an alias's memory holds some of the new
    values but its ``grad_fn`` still describes the old ones. Its graph becomes
    ``where(overlap, written's new elements, its old graph)``: the elements are
    matched by address, so slices, transposes and reshapes of any depth are
    followed without knowing how the alias was made (PyTorch keeps a chain of
    view functions instead).
    """
    from adcompare.ops import getitem, reshape

    addresses = _addresses(written._data).ravel()
    if addresses.size == 0:
        return
    order = np.argsort(addresses, kind="stable")
    ordered = addresses[order]
    new = Tensor._wrap(written._data, written._level, written.grad_fn, True, written._version)
    flat = reshape(new, (-1,))
    for alias in aliases:
        if type(alias._data) is not np.ndarray or alias._data.dtype != written._data.dtype:
            continue
        wanted = _addresses(alias._data)
        at = np.minimum(np.searchsorted(ordered, wanted), ordered.size - 1)
        overlap = ordered[at] == wanted
        if not overlap.any():
            continue
        elements = getitem(flat, index=np.where(overlap, order[at], 0))
        old = Tensor._wrap(
            alias._data, alias._level, alias.grad_fn, alias._requires_grad, alias._version
        )
        alias.grad_fn = where(overlap, elements, old).grad_fn
        alias._requires_grad = True


def _cotangent(tensor: Tensor, gradient, create_graph: bool):
    shape = tensor.shape
    if gradient is None:
        if tensor.size != 1:
            raise RuntimeError(
                f"backward() without a gradient works only for a tensor with one element; "
                f"this one has shape {shape}. Pass gradient=<array of shape {shape}> "
                "(the weights of the outputs, e.g. ones), or reduce it to a scalar first"
            )
        return np.ones(shape, dtype=tensor.dtype)
    if isinstance(gradient, Tensor):
        value = gradient if create_graph else gradient._data
    else:
        value = np.asarray(gradient, dtype=tensor.dtype)
    if shape_of(value) != shape:
        raise ValueError(
            f"backward(): gradient has shape {shape_of(value)} but the tensor has shape "
            f"{shape}; pass a gradient of shape {shape}"
        )
    return value


# --- the backward sweep -------------------------------------------------------------


_SEQ_OF = operator.attrgetter("seq")


def _reachable(roots) -> list:
    """The records reachable from ``roots``, latest first (reverse tape order)."""
    seen = set()
    order = []
    stack = [r for r in roots if r is not None]
    while stack:
        node = stack.pop()
        if node in seen:
            continue
        seen.add(node)
        order.append(node)
        stack.extend([n for n in node.next if n is not None and n not in seen])
    order.sort(key=_SEQ_OF, reverse=True)
    return order


def _raise_modified(node: Node, version: int, saved: int, position: int) -> None:
    value = "its output" if position < 0 else f"its input {position}"
    raise RuntimeError(
        f"one of the values needed for gradient computation ({value} of {node.name}) "
        "has been modified by an in-place operation, directly or through a tensor "
        f"sharing its memory (a slice, reshape, transpose or detach): it is at version "
        f"{version}, saved at version {saved}. Use an out-of-place operation "
        "(x = x + 1 instead of x += 1), modify a .clone() instead, or run the forward "
        "computation again after the write"
    )


@functools.lru_cache(maxsize=1024)
def _placeholder(shape: tuple) -> _Placeholder:
    """The placeholder for a value of this shape (read-only, so shared)."""
    return _Placeholder(shape)


@functools.lru_cache(maxsize=1024)
def _placeholders(shapes: tuple) -> tuple:
    """Placeholders for values of these shapes."""
    return tuple(_placeholder(shape) for shape in shapes)


def _rule_inputs(node: Node, create_graph: bool):
    """The values a node's VJP rules receive: saved ones, or placeholders."""
    if node.saved_args is not None:
        args = node.saved_args
    else:
        args = _placeholders(node.in_shapes)
    out = node.saved_out if node.saved_out is not None else _placeholder(node.out_shape)
    if create_graph:
        # Rebuild tensors in the graph so the rules' own ops are recorded.
        args = tuple(
            _as_graph_tensor(a, n, node.level) if not isinstance(a, _Placeholder) else a
            for a, n in zip(args, node.next)
        )
        if not isinstance(out, _Placeholder):
            out = Tensor._wrap(out, node.level, node, True)
    return args, out


def _as_graph_tensor(value, source, level):
    if source is None:
        return value
    if isinstance(source, AccumulateGrad):
        return source.variable
    return Tensor._wrap(value, level, source, True)


#: Below this many elements a fresh sum is cheaper than adding in place (numpy's
#: per-call overhead dominates), so only larger cotangent sums are owned.
IN_PLACE_FROM = 1 << 12


def _worth_owning(value) -> bool:
    """Whether later contributions should be added into ``value`` in place."""
    return type(value) is np.ndarray and value.size >= IN_PLACE_FROM


def _hand_out(gradient, handed: set):
    """``gradient``, or a copy if the same array was handed out before in this sweep."""
    if type(gradient) is not np.ndarray:
        return gradient
    if id(gradient) in handed:
        return gradient.copy()
    handed.add(id(gradient))
    return gradient


def run_backward(roots, cotangents, *, retain_graph: bool, create_graph: bool, targets=None):
    """Sweep the tape backwards from ``roots`` seeded with ``cotangents``.

    Without ``targets``, gradients are accumulated into leaves' ``.grad``
    (and retained non-leaves'); with ``targets`` (a set of records) the
    gradients arriving at them are returned in a dict and nothing is
    accumulated.
    """
    if cost._ACTIVE:
        cost.record_sweep()
    grads = {}
    for node, cotangent in zip(roots, cotangents):
        if create_graph and not isinstance(cotangent, Tensor):
            cotangent = Tensor._wrap(cotangent, node_level(node))
        grads[node] = cotangent if node not in grads else add(grads[node], cotangent)
    captured = {}
    # Cotangent sums this sweep allocated, by id: nothing else refers to them, so
    # later contributions may be added in place. An id leaves the set when its
    # array leaves ``grads`` (handed to rules, it may then be shared).
    owned = set()
    # Arrays handed out as gradients, by id: a rule may pass one cotangent to two
    # inputs (add does), and each gradient handed out gets memory of its own.
    handed = set()
    with enable_grad() if create_graph else nullcontext():
        for node in _reachable(grads):
            g = grads.pop(node, None)
            if g is None:
                continue
            owned.discard(id(g))
            if targets is not None and node in targets:
                captured[node] = _hand_out(g, handed)
            if isinstance(node, AccumulateGrad):
                if targets is None:
                    node.variable._accumulate(_hand_out(g, handed))
                continue
            if node.freed:
                raise RuntimeError(FREED_GRAPH)
            for counter, saved, position in node.versions:
                if counter[0] != saved:
                    _raise_modified(node, counter[0], saved, position)
            if targets is None and node.retained is not None:
                kept = node.retained()
                if kept is not None:
                    kept._accumulate(_hand_out(g, handed))
            args, out = _rule_inputs(node, create_graph)
            op = node.op
            params = node.params
            rules = op.vjp if op.nargs is not None else None
            in_shapes = node.in_shapes
            elementwise = op.elementwise
            accumulate = op.hints.accumulate_vjp
            for i, nxt in enumerate(node.next):
                if nxt is None:
                    continue
                previous = grads.get(nxt)
                if (
                    accumulate is not None
                    and id(previous) in owned
                    and type(g) is np.ndarray
                    and g.dtype == previous.dtype
                ):
                    accumulate(previous, out, *args, g, **params)
                    continue
                rule = rules[i] if rules is not None else op.vjp_at(i)
                contribution = rule(out, *args, g, **params)
                if elementwise:
                    shape = in_shapes[i] if in_shapes is not None else shape_of(args[i])
                    if shape_of(contribution) != shape:
                        contribution = unbroadcast(contribution, shape)
                if previous is None:
                    grads[nxt] = contribution
                    if accumulate is not None and _worth_owning(contribution):
                        owned.add(id(contribution))  # a fresh scatter into zeros
                elif (
                    id(previous) in owned
                    and type(contribution) is np.ndarray
                    and contribution.shape == previous.shape
                    and contribution.dtype == previous.dtype
                ):
                    previous += contribution
                else:
                    owned.discard(id(previous))
                    grads[nxt] = total = add(previous, contribution)
                    if _worth_owning(total):
                        owned.add(id(total))
            if not retain_graph:
                node.free()
    return captured


def node_level(node) -> int:
    """The nesting level of a record's tensors."""
    return node.variable._level if isinstance(node, AccumulateGrad) else node.level


def lift(values) -> list[Tensor]:
    """Leaf tensors over ``values`` at one fresh nesting level: a new tape.

    The values may be boxes of lower levels (a ``Tensor`` of an outer tape):
    the new tape's sweep then records its own rules on theirs. This is the
    hook that lets a transform re-run a function under a tape of its own.

    >>> import adcompare as ad
    >>> (x,) = lift([3.0])
    >>> y = x * x
    >>> print(pullback([y], [1.0], [x])[0])
    6.0
    """
    level = new_level()
    return [Tensor._wrap(_as_leaf_value(v), level, requires_grad=True) for v in values]


def _as_leaf_value(value):
    if isinstance(value, Box):
        return value
    value = np.asarray(value)
    return value if np.issubdtype(value.dtype, np.floating) else value.astype(np.float64)


def pullback(outputs, cotangents, inputs) -> list:
    """Cotangents of ``inputs`` after one sweep from ``outputs`` seeded with ``cotangents``.

    The sweep frees the tape as it goes. Cotangents are used as they are
    (tensors of an outer tape stay in its graph); an input the outputs do
    not reach gets zeros; outputs that are not on a tape are skipped. See
    :func:`lift` for an example.
    """
    level = inputs[0]._level if inputs else None
    roots, seeds = [], []
    for out, cotangent in zip(outputs, cotangents):
        if isinstance(out, Tensor) and out._level == level and out._requires_grad:
            roots.append(out._node())
            seeds.append(cotangent)
    targets = {t._node() for t in inputs}
    captured = {}
    if roots:
        captured = run_backward(
            roots, seeds, retain_graph=False, create_graph=False, targets=targets
        )
    return [
        captured[t._node()] if t._node() in captured else np.zeros(t.shape, t.dtype) for t in inputs
    ]


def autograd_grad(outputs, inputs, grad_outputs=None, retain_graph=None, create_graph=False):
    """Gradients of ``outputs`` with respect to ``inputs``, as ``torch.autograd.grad``.

    Nothing is accumulated into ``.grad``. Inputs that the outputs do not
    depend on get a zero gradient.

    >>> import adcompare as ad
    >>> x = ad.Tensor(3.0, requires_grad=True)
    >>> (dx,) = ad.autograd_grad(x**3, [x], create_graph=True)
    >>> (d2x,) = ad.autograd_grad(dx, [x])
    >>> print(dx.item(), d2x.item())
    27.0 18.0
    """
    outputs = [outputs] if isinstance(outputs, Tensor) else list(outputs)
    single = isinstance(inputs, Tensor)
    inputs = [inputs] if single else list(inputs)
    if grad_outputs is None:
        grad_outputs = [None] * len(outputs)
    elif isinstance(grad_outputs, Tensor) or not isinstance(grad_outputs, (list, tuple)):
        grad_outputs = [grad_outputs]
    for t in list(outputs) + list(inputs):
        if not isinstance(t, Tensor) or not t.requires_grad:
            raise RuntimeError(
                "autograd_grad: every output and input must be a Tensor that requires grad"
            )
    cotangents = [_cotangent(o, g, create_graph) for o, g in zip(outputs, grad_outputs)]
    roots = [o._node() for o in outputs]
    targets = {t._node() for t in inputs}
    if retain_graph is None:
        retain_graph = create_graph
    captured = run_backward(
        roots, cotangents, retain_graph=retain_graph, create_graph=create_graph, targets=targets
    )
    result = []
    for t in inputs:
        g = captured.get(t._node())
        if g is None:
            g = np.zeros(t.shape, dtype=t.dtype)
        g = in_dtype(g, t.dtype)  # as .grad gets it: the input's dtype
        if not isinstance(g, Tensor):
            g = Tensor._wrap(g, t._level)
        result.append(g)
    return tuple(result)
