"""GradBench's evals as harness problems: ``gradbench-<eval>``, one per implemented eval.

Each is the eval's objective (:attr:`~adcompare.gradbench.evals.Eval.objective`)
at its first workload, the input GradBench sends first, prepared by the eval
itself; so ``adcompare bench --problems gradbench-lse`` measures what the
protocol server's derivative computes, by every mode the harness applies to
a fixed-size problem. The eval is imported when the problem is built, not
when it is registered, so an eval that fails to load stops only its problem.
An eval without an objective (the nested ones, particle and saddle, whose
derivative is inside an optimisation) is listed but refuses to build, saying
so.
"""

from __future__ import annotations

from adcompare.bench.problems.define import Problem, ProblemError, problem
from adcompare.gradbench import get_eval, implemented

__all__ = ["GRADBENCH_PROBLEMS", "gradbench_problem"]


def gradbench_problem(name: str) -> Problem:
    """The GradBench eval ``name`` as a problem at its first workload.

    >>> instance = gradbench_problem("hello").build()
    >>> instance.problem, instance.n, instance.m, float(instance.f(None, instance.x))
    ('gradbench-hello', 1, 1, 1.0)
    """

    def build():
        ev = get_eval(name)
        if ev.objective is None:
            raise ProblemError(
                f"the GradBench eval {name} gives no objective, so the harness cannot measure "
                "it; run it through the protocol instead (adcompare gradbench --run "
                f"{name})"
            )
        workloads = ev.workloads()
        if not workloads:
            raise ProblemError(f"the GradBench eval {name} lists no workloads to build from")
        return ev.objective(ev.prepare(workloads[0].make()))

    return problem(
        build=build,
        name=f"gradbench-{name}",
        sweep=(),
        description=f"GradBench's {name} eval at its first workload, through its objective "
        "(opt in)",
        opt_in=True,
        studies=(),
    )


#: One problem per eval whose module exists.
GRADBENCH_PROBLEMS = tuple(gradbench_problem(name) for name in implemented())
