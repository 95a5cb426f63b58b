"""Tape replay: record ``f`` and its gradient once, replay them for new inputs.

``compile(f, *example_args)`` runs ``f`` once on traced inputs and records
the forward pass *and* the reverse sweep as one straight-line program of
numpy calls (ADOL-C's taping, JAX's ``jit`` without a compiler). Calling the
result replays that program for new inputs of the same shapes and dtypes:
no tensors, tape records or rule lookups are built per op.

Control flow is where replay can go wrong: a recording holds the branch
taken at the example inputs. Values computed from the inputs that decide a
branch (``if x > 0:``, ``float(y)``, ``.item()``) are recorded as guards;
when a guard flips at new inputs the function is recorded again, so a replay
never returns the gradient of the wrong branch. Masks that only feed ops
(``where(x > 0, ...)``, ``relu``, the winners of ``maximum``, ``x[x > 0]``)
and indices taken from arguments are recomputed at every replay instead; where
a mask decides a shape (how many entries ``x[x > 0]`` holds), the shape is a
guard. An op record lists the other decisions its arguments' values take
(``decided_by_values``: ``sort``'s permutation, ``take``'s positions,
``slogdet``'s sign); each is recomputed at replay where the recording follows
it, and guarded where it does not (see :mod:`~adcompare.engines.replay.decisions`).

>>> import numpy as np
>>> import adcompare as ad
>>> def f(x):
...     return ad.sum(ad.sin(x) * x)
>>> compiled = ad.compile(f, np.zeros(3))
>>> value, gradient = compiled.value_and_grad(np.array([0.0, 1.0, 2.0]))
>>> expected = np.sin([0.0, 1.0, 2.0]) + np.array([0.0, 1.0, 2.0]) * np.cos([0.0, 1.0, 2.0])
>>> bool(np.allclose(gradient, expected))
True
"""

from __future__ import annotations

import inspect
import types
from collections.abc import Callable, Sequence

import numpy as np
from numpy import ndarray

from adcompare.engines.forward import default_chunk
from adcompare.engines.replay.codegen import (
    GuardFlip,
    Program,
    Programs,
    cycles_uncollected,
    run_recorded_again,
    signature,
)
from adcompare.engines.replay.passes import PASSES, PassStats
from adcompare.engines.replay.record import CompileError, record
from adcompare.engines.replay.staged import Stages
from adcompare.engines.replay.trees import TreeCompiledFunction
from adcompare.ops.registry import Box, new_level
from adcompare.pytree import argnum_positions, tree_structure
from adcompare.runtime.dtypes import float_dtype, in_dtype

__all__ = ["CompileError", "CompiledFunction", "compile"]


class CompiledFunction:
    """``f`` recorded once, replayed per call; see :func:`compile`.

    ``recordings`` counts how often ``f`` was recorded (the first time,
    new shapes or dtypes, and guards that flipped); ``program`` is the
    current value-and-gradient :class:`~adcompare.engines.replay.codegen.Program`
    (``.source`` is its code, ``.instructions`` and ``.guards`` its size).
    """

    def __init__(
        self,
        f: Callable,
        argnums,
        example_args: tuple,
        passes=PASSES,
        mode: str = "reverse",
        chunk_size: int | None = None,
    ):
        if mode not in ("reverse", "forward"):
            raise ValueError(f'compile: mode must be "reverse" or "forward", not {mode!r}')
        if chunk_size is not None and (not isinstance(chunk_size, int) or chunk_size < 1):
            raise ValueError(f"compile: chunk_size must be a positive integer, not {chunk_size!r}")
        if not callable(f):
            raise TypeError(f"compile: f must be callable, got {type(f).__name__}")
        many = isinstance(argnums, (tuple, list))
        self._f = f
        self._passes = passes
        self._many = many
        self._nargs = len(example_args)
        self._argnums = argnum_positions(argnums, self._nargs, "compile")
        self.mode = mode
        self._chunk_size = chunk_size
        self._programs: dict = {}
        self._chunks: dict = {}
        self._bindings: list = []
        self.recordings = 0
        arrays = self._inputs(example_args)
        self._record(arrays + _first_seeds(self._seed_chunks(arrays)))

    @property
    def program(self) -> Program:
        """The most recently recorded value-and-gradient program."""
        return self._latest[1]

    def stats(self) -> list[PassStats]:
        """``(pass, instructions before, after)`` for each pass over the current program,
        then ``("peak live bytes", before, after)`` for all of them together.

        >>> import numpy as np
        >>> import adcompare as ad
        >>> f = lambda x: ad.sum(ad.exp(-(-x) * 1.0) * ad.sin(x))
        >>> for name, before, after in ad.compile(f, np.ones(10_000)).stats():
        ...     print(f"{name}: {before} -> {after}")
        simplify: 16 -> 10
        eliminate_common_subexpressions: 10 -> 9
        carry_signs: 9 -> 9
        fuse_unbroadcast: 9 -> 9
        eliminate_dead_code: 9 -> 7
        accumulate_in_place: 7 -> 7
        reuse_buffers: 7 -> 7
        lower: 7 -> 7
        peak live bytes: 400000 -> 240000
        """
        return list(self.program.pass_stats)

    def __call__(self, *args):
        """``f(*args)``, by replaying the recorded forward pass."""
        return self._replay(0, args)[0]

    def value_and_grad(self, *args):
        """``(f(*args), gradient)`` by one replay of the forward and reverse sweeps.

        The gradient is one array, or a tuple of them when ``argnums`` is a
        tuple, as :func:`adcompare.value_and_grad`.
        """
        if self.mode != "reverse":  # tested here, not in _require: a call per replay saved
            self._require("reverse", "value_and_grad", "value_and_jacobian")
        results = self._replay(1, args)
        return results[0], (results[1:] if self._many else results[1])

    def grad(self, *args):
        """The gradient alone (see :meth:`value_and_grad`)."""
        if self.mode != "reverse":
            self._require("reverse", "value_and_grad", "value_and_jacobian")
        results = self._replay(1, args)
        return results[1:] if self._many else results[1]

    def value_and_jacobian(self, *args):
        """``(f(*args), J)`` by replaying the tangent program, ``chunk_size`` lanes a replay.

        A compiled ``mode="forward"`` function seeds the identity in chunks of
        lanes, as :func:`adcompare.jacfwd` does; ``J`` has shape
        ``out.shape + x.shape`` (a tuple of them when ``argnums`` is a tuple).

        >>> import numpy as np
        >>> import adcompare as ad
        >>> compiled = ad.compile(lambda x: ad.sin(x) * x[0], np.zeros(2), mode="forward")
        >>> value, jacobian = compiled.value_and_jacobian(np.array([1.0, 2.0]))
        >>> print(np.round(jacobian, 4))
        [[ 1.3818  0.    ]
         [ 0.9093 -0.4161]]
        """
        self._require("forward", "value_and_jacobian", "value_and_grad")
        arrays = self._inputs(args)
        value, blocks = None, []
        for width, seeds in self._seed_chunks(arrays):
            value, tangent = self._replay(1, arrays, seeds, checked=True)
            blocks.append(tangent[:width])
        lanes = blocks[0] if len(blocks) == 1 else np.concatenate(blocks)
        columns = np.moveaxis(lanes, 0, -1)  # out.shape + (n,)
        jacobians, start = [], 0
        for p in self._argnums:
            size = arrays[p].size
            block = columns[..., start : start + size]
            block = block.reshape(np.shape(value) + arrays[p].shape)
            jacobians.append(in_dtype(block, float_dtype(arrays[p])))
            start += size
        return value, (tuple(jacobians) if self._many else jacobians[0])

    def jacobian(self, *args):
        """The Jacobian alone (see :meth:`value_and_jacobian`)."""
        return self.value_and_jacobian(*args)[1]

    def jvp(self, primals, tangents):
        """``(f(*primals), J·tangents)`` by one replay of the tangent program.

        ``tangents`` holds one direction per differentiated argument, shaped
        like it, or ``k`` directions at once, shaped ``(k, *shape)``; the
        output tangent is shaped like the output, or ``(k, *out.shape)``.

        >>> import numpy as np
        >>> import adcompare as ad
        >>> compiled = ad.compile(lambda x: ad.sum(x**3), np.ones(2), mode="forward")
        >>> value, tangent = compiled.jvp((np.array([1.0, 2.0]),), (np.array([1.0, 1.0]),))
        >>> print(value, tangent)
        9.0 15.0
        """
        self._require("forward", "jvp", "value_and_grad")
        arrays = self._inputs(tuple(primals))
        tangents = tuple(tangents)
        if len(tangents) != len(self._argnums):
            raise TypeError(
                f"jvp: give one tangent per differentiated argument ({len(self._argnums)}), "
                f"got {len(tangents)}"
            )
        seeds, single = [], None
        for p, tangent in zip(self._argnums, tangents):
            tangent = np.asarray(tangent, dtype=float_dtype(arrays[p]))
            lanes = tangent.shape == arrays[p].shape
            if tangent.shape[int(not lanes) :] != arrays[p].shape or single not in (None, lanes):
                raise ValueError(
                    f"jvp: a tangent of shape {tangent.shape} does not fit argument {p} of shape "
                    f"{arrays[p].shape}; give its shape for one direction or (k, *shape) for "
                    "k directions, alike for every argument"
                )
            single = lanes
            seeds.append(tangent[None] if lanes else tangent)
        value, tangent = self._replay(1, arrays, tuple(seeds), checked=True)
        return value, (tangent[0] if single else tangent)

        # --- internals --------------------------------------------------------------

    def _inputs(self, args: tuple) -> tuple:
        """``args`` as arrays, the differentiated ones of a float kind: ``args`` itself
        where each already is (the common case: one type check an argument)."""
        if len(args) != self._nargs:
            raise TypeError(
                f"compiled function takes {self._nargs} argument(s) (as recorded), got {len(args)}"
            )
        arrays = args
        for i, a in enumerate(args):
            if type(a) is not ndarray or (a.dtype.kind not in "fc" and i in self._argnums):
                if arrays is args:
                    arrays = list(args)
                arrays[i] = self._array(i, a)
        return args if arrays is args else tuple(arrays)

    def _array(self, i: int, a) -> ndarray:
        """Argument ``i`` as an array; a float one where it is differentiated."""
        if isinstance(a, Box):
            raise TypeError(
                f"compiled function: argument {i} is a {type(a).__name__}; a compiled "
                "function takes plain arrays. Apply grad or jacfwd to the original f"
            )
        a = np.asarray(a)
        if i in self._argnums and a.dtype.kind not in "fc":
            a = a.astype(np.float64)
        return a

    def _require(self, mode: str, method: str, alternative: str) -> None:
        if self.mode != mode:
            raise TypeError(
                f"{method} replays a {mode}-mode program, and this function was compiled with "
                f'mode="{self.mode}"; call {alternative}, or compile f with mode="{mode}"'
            )

    def _seed_chunks(self, arrays: tuple) -> Sequence[tuple[int, tuple]]:
        """``(width, seeds)`` per replay: the identity over every active input, in lanes.

        Reverse mode needs no seeds: one chunk of none. The chunks of one input
        signature are kept while all of them together take at most
        :data:`KEPT_SEED_BYTES`; beyond that (they are n² numbers for n inputs)
        each is built as its replay needs it, and forgotten after.
        """
        if self.mode == "reverse":
            return _NO_SEEDS
        key = signature(arrays)
        chunks = self._chunks.get(key)
        if chunks is None:
            chunks = _SeedChunks(arrays, self._argnums, self._chunk_size)
            if chunks.nbytes <= KEPT_SEED_BYTES:
                chunks = list(chunks)
                self._chunks[key] = chunks
        return chunks

    def staged(self, *example_args, late, value: bool = True) -> Stages:
        """This function's value and gradient in two stages: first what does not depend
        on the arguments at positions ``late``, then the rest once those are known.

        Calling the result with the other arguments runs the first stage and
        returns a :class:`~adcompare.engines.replay.staged.Started`: its ``known``
        holds ``value_and_grad``'s result where the late arguments play no part
        (``None`` elsewhere), and ``finish(*late_args)`` runs the second stage
        on the values the first one kept, computing nothing twice. The numbers
        are ``value_and_grad``'s, bit for bit; with ``value=False`` the value is
        not computed (``None`` in its place). Between the stages the arguments
        must not change in place: the second stage reads them, and what the
        first kept may be views of them (as a tape refers to its inputs). This
        is how a chain of steps is differentiated backwards without running
        each step's forward pass again (see :mod:`~adcompare.engines.replay.staged`).

        >>> import numpy as np
        >>> import adcompare as ad
        >>> def step(w, x, bar):  # <tanh(w·x), bar>: its gradient in bar is tanh(w·x)
        ...     return ad.sum(ad.tanh(w * x) * bar)
        >>> compiled = ad.compile(step, np.ones(2), np.ones(2), np.ones(2), argnums=(0, 1, 2))
        >>> started = compiled.staged(np.ones(2), np.ones(2), np.ones(2), late=(2,))(
        ...     np.array([0.5, 1.0]), np.array([2.0, 3.0]))
        >>> value, (g_w, g_x, g_bar) = started.known
        >>> print(value, g_w, np.round(g_bar, 4))  # the new state, before any bar is known
        None None [0.7616 0.9951]
        >>> value, (g_w, g_x, g_bar) = started.finish(np.array([1.0, -1.0]))
        >>> bool(np.all(g_w == compiled.grad(np.array([0.5, 1.0]), np.array([2.0, 3.0]),
        ...                                  np.array([1.0, -1.0]))[0]))
        True
        """
        self._require("reverse", "staged", "value_and_jacobian")
        if (
            not isinstance(late, tuple)
            or not all(type(p) is int and 0 <= p < self._nargs for p in late)
            or len(set(late)) != len(late)
        ):
            raise TypeError(
                f"staged: late must be a tuple of argument positions below {self._nargs}, "
                f"each named once, not {late!r}"
            )
        return Stages(self, self._inputs(example_args), late, value)

    def _recorded(self, arrays: tuple):
        """``f`` recorded at ``arrays`` (with its seeds, in forward mode): the recording,
        the names of its inputs, and the arrays ``f`` reads as they were (the bindings:
        each recording's programs keep their own)."""
        bindings = _array_bindings(self._f)
        args, seeds = arrays[: self._nargs], arrays[self._nargs :]
        names = _argument_names(self._f, self._nargs)
        names += [f"t_{names[p]}" for p in self._argnums] if self.mode == "forward" else []
        recording = record(
            self._f,
            args,
            self._argnums,
            new_level(),
            gradient=self.mode == "reverse",
            seeds=seeds if self.mode == "forward" else None,
        )
        self.recordings += 1
        return recording, names, bindings

    def _out_of_date(self, bindings: list | None = None) -> bool:
        """Whether an array ``f`` reads without receiving it has changed since this
        function's latest recording, or since the one whose ``bindings`` are given (staged
        programs keep those of their own)."""
        return _stale(self._bindings if bindings is None else bindings)

    def _record(self, arrays: tuple) -> Programs:
        with cycles_uncollected():
            recording, names, self._bindings = self._recorded(arrays)
            programs = Programs(recording, self._passes, names)
        self._programs[signature(arrays)] = programs
        self._latest = programs
        return programs

    def _replay(self, which: int, args: tuple, seeds: tuple | None = None, checked=False):
        arrays = args if checked else self._inputs(args)
        if seeds is None and self.mode != "reverse":  # reverse mode takes no seeds
            seeds = _first_seeds(self._seed_chunks(arrays))
        if seeds:
            arrays = arrays + seeds
        if self._bindings and self._out_of_date():  # no call where f reads no arrays
            self._programs.clear()  # recorded with the arrays the names had, as they were
        programs = self._programs.get(signature(arrays))
        if programs is None:
            programs = self._record(arrays)
        try:
            return programs[which].run(*arrays)
        except GuardFlip:
            programs = self._record(arrays)
        return run_recorded_again(programs[which], arrays)


#: Reverse mode's seed chunks: one replay, no seeds.
_NO_SEEDS = ((0, ()),)

#: The most bytes of identity seeds a forward-mode compiled function keeps per input
#: signature (see :meth:`CompiledFunction._seed_chunks`).
KEPT_SEED_BYTES = 64 * 2**20


class _SeedChunks:
    """The identity over the active inputs as chunks of ``k`` lanes, each built when
    iterated to: ``(width, seeds)``, ``width`` the real lanes (the last chunk's rows
    past ``n`` are zero padding lanes), ``seeds`` one block per active argument."""

    def __init__(self, arrays: tuple, argnums: tuple, chunk_size: int | None):
        self._parts = [(arrays[p].shape, float_dtype(arrays[p])) for p in argnums]
        self._n = sum(arrays[p].size for p in argnums)
        self._k = min(chunk_size or default_chunk(self._n), max(self._n, 1))
        self._starts = range(0, max(self._n, 1), self._k)
        entries = sum(
            int(np.prod(shape, dtype=np.int64)) * np.dtype(dtype).itemsize
            for shape, dtype in self._parts
        )
        self.nbytes = self._k * entries * len(self._starts)

    def __iter__(self):
        for start in self._starts:
            yield self.chunk(start)

    def chunk(self, start: int) -> tuple[int, tuple]:
        """The chunk whose first lane seeds input entry ``start``."""
        identity = np.eye(self._k, self._n, k=start)
        seeds, offset = [], 0
        for shape, dtype in self._parts:
            size = int(np.prod(shape, dtype=np.int64))
            block = identity[:, offset : offset + size].astype(dtype)
            seeds.append(block.reshape((self._k, *shape)))
            offset += size
        return min(self._k, self._n - start), tuple(seeds)


def _first_seeds(chunks) -> tuple:
    """The seeds of the first chunk, building no other."""
    return next(iter(chunks))[1]


def _argument_names(f, count: int) -> list[str]:
    """``f``'s positional parameter names, for the generated source (``a0``, ... where unknown)."""
    try:
        parameters = list(inspect.signature(f).parameters.values())
    except (TypeError, ValueError):
        parameters = []
    names = []
    for i in range(count):
        parameter = parameters[i] if i < len(parameters) else None
        positional = parameter is not None and parameter.kind in (
            inspect.Parameter.POSITIONAL_ONLY,
            inspect.Parameter.POSITIONAL_OR_KEYWORD,
        )
        names.append(parameter.name if positional else f"a{i}")
    return names


_EMPTY = object()


def _array_bindings(f) -> list[tuple]:
    """The names ``f``'s code reads arrays through: ``(holder, name, array)``.

    A holder is ``f``'s globals (with the name) or a closure cell (name
    ``None``). A recording holds the arrays themselves, and what plain numpy
    computed from them while recording (``W > 0`` for a global ``W``) is
    frozen in it; so when a name is bound to another array, or an array's
    contents change, the recordings are out of date. Each binding keeps a
    copy of the contents to compare: one pass over those arrays per call.
    """
    f = getattr(f, "__func__", f)
    if not isinstance(f, types.FunctionType):
        return []
    bindings = []
    for cell in f.__closure__ or ():
        value = _cell_value(cell)
        if isinstance(value, np.ndarray):
            bindings.append((cell, None, value, value.copy()))
    codes = [f.__code__]
    while codes:  # f's own code and the lambdas and comprehensions inside it
        code = codes.pop()
        codes.extend(c for c in code.co_consts if isinstance(c, types.CodeType))
        for name in code.co_names:
            value = f.__globals__.get(name)
            if isinstance(value, np.ndarray):
                bindings.append((f.__globals__, name, value, value.copy()))
    return bindings


def _cell_value(cell):
    try:
        return cell.cell_contents
    except ValueError:  # a cell not filled yet
        return _EMPTY


def _stale(bindings: list[tuple]) -> bool:
    """Whether a name of ``f`` is bound to another array, or an array's contents changed."""
    for holder, name, array, contents in bindings:
        current = _cell_value(holder) if name is None else holder.get(name, _EMPTY)
        if current is not array or not _same_contents(array, contents):
            return True
    return False


def _same_contents(array: np.ndarray, contents: np.ndarray) -> bool:
    if array.shape != contents.shape or array.dtype != contents.dtype:
        return False
    if array.dtype.kind in "fc":
        return bool(np.array_equal(array, contents, equal_nan=True))
    return bool(np.array_equal(array, contents))


def compile(  # noqa: A001
    f: Callable,
    *example_args,
    argnums=0,
    optimise: bool = True,
    mode: str = "reverse",
    chunk_size: int | None = None,
) -> CompiledFunction:
    """Record ``f`` and its reverse sweep at ``example_args``; replay them per call.

    The result computes ``f(*args)`` (call it), ``value_and_grad(*args)``
    and ``grad(*args)`` for arguments of the example arguments' shapes and
    dtypes; other shapes are recorded anew.

    With ``mode="forward"`` the tangent program is recorded instead: ``f``
    with tangent lanes, as :func:`adcompare.jacfwd` runs it, ``chunk_size``
    lanes a replay (by default :func:`adcompare.engines.forward.default_chunk`).
    The result then computes ``value_and_jacobian(*args)``,
    ``jacobian(*args)`` and ``jvp(primals, tangents)``; guards, masks and
    arrays read at replay work as in reverse mode.

    Integer and boolean arguments are inputs too: as indices and masks they
    are read at every replay; where they decide the program (``range(n)``,
    a slice ``x[:n]``) they are guards. Arrays ``f`` reads without receiving
    them (globals, closures) are read at every replay, so changing one in
    place changes the value and the gradient alike, and binding one of
    ``f``'s global or closure names to another array records ``f`` again.
    What ``f`` computes from such arrays with numpy alone, before they meet
    a traced value (``W > 0`` for a plain ``W``), runs at recording: so a
    change of such an array's contents records ``f`` again (a copy of each
    is compared per call; arrays reached through other objects, such as
    ``self.W``, are not watched: pass those as arguments).
    Arguments may be pytrees (see
    :class:`~adcompare.engines.replay.trees.TreeCompiledFunction`).

    With ``optimise`` (the default) the program goes through the passes of
    :mod:`~adcompare.engines.replay.passes` (exact algebra, common
    subexpressions, fused unbroadcasting, dead code, in-place accumulation,
    buffer reuse, and instructions lowered to subscripts, slice writes and direct
    numpy calls; constants are folded as ``f`` is recorded), which keep every
    result bit-identical; :meth:`CompiledFunction.stats` shows what each did.

    >>> import numpy as np
    >>> import adcompare as ad
    >>> def f(x):  # the branch depends on x: a guard
    ...     return x**2 if x > 0 else -(x**3)
    >>> compiled = ad.compile(f, 1.0)
    >>> print(compiled.grad(3.0), compiled.recordings)
    6.0 1
    >>> print(compiled.grad(-2.0), compiled.recordings)  # guard flipped: recorded again
    -12.0 2
    """
    passes = PASSES if optimise else ()
    if any(tree_structure(a).kind is not None for a in example_args):
        return _compile_trees(f, argnums, example_args, passes, mode)
    return CompiledFunction(f, argnums, example_args, passes, mode, chunk_size)


def _compile_trees(f, argnums, example_args: tuple, passes, mode: str) -> TreeCompiledFunction:
    if mode == "forward":
        raise TypeError(
            'compile(mode="forward") takes arrays, not pytrees: pass the leaves as '
            'arguments (adcompare.tree_flatten), or compile with mode="reverse"'
        )
    return TreeCompiledFunction(
        f, argnums, example_args, lambda g, a, e: CompiledFunction(g, a, e, passes)
    )
