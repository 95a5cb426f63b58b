"""Test inputs drawn from the op records: shapes, domains, static parameters."""

from __future__ import annotations

import itertools
import os
import random
import zlib

import numpy as np

import adcompare as ad
from adcompare.ops import COMPOSITES, OPS

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


# --- every op, with the decisions its record declares ---------------------------------------

#: Draws tried for a second point where every declared decision differs.
TRIES = 40


def _primitive(op):
    shapes, params = (shape_combinations(op)[1], op.test_params) if op.elementwise else op.cases[0]

    def arguments(seed):
        return draw(op, shapes, params, seed)

    return op.fn, arguments, op.decided_by_values


def _composite(composite):
    shapes, params = composite.cases[0]

    def arguments(seed):
        rng = np.random.default_rng(seed)
        return [rng.uniform(*composite.domain, size=shape) for shape in shapes], dict(params)

    fn = composite.fn
    call = (lambda *xs, **p: fn(list(xs), **p)) if composite.listed else fn
    return call, arguments, composite.decided_by_values


def _slogdet():
    # Both signs of the determinant: entries drawn around zero, not a dominant diagonal.
    def arguments(seed):
        return [np.random.default_rng(seed).uniform(-2.0, 2.0, size=(2, 3, 3))], {}

    return ad.slogdet, arguments, COMPOSITES["slogdet"].decided_by_values


EVERY_OP = {name: _primitive(op) for name, op in OPS.items() if op.built_in}
EVERY_OP.update(
    (name, _composite(composite)) for name, composite in COMPOSITES.items() if composite.cases
)
EVERY_OP["slogdet"] = _slogdet()


def _differs(a, b) -> bool:
    a, b = np.asarray(a), np.asarray(b)
    return a.shape != b.shape or not np.array_equal(a, b)


def _decided(decision, source, params):
    others = {k: v for k, v in params.items() if k != decision.source}
    return decision.decide(source, **others)


def second_point(arguments, decisions):
    """Arguments at a second point where every declared decision differs from the first's.

    An integer index parameter becomes an argument (so that a replay may change it)
    and takes its positions in another order; an array argument is drawn again
    until the decisions its values take differ.
    """
    first, params = arguments(0)
    index_names = [
        d.source
        for d in decisions
        if isinstance(params.get(d.source), np.ndarray) and params[d.source].dtype.kind in "iu"
    ]
    rng = np.random.default_rng(7)
    moved = {}
    for name in index_names:
        original = params[name]
        for _ in range(TRIES):
            moved[name] = rng.permutation(original.ravel()).reshape(original.shape)
            if _differs(moved[name], original):
                break
    from_values = [d for d in decisions if d.source not in params]
    for seed in range(1, TRIES + 1):
        second, _ = arguments(seed)
        if all(
            _differs(_decided(d, first[0], params), _decided(d, second[0], params))
            for d in from_values
        ):
            break
    else:
        raise AssertionError(f"no second point within {TRIES} draws changes {from_values}")
    static = {k: v for k, v in params.items() if k not in index_names}
    return first, second, index_names, [params[n] for n in index_names], moved, static
