"""Hooks a recorder installs in dispatch.

While ``adcompare.compile`` records, the op set's dispatch hands every op
whose arguments hold no box to the innermost hook: it sees ops applied to
plain arrays computed from traced values (a mask given to ``where``). A hook
returns the op's result, or ``None`` to let dispatch compute it.
"""

from __future__ import annotations

from collections.abc import Callable

#: The installed hooks, innermost last.
RECORDING_HOOKS: list[Callable] = []
