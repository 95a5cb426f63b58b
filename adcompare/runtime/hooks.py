"""Hooks a recorder installs in dispatch.

While ``adcompare.compile`` records, the op set's dispatch hands every op
whose arguments hold no box to the innermost hook: it sees ops applied to
plain arrays computed from traced values (a mask given to ``where``). A hook
returns the op's result, or ``None`` to let dispatch compute it.

A composite whose record declares decisions taken from values (the
permutation ``sort`` applies) is called through the innermost decision hook,
``hook(decisions, arguments, call)``: ``arguments`` maps the composite's
parameter names to what it was given, and ``call()`` runs it. The recorder
checks there that each decision is recomputed at replay, or guards it.
"""

from __future__ import annotations

from collections.abc import Callable

#: The installed hooks, innermost last.
RECORDING_HOOKS: list[Callable] = []

#: The installed decision hooks, innermost last.
DECISION_HOOKS: list[Callable] = []
