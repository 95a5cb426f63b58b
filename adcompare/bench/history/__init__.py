"""Benchmark history: every run's cells kept in one SQLite file, and two runs compared.

:mod:`~adcompare.bench.history.store` holds the database (a versioned schema,
migrated on open; every write one transaction), :mod:`~adcompare.bench.history.imports`
reads every results file this repository has written into runs,
:mod:`~adcompare.bench.history.compare` compares two runs cell by cell
(ratio of medians, Mann-Whitney U on the samples, crossovers that moved) and
:mod:`~adcompare.bench.history.page` draws the comparison as an HTML page.
"""
