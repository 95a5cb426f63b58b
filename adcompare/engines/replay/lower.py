"""The last pass: how each instruction is written in the generated code.

A replay of many small arrays (an LSTM's gates) costs about what numpy spends
per call, and every Python function between the generated line and numpy adds
to it. :func:`lower` rewrites instructions into forms that compute the same
numbers with less in between:

- indexing (the ``getitem`` op, or ``[]`` on a value that left the tape) is a
  subscript, ``x[index]``, with no call;
- a scatter at a basic index (integers and step-1 slices) is ``zeros`` and a
  slice assignment. Where nothing else reads the scattered part and exact
  arithmetic ufuncs computed it, the scattered array is allocated where the
  part's memory was, and they compute it in its slice
  (``subtract(1.0, x, out=total[index])``): no copy, one large array fewer;
- an in-place accumulation
  (:func:`~adcompare.engines.replay.memory.add_at`) is ``out[index] += part``,
  through a view; where a scatter's parts land on disjoint boxes (an MLP's
  gradient, one box per weight matrix), the array is allocated with zeros only
  where no part lands, and each part is put in place plus ``0.0``, as the sum
  of scatters adds it (no zero fill, no read of zeros); a matrix product so put
  (a weight matrix's cotangent) is computed in its place,
  ``matmul(x, y, total[index].reshape(shape))``, and the zero added there;
- ``sum`` and ``concatenate`` call numpy's ``add.reduce`` and ``concatenate``
  directly, and ``reshape`` and ``transpose`` the array's method, not through
  the op's wrapper;
- a number a ufunc reads (``0.5 * v``, ``1.0 - v``) is a 0-d array of the
  result's dtype, which numpy need not convert from a Python number at every
  call (it converts that number to the same dtype: the results are the same).

A :class:`Form` is still a function (calling it computes the instruction's
value), so a program is the same program whether or not it is lowered.
"""

from __future__ import annotations

import dataclasses
import functools
import operator
from collections.abc import Callable

import numpy as np

from adcompare.engines.replay import memory
from adcompare.engines.replay.memory import _box, _difference, _intersection, add_at, writes_into
from adcompare.engines.replay.record import Instruction, Recording

__all__ = ["Form", "lower"]


@dataclasses.dataclass(frozen=True)
class Form:
    """A function the generated code writes as statements rather than calls.

    ``write(code, out, args, kwargs)`` gives the line: ``code.operand(spec)``
    is the source of an operand, ``code.function(fn, base)`` the name of a
    function in the replay's namespace; ``out`` names the result.
    """

    name: str
    function: Callable
    write: Callable

    def __call__(self, *args, **kwargs):
        return self.function(*args, **kwargs)


def _write_subscript(code, out: str, args: tuple, kwargs: dict) -> str:
    value, *index = list(args) + list(kwargs.values())
    return f"{out} = {code.operand(value)}[{code.operand(index[0], 'index')}]"


def _allocate(shape, dtype, outside):
    """Zeros, or (``outside`` given) an empty array with zeros in those boxes only."""
    if outside is None:
        return np.zeros(shape, dtype)
    result = np.empty(shape, dtype)
    for box in outside:
        result[box] = 0
    return result


def _scatter(part, index, shape, dtype, outside, zero=None):
    result = _allocate(shape, dtype, outside)
    if zero is not None:
        return _put(part, index, result, zero)
    result[index] = part
    return result


def _put(part, index, out, zero):
    """``out[index] = part + zero``: a part scattered where only zeros were, as a sum
    of scatters adds it (``-0.0`` becomes ``+0.0``); ``zero`` is ``0.0`` of ``out``'s dtype."""
    items = index if isinstance(index, tuple) else (index,)
    np.add(part, zero, out=out[(*items, Ellipsis)])
    return out


def _write_put(code, out: str, args: tuple, kwargs: dict) -> str:
    total = code.operand(kwargs["out"])
    into = f"{total}[{_view_index(code, kwargs['index'][1])}]"
    add = code.function(np.add, "add")
    zero = code.operand(kwargs["zero"], "zero")
    return f"{add}({code.operand(args[0])}, {zero}, {into}); {out} = {total}"


def _write_allocate(code, out: str, args: tuple, kwargs: dict) -> str:
    dtype = code.operand(kwargs["dtype"], "dtype")
    shape, outside = kwargs["shape"][1], kwargs["outside"][1]
    make = code.function(*((np.zeros, "zeros") if outside is None else (np.empty, "empty")))
    lines = [f"{out} = {make}({shape!r}, {dtype})"]
    lines += [f"{out}[{code.operand(('c', box), 'box')}] = 0" for box in outside or ()]
    return "; ".join(lines)


def _write_scatter(code, out: str, args: tuple, kwargs: dict) -> str:
    lines = [_write_allocate(code, out, (), kwargs)]
    if "zero" in kwargs:
        into = f"{out}[{_view_index(code, kwargs['index'][1])}]"
        zero = code.operand(kwargs["zero"], "zero")
        lines.append(f"{code.function(np.add, 'add')}({code.operand(args[0])}, {zero}, {into})")
    else:
        lines.append(f"{out}[{code.operand(kwargs['index'], 'index')}] = {code.operand(args[0])}")
    return "; ".join(lines)


def _into_slice(*args, ufunc, out, index):
    items = index if isinstance(index, tuple) else (index,)
    return ufunc(*args, out=out[(*items, Ellipsis)])


def _view_index(code, index) -> str:
    """A basic index ending in ``...``: a view even where it picks one element."""
    items = index if isinstance(index, tuple) else (index,)
    return code.operand(("c", (*items, Ellipsis)), "index")


def _write_into_slice(code, out: str, args: tuple, kwargs: dict) -> str:
    # ``out`` passed by position: numpy parses no keyword (and ufunc.nin == len(args)).
    ufunc, index = kwargs["ufunc"][1], _view_index(code, kwargs["index"][1])
    operands = "".join(f"{code.operand(spec)}, " for spec in args)
    into = f"{code.operand(kwargs['out'])}[{index}]"
    return f"{out} = {code.function(ufunc, ufunc.__name__)}({operands}{into})"


def _write_add_at(code, out: str, args: tuple, kwargs: dict) -> str:
    # ``view = total[index]; add(view, part, view)`` is ``total[index] += part`` without
    # the assignment of the view to itself that ``+=`` on a subscript ends with.
    total, index = code.operand(kwargs["out"]), _view_index(code, kwargs["index"][1])
    view, add = code.temporary("_view"), code.function(np.add, "add")
    places = [(index, code.operand(args[0]))]
    places += [(_view_index(code, box), "0.0") for box in kwargs["outside"][1]]
    lines = [f"{view} = {total}[{where}]; {add}({view}, {part}, {view})" for where, part in places]
    return "; ".join([*lines, f"{out} = {total}", f"del {view}"])


def _write_call(function, base: str) -> Callable:
    def write(code, out: str, args: tuple, kwargs: dict) -> str:
        operands = [code.operand(spec) for spec in args]
        operands += [f"{k}={code.operand(spec, k)}" for k, spec in kwargs.items()]
        return f"{out} = {code.function(function, base)}({', '.join(operands)})"

    return write


def _method(name: str) -> Form:
    """``x.name(param)``: what the ops that call an array's method compute."""

    def write(code, out: str, args: tuple, kwargs: dict) -> str:
        (param,) = kwargs.values()
        return f"{out} = {code.operand(args[0])}.{name}({code.operand(param, name)})"

    return Form(name, lambda x, **kwargs: getattr(x, name)(*kwargs.values()), write)


def _write_concatenate(code, out: str, args: tuple, kwargs: dict) -> str:
    arrays = "".join(f"{code.operand(spec)}, " for spec in args)
    concatenate = code.function(np.concatenate, "concatenate")
    return f"{out} = {concatenate}(({arrays}), axis={code.operand(kwargs['axis'], 'axis')})"


def _product_into(x, y, *, out, index, shape, zero):
    items = index if isinstance(index, tuple) else (index,)
    product = np.matmul(x, y, out=out[items].reshape(shape))
    return np.add(product, zero, out=product)


def _write_product_into(code, out: str, args: tuple, kwargs: dict) -> str:
    into = f"{code.operand(kwargs['out'])}[{code.operand(kwargs['index'], 'index')}]"
    into += f".reshape({kwargs['shape'][1]!r})"
    x, y = (code.operand(spec) for spec in args)
    add, zero = code.function(np.add, "add"), code.operand(kwargs["zero"], "zero")
    matmul = code.function(np.matmul, "matmul")
    return f"{out} = {matmul}({x}, {y}, {into}); {add}({out}, {zero}, {out})"


def _write_alias(code, out: str, args: tuple, kwargs: dict) -> str:
    return f"{out} = {code.operand(kwargs['out'])}"


SUBSCRIPT = Form("subscript", lambda value, index: value[index], _write_subscript)
SCATTER = Form("scatter", _scatter, _write_scatter)
ALLOCATE = Form("allocate", _allocate, _write_allocate)
INTO_SLICE = Form("into_slice", _into_slice, _write_into_slice)
ADD_AT = Form("add_at", add_at, _write_add_at)
PUT = Form("put", _put, _write_put)
PRODUCT_INTO = Form("product_into", _product_into, _write_product_into)
ALIAS = Form("alias", lambda out: out, _write_alias)
SUM = Form(
    "sum",
    lambda x, axis, keepdims: np.add.reduce(x, axis=axis, keepdims=keepdims),
    _write_call(np.add.reduce, "sum"),
)
#: Ops whose value is ``np.asarray(x).method(param)``, by op name.
METHODS = {"reshape": _method("reshape"), "transpose": _method("transpose")}
CONCATENATE = Form(
    "concatenate",
    lambda *arrays, axis, sizes: np.concatenate(arrays, axis=axis),
    _write_concatenate,
)


def _is_array(recording: Recording, spec) -> bool:
    kind, value = spec
    value = recording.values.get(value) if kind == "s" else value
    return isinstance(value, np.ndarray)


def _lower_scatter(recording: Recording, step: Instruction) -> Instruction:
    keywords = dict(step.kwargs)
    index, shape = keywords.get("index"), keywords.get("shape")
    if index is None or index[0] != "c" or shape is None or shape[0] != "c":
        return step
    box = _box(index[1], tuple(shape[1]))
    result = recording.values.get(step.out)
    if box is None or not isinstance(result, np.ndarray) or result.ndim == 0:
        return step
    # Large results: write the box once and zero only the rest (as the op does).
    outside = None
    if result.nbytes >= memory.IN_PLACE_FROM:
        outside = _difference([(0, n) for n in result.shape], box)
    kwargs = (
        ("index", index),
        ("shape", ("c", tuple(result.shape))),
        ("dtype", ("c", result.dtype)),
        ("outside", ("c", outside)),
    )
    return dataclasses.replace(step, fn=SCATTER, kwargs=kwargs)


def _array_constants(recording: Recording, step: Instruction) -> Instruction:
    """A ufunc's constant numbers as 0-d arrays of the dtype every operand and the result have."""
    result = recording.values.get(step.out)
    if not isinstance(result, np.ndarray) or result.ndim == 0 or result.dtype.kind not in "fc":
        return step
    if not _has_own_loop(step.fn, result.dtype.char):
        return step
    slots = [spec for spec in step.args if spec[0] == "s"]
    if not slots or any(
        not isinstance(recording.values.get(slot), np.ndarray)
        or recording.values[slot].dtype != result.dtype
        for _, slot in slots
    ):
        return step
    args = tuple(
        _zero_dimensional(spec, result.dtype) if spec[0] == "c" else spec for spec in step.args
    )
    changed = any(new is not old for new, old in zip(args, step.args))
    return dataclasses.replace(step, args=args) if changed else step


@functools.cache
def _has_own_loop(ufunc: np.ufunc, char: str) -> bool:
    """Whether ``ufunc`` has a loop on that dtype alone (not ldexp's mixed one)."""
    return f"{char * ufunc.nin}->{char}" in ufunc.types


_CONSTANTS: dict = {}


def _zero_dimensional(spec: tuple, dtype: np.dtype) -> tuple:
    """A number as a 0-d array of ``dtype``, where it converts exactly; one read-only
    array per number and dtype, shared by every instruction reading it."""
    value = spec[1]
    if not (type(value) in (int, float) or isinstance(value, np.number)):
        return spec
    try:
        array = np.asarray(value, dtype=dtype)
    except (OverflowError, ValueError, TypeError):
        return spec
    if array.item() != value:  # inexact, or not a number: numpy's own conversion stays
        return spec
    key = (dtype.str, array.tobytes())
    shared = _CONSTANTS.get(key)
    if shared is None:
        array.flags.writeable = False
        shared = _CONSTANTS.setdefault(key, array)
    return ("c", shared)


def _lower_step(recording: Recording, step):
    if not isinstance(step, Instruction):
        return step
    if step.kind == "numpy":
        if step.fn is operator.getitem:
            return dataclasses.replace(step, fn=SUBSCRIPT)
        if step.fn is add_at:
            return dataclasses.replace(step, fn=ADD_AT)
        return step
    if step.fn is not step.op.value:
        return step  # already written into a buffer, or another form
    name = step.op.name
    if isinstance(step.fn, np.ufunc):
        return _array_constants(recording, step)
    if name == "getitem" and _is_array(recording, step.args[0]):
        return dataclasses.replace(step, fn=SUBSCRIPT)
    if name == "scatter_add" and writes_into(step) is None:
        return _lower_scatter(recording, step)
    if name in METHODS and _is_array(recording, step.args[0]) and len(step.kwargs) == 1:
        return dataclasses.replace(step, fn=METHODS[name])
    if name == "sum":
        return dataclasses.replace(step, fn=SUM)
    if name == "concatenate":
        return dataclasses.replace(step, fn=CONCATENATE)
    return step


#: Ufuncs whose every result is IEEE arithmetic's correctly rounded one, whatever loop
#: numpy picks for the memory it writes: they may write into a slice of another array.
_EXACT = frozenset({np.add, np.subtract, np.multiply, np.divide, np.negative})


def _chain(producers: dict, part: Instruction) -> list[Instruction] | None:
    """The instructions that wrote into ``part``'s memory, from the one that allocated it.

    ``None`` unless each is an exact ufunc (see ``_EXACT``) writing nowhere else.
    """
    chain = []
    while isinstance(part, Instruction):
        keywords = dict(part.kwargs)
        exact = part.kind == "op" and part.fn in _EXACT and part.fn is part.op.value
        if not exact or set(keywords) - {"out"}:
            return None
        chain.append(part)
        if "out" not in keywords:
            return chain[::-1]
        part = producers.get(keywords["out"][1])
    return None


def _scatter_into_chain(recording: Recording, producers: dict, scatter: Instruction):
    """Where a scatter's part can be computed in the scattered array: the chain of
    instructions that computed it, which then write into its slice; else ``None``."""
    chain = _chain(producers, producers.get(scatter.args[0][1]))
    if chain is None:
        return None
    result = recording.values[scatter.out]
    index = dict(scatter.kwargs)["index"][1]
    view = np.empty(result.shape, result.dtype)[index]
    values = [recording.values.get(step.out) for step in chain]
    if all(
        isinstance(v, np.ndarray) and v.dtype == view.dtype and v.shape == view.shape
        for v in values
    ):
        return chain
    return None


def _allocation(scatter: Instruction) -> Instruction:
    keywords = tuple((k, v) for k, v in scatter.kwargs if k in ("shape", "dtype", "outside"))
    return dataclasses.replace(scatter, fn=ALLOCATE, args=(), kwargs=keywords)


def _computed_in(step: Instruction, scatter: Instruction) -> Instruction:
    index = dict(scatter.kwargs)["index"]
    keywords = (("ufunc", ("c", step.fn)), ("out", ("s", scatter.out)), ("index", index))
    return dataclasses.replace(step, fn=INTO_SLICE, kwargs=keywords)


def _minus(piece: list, box: list) -> list:
    """Boxes covering ``piece`` outside ``box`` once each (see ``memory._difference``)."""
    shared = _intersection(piece, box)
    if shared is None:
        return [piece]
    parts = []
    for axis, ((lo, hi), (low, high)) in enumerate(zip(piece, box)):
        before, after = shared[:axis], piece[axis + 1 :]
        parts += [[*before, (lo, low), *after]] if lo < low else []
        parts += [[*before, (high, hi), *after]] if high < hi else []
    return parts


def _disjoint_sum(recording: Recording, scatter: Instruction, readers: dict, adders: dict):
    """The in-place sums (``add_at``) that add parts into ``scatter``'s array, in order,
    where every part lands on elements no other part touches; else ``None``."""
    result = recording.values[scatter.out]
    shape = result.shape
    keywords = dict(scatter.kwargs)
    boxes, chain, total = [_box(keywords["index"][1], shape)], [], scatter.out
    while readers.get(total) == 1 and total in adders:
        adder = adders[total]
        boxes.append(_box(dict(adder.kwargs)["index"][1], shape))
        chain.append(adder)
        total = adder.out
    parts = [scatter.args[0]] + [adder.args[0] for adder in chain]
    same = all(
        np.result_type(recording.values[p[1]] if p[0] == "s" else p[1]) == result.dtype
        for p in parts
    )
    apart = all(
        b is not None and all(_intersection(b, other) is None for other in boxes[i + 1 :])
        for i, b in enumerate(boxes)
    )
    return chain if chain and same and apart else None


def _sum_of_puts(recording: Recording, lowered: list, readers: dict) -> dict:
    """``{slot: instruction}`` for the scatters and in-place sums of disjoint parts,
    rewritten: the array is allocated with zeros only where no part lands, and each
    part is put in its place plus ``0.0`` (as the sum of scatters adds it), instead of
    scattered into zeros and added there."""
    adders = {
        dict(step.kwargs)["out"][1]: step
        for _, step in lowered
        if isinstance(step, Instruction) and step.fn is ADD_AT
    }
    rewritten = {}
    for _, step in lowered:
        if not (isinstance(step, Instruction) and step.fn is SCATTER):
            continue
        chain = _disjoint_sum(recording, step, readers, adders)
        if chain is None:
            continue
        shape = recording.values[step.out].shape
        keywords = dict(step.kwargs)
        pieces = [[(0, n) for n in shape]]
        for adder in [step, *chain]:
            box = _box(dict(adder.kwargs)["index"][1], shape)
            pieces = [part for piece in pieces for part in _minus(piece, box)]
        outside = tuple(tuple(slice(lo, hi) for lo, hi in piece) for piece in pieces)
        zero = _zero_dimensional(("c", 0.0), recording.values[step.out].dtype)
        keywords |= {"outside": ("c", outside), "zero": zero}
        rewritten[step.out] = dataclasses.replace(step, kwargs=tuple(keywords.items()))
        for adder in chain:
            kept = tuple((k, v) for k, v in adder.kwargs if k in ("index", "out")) + (
                ("zero", zero),
            )
            rewritten[adder.out] = dataclasses.replace(adder, fn=PUT, kwargs=kept)
    return rewritten


def _product_of(recording: Recording, put: Instruction, producers: dict, readers: dict):
    """The matrix product (and the reshape of it) that a put copies, where the product
    may be computed in the put's place: read by nothing else, of the box's size and
    dtype, and the box one contiguous block of memory; else ``None``."""
    part = put.args[0]
    if part[0] != "s" or readers.get(part[1]) != 1:
        return None
    product, reshape = producers.get(part[1]), None
    if isinstance(product, Instruction) and product.kind == "op" and product.op.name == "reshape":
        source = product.args[0]
        if source[0] != "s" or readers.get(source[1]) != 1:
            return None
        product, reshape = producers.get(source[1]), product
    if not (
        isinstance(product, Instruction)
        and product.kind == "op"
        and product.fn is np.matmul
        and not product.kwargs
    ):
        return None
    keywords = dict(put.kwargs)
    total = recording.values[keywords["out"][1] if put.fn is PUT else put.out]
    value = recording.values.get(product.out)
    box = np.empty(total.shape, total.dtype)[keywords["index"][1]]
    fits = isinstance(value, np.ndarray) and value.flags.c_contiguous and value.ndim >= 1
    fits = fits and value.dtype == total.dtype and value.size == box.size
    return (product, reshape) if fits and box.flags.c_contiguous else None


def _find_products(recording: Recording, lowered: list, readers: dict) -> tuple:
    """``(head, products, dropped)``: each put chain's slot's scatter, each product
    that may be computed in place with its put and scatter, and the reshapes between."""
    producers = {step.out: step for _, step in lowered if isinstance(step, Instruction)}
    head: dict[int, Instruction] = {}
    products: dict[int, tuple] = {}
    dropped: set[int] = set()
    for _, step in lowered:
        if isinstance(step, Instruction) and step.fn is SCATTER and "zero" in dict(step.kwargs):
            head[step.out] = step
        elif isinstance(step, Instruction) and step.fn is PUT:
            head[step.out] = head.get(dict(step.kwargs)["out"][1])
        else:
            continue
        found = _product_of(recording, step, producers, readers) if head[step.out] else None
        if found is not None:
            product, reshape = found
            products[product.out] = (step, head[step.out])
            if reshape is not None:
                dropped.add(reshape.out)
    return head, products, dropped


def _in_place_product(recording: Recording, step: Instruction, put, scatter) -> Instruction:
    keywords = dict(put.kwargs)
    into = (
        ("out", ("s", scatter.out)),
        ("index", keywords["index"]),
        ("shape", ("c", recording.values[step.out].shape)),
        ("zero", keywords["zero"]),
    )
    return dataclasses.replace(step, fn=PRODUCT_INTO, kwargs=into)


def _products_in_place(recording: Recording, lowered: list, readers: dict) -> list:
    """Matrix products a put copies into a gradient, computed in their place instead
    (``matmul(x, y, total[index].reshape(shape))``, then plus zero in place); the
    gradient is then allocated before the first such product, and its own part put
    where it was scattered."""
    head, products, dropped = _find_products(recording, lowered, readers)
    placed = {put.out for put, _ in products.values()}
    early: set[int] = set()  # scatters allocated at a product, before their own place
    emitted: set[int] = set()
    kept = []
    for sweep, step in lowered:
        if not isinstance(step, Instruction):
            kept.append((sweep, step))
            continue
        if step.out in dropped:
            continue
        emitted.add(step.out)
        if step.out in products:
            put, scatter = products[step.out]
            if scatter.out not in early and scatter.out not in emitted:
                early.add(scatter.out)
                kept.append((sweep, _allocation(scatter)))
            step = _in_place_product(recording, step, put, scatter)
        elif step.out in placed and step.fn is PUT:
            total = ("out", ("s", head[step.out].out))
            step = dataclasses.replace(step, fn=ALIAS, args=(), kwargs=(total,))
        elif step.out in placed:
            continue  # a scatter whose own part was a product: allocated at it
        elif step.out in early:  # allocated at a product: its own part is put now
            keywords = tuple((k, v) for k, v in step.kwargs if k in ("index", "zero"))
            out = recording.new_slot(recording.values[step.out])
            step = dataclasses.replace(
                step, fn=PUT, out=out, kwargs=(*keywords, ("out", ("s", step.out)))
            )
        kept.append((sweep, step))
    return kept


def lower(recording: Recording, steps: list, outputs: list) -> tuple[list, list]:
    """Rewrite each instruction into its cheapest form (see the module's docstring).

    A scatter whose part nothing else reads allocates its array where the part's
    memory was allocated, and the part is computed in its slice: the instructions
    that wrote into the part's memory (``out=``) then write there.
    """
    lowered = [(sweep, _lower_step(recording, step)) for sweep, step in steps]
    readers: dict[int, int] = {}
    for _, step in lowered:
        for slot in memory.reads(step):
            readers[slot] = readers.get(slot, 0) + 1
    for kind, slot in outputs:
        if kind == "s":
            readers[slot] = readers.get(slot, 0) + 2
    puts = _sum_of_puts(recording, lowered, readers)
    lowered = [(sweep, puts.get(getattr(step, "out", None), step)) for sweep, step in lowered]
    lowered = _products_in_place(recording, lowered, readers)
    producers = {step.out: step for _, step in lowered if isinstance(step, Instruction)}
    allocations: dict[int, Instruction] = {}  # a chain's first slot -> the scatter
    moved: set[int] = set()  # the scatters allocated earlier
    for _, step in lowered:
        if not (isinstance(step, Instruction) and step.fn is SCATTER and step.args[0][0] == "s"):
            continue
        if step.out in puts:
            continue
        chain = _scatter_into_chain(recording, producers, step)
        if readers.get(step.args[0][1]) == 1 and chain is not None:
            allocations[chain[0].out] = step
            moved.add(step.out)
    kept = []
    for sweep, step in lowered:
        if isinstance(step, Instruction) and step.out in allocations:
            scatter = allocations[step.out]
            kept.append((sweep, _allocation(scatter)))
            step = _computed_in(step, scatter)
        elif isinstance(step, Instruction) and step.fn is SCATTER and step.out in moved:
            continue
        kept.append((sweep, step))
    return kept, outputs
