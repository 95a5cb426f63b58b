"""The memory study's problems: the loops of the one registry that list ``"memory"``.

They are defined in :mod:`adcompare.bench.problems.loops` by
:func:`~adcompare.bench.problems.loop_problem`, which a user's loop uses too;
the study measures any problem whose instance carries its loop (``f.loop``).
"""

from __future__ import annotations

from adcompare.bench.problems import LoopInstance, Problem, ProblemError, get_problem, problems_of

__all__ = ["LOOP_PROBLEMS", "LoopInstance", "loop_instance", "resolve"]

#: The problems the memory study measures when none are named, by name.
LOOP_PROBLEMS: dict[str, Problem] = {p.name: p for p in problems_of("memory")}


def resolve(problem: str | Problem) -> Problem:
    """A problem given by name or as itself.

    >>> resolve("heat").sweeps
    ('steps',)
    """
    return problem if isinstance(problem, Problem) else get_problem(problem)


def loop_instance(problem: str | Problem, steps: int) -> LoopInstance:
    """The loop of ``problem`` at ``steps`` steps; a :class:`ProblemError` for a problem
    that is not a loop.

    >>> loop_instance("heat", 5).params.shape
    (64,)
    """
    given = resolve(problem)
    if given.sweeps != ("steps",):
        raise ProblemError(
            f"the memory study differentiates loops over T steps, and {given.name} is not "
            "one: define it with bench.loop_problem(build, name=...), build(steps) giving "
            "its LoopInstance"
        )
    return given.build(steps=steps).f.loop
