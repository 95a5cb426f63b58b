"""Checkpointing schedules for a loop of steps: binomial (revolve) and √n.

A loop ``x[i+1] = step(x[i])`` of ``steps`` steps is reversed one step at a
time, last step first. Reversing step ``i`` needs the state ``x[i]``; a
schedule says how to get it back with a bounded number of stored states
(*snapshots*). It is a list of actions:

``("advance", a, b)``
    run steps ``a .. b-1`` untaped, from ``x[a]`` to ``x[b]``;
``("snapshot", i)``
    store the current state ``x[i]``;
``("restore", i)``
    make the stored ``x[i]`` the current state;
``("reverse", i)``
    run step ``i`` on the tape from the current state ``x[i]`` and sweep it
    backwards (the cotangent of ``x[i+1]`` becomes that of ``x[i]``);
``("free", i)``
    drop the stored ``x[i]``.

The binomial schedule is Griewank and Walther's revolve (Algorithm 799,
ACM TOMS 2000): with ``s`` snapshots it advances the fewest steps possible.

Why the closed form holds. Write β(s, r) = C(s + r, s). Call r the
*repetition number*: the most times any one step is advanced. With s
snapshots (the stored initial state is one of them) and r repetitions, the
longest loop that can be reversed is η(s, r) = β(s, r): place the second
snapshot after j steps; the steps right of it are reversed with s - 1
snapshots and r repetitions, the j steps left of it were advanced once
already, so they have s snapshots and r - 1 repetitions left, giving
η(s, r) = η(s - 1, r) + η(s, r - 1) with η(s, 0) = 1 (one step, reversed
directly) and η(1, r) = r + 1, which is Pascal's rule for β(s, r). Hence a
loop of l steps needs r(l, s) = min{r : β(s, r) >= l} repetitions, and the
fewest advances are

    t(l, s) = r·l - β(s + 1, r - 1),   r = r(l, s),

(Griewank 1992, Proposition 1 of Algorithm 799): every step is advanced r
times except the β(s + 1, r - 1) that an optimal placement spares one
advance. The optimal cost F satisfies the dynamic programme
F(1, s) = 0, F(l, 1) = l(l - 1)/2 and, for s >= 2,
F(l, s) = min over 1 <= j < l of j + F(l - j, s - 1) + F(j, s); the tests
check t = F by that programme, independently of the construction here.
t(l, s) counts untaped advances; each step is also run once on the tape
when it is reversed.
"""

from __future__ import annotations

import bisect
import itertools
import math
from collections.abc import Iterator
from dataclasses import dataclass

__all__ = ["Schedule", "revolve_advances", "schedule"]


def _check(steps: int, snapshots: int) -> None:
    if int(steps) != steps or steps < 1:
        raise ValueError(f"a schedule needs a positive whole number of steps, not {steps!r}")
    if int(snapshots) != snapshots or snapshots < 1:
        raise ValueError(
            f"a schedule needs at least one snapshot (the initial state), not {snapshots!r}; "
            'use snapshots=None to keep the whole tape, or "sqrt" for the √n scheme'
        )


def repetitions(steps: int, snapshots: int) -> int:
    """The least r with β(snapshots, r) = C(snapshots + r, snapshots) >= steps.

    >>> repetitions(10, 2), repetitions(3, 2), repetitions(1, 5)
    (3, 1, 0)
    """
    _check(steps, snapshots)
    r = 0
    while math.comb(snapshots + r, snapshots) < steps:
        r += 1
    return r


def revolve_advances(steps: int, snapshots: int) -> int:
    """The fewest untaped step advances that reverse ``steps`` steps with ``snapshots``.

    The closed form r·l - β(s + 1, r - 1) derived in the module docstring.

    >>> revolve_advances(3, 1), revolve_advances(10, 2), revolve_advances(10, 9)
    (3, 20, 9)
    """
    r = repetitions(steps, snapshots)
    return r * steps - (math.comb(snapshots + r, snapshots + 1) if r >= 1 else 0)


class _Repetitions:
    """r(l, c) for c <= snapshots by bisection in a table of β(c, r).

    With one snapshot β(1, r) = r + 1, so r = l - 1 needs no table (which
    would hold one entry per step).
    """

    def __init__(self, steps: int, snapshots: int):
        self.tables = {}
        for c in range(2, snapshots + 1):
            table = [1]
            while table[-1] < steps:
                table.append(math.comb(c + len(table), c))
            self.tables[c] = table

    def __call__(self, length: int, c: int) -> int:
        if c == 1:
            return length - 1
        return bisect.bisect_left(self.tables[c], length)


def _split(length: int, c: int, r_of) -> int:
    """Where to put the next snapshot in a range of ``length`` steps with ``c`` snapshots.

    The cost j + t(j, c) + t(length - j, c - 1) is convex in j; its change
    from j to j + 1 is 1 + r(j + 1, c) - r(length - j, c - 1). The smallest
    j where that change is no longer negative is optimal.
    """
    low, high = 1, length - 1
    while low < high:
        j = (low + high) // 2
        if 1 + r_of(j + 1, c) - r_of(length - j, c - 1) >= 0:
            high = j
        else:
            low = j + 1
    return low


def revolve_actions(steps: int, snapshots: int) -> Iterator[tuple]:
    """The binomial schedule's actions, one at a time (memory: O(snapshots)).

    >>> list(revolve_actions(3, 1))  # doctest: +NORMALIZE_WHITESPACE
    [('snapshot', 0), ('advance', 0, 2), ('reverse', 2), ('restore', 0),
     ('advance', 0, 1), ('reverse', 1), ('restore', 0), ('reverse', 0), ('free', 0)]
    """
    _check(steps, snapshots)
    r_of = _Repetitions(steps, snapshots)
    yield ("snapshot", 0)
    # Each range (start, end, c): x[start] is current and stored, c snapshots may be
    # held for it (its own included); reverse steps start .. end-1.
    stack = [("range", 0, steps, snapshots)]
    while stack:
        item = stack.pop()
        if item[0] != "range":
            yield item
            continue
        _, start, end, c = item
        length = end - start
        if length == 1:
            yield ("reverse", start)
            continue
        if c == 1:
            yield ("advance", start, end - 1)
            yield ("reverse", end - 1)
            stack += [("range", start, end - 1, 1), ("restore", start)]
            continue
        middle = start + _split(length, c, r_of)
        yield ("advance", start, middle)
        yield ("snapshot", middle)
        stack += [
            ("range", start, middle, c),
            ("restore", start),
            ("free", middle),
            ("range", middle, end, c - 1),
        ]
    yield ("free", 0)


def sqrt_actions(steps: int) -> Iterator[tuple]:
    """The √n scheme: a snapshot every ⌈√n⌉ steps, then every state of one segment.

    >>> list(sqrt_actions(3))  # doctest: +NORMALIZE_WHITESPACE
    [('snapshot', 0), ('advance', 0, 2), ('snapshot', 2), ('reverse', 2), ('free', 2),
     ('restore', 0), ('advance', 0, 1), ('reverse', 1), ('restore', 0), ('reverse', 0),
     ('free', 0)]
    """
    _check(steps, 1)
    size = math.isqrt(steps - 1) + 1 if steps > 1 else 1
    starts = list(range(0, steps, size))
    yield ("snapshot", 0)
    for previous, start in itertools.pairwise(starts):
        yield ("advance", previous, start)
        yield ("snapshot", start)
    for index in range(len(starts) - 1, -1, -1):
        start = starts[index]
        end = starts[index + 1] if index + 1 < len(starts) else steps
        if index < len(starts) - 1:
            yield ("restore", start)
        for i in range(start + 1, end):
            yield ("advance", i - 1, i)
            if i < end - 1:
                yield ("snapshot", i)
        yield ("reverse", end - 1)
        if end - 1 == start:
            yield ("free", start)
        for i in range(end - 2, start - 1, -1):
            yield ("restore", i)
            yield ("reverse", i)
            yield ("free", i)


def actions(steps: int, snapshots) -> Iterator[tuple]:
    """The actions for ``snapshots`` = a number (binomial) or ``"sqrt"``."""
    if snapshots == "sqrt":
        return sqrt_actions(steps)
    return revolve_actions(steps, snapshots)


@dataclass
class Schedule:
    """A checkpointing schedule as a table of actions, with what it costs.

    ``advances`` counts untaped step evaluations; ``reversals`` the taped
    ones (one per step); ``peak_snapshots`` the most states stored at once.
    """

    steps: int
    snapshots: int | str
    actions: list

    @property
    def advances(self) -> int:
        """Untaped step evaluations (the initial forward sweep included)."""
        return sum(a[2] - a[1] for a in self.actions if a[0] == "advance")

    @property
    def reversals(self) -> int:
        """Steps run on the tape and swept backwards (one per step)."""
        return sum(1 for a in self.actions if a[0] == "reverse")

    @property
    def peak_snapshots(self) -> int:
        """The most states stored at once."""
        held = peak = 0
        for a in self.actions:
            held += (a[0] == "snapshot") - (a[0] == "free")
            peak = max(peak, held)
        return peak

    def __str__(self) -> str:
        lines = [f"{'#':>4}  {'action':<9} steps"]
        for number, action in enumerate(self.actions):
            kind = action[0]
            where = f"{action[1]} -> {action[2]}" if kind == "advance" else str(action[1])
            lines.append(f"{number:>4}  {kind:<9} {where}")
        lines.append(
            f"{self.advances} advances, {self.reversals} reversals, "
            f"at most {self.peak_snapshots} snapshots"
        )
        return "\n".join(lines)


def schedule(steps: int, snapshots=4) -> Schedule:
    """The checkpointing schedule for ``steps`` steps, as a table of actions.

    ``snapshots`` is a number (Griewank and Walther's binomial schedule,
    fewest advances for that many stored states) or ``"sqrt"``.

    >>> plan = schedule(4, 2)
    >>> print(plan)  # doctest: +NORMALIZE_WHITESPACE
       #  action    steps
       0  snapshot  0
       1  advance   0 -> 1
       2  snapshot  1
       3  advance   1 -> 3
       4  reverse   3
       5  restore   1
       6  advance   1 -> 2
       7  reverse   2
       8  restore   1
       9  reverse   1
      10  free      1
      11  restore   0
      12  reverse   0
      13  free      0
    4 advances, 4 reversals, at most 2 snapshots
    >>> plan.advances == revolve_advances(4, 2)
    True
    """
    return Schedule(steps, snapshots, list(actions(steps, snapshots)))
