"""The PyTorch-like ``Tensor``: an array whose operations are recorded on a tape.

Every op on a tensor that requires grad appends a record (a ``Node``, see
:mod:`adcompare.engines.reverse.tape`) that holds the op, references to its
inputs' records, and only the values read by the VJP rules of the inputs that
need a gradient (``Hints.vjp_reads``: the record of ``100.0 * q`` keeps
``100.0``, not ``q``). ``backward`` sweeps the records reachable from the
output in reverse order (:mod:`adcompare.engines.reverse.sweep`).

The tape is not a global list: each record is owned by the tensors that
depend on it, so a graph nobody refers to any more is freed by reference
counting. Nodes refer to their inputs, never back to their outputs (a
retained tensor is held by a weak reference), so there are no cycles.

In-place writes are counted per memory, as in PyTorch (see
:mod:`adcompare.engines.reverse.memory`).
"""

from __future__ import annotations

import weakref

import numpy as np
from numpy import ndarray  # hot paths: numpy's module __getattr__ makes `np.ndarray` a slow lookup

from adcompare.engines.box import ArrayBox, library_alternative
from adcompare.engines.reverse import memory
from adcompare.engines.reverse.grad_mode import _state, enable_grad
from adcompare.engines.reverse.sweep import sweep
from adcompare.engines.reverse.tape import (
    AccumulateGrad,
    Node,
    Placeholder,
    new_node,
    node_level,
    saved_inputs,
)
from adcompare.ops import OpDef, add, assign_at
from adcompare.ops.registry import (
    Box,
    apply,
    apply_plain,
    mixed_levels_error,
    new_level,
    raw,
    shape_of,
)
from adcompare.runtime import cost


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
        self.level = level
        self.grad_fn = None
        self._grad = None
        self._version = [0]
        self._accumulator = None
        self._requires_grad = False
        if requires_grad:
            self.requires_grad = True

    @classmethod
    def _wrap(cls, data, level, grad_fn=None, requires_grad=False, version=None):
        return _new_tensor(
            cls, data, level, grad_fn, requires_grad, version if version is not None else [0]
        )

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
                library_alternative()
                or "numpy() on a tensor that requires grad would silently drop its "
                "derivative; call .detach().numpy() if that is what you want (to build "
                "an array from a list holding tensors, use adcompare.array([...]))"
            )
        return np.asarray(raw(self._data))

    def __array__(self, dtype=None, copy=None):
        value = self.numpy()
        return value if dtype is None else value.astype(dtype)

    def detach(self) -> Tensor:
        """A tensor sharing this one's data, outside the graph."""
        detached = Tensor._wrap(self._data, self.level, version=self._version)
        memory.note_alias(self, detached)
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
    def raw_value(self):
        return self._data

    @property
    def shape(self) -> tuple[int, ...]:
        """The shape of the value (Box.shape, without its two calls: rules read it often)."""
        data = self._data
        return data.shape if type(data) is ndarray else shape_of(data)

    plain_value = "x.detach()"

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
            gradient = Tensor._wrap(gradient, self.level)
        self._grad = gradient if self._grad is None else add(self._grad, gradient)

    def apply_op(self, op: OpDef, level: int, args: tuple, params: dict):
        # One pass over the arguments collects everything a record needs: the split
        # of runtime.boxes.unbox, written inline, since this runs once per op and the
        # helper's call and second pass cost 5% of the eager per-op time (measured).
        values = []
        next_nodes = []
        versions = []  # (version counter, version now, position) of each Tensor argument
        record = False
        nested = False
        for position, a in enumerate(args):
            if isinstance(a, Tensor) and a.level == level:
                data = a._data
                if a._requires_grad:
                    record = True
                    next_nodes.append(a.grad_fn or a._node())
                else:
                    next_nodes.append(None)
                counter = a._version
                versions.append((counter, counter[0], position))
                if type(data) is not ndarray and isinstance(data, Box):
                    nested = True
            else:
                data = a
                if isinstance(a, Box):
                    if a.level == level:
                        raise mixed_levels_error(op, "Tensor", a)
                    nested = True
                next_nodes.append(None)
            values.append(data)
        values = tuple(values)
        out = apply(op, values, params) if nested else apply_plain(op, values, params)
        # A view (a basic slice, a reshape, a transpose) shares its input's memory,
        # so it shares its version counter too. Only views have a base.
        if type(out) is ndarray and out.base is not None:
            source = _tensor_of_memory(out.base, args, level)
            if source is not None:
                recording = record and _state.enabled
                return memory.view(source, op, params, next_nodes, values, out, versions, recording)
        if not (record and _state.enabled):
            return _new_tensor(Tensor, out, level, None, False, [0])
        node = new_node(op, params, tuple(next_nodes), values, out, versions, level)
        version = [0]
        if node.saved_out is not None:
            node.versions.append((version, 0, -1))
        if cost.ACTIVE:
            cost.record_reverse(op.name, out, node.saved_bytes)
        return _new_tensor(Tensor, out, level, node, True, version)

    # --- in-place operations (see adcompare.engines.reverse.memory) -------------------------
    def __iadd__(self, other):
        return memory.write_in_place(self, add, other)

    def __isub__(self, other):
        return memory.write_in_place(self, lambda a, b: a - b, other)

    def __imul__(self, other):
        return memory.write_in_place(self, lambda a, b: a * b, other)

    def __itruediv__(self, other):
        return memory.write_in_place(self, lambda a, b: a / b, other)

    def __setitem__(self, index, value):
        memory.write_in_place(self, lambda a, v: assign_at(a, index, v), value)


_allocate = object.__new__


def _new_tensor(cls, data, level, grad_fn, requires_grad, version) -> Tensor:
    """A tensor of class ``cls`` around ``data``, without ``__init__``'s conversions
    (once per op: a plain function, not the classmethod ``Tensor._wrap``)."""
    self = _allocate(cls)
    self._data = data
    self.level = level
    self.grad_fn = grad_fn
    self._requires_grad = requires_grad
    self._grad = None
    self._version = version
    self._accumulator = None
    return self


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


def _tensor_of_memory(base, args: tuple, level: int) -> Tensor | None:
    """The Tensor argument whose memory is ``base``, if any.

    numpy gives a view of a view the first array that owns the memory as its
    ``base``, so an argument's memory is its own array or that array's base.
    """
    for a in args:
        if isinstance(a, Tensor) and a.level == level:
            data = a._data
            if data is base or (type(data) is ndarray and data.base is base):
                return a
    return None


# --- sweeping from tensors ------------------------------------------------------------


def run_backward(roots, cotangents, *, retain_graph: bool, create_graph: bool, targets=None):
    """The sweep (:func:`adcompare.engines.reverse.sweep.sweep`) from the records ``roots``.

    With ``create_graph`` the sweep is itself recorded: seeds and the values
    rules read become tensors in the graph, so the gradients it gives can be
    differentiated again.
    """
    if cost.ACTIVE:
        cost.record_sweep(_lanes(cotangents))
    if not create_graph:
        return sweep(roots, cotangents, retain_graph=retain_graph, targets=targets)
    seeds = [
        c if isinstance(c, Tensor) else Tensor._wrap(c, node_level(node))
        for node, c in zip(roots, cotangents)
    ]
    with enable_grad():
        return sweep(
            roots, seeds, retain_graph=retain_graph, targets=targets, rule_inputs=_graph_inputs
        )


def _lanes(cotangents) -> int:
    """How many cotangent directions a sweep carries: more than one where ``vmap``
    maps the seeds (their raw values hold a batch axis their shapes do not show)."""
    lanes = 1
    for c in cotangents:
        size = int(np.prod(shape_of(c)))
        if size:
            lanes = max(lanes, int(np.size(raw(c))) // size)
    return lanes


def _graph_inputs(node: Node) -> tuple:
    """A record's rule inputs rebuilt as tensors in the graph, so the rules are recorded."""
    args, out = saved_inputs(node)
    args = tuple(
        _as_graph_tensor(a, n, node.level) if not isinstance(a, Placeholder) else a
        for a, n in zip(args, node.next)
    )
    if not isinstance(out, Placeholder):
        out = Tensor._wrap(out, node.level, node, True)
    return args, out


def _as_graph_tensor(value, source, level):
    if source is None:
        return value
    if isinstance(source, AccumulateGrad):
        return source.variable
    return Tensor._wrap(value, level, source, True)
