"""What a recording is made of: instructions, guards, and the recording that holds them."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

from adcompare.ops.registry import OpDef
from adcompare.runtime.buffers import memory_key

__all__ = ["CompileError", "Guard", "Instruction", "Recording"]


class CompileError(TypeError):
    """``f`` did something a recorded program cannot replay faithfully."""


@dataclass(frozen=True)
class Instruction:
    """``out = fn(*args, **kwargs)``; operands are ``("s", slot)`` or ``("c", value)``.

    ``kind`` is ``"op"`` for a primitive of the op set (``op`` names it),
    ``"numpy"`` for a numpy call on a value that left the tape (a mask, a
    shift), which carries no derivative; ``base`` is then ``(function,
    method)``, with method ``"pack"`` for an index tuple or a list rebuilt
    from slots.

    ``shares`` names the operands (positions in ``args``, names in
    ``kwargs``) whose memory the recorded result shares, as found on the
    recorded values before any pass ran: a view's base. The passes rename
    operands (common subexpressions) but keep their places, so it stays true
    where the recorded values no longer say it. ``None`` until noted.
    """

    kind: str
    fn: object
    args: tuple
    kwargs: tuple
    out: int
    op: OpDef | None = None
    base: object = None
    shares: tuple | None = None


@dataclass(frozen=True)
class Guard:
    """Replay is valid only while ``convert(slot's value) == expected``."""

    convert: object
    slot: int
    expected: object
    what: str


@dataclass
class Recording:
    """A recorded program: inputs, instructions and guards in order, outputs.

    ``tangents`` says the program carries tangent lanes (forward mode).
    ``externals`` maps the slots of arrays ``f`` read without receiving them
    as arguments to those arrays: a replay reads them as they are then.
    ``boxes`` keeps the traced values alive while recording, since slots are
    found by memory address (``addresses``: ``(slot, array)``, the array kept
    alive too: ``np.asarray`` of a numpy scalar is new memory nothing else holds)
    and a freed value's address could be reused.
    """

    inputs: list = field(default_factory=list)
    steps: list = field(default_factory=list)
    values: dict = field(default_factory=dict)
    outputs: list = field(default_factory=list)
    forward_end: int = 0
    externals: dict = field(default_factory=dict)
    tangents: bool = False
    boxes: dict = field(default_factory=dict, repr=False)
    addresses: dict = field(default_factory=dict, repr=False)
    guarded: set = field(default_factory=set, repr=False)
    applying: bool = False
    sweeping: bool = False
    thread: int = field(default_factory=threading.get_ident, repr=False)

    def remember(self, array, slot: int) -> None:
        """Note that ``array``'s memory holds ``slot``'s value (see :meth:`slot_at`)."""
        self.addresses[memory_key(array)] = (slot, array)  # the array kept alive

    def slot_at(self, array) -> int | None:
        """The slot whose value ``array``'s memory holds (a full view of it), if any."""
        entry = self.addresses.get(memory_key(array))
        return None if entry is None else entry[0]

    def new_slot(self, value) -> int:
        slot = len(self.values)
        self.values[slot] = value
        return slot
