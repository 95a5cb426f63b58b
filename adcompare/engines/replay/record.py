"""Recording a function once as a straight-line program of raw array calls.

``f`` runs on :class:`Traced` boxes, one per input. Every primitive applied
to them becomes an :class:`Instruction` (the op's ``value`` function, its
operands as slots or constants, its output slot). The backward sweep is then
*recorded too*: each op on traced values that depend on a differentiated
input also gets a record on the reverse engine's tape (holding the traced
values), and the reverse engine's own sweep runs over those records, so the
VJP rules run on traced values and their op calls become instructions after
the forward ones. Replaying the program is one call per instruction, with no
boxes, records or rule lookups.

Values can leave the tape: ``relu`` computes its mask with
``np.greater(raw(x), 0)``, ``abs``'s rule takes ``np.sign(raw(x))``, user code
writes ``if x.sum() > 0:``. ``raw`` of a traced value gives a
:class:`Watched` array, a numpy subclass that records the numpy calls made
on it, so the mask is recomputed at every replay instead of being frozen.
Where such a value reaches Python control flow (``bool``, ``float``,
``item``), the result is recorded as a **guard**: replay recomputes it and
stops if it differs, and the caller records ``f`` again.

Indices are operands too: an index built from traced values (a boolean mask,
``nonzero``, an integer argument) is rebuilt at every replay, and where the
*shape* of a result depends on values (a mask's count of true entries), that
shape is a guard. Arrays ``f`` reads that are not its arguments (globals, the
arrays a closure holds) are inputs read at replay, never values folded in at
recording, so mutating one in place changes the value and the gradient alike.
"""

from __future__ import annotations

import functools
import math
import operator
import threading

import numpy as np

from adcompare.engines.box import ArrayBox
from adcompare.engines.forward import Dual
from adcompare.engines.replay.decisions import check_decisions
from adcompare.engines.replay.program import CompileError, Guard, Instruction, Recording
from adcompare.engines.reverse.sweep import sweep
from adcompare.engines.reverse.tape import AccumulateGrad, new_node
from adcompare.ops import astype, getitem, real
from adcompare.ops.registry import Box, OpDef, apply, new_level, shape_of
from adcompare.pytree import plain_views, sequence_like
from adcompare.runtime.boxes import unbox
from adcompare.runtime.dtypes import float_dtype
from adcompare.runtime.hooks import DECISION_HOOKS, RECORDING_HOOKS

__all__ = ["CompileError", "Guard", "Instruction", "Recording", "Traced", "Watched", "record"]


# --- watched numpy values ---------------------------------------------------------


class _Guarded:
    """Conversions to Python values, each recorded as a guard."""

    __slots__ = ()

    def __bool__(self):
        return _guard(self._recording, bool, self, "bool()")

    def item(self, *args):
        """The value as a Python number, recorded as a guard."""
        if args:
            raise CompileError("item(i) on a traced value; index it first, then call item()")
        return _guard(self._recording, _item, self, "item()")

    def __float__(self):
        return _guard(self._recording, float, self, "float()")

    def __int__(self):
        return _guard(self._recording, int, self, "int()")

    def __index__(self):
        return _guard(self._recording, operator.index, self, "an index")


class Watched(_Guarded, np.ndarray):
    """A traced value seen as a plain array: numpy calls on it are recorded."""

    _slot: int | None = None
    _recording: Recording | None = None

    def __array_finalize__(self, obj):
        # Views, copies and ufunc outputs start unrecorded; record() sets the slot.
        self._slot = None
        self._recording = getattr(obj, "_recording", None)

    def __array_ufunc__(self, ufunc, method, *inputs, out=None, **kwargs):
        if any(isinstance(i, Box) for i in inputs):
            return NotImplemented  # the traced operand's own dispatch records it as an op
        if out is not None and not any(o is i for o in out for i in inputs):
            raise CompileError(f"np.{ufunc.__name__}(..., out=...) into another array")
        call = ufunc if method == "__call__" else getattr(ufunc, method)
        return _record_numpy(self._recording, call, ufunc, method, inputs, kwargs)

    def __array_function__(self, func, types, args, kwargs):
        if any(issubclass(t, Box) for t in types):
            return NotImplemented
        if func is np.min_scalar_type and self.ndim == 0:
            # The smallest dtype that holds one number depends on the number.
            return _guard(self._recording, np.min_scalar_type, self, "np.min_scalar_type")
        plain = func(*_plain(args), **_plain(kwargs))
        if func in _STATIC_RESULTS or not (
            isinstance(plain, (np.ndarray, np.generic, bool, int, float, complex))
            or _all_arrays(plain)
        ):
            return plain  # shapes, ranks, dtypes: static, nothing to record
        return _record_numpy(self._recording, func, func, "function", args, kwargs)

    def astype(self, dtype, *args, **kwargs):
        return _record_numpy(
            self._recording, _astype, _astype, "astype", (self,), {"dtype": np.dtype(dtype)}
        )

    def __getitem__(self, index):
        return _record_numpy(
            self._recording, operator.getitem, operator.getitem, "getitem", (self, index), {}
        )

    def tolist(self):
        raise CompileError(
            "tolist() on a traced value: its elements would be frozen into the recording; "
            "keep the computation in array ops"
        )

    def __setitem__(self, index, value):
        raise CompileError(
            "writing into an array computed from the inputs (m[i] = ...): a replay "
            "recomputes the array and would lose the write. Build the new array instead, "
            "e.g. np.where(positions, new_value, m) or m | extra"
        )


def _astype(value, dtype):
    return np.asarray(value).astype(dtype)


def _item(value):
    return np.asarray(value).item()


def _plain(values):
    return plain_views(values, Watched)


def _watch(recording: Recording, value, slot: int) -> Watched:
    watched = np.asarray(value).view(Watched)
    watched._slot = slot
    watched._recording = recording
    recording.remember(watched, slot)
    return watched


def _source_slot(value: np.ndarray, recording: Recording | None) -> int | None:
    """The slot an array stands for (it is a traced value, or a full view of one).

    ``None`` for a true constant. numpy's views point at the array owning the
    memory, not at the watched view they were taken from, so the lookup goes
    by memory address, shape, strides and dtype.
    """
    if isinstance(value, Watched) and value._slot is not None:
        return value._slot
    slot = None if recording is None else recording.slot_at(value)
    if slot is not None:
        return slot
    if isinstance(value, Watched):
        raise CompileError(
            "f uses a value computed from the inputs in a way the recording cannot follow "
            "(an ndarray method or a partial view of a traced value); use adcompare ops "
            "(getitem, where, ...) on the traced value instead"
        )
    return None


def _operand(value, recording: Recording | None = None, *, top: bool = True) -> tuple:
    """How an instruction reads ``value`` at replay: ``("s", slot)`` or ``("c", value)``.

    A sequence holding slots (an index built from a mask or an integer
    argument) becomes a slot of its own, rebuilt at every replay. An array
    that is no slot yet, passed directly to an op or a numpy call while ``f``
    runs, is an external: an input read at replay (see :class:`Recording`).
    """
    if isinstance(value, Traced):
        return ("s", value._slot)
    if isinstance(value, Box):
        raise CompileError(f"a {type(value).__name__} inside a compiled function's recording")
    if isinstance(value, (list, tuple)):
        parts = tuple(_operand(v, recording, top=False) for v in value)
        if any(kind == "s" for kind, _ in parts):
            return ("s", _pack(recording, type(value), parts))
        return ("c", value)
    if isinstance(value, slice) and any(_is_tracked(v) for v in _slice_parts(value)):
        # A slice bound is a Python integer to numpy: guarded, never rebuilt.
        return ("c", slice(*(_guarded_index(v) for v in _slice_parts(value))))
    if isinstance(value, np.ndarray):
        slot = _source_slot(value, recording)
        if slot is not None:
            return ("s", slot)
        if top and recording is not None and not recording.sweeping:
            return ("s", _external(recording, value))
    return ("c", value)


def _slice_parts(value: slice) -> tuple:
    return (value.start, value.stop, value.step)


def _guarded_index(value):
    return operator.index(value) if _is_tracked(value) else value


def _external(recording: Recording, value: np.ndarray) -> int:
    slot = recording.new_slot(value)
    recording.externals[slot] = value
    recording.remember(value, slot)
    return slot


def _pack(recording: Recording, kind: type, parts: tuple) -> int:
    """A slot holding ``kind(parts)``, built at replay from the parts' current values."""
    build = _PACKERS[kind]
    plain = build(*(recording.values[v] if k == "s" else v for k, v in parts))
    slot = recording.new_slot(plain)
    recording.steps.append(Instruction("numpy", build, parts, (), slot, base=(kind, "pack")))
    return slot


def _pack_tuple(*parts) -> tuple:
    return parts


def _pack_list(*parts) -> list:
    return list(parts)


_PACKERS = {tuple: _pack_tuple, list: _pack_list}


#: numpy functions whose result says nothing about the values (shapes, ranks, dtypes;
#: min_scalar_type of more than one number).
_STATIC_RESULTS = frozenset(
    {np.shape, np.ndim, np.size, np.result_type, np.min_scalar_type, np.can_cast}
    | {np.iscomplexobj, np.isrealobj, np.shares_memory, np.may_share_memory}
)


def _all_arrays(value) -> bool:
    """Whether ``value`` is several arrays (``nonzero``'s tuple, ``split``'s list)."""
    return (
        isinstance(value, (tuple, list))
        and bool(value)
        and all(isinstance(v, (np.ndarray, np.generic)) for v in value)
    )


def _is_tracked(value) -> bool:
    return isinstance(value, (Traced, Watched))


def _record_numpy(recording, call, base, method, args, kwargs):
    """Run a numpy call on plain values and record it; the result is watched.

    A call returning several arrays (``nonzero``, ``divmod``) gives a tuple
    of watched arrays. Where the result's shape may depend on the values
    (see :func:`_shape_is_static`), the shape is recorded as a guard.
    """
    result = call(*_plain(args), **_plain(kwargs))
    result = result if _all_arrays(result) else np.asarray(result)
    if recording is None:
        return result
    slot = recording.new_slot(result)
    recording.steps.append(
        Instruction(
            "numpy",
            call,
            tuple(_operand(a, recording) for a in args),
            tuple((k, _operand(v, recording)) for k, v in kwargs.items()),
            slot,
            base=(base, method),
        )
    )
    if not _shape_is_static(base, method, args):
        recording.steps.append(Guard(shapes, slot, shapes(result), "the shape"))
    if isinstance(result, (tuple, list)):
        elements = [_element(recording, slot, i) for i in range(len(result))]
        return sequence_like(result, elements)
    return _watch(recording, result, slot)


def _element(recording: Recording, slot: int, i: int) -> Watched:
    """Element ``i`` of the tuple of arrays in ``slot``, as a watched array."""
    value = recording.values[slot][i]
    out = recording.new_slot(value)
    base = (operator.getitem, "getitem")
    recording.steps.append(
        Instruction("numpy", base[0], (("s", slot), ("c", i)), (), out, base=base)
    )
    return _watch(recording, value, out)


#: numpy functions whose result's shape follows from their operands' shapes
#: and static arguments. Any other function called on a traced value (nonzero,
#: unique, extract, ...) has its result's shape recorded as a guard.
_STATIC_SHAPE_FUNCTIONS = frozenset(
    {np.sum, np.prod, np.mean, np.max, np.min, np.amax, np.amin, np.any, np.all}
    | {np.reshape, np.transpose, np.squeeze, np.expand_dims, np.broadcast_to, np.ravel}
    | {np.where, np.clip, np.round, np.around, np.copy, np.cumsum, np.sort, np.argsort}
    | {np.argmax, np.argmin, np.concatenate, np.stack, np.isclose, np.allclose}
    | {np.count_nonzero, np.take, np.take_along_axis, np.argpartition, np.linalg.slogdet}
    | {np.iscomplex, np.isreal, np.array_equal}
)


def _shape_is_static(base, method: str, args: tuple) -> bool:
    if method == "function":
        return base in _STATIC_SHAPE_FUNCTIONS and not (base is np.where and len(args) == 1)
    if method == "getitem":  # a boolean mask selects as many elements as it holds true
        index = args[1] if isinstance(args[1], tuple) else (args[1],)
        return not any(
            isinstance(p, (np.ndarray, list)) and np.asarray(p).dtype == bool for p in index
        )
    return True  # ufunc calls and reductions, astype, packing


def shapes(value):
    """The shape of an array, or the shapes of several: a shape guard's test."""
    if isinstance(value, (tuple, list)):
        return tuple(np.shape(v) for v in value)
    return np.shape(value)


def _guard(recording, convert, value, what: str):
    if isinstance(value, Traced):
        plain, slot = value._value, value._slot
    else:
        plain, slot = value.view(np.ndarray), _source_slot(value, recording)
    result = convert(plain)
    if recording is not None and slot is not None and (convert, slot) not in recording.guarded:
        recording.guarded.add((convert, slot))
        recording.steps.append(Guard(convert, slot, result, what))
    return result


# --- traced boxes -----------------------------------------------------------------


_VALUE = operator.attrgetter("_value")


class Traced(_Guarded, ArrayBox):
    """A value being recorded: each op on it becomes an instruction."""

    __slots__ = ("_node", "_recording", "_slot", "_value", "_watched")

    def __init__(self, value, slot: int, recording: Recording, level: int):
        self._value = value
        self._slot = slot
        self._recording = recording
        self.level = level
        self._watched = None
        self._node = None  # its tape record, where it depends on a differentiated input

    def raw_value(self):
        if self._watched is None:
            self._watched = _watch(self._recording, self._value, self._slot)
        return self._watched

    def _carries_derivative(self) -> bool:
        return True

    @property
    def shape(self) -> tuple[int, ...]:
        return shape_of(self._value)

    @property
    def dtype(self) -> np.dtype:
        return np.result_type(self._value)

    def __array__(self, dtype=None, copy=None):
        raise CompileError(
            "f converts a traced value to a plain numpy array (np.asarray, np.array, "
            "float() of an array...), which a recording cannot follow; use adcompare ops, "
            "or compute that part outside the compiled function"
        )

    def __repr__(self) -> str:
        return f"traced(shape={self.shape}, slot={self._slot})"

    def __getitem__(self, index):
        return getitem(self, _watched_index(self._recording, index))

    def __round__(self, ndigits=None):
        raise CompileError(
            "round() of a traced value: its result cannot follow new inputs or carry a "
            "derivative. For a Python number, write round(float(x)) (float() is recorded "
            "as a guard: f is recorded again when it changes); to stay differentiable, "
            "keep x in adcompare ops"
        )

    def tolist(self):
        """Refused: the elements would be frozen into the recording."""
        raise CompileError(
            "tolist() of a traced value: its elements would be frozen into the recording. "
            "Keep the computation in adcompare ops (index with x[i], iterate with "
            "for row in x), or read one element as a Python number with float(x[i]) "
            "(recorded as a guard: f is recorded again when it changes)"
        )

    def apply_op(self, op: OpDef, level: int, args: tuple, params: dict):
        values = unbox(op, "Traced", Traced, args, level, _VALUE)
        recording = self._recording
        recording.applying = True  # the op is recorded here, not by the plain-op hook
        try:
            out = apply(op, tuple(values), _plain(params))
        finally:
            recording.applying = False
        slot = recording.new_slot(out)
        recording.steps.append(
            Instruction(
                "op",
                op.value,
                tuple(_operand(a, recording) for a in args),
                tuple((k, _operand(v, recording)) for k, v in params.items()),
                slot,
                op=op,
            )
        )
        traced = Traced(out, slot, recording, level)
        recording.boxes[slot] = traced  # alive while recording: slots are found by address
        if not recording.sweeping:
            inputs = tuple(
                [a._node if isinstance(a, Traced) and a.level == level else None for a in args]
            )
            if any(node is not None for node in inputs):
                traced._node = new_node(op, params, inputs, tuple(args), traced, [], level)
        return traced


def _watched_index(recording: Recording, index):
    """``index`` with the plain arrays in it watched, as externals (see :func:`_operand`).

    A mask ``f`` holds (``x[keep]``) is then turned into positions by a
    recorded ``nonzero``, and an integer array is read at replay.
    """
    parts = index if isinstance(index, tuple) else (index,)
    if recording.sweeping or not any(type(p) is np.ndarray for p in parts):
        return index
    watched = tuple(
        _watch(recording, p, _operand(p, recording)[1]) if type(p) is np.ndarray else p
        for p in parts
    )
    return watched if isinstance(index, tuple) else watched[0]


# --- recording f and its backward sweep --------------------------------------------


def record(
    f,
    args: tuple,
    positions: tuple[int, ...],
    level: int,
    *,
    gradient: bool,
    seeds: tuple | None = None,
) -> Recording:
    """Record ``f(*args)`` (and, with ``gradient``, its reverse sweep).

    ``positions`` are the arguments differentiated; every argument is an
    input slot. The outputs are the value and, with ``gradient``, one
    gradient per position (operands: a slot, or a constant).

    With ``seeds`` (one array of tangent lanes ``(k, *shape)`` per position)
    the tangent program is recorded instead: each position enters ``f`` as a
    :class:`~adcompare.engines.forward.Dual` of traced primal and traced
    seed, so the forward engine's JVP rules run on traced values and their
    op calls become instructions, interleaved with ``f``'s own. The seeds
    are input slots after the arguments, and the outputs are the value and
    its tangent lanes ``(k, *out.shape)``.
    """
    recording = Recording()
    inputs = _traced_inputs(recording, args, positions, level, gradient)
    tangent_level = None
    if seeds is not None:
        tangent_level = new_level()
        recording.tangents = True
        for p, seed in zip(positions, seeds):
            slot = recording.new_slot(seed)
            recording.inputs.append(slot)
            traced_seed = Traced(seed, slot, recording, level)
            inputs[p] = Dual(inputs[p], traced_seed, level=tangent_level)
    RECORDING_HOOKS.append(functools.partial(_record_plain_op, recording))
    DECISION_HOOKS.append(functools.partial(check_decisions, recording))
    try:
        out = f(*inputs)
        tangent = None
        if seeds is not None:
            out, tangent = _split_dual(out, tangent_level, len(seeds[0]) if seeds else 1)
        if isinstance(out, Box) and not isinstance(out, Traced):
            raise CompileError(
                f"f returned a {type(out).__name__}; compile differentiates f's own arguments only"
            )
        recording.forward_end = len(recording.steps)
        recording.sweeping = True  # constants the sweep makes are its own, not inputs
        recording.outputs.append(_output(out, recording))
        if tangent is not None:
            recording.outputs.append(_output(tangent, recording))
        if gradient:
            grads = _record_backward(recording, out, [inputs[p] for p in positions])
            recording.outputs.extend(grads)
    finally:
        RECORDING_HOOKS.pop()
        DECISION_HOOKS.pop()
        recording.boxes.clear()
    return recording


def _traced_inputs(recording: Recording, args: tuple, positions, level: int, gradient: bool):
    """One traced input slot per argument; the differentiated ones are leaves of the tape."""
    inputs = []
    for a in args:
        slot = recording.new_slot(a)
        recording.inputs.append(slot)
        inputs.append(Traced(a, slot, recording, level))
    if gradient:
        for p in positions:
            inputs[p]._node = AccumulateGrad(inputs[p])
    return inputs


def _split_dual(out, level: int, lanes: int) -> tuple:
    """The value and tangent lanes of ``f``'s output in a tangent recording."""
    if isinstance(out, Dual) and out.level == level:
        return out.primal, out.tangent
    if isinstance(out, Box) and not isinstance(out, Traced):
        return out, None  # refused by the caller
    value = out if isinstance(out, Traced) else np.asarray(out)
    dtype = float_dtype(value._value if isinstance(value, Traced) else value)
    return out, np.zeros((lanes, *shape_of(value)), dtype=dtype)  # f ignores its inputs


def _output(value, recording: Recording) -> tuple:
    return _operand(value, recording) if _is_tracked(value) else ("c", np.asarray(value))


def _record_plain_op(recording: Recording, op: OpDef, args: tuple, params: dict):
    """Record an op on plain arrays computed from traced values (no derivative)."""
    if recording.applying or threading.get_ident() != recording.thread:
        return None  # another thread's ops are its own business
    operands = tuple(_operand(a, recording) for a in args)
    keywords = tuple((k, _operand(v, recording)) for k, v in params.items())
    if not any(kind == "s" for kind, _ in operands + tuple(v for _, v in keywords)):
        return None
    out = op.value(*_plain(args), **_plain(params))
    slot = recording.new_slot(out)
    recording.steps.append(Instruction("op", op.value, operands, keywords, slot, op=op))
    return _watch(recording, out, slot)


def _record_backward(recording: Recording, out, leaves) -> list:
    """The reverse engine's sweep over the traced records: its rules' ops are recorded."""
    if not isinstance(out, Traced):
        return [("c", np.zeros(shape_of(leaf._value), leaf.dtype)) for leaf in leaves]
    if math.prod(out.shape) != 1:
        raise CompileError(
            f"the gradient needs a scalar output; f returned shape {out.shape}. Reduce it "
            "(e.g. sum or mean) or compile f without gradients"
        )
    if np.dtype(out.dtype).kind == "c":
        raise CompileError(
            f"the gradient needs a real-valued output, but f returned {out.dtype}; compile a "
            "real function of it (ad.real(f(x)), ad.imag(f(x)) or ad.abs(f(x)) ** 2), as grad "
            "requires"
        )
    seed = np.ones(out.shape, dtype=float_dtype(out._value))  # float16 stays, as in grad
    captured = {}
    if out._node is not None:
        # No in-place sums: a cotangent the program reads as a constant stays as recorded.
        targets = {leaf._node for leaf in leaves}
        captured = sweep([out._node], [seed], retain_graph=True, targets=targets, in_place=False)
    outputs = []
    for leaf in leaves:
        g = captured.get(leaf._node)
        if g is None:
            outputs.append(("c", np.zeros(leaf.shape, leaf.dtype)))
        else:  # as in grad: a real input's is the real part, float16 stays float16
            g_kind, leaf_kind = np.dtype(g.dtype).kind, np.dtype(leaf.dtype).kind
            g = real(g) if g_kind == "c" and leaf_kind != "c" else g
            if g_kind + leaf_kind == "ff" and g.dtype != leaf.dtype:
                g = astype(g, leaf.dtype)
            outputs.append(_output(g, recording))
    return outputs
