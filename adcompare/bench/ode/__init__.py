"""The ODE study: odeint's tape, forward sensitivities and adjoint, cost against size.

:mod:`~adcompare.bench.ode.study` measures the ``ode`` problems
(:mod:`~adcompare.bench.problems.ode`) by the ``ode:`` modes through the
harness and writes ``ode.json``, ``ode.png`` and ``ode.md``
(``adcompare ode``).
"""
