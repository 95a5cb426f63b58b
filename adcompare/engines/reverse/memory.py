"""Tensors that share memory: views, aliases, and what a recorded in-place write updates.

A version counter is a list: ``[version]``, and once a view or a detached tensor
shares the memory, ``[version, aliases]`` with weak references to every tensor
made on it. The aliases are only read by in-place operations that are recorded.
"""

from __future__ import annotations

import weakref

import numpy as np

from adcompare.engines.reverse.grad_mode import is_grad_enabled
from adcompare.engines.reverse.tape import new_node
from adcompare.ops import getitem, reshape, where
from adcompare.ops.registry import raw, shape_of
from adcompare.runtime import cost

#: The alias list is pruned of dead references each time its length reaches a
#: power of two from here on, so a loop that takes views keeps it short.
PRUNE_ALIASES_FROM = 32


def view(source, op, params, next_nodes, values, out, versions, recording):
    """``Tensor``'s op dispatch's result when ``out`` is a view of ``source``'s memory.

    As the common path of ``apply_op`` (kept inline there, as it runs once per
    op), but the result shares ``source``'s version counter and is noted as
    one of its aliases.
    """
    counter = source._version
    level = source.level
    wrap = type(source)._wrap
    if not recording:
        result = wrap(out, level, version=counter)
    else:
        node = new_node(op, params, tuple(next_nodes), values, out, versions, level)
        if node.saved_out is not None:
            node.versions.append((counter, counter[0], -1))
        if cost.ACTIVE:
            cost.record_reverse(op.name, out, node.saved_bytes)
        result = wrap(out, level, node, True, counter)
    note_alias(source, result)
    return result


def note_alias(source, alias) -> None:
    """Remember that ``alias`` shares ``source``'s memory (and version counter)."""
    counter = source._version
    if len(counter) == 1:
        counter.append([weakref.ref(source)])
    aliases = counter[1]
    size = len(aliases)
    if size >= PRUNE_ALIASES_FROM and size & (size - 1) == 0:
        aliases[:] = [ref for ref in aliases if ref() is not None]
    aliases.append(weakref.ref(alias))


def _other_aliases(tensor) -> list:
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


def _follow_write(written, aliases: list) -> None:
    """Give each alias that overlaps ``written`` a graph that reads the write.

    After a recorded in-place write, an alias's memory holds some of the new
    values but its ``grad_fn`` still describes the old ones. Its graph becomes
    ``where(overlap, written's new elements, its old graph)``: the elements are
    matched by address, so slices, transposes and reshapes of any depth are
    followed without knowing how the alias was made (PyTorch keeps a chain of
    view functions instead).
    """
    addresses = _addresses(written._data).ravel()
    if addresses.size == 0:
        return
    order = np.argsort(addresses, kind="stable")
    ordered = addresses[order]
    new = type(written)._wrap(written._data, written.level, written.grad_fn, True, written._version)
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
        old = type(written)._wrap(
            alias._data, alias.level, alias.grad_fn, alias._requires_grad, alias._version
        )
        alias.grad_fn = where(overlap, elements, old).grad_fn
        alias._requires_grad = True


def write_in_place(tensor, compute, other):
    """``tensor op= other``: ``compute(tensor, other)`` written into ``tensor``'s memory."""
    grad_mode = is_grad_enabled()
    if grad_mode and tensor.is_leaf and tensor._requires_grad:
        raise RuntimeError(
            "a leaf tensor that requires grad is used in an in-place operation; "
            "update it inside `with adcompare.no_grad():` (as optimizers do), or "
            "write x = x + ... to make a new tensor"
        )
    recording = grad_mode and (
        tensor._requires_grad or (isinstance(other, type(tensor)) and other._requires_grad)
    )
    aliases = _other_aliases(tensor) if recording else []
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
        type(tensor)._wrap(
            np.array(tensor._data), tensor.level, tensor.grad_fn, tensor._requires_grad
        )
        if recording
        else tensor
    )
    result = compute(source, other)
    new = raw(result) if not isinstance(result, type(tensor)) else result._data
    if shape_of(new) != tensor.shape:
        raise ValueError(
            f"in-place operation would change the shape from {tensor.shape} to "
            f"{shape_of(new)}; use an out-of-place operation"
        )
    if isinstance(tensor._data, np.ndarray) and tensor._data.flags.writeable:
        np.copyto(tensor._data, new, casting="same_kind")
        tensor._version[0] += 1  # seen by every tensor sharing this memory
    else:
        # New memory: what was saved from the old memory is still intact, and
        # tensors that shared the old memory keep their counter and graph.
        tensor._data = np.array(new)
        tensor._version = [tensor._version[0] + 1]
        aliases = []
    if recording:
        tensor.grad_fn = result.grad_fn
        tensor._requires_grad = True
        if aliases:
            _follow_write(tensor, aliases)
    return tensor
