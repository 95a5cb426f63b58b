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

import math
import operator

import numpy as np

from adcompare.engines.replay.passes import PASSES, eliminate_dead_code, optimise
from adcompare.engines.replay.record import Guard, Instruction, Recording, bind, shapes
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

    def __init__(self, recording: Recording, steps: list, outputs: list, passes=PASSES):
        forward = {id(step) for step in recording.steps[: recording.forward_end]}
        tagged = [("forward" if id(step) in forward else "reverse", step) for step in steps]
        tagged, outputs, self.pass_stats = optimise(
            recording, tagged, list(outputs), (*passes, eliminate_dead_code)
        )
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
        self.source, array_run = _generate(recording, self.steps, outputs, scalar=False)
        self.run = array_run
        if self.scalar:
            self.source, scalar_run = _generate(recording, self.steps, outputs, scalar=True)
            self.run = _with_fallback(scalar_run, array_run)

    def listing(self, names: list[str] | None = None) -> str:
        """The program as readable lines: the forward pass, then the reverse sweep.

        >>> import numpy as np
        >>> import adcompare as ad
        >>> program = ad.compile(lambda x: ad.sum(ad.sin(x) * 3.0), np.zeros(2)).program
        >>> print(program.listing(["x"]))
        forward pass:
          v1 = sin(x)
          v2 = multiply(v1, 3.0)
          v3 = sum(v2, axis=(-1,), keepdims=False)
        reverse sweep:
          v4 = cos(x)
          v5 = multiply(<array (2,)>, v4)
        returns v3, v5
        """
        labels = {slot: name for slot, name in zip(self._inputs, names or [])}
        labels.update((slot, f"a{i}") for i, slot in enumerate(self._inputs) if slot not in labels)
        lines = []
        for i, (slot, value) in enumerate(self._externals.items(), start=1):
            labels[slot] = f"k{i}"
            lines.append(f"k{i} = {_describe({}, ('c', value))}: not an argument, read at replay")
        named = len(labels)
        lines.append("forward pass with tangents:" if self.tangents else "forward pass:")
        for index, step in enumerate(self.steps):
            if index == self.forward_steps:
                lines.append("reverse sweep:")
            if isinstance(step, Guard):
                lines.append(
                    f"  guard: {step.what} of {_label(labels, step.slot)} is {step.expected!r}"
                )
                continue
            labels[step.out] = f"v{len(labels) - named + 1}"
            operands = [_describe(labels, spec) for spec in step.args]
            operands += [f"{k}={_describe(labels, spec)}" for k, spec in step.kwargs]
            lines.append(f"  {labels[step.out]} = {_call(step, operands)}")
        if self.forward_steps == len(self.steps) and len(self._outputs) > 1 and not self.tangents:
            lines.append("reverse sweep: (nothing to compute)")
        lines.append("returns " + ", ".join(_describe(labels, spec) for spec in self._outputs))
        return "\n".join(lines)


def _label(labels: dict, slot: int) -> str:
    return labels.get(slot, f"s{slot}")


def _describe(labels: dict, spec) -> str:
    kind, value = spec
    if kind == "s":
        return _label(labels, value)
    if isinstance(value, np.ndarray) and value.size > 1:
        return f"<array {value.shape}>"
    return repr(value.item() if isinstance(value, (np.ndarray, np.generic)) else value)


def _call(step: Instruction, operands: list[str]) -> str:
    if step.kind == "op":
        return f"{step.op.name}({', '.join(operands)})"
    base, method = step.base
    if method == "pack":  # an index or a list rebuilt from the values it holds
        return f"({', '.join(operands)},)" if base is tuple else f"[{', '.join(operands)}]"
    if method == "getitem":
        return f"{operands[0]}[{operands[1]}]"
    name = getattr(base, "__name__", str(base))
    name = f"np.{name}" if method in ("__call__", "function") else f"np.{name}.{method}"
    return f"{name}({', '.join(operands)})"


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


def _generate(recording: Recording, steps: list, outputs: list, *, scalar: bool):
    namespace = {"GuardFlip": GuardFlip, "_copy": np.array, "_array": _to_array}
    lines = []

    def operand(spec) -> str:
        kind, value = spec
        if kind == "s":
            return f"s{value}"
        name = f"c{len(namespace)}"
        namespace[name] = _to_scalar(value) if scalar else value
        return name

    params = ", ".join(f"a{i}" for i in range(len(recording.inputs)))
    for i, slot in enumerate(recording.inputs):
        lines.append(f"s{slot} = a{i}.item()" if scalar else f"s{slot} = a{i}")
    for slot in _externals_read(recording, steps, outputs):
        # Read as the array is now: f may have changed it since the recording.
        namespace[f"e{slot}"] = recording.externals[slot]
        lines.append(f"s{slot} = e{slot}.item()" if scalar else f"s{slot} = e{slot}")
    for step in steps:
        if isinstance(step, Guard):
            g = f"g{len(namespace)}"
            namespace[g] = step
            namespace[g + "_convert"] = _scalar_convert(step.convert) if scalar else step.convert
            lines.append(f"if {g}_convert(s{step.slot}) != {g}.expected: raise GuardFlip({g})")
            continue
        fn = f"f{len(namespace)}"
        if scalar:
            namespace[fn] = _scalar_kernel(step)
            dynamic = [(k, spec) for k, spec in step.kwargs if spec[0] == "s" or k == "cond"]
        else:
            namespace[fn] = bind(step)
            dynamic = [(k, spec) for k, spec in step.kwargs if spec[0] == "s"]
        arguments = [operand(a) for a in step.args] + [f"{k}={operand(s)}" for k, s in dynamic]
        lines.append(f"s{step.out} = {fn}({', '.join(arguments)})")
    results = []
    input_slots = set(recording.inputs) | recording.externals.keys()
    for kind, value in outputs:
        if scalar:
            shape_dtype = np.asarray(recording.values[value] if kind == "s" else value)
            name = f"o{len(namespace)}"
            namespace[name] = (shape_dtype.shape, shape_dtype.dtype)
            results.append(f"_array({operand((kind, value))}, {name})")
        elif kind == "c" or value in input_slots:
            results.append(f"_copy({operand((kind, value))})")
        else:
            results.append(operand((kind, value)))
    body = "\n".join("    " + line for line in lines) or "    pass"
    source = f"def replay({params}):\n{body}\n    return ({', '.join(results)},)\n"
    exec(compile(source, "<adcompare.compile>", "exec"), namespace)
    return source, namespace["replay"]


def _to_scalar(value):
    if isinstance(value, (bool, int, float)):
        return value
    value = np.asarray(value)
    return bool(value.item()) if value.dtype.kind == "b" else float(value.item())


def _scalar_convert(convert):
    return convert if convert in (bool, float, int) else keep_number


def _to_array(value, shape_dtype):
    shape, dtype = shape_dtype
    return np.full(shape, value, dtype=dtype)


def build(recording: Recording, passes=PASSES) -> tuple[Program, Program]:
    """The forward-only program (the value) and the full one (value and gradients).

    ``passes`` are the optimising passes to run (:mod:`.passes`); dead code is
    always removed.
    """
    forward_steps = recording.steps[: recording.forward_end]
    forward = Program(recording, forward_steps, recording.outputs[:1], passes)
    full = Program(recording, recording.steps, recording.outputs, passes)
    return forward, full
