"""Test inputs drawn from the op records: shapes, domains, static parameters."""

from __future__ import annotations

import itertools
import os
import random
import zlib

import numpy as np

from adcompare.ops import OPS

# Broadcast shape groups for elementwise ops: arguments are combined within a group.
SHAPE_GROUPS = [[(3,)], [(), (3, 4), (3, 1), (1, 4)], [(2, 3, 4), (2, 1, 4)]]
# How many combinations of each group an elementwise op is tested on. Every combination
# would be 7 cases for a unary op and 21 for a binary one, for every test over the
# registry; a sample per op, drawn from the op's name, keeps the suite's time in
# proportion to the number of ops, while different ops draw different combinations (the
# binary ops together draw 20 of the 21).
# ADCOMPARE_ALL_CASES=1 tests every combination.
SAMPLES_PER_GROUP = (1, 3, 1)
ALL_CASES = os.environ.get("ADCOMPARE_ALL_CASES") == "1"


def shape_combinations(op) -> list[tuple]:
    """The argument shapes an elementwise op is tested on: a fixed sample per group."""
    rng = random.Random(zlib.crc32(op.name.encode()))
    chosen = []
    for group, samples in zip(SHAPE_GROUPS, SAMPLES_PER_GROUP):
        combos = list(itertools.product(group, repeat=op.nargs))
        chosen += combos if ALL_CASES or len(combos) <= samples else rng.sample(combos, samples)
    return chosen


def domain_of(op, position: int):
    """The (low, high) interval an op's argument is drawn from, or the maker
    ``maker(shape, rng)`` of structured inputs (well-conditioned matrices)."""
    domain = op.domain
    if callable(domain):
        return domain
    if isinstance(domain[0], (tuple, list)) or callable(domain[0]):
        domain = domain[position]
    return domain if callable(domain) else tuple(domain)


def has_interval_domain(op) -> bool:
    """Whether every argument is drawn uniformly from an interval (no input maker)."""
    domain = op.domain
    return not callable(domain) and not any(callable(d) for d in domain)


def op_cases():
    """``(op, arg_shapes, params_or_maker)`` for every op in the registry."""
    for op in OPS.values():
        if op.elementwise:
            for shapes in shape_combinations(op):
                yield op, shapes, op.test_params
        else:
            for shapes, params in op.cases:
                yield op, shapes, params


def case_id(case) -> str:
    op, shapes, params = case
    text = ",".join("x".join(map(str, s)) or "()" for s in shapes)
    if isinstance(params, dict) and params:
        text += "|" + ",".join(f"{k}" for k in params)
    return f"{op.name}[{text}]"


def draw(op, shapes, params, seed: int):
    """Random arguments in the op's domain, and its static parameters."""
    rng = np.random.default_rng(seed)
    args = []
    for i, shape in enumerate(shapes):
        domain = domain_of(op, i)
        args.append(domain(shape, rng) if callable(domain) else rng.uniform(*domain, size=shape))
    if callable(params):
        out_shape = np.broadcast_shapes(*shapes)
        params = params(out_shape, rng)
    return args, dict(params or {})
