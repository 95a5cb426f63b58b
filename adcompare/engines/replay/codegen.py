"""Turning a recording into straight-line Python: one line per instruction.

The generated function keeps every value in a local variable and calls each
instruction's function directly, so a replay costs one Python call per
instruction and nothing per op besides. Two versions exist:

- the **array** version calls the ops' own numpy ``value`` functions;
- the **scalar** version, used when every value in the program is a single
  float64 number (or a single boolean mask), calls the ``math`` and
  ``operator`` counterparts on Python floats, as a JIT specialises on
  shapes. A float error there (division by zero, a domain error, an
  overflow) reruns the array version, so the results, infinities and
  warnings are numpy's.
"""

from __future__ import annotations

import contextlib
import gc
import math
import operator

import numpy as np

from adcompare.engines.replay.memory import note_shares
from adcompare.engines.replay.passes import (
    PASSES,
    PassStats,
    eliminate_dead_code,
    optimise,
    peak_stats,
)
from adcompare.engines.replay.record import CompileError, Guard, Instruction, Recording, shapes
from adcompare.engines.replay.source import GuardFlip, externals_read, generate
from adcompare.ops.registry import OPS, keep_number, sum_number

__all__ = [
    "GuardFlip",
    "Program",
    "Programs",
    "cycles_uncollected",
    "optimised",
    "run_recorded_again",
    "signature",
    "tagged_steps",
]


#: numpy calls on values that left the tape (masks, signs), on single numbers.
UFUNC_KERNELS = {
    np.greater: operator.gt,
    np.greater_equal: operator.ge,
    np.less: operator.lt,
    np.less_equal: operator.le,
    np.equal: operator.eq,
    np.not_equal: operator.ne,
    np.add: operator.add,
    np.subtract: operator.sub,
    np.multiply: operator.mul,
    np.sign: OPS["sign"].replay,  # the op's own kernel: nan stays nan
    np.isfinite: math.isfinite,
}
_ONE_ELEMENT_FUNCTIONS = {np.sum, np.max, np.min, np.reshape}
_SCALAR_TYPES = {"f": float, "b": bool}


def _scalar_kernel(instruction: Instruction):
    if instruction.kind == "op":
        kernel = instruction.op.replay  # the record's scalar kernel, or ARRAY_ONLY
        return kernel if callable(kernel) else None
    base, method = instruction.base
    if method == "__call__":
        return UFUNC_KERNELS.get(base)
    if (method == "reduce" and base is np.add) or base is np.sum:
        return sum_number
    if method in ("reduce", "getitem") or base in _ONE_ELEMENT_FUNCTIONS:
        return keep_number
    if method == "astype":
        kind = dict(instruction.kwargs)["dtype"][1].kind
        convert = _SCALAR_TYPES.get(kind)
        return None if convert is None else (lambda x, convert=convert: convert(x))
    return None


def _scalar_fits(recording: Recording, steps: list, outputs: list) -> bool:
    def single(value, kinds="fb") -> bool:
        value = np.asarray(value)
        return value.size == 1 and value.dtype.kind in kinds and value.dtype.itemsize in (1, 8)

    inputs_ok = all(single(recording.values[s], "f") for s in recording.inputs)
    externals = externals_read(recording, steps, outputs)
    if not all(single(recording.externals[slot]) for slot in externals):
        return False
    for step in steps:
        if isinstance(step, Guard):
            if step.convert is shapes:
                return False  # a shape is not a number: only arrays can change it
            continue
        if _scalar_kernel(step) is None or not single(recording.values[step.out]):
            return False
        constants = [v for kind, v in step.args if kind == "c"]
        constants += [v for name, (kind, v) in step.kwargs if kind == "c" and name == "cond"]
        if not all(isinstance(c, (int, float)) or single(c) for c in constants):
            return False
    return inputs_ok and all(kind == "s" or single(v, "f") for kind, v in outputs)


class Program:
    """A recording as a Python function of the input arrays.

    ``results`` name the outputs in the source (by default ``value`` and one
    ``g_<input>`` per input); the last ``residuals`` outputs are values a later
    program takes as inputs, returned as they are (not copied where they share an
    input's memory: no program writes into its inputs), and the last
    ``residual_inputs`` inputs are such values.

    ``run(*arrays)`` returns the outputs; it raises :class:`GuardFlip` when
    a guard no longer holds. ``source`` is the generated code, one line per
    instruction, to read. ``tagged`` are the optimised steps, each with the sweep
    it belongs to (``"forward"`` or ``"reverse"``); ``stats`` the passes' statistics,
    and ``unmeasured`` (where not ``None``) what :func:`peak_stats` measures when
    :attr:`pass_stats` is first read.
    """

    def __init__(
        self,
        recording: Recording,
        tagged: list,
        outputs: list,
        names=(),
        stats=(),
        unmeasured=None,
        *,
        results=None,
        residuals: int = 0,
        residual_inputs: int = 0,
    ):
        self._pass_stats, self._unmeasured = list(stats), unmeasured
        self._tagged = tagged
        self._inputs = list(recording.inputs)
        self._outputs = outputs
        self.steps = [step for _, step in tagged]
        read = externals_read(recording, self.steps, outputs)
        self._externals = {slot: recording.externals[slot] for slot in read}
        self.tangents = recording.tangents
        self.forward_steps = sum(sweep == "forward" for sweep, _ in tagged)
        self.instructions = sum(isinstance(s, Instruction) for s in self.steps)
        self.guards = sum(isinstance(s, Guard) for s in self.steps)
        self.scalar = _scalar_fits(recording, self.steps, outputs)
        layout = {
            "inputs": names,
            "forward_steps": self.forward_steps,
            "results": results,
            "residuals": residuals,
            "residual_inputs": residual_inputs,
        }
        self.source, array_run = generate(recording, self.steps, outputs, **layout)
        self.run = array_run
        if self.scalar:
            self.source, scalar_run = generate(
                recording, self.steps, outputs, kernel=_scalar_kernel, **layout
            )
            self.run = _with_fallback(scalar_run, array_run)

    @property
    def pass_stats(self) -> list[PassStats]:
        """Each pass's :class:`~adcompare.engines.replay.passes.PassStats`, then the
        peak live bytes' (measured when first asked for, where the recording is kept)."""
        if self._unmeasured is not None:
            self._measure()
        return self._pass_stats

    def _measure(self) -> None:
        self._pass_stats = [*self._pass_stats, peak_stats(*self._unmeasured)]
        self._unmeasured = None  # the recording is no longer needed

    def value_part(self, recording: Recording, names=()) -> Program:
        """The program of this one's forward steps, computing its first output alone.

        The passes keep every result bit-identical and a value never reads the
        reverse sweep, so the optimised forward part with its dead code removed
        computes the value as the whole program does, without running the passes
        again. (A buffer the forward part writes into is dead in the whole program,
        so it is dead in the part too.)
        """
        forward = [(sweep, step) for sweep, step in self._tagged if sweep == "forward"]
        tagged, outputs = eliminate_dead_code(recording, forward, self._outputs[:1])
        return Program(recording, tagged, outputs, names)


def optimised(
    recording: Recording, steps: list, outputs: list, passes=PASSES, names=(), kept=False
) -> Program:
    """``steps`` computing ``outputs`` through ``passes``, as a :class:`Program`; with
    ``kept``, the peak live bytes are measured when first asked for (the program
    then holds ``recording``)."""
    tagged = tagged_steps(recording, steps)
    before = (tagged, list(outputs))
    tagged, outputs, stats = optimise(recording, tagged, list(outputs), passes)
    program = Program(
        recording, tagged, outputs, names, stats, (recording, before, (tagged, outputs))
    )
    if not kept:
        program._measure()
    return program


def tagged_steps(recording: Recording, steps: list) -> list:
    """``steps`` (of ``recording``), each with the sweep it belongs to and its shares noted:
    the form the passes take."""
    forward = {id(step) for step in recording.steps[: recording.forward_end]}
    return [
        ("forward" if id(step) in forward else "reverse", note_shares(recording, step))
        for step in steps
    ]


def _with_fallback(scalar_run, array_run):
    def run(*arrays):
        try:
            return scalar_run(*arrays)
        except (ArithmeticError, ValueError):
            return array_run(*arrays)

    return run


#: A recording whose values take at most this many bytes is kept with its programs,
#: so that what only some callers need is made when first asked for: the value
#: program (a function only differentiated never writes it) and the peak live bytes
#: in the passes' statistics. A larger one makes both at once and is then freed.
KEPT_RECORDING_BYTES = 64 * 2**20


class Programs:
    """The forward-only program (the value: ``programs[0]``) and the full one (value and
    gradients: ``programs[1]``) of one recording.

    ``passes`` are the optimising passes to run (:mod:`.passes`), once, over the
    full program; the forward-only one is its forward part
    (:meth:`Program.value_part`), written when first read where the recording is
    kept (:data:`KEPT_RECORDING_BYTES`). Dead code is always removed. ``names``
    name the inputs in the generated source.
    """

    def __init__(self, recording: Recording, passes=PASSES, names=()):
        recording.steps = [note_shares(recording, step) for step in recording.steps]
        kept = _recorded_bytes(recording) <= KEPT_RECORDING_BYTES
        self.full = optimised(recording, recording.steps, recording.outputs, passes, names, kept)
        self._value = None
        self._pending = (recording, names)
        if not kept:
            self._write_value()

    def __getitem__(self, which: int) -> Program:
        if which:
            return self.full
        if self._value is None:
            self._write_value()
        return self._value

    def _write_value(self) -> None:
        with cycles_uncollected():
            self._value = self.full.value_part(*self._pending)
        self._pending = None  # the recording is no longer needed here


def run_recorded_again(program: Program, arrays: tuple):
    """``program.run(*arrays)`` for a program just recorded at ``arrays``: a guard that
    flips here means ``f`` took another branch at the very inputs it was recorded at."""
    try:
        return program.run(*arrays)
    except GuardFlip as flip:
        raise CompileError(
            f"f took a different branch ({flip.guard.what}) when replayed at the very "
            "inputs it was just recorded at: f is not a deterministic function of its "
            "arguments, so it cannot be compiled"
        ) from None


def signature(arrays: tuple) -> tuple:
    """What a recording is specific to: each array's shape and dtype.

    >>> signature((np.zeros(2), np.ones((1, 3), np.float32)))
    (((2,), dtype('float64')), ((1, 3), dtype('float32')))
    """
    # dtypes compare as dtypes (byte order included); .str would build a string per call
    return tuple([(a.shape, a.dtype) for a in arrays])


def _recorded_bytes(recording: Recording) -> int:
    return sum(getattr(value, "nbytes", 0) for value in recording.values.values())


@contextlib.contextmanager
def cycles_uncollected():
    """Python's cycle collector paused: recording and the passes make hundreds of
    thousands of small objects that live until the program is built, and every
    collection would walk all of them again (a third of the time, growing with the
    program). Reference counting still frees what dies; cycles wait for the end.

    >>> with cycles_uncollected():
    ...     print(gc.isenabled())
    False
    >>> gc.isenabled()
    True
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
