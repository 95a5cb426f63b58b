"""The replay's source: straight-line Python, one line per step, values named for what they are.

Values are named after the op and position that computes them (``v12_multiply``),
the arguments after ``f``'s parameters, and the results ``value``, ``g_x`` (the
gradient with respect to ``x``) or ``tangent``. Python numbers and tuples of them
appear as literals; other constants (index tuples, arrays) are names, described
in comments at the top. After its last reader, an array's name is deleted, so its
memory is freed as plain numpy frees a temporary.

A program on Python numbers writes its reverse sweep as a hand-written adjoint
is written: a value that one later instruction reads is nested in that
instruction's line, ``(cos(v5_exp) * v5_exp) * (1.0 - (v4_tanh * v4_tanh))``,
up to :data:`MERGE_DEPTH` levels. The operations and their order are the same,
so the results are bit-identical; the interpreter just stores and loads fewer
names, and each temporary float is freed at once (a fifth fewer machine
instructions on a 200-op chain's replayed gradient). The forward pass keeps one
line per op, in the order of the tape.
"""

from __future__ import annotations

import functools
import keyword
import math
import operator

import numpy as np
from numpy import ndarray

from adcompare.engines.replay.decisions import DecisionTest
from adcompare.engines.replay.lower import ADD_AT, ALIAS, ALLOCATE, PUT, SCATTER, Form
from adcompare.engines.replay.memory import last_uses, reads
from adcompare.engines.replay.record import Guard, Instruction, Recording
from adcompare.ops.registry import keep_number

__all__ = ["GuardFlip", "externals_read", "generate"]


class GuardFlip(Exception):  # noqa: N818 - a signal, not an error the user sees
    """A guard no longer holds: the recording does not fit these inputs."""

    def __init__(self, guard: Guard):
        super().__init__(guard.what)
        self.guard = guard


def externals_read(recording: Recording, steps: list, outputs: list) -> list[int]:
    """The slots of the arrays ``f`` reads without receiving them that ``steps`` use."""
    if not recording.externals:
        return []
    read = {slot for kind, slot in outputs if kind == "s"}
    for step in steps:
        if isinstance(step, Guard):
            read.add(step.slot)
        else:
            read.update(slot for kind, slot in step.args if kind == "s")
            read.update(slot for _, (kind, slot) in step.kwargs if kind == "s")
    return sorted(read & recording.externals.keys())


class _Names:
    """Unique names in the generated code: values, functions and constants."""

    def __init__(self, namespace: dict):
        self.namespace = namespace
        self.taken = set(namespace) | {"np"}
        self.functions: dict[int, str] = {}
        self.constants: dict[int, str] = {}  # one name per constant object
        self.described: list[str] = []
        self.suffixes: dict[str, int] = {}  # the last suffix given to a base name

    def unique(self, base: str) -> str:
        name, k = base, self.suffixes.get(base, 1)
        while name in self.taken or keyword.iskeyword(name) or not name.isidentifier():
            k += 1
            name = f"{base}_{k}"
        self.suffixes[base] = k
        self.taken.add(name)
        return name

    def constant(self, value, base: str = "c") -> str:
        """A literal for Python numbers, tuples and strings; else a name bound to ``value``."""
        if _is_literal(value):
            return repr(value)
        name = self.constants.get(id(value))
        if name is not None:
            return name
        name = self.constants[id(value)] = self.unique(base)
        self.namespace[name] = value
        self.described.append(f"# {name} = {_describe(value)}")
        return name

    def function(self, fn, base: str) -> str:
        name = self.functions.get(id(fn))
        if name is None:
            name = self.functions[id(fn)] = self.unique(base)
            self.namespace[name] = fn
        return name


def _describe(value) -> str:
    """A constant in one short line; an array, also inside an index tuple, by its dtype and
    shape (numpy would print an array of up to 1,000 entries in full first: GMM's 496
    triangle positions took 6–23 ms a recording).

    >>> _describe((np.arange(496), slice(None, 2)))
    '(<int64 array of shape (496,)>, slice(None, 2, None))'
    """
    if isinstance(value, np.ndarray) and value.size > 1:
        return f"<{value.dtype} array of shape {value.shape}>"
    if type(value) is tuple:
        text = f"({', '.join(map(_describe, value))}{',' if len(value) == 1 else ''})"
    else:
        text = " ".join(repr(value).split())
    return text if len(text) <= 80 else text[:77] + "..."


def _is_literal(value) -> bool:
    if value is None or type(value) in (bool, int, str):
        return True
    if type(value) is float:
        return math.isfinite(value)
    if type(value) is tuple:
        return all(_is_literal(v) for v in value)
    return False


def _function_name(step: Instruction) -> str:
    """What the generated code calls the instruction's function."""
    if step.kind == "op":
        plain = step.fn is step.op.value or isinstance(step.fn, Form)
        return step.op.name if plain else getattr(step.fn, "__name__", "op")
    base, method = step.base
    if method == "pack":
        return f"pack_{base.__name__}"
    if method in ("getitem", "add_at", "astype"):
        return method
    name = getattr(base, "__name__", "call")
    return f"np_{name}" if method in ("__call__", "function") else f"np_{name}_{method}"


def _value_names(recording, steps, outputs, inputs, names: _Names, results=None) -> dict:
    """Names for every slot: the arguments', ``v12_multiply``, ``value`` and ``g_x``
    (or ``results``, the outputs' names)."""
    labels = {slot: names.unique(name) for slot, name in zip(recording.inputs, inputs)}
    for i, slot in enumerate(externals_read(recording, steps, outputs), start=1):
        labels[slot] = names.unique(f"k{i}")
    produced = [step.out for step in steps if isinstance(step, Instruction)]
    output_slots = [slot for kind, slot in outputs if kind == "s"]
    finals = ["value"] + (["tangent"] if recording.tangents else [f"g_{n}" for n in inputs])
    finals = finals if results is None else list(results)
    renamed = {
        slot: final
        for slot, final in zip([kind == "s" and slot for kind, slot in outputs], finals)
        if slot is not False and slot in produced and output_slots.count(slot) == 1
    }
    for k, step in enumerate((s for s in steps if isinstance(s, Instruction)), start=1):
        base = renamed.get(step.out) or f"v{k}_{_function_name(step)}"
        labels[step.out] = names.unique(base)
    return labels


#: Scalar kernels written as Python's operators: ``(symbol, operands)``.
_INFIX = {
    operator.add: ("+", 2),
    operator.sub: ("-", 2),
    operator.mul: ("*", 2),
    operator.truediv: ("/", 2),
    operator.neg: ("-", 1),
}


class _Writer:
    """The lines of one replay function, over one namespace."""

    def __init__(self, recording: Recording, steps: list, outputs: list, kernel, inputs, results):
        self.recording, self.outputs, self.kernel = recording, outputs, kernel
        # Named before any value, so that no argument or value takes these names.
        self.namespace = {
            "GuardFlip": GuardFlip,
            "_copy": np.array,
            "array": np.array,
            "_unshared": _unshared,  # bound to what the program holds in generate
        }
        self.names = _Names(self.namespace)
        inputs = [*inputs, *(f"a{i}" for i in range(len(inputs), len(recording.inputs)))]
        self.labels = _value_names(recording, steps, outputs, inputs, self.names, results)
        self.temporaries: dict[str, str] = {}
        # Expressions of values written into their one reader: slot -> (text, depth).
        self.merged: dict[int, tuple[str, int]] = {}
        self.depth = 0  # the deepest merged expression the line being written reads

    def operand(self, spec, base: str = "c") -> str:
        kind, value = spec
        if kind == "s":
            merged = self.merged.pop(value, None)
            if merged is None:
                return self.labels[value]
            text, depth = merged
            self.depth = max(self.depth, depth)
            return text
        return self.names.constant(_to_scalar(value) if self.kernel else value, base)

    def function(self, fn, base: str) -> str:
        """The name ``fn`` has in the replay's namespace."""
        return self.names.function(fn, base)

    def temporary(self, base: str) -> str:
        """A local name for a value the generated code uses within one line."""
        if base not in self.temporaries:
            self.temporaries[base] = self.names.unique(base)
        return self.temporaries[base]

    def inputs(self, steps: list) -> list[str]:
        """Scalar programs take the numbers out; arrays ``f`` reads are read as they are now."""
        labels, lines = self.labels, []
        if self.kernel:
            lines = [f"{labels[slot]} = {labels[slot]}.item()" for slot in self.recording.inputs]
        for slot in externals_read(self.recording, steps, self.outputs):
            array = self.names.unique(f"_{labels[slot]}")
            self.namespace[array] = self.recording.externals[slot]
            read = f"{array}.item()" if self.kernel else array
            lines.append(f"{labels[slot]} = {read}  # not an argument: read as it is at replay")
        return lines

    def guard(self, step: Guard) -> list[str]:
        guard, value = self.names.unique("guard"), self.labels[step.slot]
        self.namespace[guard] = step
        convert = _scalar_convert(step.convert) if self.kernel else step.convert
        test = self.names.function(convert, f"as{getattr(step.convert, '__name__', '_value')}")
        return [
            f"# guard: {step.what} of {value} was {step.expected!r}",
            f"if {test}({value}) != {guard}.expected: raise GuardFlip({guard})",
        ]

    def instruction(self, step: Instruction) -> str:
        if self.kernel:
            return f"{self.labels[step.out]} = {self.expression(step)[0]}"
        if isinstance(step.fn, Form):
            return step.fn.write(self, self.labels[step.out], step.args, dict(step.kwargs))
        fn = self.names.function(step.fn, _function_name(step))
        return f"{self.labels[step.out]} = {self._call(fn, step, list(step.kwargs))}"

    def expression(self, step: Instruction) -> tuple[str, bool]:
        """A scalar instruction's right-hand side, and whether it is one term (a name,
        a literal or a call) that needs no parentheses inside another expression."""
        kernel = self.kernel(step)
        # Numbers are never written in place: a scalar kernel takes no out=.
        keywords = [(k, v) for k, v in step.kwargs if k == "cond" or (v[0] == "s" and k != "out")]
        if not keywords and kernel in _INFIX and len(step.args) == _INFIX[kernel][1]:
            # Python's own operators on floats: what operator.mul and friends call.
            symbol = _INFIX[kernel][0]
            operands = [self.operand(a) for a in step.args]
            if len(operands) == 1:
                return f"{symbol}{operands[0]}", False
            return f"{operands[0]} {symbol} {operands[1]}", False
        if not keywords and kernel is keep_number:
            operand = self.operand(step.args[0])
            return operand, operand.isidentifier()
        base = step.op.name if step.kind == "op" else _function_name(step)
        return self._call(self.names.function(kernel, base), step, keywords), True

    def _call(self, fn: str, step: Instruction, keywords: list) -> str:
        arguments = [self.operand(a) for a in step.args]
        arguments += [f"{k}={self.operand(spec, k)}" for k, spec in keywords]
        return f"{fn}({', '.join(arguments)})"

    def merge(self, step: Instruction) -> str | None:
        """Keep a scalar instruction's expression for its one reader to write, as a
        hand-written adjoint nests its terms (to :data:`MERGE_DEPTH` levels); or, past
        that depth, its line."""
        self.depth = 0
        text, term = self.expression(step)
        if self.depth >= MERGE_DEPTH:
            return f"{self.labels[step.out]} = {text}"
        self.merged[step.out] = (text if term else f"({text})", self.depth + 1)
        return None

    def results(self) -> list[str]:
        """The outputs: numbers back into arrays, constants as arrays of their own."""
        results = []
        for kind, value in self.outputs:
            if self.kernel:  # the number back into an array: one call, nested to its shape
                like = np.asarray(self.recording.values[value] if kind == "s" else value)
                dtype = self.names.constant(like.dtype, "dtype")
                number = "[" * like.ndim + self.operand((kind, value)) + "]" * like.ndim
                results.append(f"array({number}, {dtype})")
            elif kind == "c":
                results.append(f"_copy({self.operand((kind, value))})")
            else:
                results.append(self.operand((kind, value)))
        return results


def _root(array: ndarray) -> ndarray:
    """The array that owns ``array``'s memory (itself, unless it is a view)."""
    while isinstance(array.base, ndarray):
        array = array.base
    return array


def _unshared(held: frozenset, outputs: tuple, inputs: tuple, kept: tuple = ()) -> tuple:
    """``outputs``, each array copied where the caller must not share it: read-only
    (a broadcast, numpy's imaginary part of a real array), or memory an input, an
    array the program holds (``held``: ids of constants and of arrays ``f`` reads),
    an earlier output or a value ``kept`` for a later program owns, so that writing
    into a result never changes anything else. Which outputs are views depends on
    the strides of the arrays passed, so it is found at each call. ``outputs``
    itself is returned where nothing is copied.

    >>> x = np.arange(4.0)
    >>> a, b, c = _unshared(frozenset(), (x[1:], np.ones(2), np.broadcast_to(1.0, (2,))), (x,))
    >>> np.shares_memory(a, x), b.base is None, c.flags.writeable
    (False, True, True)
    >>> y = np.ones(3)  # a kept value may view a result: the result is handed out copied
    >>> _unshared(frozenset(), (y,), (), (y[1:],))[0] is y
    False
    """
    owners = None  # the memory of the inputs and kept values: walked for a view
    passed = None  # what a result owning its memory may be: an input, or a kept value's base
    earlier = set()
    fresh = outputs
    for k, out in enumerate(outputs):
        if type(out) is not ndarray:
            continue
        if out.base is None:
            if passed is None:
                passed = {*map(id, inputs), *(id(_root(a)) for a in kept)}
            root = id(out)
            shared = root in passed
        else:
            if owners is None:
                owners = {id(_root(a)) for a in (*inputs, *kept) if type(a) is ndarray}
            root = id(_root(out))
            shared = root in owners
        if shared or root in earlier or root in held or not out.flags.writeable:
            if fresh is outputs:
                fresh = list(outputs)
            fresh[k] = out = out.copy()
            root = id(out)
        earlier.add(root)
    return outputs if fresh is outputs else tuple(fresh)


def _fresh(steps: list, outputs: list) -> bool:
    """Whether every output is memory made at each call, each its own: a numpy ufunc's
    result (a new array, or a numpy scalar), an array the program allocated (zeros to
    scatter into), or such memory written into whole (``out=``, slice writes into it)
    and handed on; or a constant's copy. No such output can share memory with an
    input, the program or another output, nor be read-only, so :func:`_unshared` has
    nothing to look at. (The memory passes write only into memory the program made.)

    >>> add = Instruction("op", np.add, (("s", 0), ("c", 1.0)), (), 1)
    >>> _fresh([add], [("s", 1), ("c", 2.0)]), _fresh([add], [("s", 1), ("s", 1)])
    (True, False)
    >>> _fresh([add], [("s", 0)])  # an input, as it was passed
    False
    >>> into = Instruction("op", np.multiply, (("s", 1), ("s", 1)), (("out", ("s", 1)),), 2)
    >>> _fresh([add, into], [("s", 2)]), _fresh([add, into], [("s", 1), ("s", 2)])
    (True, False)
    """
    made: dict[int, Instruction | None] = {}
    for step in steps:
        if isinstance(step, Instruction):  # a slot made twice is no one step's
            made[step.out] = None if step.out in made else step
    owners = [_made_by(made, slot) for kind, slot in outputs if kind == "s"]
    return None not in owners and len(set(owners)) == len(owners)


#: Lowered forms whose result is the array passed as ``out``, written into.
_HANDED_ON = (PUT, ADD_AT, ALIAS)


def _made_by(made: dict, slot: int) -> int | None:
    """The slot whose step made ``slot``'s memory at this call, or None where it may not
    have (an input, a view, a function that may return one of its operands)."""
    for _ in range(len(made) + 1):
        step = made.get(slot)
        if step is None:
            return None
        into = dict(step.kwargs).get("out")
        if step.fn in _HANDED_ON or (type(step.fn) is np.ufunc and into is not None):
            if into[0] != "s":
                return None
            slot = into[1]  # the memory it was written into
        elif step.fn in (ALLOCATE, SCATTER) or type(step.fn) is np.ufunc:
            return slot
        else:
            return None
    return None


def generate(
    recording: Recording,
    steps: list,
    outputs: list,
    *,
    kernel=None,
    inputs=(),
    forward_steps=0,
    results=None,
    residuals=0,
    residual_inputs=0,
):
    """The replay function's source and the function itself.

    ``kernel(instruction)`` gives the scalar kernel of each instruction for a
    program on Python numbers (``None``: the array program); ``inputs`` name
    the arguments and ``results`` the outputs; the reverse sweep starts at step
    ``forward_steps``; the last ``residuals`` outputs are returned as they are
    (for another program to read), the others never sharing memory with anything;
    the last ``residual_inputs`` inputs are such values an earlier program kept.
    """
    writer = _Writer(recording, steps, outputs, kernel, inputs, results)
    lines = writer.inputs(steps)
    last = {} if kernel else last_uses([(None, step) for step in steps], outputs)
    kept = set(recording.inputs) | {slot for kind, slot in outputs if kind == "s"}
    mergeable = _read_once(steps[forward_steps:], outputs) if kernel else set()
    for position, step in enumerate(steps):
        if position == forward_steps and position:
            lines.append("# reverse sweep")
        if isinstance(step, Guard):
            lines += writer.guard(step)
        elif step.out in mergeable and position >= forward_steps:
            line = writer.merge(step)
            if line is not None:
                lines.append(line)
        else:
            lines.append(writer.instruction(step))
        dead = [s for s in reads(step) if last.get(s) == position and s not in kept]
        if kernel is None and isinstance(step, Instruction) and step.out not in last:
            dead.append(step.out)  # computed into another array's memory: nobody reads it
        if dead:
            lines.append(f"del {', '.join(dict.fromkeys(writer.labels[s] for s in dead))}")
    returned = _returned(writer, steps, outputs, residuals, residual_inputs)
    header = "# forward pass with tangents" if recording.tangents else "# forward pass"
    body = "\n".join("    " + line for line in [*writer.names.described, header, *lines])
    params = ", ".join(writer.labels[slot] for slot in recording.inputs)
    source = f"def replay({params}):\n{body}\n    return {returned}\n"
    exec(compile(source, "<adcompare.compile>", "exec"), writer.namespace)
    return source, writer.namespace["replay"]


def _returned(writer: _Writer, steps: list, outputs: list, residuals: int, inputs_kept: int):
    """What the replay returns: its results, checked by :func:`_unshared` unless each is
    an array the call made, then the ``residuals`` values kept for a later program."""
    results = writer.results()  # first: the constants they name are described
    given, passed_on = results[: len(results) - residuals], results[len(results) - residuals :]
    if writer.kernel or _fresh(steps, outputs):  # every output is an array made by this call
        return _tuple([*given, *passed_on])
    # A result also kept for the later program is copied: writing into it must not change
    # what that program reads. Values an earlier program kept (``inputs_kept``) share
    # memory with nothing the caller holds but through the inputs, whose memory is looked at.
    slots = writer.recording.inputs
    inputs = _tuple([writer.labels[s] for s in slots[: len(slots) - inputs_kept]])
    kept = f", {_tuple(passed_on)}" if passed_on else ""
    returned = f"_unshared({_tuple(given)}, {inputs}{kept})" if given else "()"
    returned += f" + {_tuple(passed_on)}" if passed_on else ""
    held = frozenset(id(_root(v)) for v in writer.namespace.values() if type(v) is ndarray)
    writer.namespace["_unshared"] = functools.partial(_unshared, held)
    return returned


def _tuple(items: list[str]) -> str:
    return f"({', '.join(items)},)" if items else "()"


#: How deeply the scalar reverse sweep nests the expressions of values read once.
MERGE_DEPTH = 3


def _read_once(steps: list, outputs: list) -> set[int]:
    """The slots ``steps`` compute that exactly one later instruction reads: the
    scalar program writes such a value inside its reader's line. A value a guard or
    an output reads keeps its name."""
    counts: dict[int, int] = {}
    for step in steps:
        for slot in reads(step):  # a guard's read counts twice: never merged
            counts[slot] = counts.get(slot, 0) + (1 if isinstance(step, Instruction) else 2)
    for kind, slot in outputs:
        if kind == "s":
            counts[slot] = 2
    produced = {step.out for step in steps if isinstance(step, Instruction)}
    return {slot for slot in produced if counts.get(slot) == 1}


def _to_scalar(value):
    if type(value) in (bool, int, float):
        return value
    value = np.asarray(value)
    return bool(value.item()) if value.dtype.kind == "b" else float(value.item())


def _scalar_convert(convert):
    return (
        convert
        if convert in (bool, float, int, np.min_scalar_type) or isinstance(convert, DecisionTest)
        else keep_number
    )
