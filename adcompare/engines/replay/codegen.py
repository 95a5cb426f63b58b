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

import keyword
import math
import operator

import numpy as np

from adcompare.engines.replay.memory import last_uses, reads
from adcompare.engines.replay.passes import PASSES, optimise
from adcompare.engines.replay.record import Guard, Instruction, Recording, shapes
from adcompare.ops.registry import keep_number

__all__ = ["GuardFlip", "Program", "build"]


class GuardFlip(Exception):  # noqa: N818 - a signal, not an error the user sees
    """A guard no longer holds: the recording does not fit these inputs."""

    def __init__(self, guard: Guard):
        super().__init__(guard.what)
        self.guard = guard


def _sign(x):
    return float((x > 0) - (x < 0))


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
    np.sign: _sign,
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
    externals = _externals_read(recording, steps, outputs)
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

    ``run(*arrays)`` returns the outputs; it raises :class:`GuardFlip` when
    a guard no longer holds. ``source`` is the generated code, one line per
    instruction, to read.
    """

    def __init__(self, recording: Recording, steps: list, outputs: list, passes=PASSES, names=()):
        forward = {id(step) for step in recording.steps[: recording.forward_end]}
        tagged = [("forward" if id(step) in forward else "reverse", step) for step in steps]
        tagged, outputs, self.pass_stats = optimise(recording, tagged, list(outputs), passes)
        self._inputs = list(recording.inputs)
        self._outputs = outputs
        self.steps = [step for _, step in tagged]
        read = _externals_read(recording, self.steps, outputs)
        self._externals = {slot: recording.externals[slot] for slot in read}
        self.tangents = recording.tangents
        self.forward_steps = sum(sweep == "forward" for sweep, _ in tagged)
        self.instructions = sum(isinstance(s, Instruction) for s in self.steps)
        self.guards = sum(isinstance(s, Guard) for s in self.steps)
        self.scalar = _scalar_fits(recording, self.steps, outputs)
        layout = {"inputs": names, "forward_steps": self.forward_steps}
        self.source, array_run = _generate(recording, self.steps, outputs, scalar=False, **layout)
        self.run = array_run
        if self.scalar:
            self.source, scalar_run = _generate(
                recording, self.steps, outputs, scalar=True, **layout
            )
            self.run = _with_fallback(scalar_run, array_run)


def _externals_read(recording: Recording, steps: list, outputs: list) -> list[int]:
    """The slots of the arrays ``f`` reads without receiving them that ``steps`` use."""
    read = {slot for kind, slot in outputs if kind == "s"}
    for step in steps:
        if isinstance(step, Guard):
            read.add(step.slot)
        else:
            read.update(slot for kind, slot in step.args if kind == "s")
            read.update(slot for _, (kind, slot) in step.kwargs if kind == "s")
    return sorted(read & recording.externals.keys())


def _with_fallback(scalar_run, array_run):
    def run(*arrays):
        try:
            return scalar_run(*arrays)
        except (ArithmeticError, ValueError):
            return array_run(*arrays)

    return run


class _Names:
    """Unique names in the generated code: values, functions and constants."""

    def __init__(self, namespace: dict):
        self.namespace = namespace
        self.taken = set(namespace) | {"np"}
        self.functions: dict[int, str] = {}
        self.described: list[str] = []

    def unique(self, base: str) -> str:
        name, k = base, 2
        while name in self.taken or keyword.iskeyword(name) or not name.isidentifier():
            name, k = f"{base}_{k}", k + 1
        self.taken.add(name)
        return name

    def constant(self, value, base: str = "c") -> str:
        """A literal for Python numbers, tuples and strings; else a name bound to ``value``."""
        if _is_literal(value):
            return repr(value)
        name = self.unique(base)
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
    if isinstance(value, np.ndarray) and value.size > 1:
        return f"<{value.dtype} array of shape {value.shape}>"
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
        return step.op.name if step.fn is step.op.value else getattr(step.fn, "__name__", "op")
    base, method = step.base
    if method == "pack":
        return f"pack_{base.__name__}"
    if method in ("getitem", "add_at", "astype"):
        return method
    name = getattr(base, "__name__", "call")
    return f"np_{name}" if method in ("__call__", "function") else f"np_{name}_{method}"


def _value_names(recording, steps, outputs, inputs, names: _Names) -> dict:
    """Names for every slot: the arguments', ``v12_multiply``, ``value`` and ``g_x``."""
    labels = {slot: names.unique(name) for slot, name in zip(recording.inputs, inputs)}
    for i, slot in enumerate(_externals_read(recording, steps, outputs), start=1):
        labels[slot] = names.unique(f"k{i}")
    produced = [step.out for step in steps if isinstance(step, Instruction)]
    output_slots = [slot for kind, slot in outputs if kind == "s"]
    finals = ["value"] + (["tangent"] if recording.tangents else [f"g_{n}" for n in inputs])
    renamed = {
        slot: final
        for slot, final in zip([kind == "s" and slot for kind, slot in outputs], finals)
        if slot is not False and slot in produced and output_slots.count(slot) == 1
    }
    for k, step in enumerate((s for s in steps if isinstance(s, Instruction)), start=1):
        base = renamed.get(step.out) or f"v{k}_{_function_name(step)}"
        labels[step.out] = names.unique(base)
    return labels


def _generate(
    recording: Recording, steps: list, outputs: list, *, scalar: bool, inputs=(), forward_steps=0
):
    """The replay function's source and the function: one line per step, named values."""
    namespace = {"GuardFlip": GuardFlip, "_copy": np.array, "_array": _to_array}
    names = _Names(namespace)
    inputs = [*inputs, *(f"a{i}" for i in range(len(inputs), len(recording.inputs)))]
    labels = _value_names(recording, steps, outputs, inputs, names)
    params = [labels[slot] for slot in recording.inputs]
    lines = (
        [f"{labels[slot]} = {labels[slot]}.item()" for slot in recording.inputs] if scalar else []
    )
    for slot in _externals_read(recording, steps, outputs):
        # Read as the array is now: f may have changed it since the recording.
        array = names.unique(f"_{labels[slot]}")
        namespace[array] = recording.externals[slot]
        read = f"{array}.item()" if scalar else array
        lines.append(f"{labels[slot]} = {read}  # not an argument: read as it is at replay")

    def operand(spec, base="c") -> str:
        kind, value = spec
        if kind == "s":
            return labels[value]
        return names.constant(_to_scalar(value) if scalar else value, base)

    last = {} if scalar else last_uses([(None, step) for step in steps], outputs)
    kept = set(recording.inputs) | {slot for kind, slot in outputs if kind == "s"}
    for position, step in enumerate(steps):
        if position == forward_steps and position:
            lines.append("# reverse sweep")
        if isinstance(step, Guard):
            guard = names.unique("guard")
            namespace[guard] = step
            convert = _scalar_convert(step.convert) if scalar else step.convert
            test = names.function(convert, f"as{getattr(step.convert, '__name__', '_value')}")
            lines.append(f"# guard: {step.what} of {labels[step.slot]} was {step.expected!r}")
            lines.append(
                f"if {test}({labels[step.slot]}) != {guard}.expected: raise GuardFlip({guard})"
            )
        else:
            if scalar:
                fn = names.function(
                    _scalar_kernel(step),
                    step.op.name if step.kind == "op" else _function_name(step),
                )
                keywords = [(k, spec) for k, spec in step.kwargs if spec[0] == "s" or k == "cond"]
            else:
                fn = names.function(step.fn, _function_name(step))
                keywords = list(step.kwargs)
            arguments = [operand(a) for a in step.args] + [
                f"{k}={operand(spec, k)}" for k, spec in keywords
            ]
            lines.append(f"{labels[step.out]} = {fn}({', '.join(arguments)})")
        dead = [
            labels[slot] for slot in reads(step) if last.get(slot) == position and slot not in kept
        ]
        if dead:
            lines.append(f"del {', '.join(dict.fromkeys(dead))}")
    results = []
    input_slots = set(recording.inputs) | recording.externals.keys()
    for kind, value in outputs:
        if scalar:
            shape_dtype = np.asarray(recording.values[value] if kind == "s" else value)
            name = names.unique("shape")
            namespace[name] = (shape_dtype.shape, shape_dtype.dtype)
            results.append(f"_array({operand((kind, value))}, {name})")
        elif kind == "c" or value in input_slots:
            results.append(f"_copy({operand((kind, value))})")
        else:
            results.append(operand((kind, value)))
    header = "# forward pass with tangents" if recording.tangents else "# forward pass"
    body = "\n".join("    " + line for line in [*names.described, header, *lines])
    source = f"def replay({', '.join(params)}):\n{body}\n    return ({', '.join(results)},)\n"
    exec(compile(source, "<adcompare.compile>", "exec"), namespace)
    return source, namespace["replay"]


def _to_scalar(value):
    if type(value) in (bool, int, float):
        return value
    value = np.asarray(value)
    return bool(value.item()) if value.dtype.kind == "b" else float(value.item())


def _scalar_convert(convert):
    return convert if convert in (bool, float, int) else keep_number


def _to_array(value, shape_dtype):
    shape, dtype = shape_dtype
    return np.full(shape, value, dtype=dtype)


def build(recording: Recording, passes=PASSES, names=()) -> tuple[Program, Program]:
    """The forward-only program (the value) and the full one (value and gradients).

    ``passes`` are the optimising passes to run (:mod:`.passes`); dead code is
    always removed. ``names`` name the inputs in the generated source.
    """
    forward_steps = recording.steps[: recording.forward_end]
    forward = Program(recording, forward_steps, recording.outputs[:1], passes, names)
    full = Program(recording, recording.steps, recording.outputs, passes, names)
    return forward, full
