"""Test inputs drawn from the op records: shapes, domains, static parameters."""

from __future__ import annotations

import itertools

import numpy as np

from adcompare.ops import OPS

# Broadcast shape groups for elementwise ops (every combination within a group).
SHAPE_GROUPS = [[(3,)], [(), (3, 4), (3, 1), (1, 4)], [(2, 3, 4), (2, 1, 4)]]


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
            nargs = op.nargs
            for group in SHAPE_GROUPS:
                for shapes in itertools.product(group, repeat=nargs):
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
