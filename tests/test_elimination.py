"""Jacobians by vertex elimination: every order gives jacfwd's and jacrev's Jacobian, and the
counts of multiplications and additions are the ones worked out by hand below."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings

import adcompare as ad
from adcompare.bench.harness.measure import count_work
from adcompare.bench.harness.modes import as_matrix, expand_modes, get_mode
from adcompare.bench.harness.results import Results
from adcompare.bench.problems import get_problem
from adcompare.bench.report.elimination import (
    elimination_figure,
    elimination_section,
    on_diagonal,
)
from adcompare.cli.explain import explain
from adcompare.elimination import (
    MAX_EXACT,
    ORDERS,
    Block,
    LinearGraph,
    eliminate,
    jacobian,
    linearize,
    optimal_order,
)

from .opcases import case_id, draw, op_cases
from .test_fuzz import programs

TOLERANCE = 1e-12
#: The exact search runs on the random programs up to this many intermediates (its time
#: doubles with each); the heuristics run on all of them.
SEARCHED_IN_TESTS = 8


def assert_close(got, expected) -> None:
    got, expected = np.asarray(got), np.asarray(expected)
    assert got.shape == expected.shape
    scale = max(1.0, float(np.max(np.abs(expected), initial=0.0)))
    assert float(np.max(np.abs(got - expected), initial=0.0)) <= TOLERANCE * scale


def assert_every_order_agrees(f, x, search: bool = True) -> None:
    graph = linearize(f, x)
    expected_forward, expected_reverse = ad.jacfwd(f)(x), ad.jacrev(f)(x)
    shape = np.shape(expected_forward)
    orders = [o for o in ORDERS if search or o != "optimal"]
    for order in orders:
        got = eliminate(graph, order).jacobian.reshape(shape)
        assert_close(got, expected_forward)
        assert_close(got, expected_reverse)


# --- every registry op -----------------------------------------------------------------


def _real_cases():
    for op, shapes, params in op_cases():
        if op.nargs is not None and not op.differentiable:
            continue
        args, drawn = draw(op, shapes, params, seed=5)
        with np.errstate(all="ignore"):
            out = np.asarray(op.fn(*args, **drawn))
        if out.dtype.kind == "f" and all(np.asarray(a).dtype.kind == "f" for a in args):
            yield pytest.param(op, args, drawn, id=case_id((op, shapes, params)))


def _positions(op, args) -> list[int]:
    return list(range(len(args))) if op.nargs is None else list(op.differentiable)


@pytest.mark.parametrize(("op", "args", "params"), list(_real_cases()))
def test_every_order_gives_jacfwd_and_jacrev_jacobian_on_every_registry_op(op, args, params):
    positions = _positions(op, args)
    sizes = [np.size(args[i]) for i in positions]
    flat = np.concatenate([np.ravel(args[i]) for i in positions])

    def f(x):
        inputs, start = list(args), 0
        for i, size in zip(positions, sizes):
            inputs[i] = ad.reshape(x[start : start + size], np.shape(args[i]))
            start += size
        return op.fn(*inputs, **params)

    assert_every_order_agrees(f, flat)


# --- the hypothesis suite's random programs ----------------------------------------------


@settings(
    max_examples=10,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(programs())
def test_every_order_gives_the_jacobian_of_random_programs(program):
    if not program.weights:
        return
    shapes = [x.shape for x in program.inputs]
    sizes = [math.prod(s) for s in shapes]
    offsets = np.cumsum([0, *sizes])

    def f(x):
        parts = [ad.reshape(x[a:b], s) for a, b, s in zip(offsets, offsets[1:], shapes)]
        return program(*parts)

    x = np.concatenate([np.ravel(v) for v in program.inputs])
    search = len(linearize(f, x).intermediates) <= SEARCHED_IN_TESTS
    assert_every_order_agrees(f, x, search=search)


# --- counts worked out by hand -----------------------------------------------------------


def _hourglass_chain() -> LinearGraph:
    """x(3) →diag→ v1(3) →1×3→ v2(1) →scalar→ v3(1) →3×1→ v4(3) →diag→ v5(3).

    Forward: v1 costs nnz(1×3) = 3 (a diagonal times a block costs the block's non-zeros),
    v2 3 (scalar · 1×3), v3 3·1·3 = 9 (3×1 · 1×3), v4 9 (diagonal · 3×3): 24.
    Reverse, mirrored: 3 + 3 + 9 + 9 = 24. Markowitz (every vertex costs 3 at first, a tie
    goes to the first): v1 3, v2 3, then v3 would cost 9 and v4 3: v4, then v3 costs
    3·1·3 = 9: 18, the optimum, since the one 3×3 product is unavoidable and each of the
    other three vertices needs at least 3 multiplications.
    """
    values = np.array([1.0, 2.0, 3.0])
    blocks = [
        Block.diagonal_of(values),
        Block.matrix_of(values[None, :] + 1.0),
        Block.diagonal_of(np.array([-2.0])),
        Block.matrix_of(values[:, None] - 5.0),
        Block.diagonal_of(values * 0.5),
    ]
    return LinearGraph.chain(blocks)


def test_hand_counts_on_a_one_wide_hourglass_chain():
    graph = _hourglass_chain()
    counts = {o: eliminate(graph, o).multiplications for o in ORDERS}
    assert counts == {
        "forward": 24,
        "reverse": 24,
        "markowitz": 18,
        "reverse-markowitz": 18,
        "min-fill": 18,
        "optimal": 18,
    }
    assert eliminate(graph, "markowitz").order == (1, 2, 4, 3)
    expected = np.linalg.multi_dot([b.dense() for b in reversed(graph.edges.values())])
    for order in ORDERS:
        assert_close(eliminate(graph, order).jacobian, expected)
        assert eliminate(graph, order).additions == 0  # a chain has no two paths to sum


def _diamond() -> tuple[LinearGraph, float]:
    """Scalars: x → v1 (a), x → v2 (b), v1 → v3 (c), v2 → v3 (d), v3 → v4 (e); J = e(ca + db)."""
    a, b, c, d, e = 2.0, 3.0, 5.0, 7.0, 11.0
    edges = {(0, 1): a, (0, 2): b, (1, 3): c, (2, 3): d, (3, 4): e}
    blocks = {edge: Block.diagonal_of(np.array([v])) for edge, v in edges.items()}
    return LinearGraph([1] * 5, ["x", "v1", "v2", "v3", "v4"], 0, 4, blocks), e * (c * a + d * b)


def test_hand_counts_on_a_scalar_diamond():
    graph, expected = _diamond()
    # Forward: v1 joins x → v3 (1), v2 adds into it (1 multiplication, 1 addition), v3 1.
    forward = eliminate(graph, "forward")
    assert (forward.multiplications, forward.additions) == (3, 1)
    # Reverse: v3 has two predecessors (2), then v2 (1) and v1 (1, adding into x → v4).
    reverse = eliminate(graph, "reverse")
    assert (reverse.multiplications, reverse.additions) == (4, 1)
    # Markowitz: v1 and v2 cost 1·1, v3 2·1: v1, v2, then v3 at 1·1.
    markowitz = eliminate(graph, "markowitz")
    assert markowitz.order == (1, 2, 3) and markowitz.multiplications == 3
    assert optimal_order(graph) == ([1, 2, 3], 3)
    for order in ORDERS:
        assert eliminate(graph, order).jacobian.item() == pytest.approx(expected, rel=1e-15)


def test_hand_counts_of_front_and_back_edge_elimination_on_the_diamond():
    graph, expected = _diamond()
    # Back-eliminating v3 → v4 joins v1 and v2 to v4 (2) and leaves v3 without successors.
    assert graph.back_eliminate((3, 4)).multiplications == 2 and 3 not in graph.preds
    # Front-eliminating x → v1 joins x to v4 (1); v1 goes, having no predecessor left.
    step = graph.front_eliminate((0, 1))
    assert (step.multiplications, step.additions, step.fill) == (1, 0, 1) and 1 not in graph.preds
    step = graph.front_eliminate((0, 2))
    assert (step.multiplications, step.additions, step.fill) == (1, 1, 0)
    assert graph.intermediates == [] and graph.edges[(0, 4)].values.item() == expected


def test_hand_counts_with_a_sparse_selection_and_a_skip_edge():
    """x(3) →S→ v1(2) →diag→ v2(2) →row r→ v3(1), and x →dense 1×3→ v3, S = rows e0, e2.

    Forward: v1 costs nnz(S) = 2 (diagonal · S); v2 costs r·(DS): columns of r have one
    non-zero each, rows of DS one each: 2, making the pattern [1, 0, 1], which meets the
    dense skip edge in 2 entries: 2 additions. Reverse: v2 costs nnz(r) = 2 (r · diagonal),
    v1 costs (1×2 dense) · S = 2, again 2 additions.
    """
    selection = np.array([[1.0, 0.0, 0.0], [0.0, 0.0, 1.0]])
    diagonal, row, skip = np.array([3.0, -1.0]), np.array([[2.0, 5.0]]), np.array([[1.0, 1.0, 4.0]])
    edges = {
        (0, 1): Block.matrix_of(selection),
        (1, 2): Block.diagonal_of(diagonal),
        (2, 3): Block.matrix_of(row),
        (0, 3): Block.matrix_of(skip),
    }
    graph = LinearGraph([3, 2, 2, 1], ["x", "v1", "v2", "v3"], 0, 3, edges)
    assert edges[(0, 1)].kind == "sparse" and edges[(0, 3)].kind == "dense"
    expected = row @ np.diag(diagonal) @ selection + skip
    for order in ("forward", "reverse"):
        done = eliminate(graph, order)
        assert (done.multiplications, done.additions) == (4, 2)
        assert_close(done.jacobian, expected)


def test_counts_of_an_hourglass_read_from_the_tape_match_the_hand_analysis():
    n, k = 6, 2
    rng = np.random.default_rng(0)
    w1, w2 = rng.standard_normal((k, n)), rng.standard_normal((n, k))
    graph = linearize(lambda x: ad.tanh(w2 @ ad.tanh(w1 @ ad.tanh(x))), rng.standard_normal(n))
    kinds = [graph.edges[(v, v + 1)].kind for v in range(5)]
    assert kinds == ["diagonal", "dense", "diagonal", "dense", "diagonal"]
    # forward: tanh' into W1 (kn), that into tanh' (kn), W2 · (k×n) (nkn), tanh' · (n×n) (nn)
    assert eliminate(graph, "forward").multiplications == 2 * k * n + n * k * n + n * n
    # reverse, mirrored: (nk) twice, then (n×k)(k×n) and (n×n) · diagonal
    assert eliminate(graph, "reverse").multiplications == 2 * n * k + n * k * n + n * n
    # cross-country: W1 takes the first tanh' (kn), W2 the middle and last ones (nk twice),
    # then one n·k·n product: k·n² against forward's and reverse's (k + 1)·n²
    assert optimal_order(graph)[1] == k * n + 2 * n * k + n * k * n
    assert eliminate(graph, "markowitz").multiplications == 3 * n * k + n * k * n


# --- what is refused -----------------------------------------------------------------------


def test_bad_orders_and_inputs_are_refused_with_the_alternative():
    graph, _ = _diamond()
    with pytest.raises(ValueError, match="the orders are forward"):
        eliminate(graph, "sideways")
    with pytest.raises(ValueError, match="names every intermediate once"):
        eliminate(graph, [1, 2])
    with pytest.raises(ValueError, match="needs an intermediate"):
        graph.copy().eliminate_vertex(4)
    chain = LinearGraph.chain([Block.diagonal_of(np.ones(1))] * (MAX_EXACT + 2))
    with pytest.raises(ValueError, match="order='markowitz'"):
        optimal_order(chain)
    with pytest.raises(TypeError, match="complex"):
        linearize(lambda x: x * 1j, np.ones(2))


def test_a_user_order_by_label_and_the_trivial_functions():
    graph = _hourglass_chain()
    by_label = eliminate(graph, ["v4", "v1", "v3", "v2"])
    assert by_label.order == (4, 1, 3, 2)
    assert by_label.multiplications == 3 + 3 + 3 + 9  # v4 3, v1 3, v3 3·1 = 3, v2 1·3·3 = 9
    assert_close(jacobian(lambda x: x, np.ones(3)), np.eye(3))
    assert_close(jacobian(lambda x: np.ones(2), np.ones(3)), np.zeros((2, 3)))


# --- the harness's problems and modes ------------------------------------------------------


def test_helmholtz_at_four_gives_the_counts_graphax_publishes():
    # graphax's Helmholtz example (x log(x / (1 + -Σx)), four mole fractions) has its scalar
    # graph's counts printed beside the code in its tests: forward 56, reverse 36, and a hand
    # order of 33. Blocks of four scalars count as their scalar edges, so the same numbers.
    instance = get_problem("helmholtz").build(n=4)
    graph = linearize(instance.on(ad), instance.x)
    counts = {o: eliminate(graph, o).multiplications for o in ("forward", "reverse", "markowitz")}
    assert counts == {"forward": 56, "reverse": 36, "markowitz": 33}
    assert optimal_order(graph)[1] == 33


def test_an_elimination_mode_reports_its_multiplications_beside_the_engine_counts():
    instance = get_problem("hourglass").build(n=5, m=5)
    mode = get_mode("eliminate:markowitz")
    work = mode.prepare(instance)
    assert_close(as_matrix(work(), instance), ad.jacrev(instance.on(ad))(instance.x))
    counts = count_work(instance, mode, work)
    n, k = 5, 1
    assert counts["multiplications"] == 3 * n * k + n * k * n and counts["additions"] == 0
    assert counts["tape_records"] == 5  # the tape the graph was read from
    assert expand_modes(["eliminate"]) == [f"eliminate:{order}" for order in ORDERS]


def test_explain_eliminates_an_expression_step_by_step():
    # x·y + sin(x): the selections v1 = x[0], v2 = x[1] feed v3 = multiply and v4 = sin.
    # Reverse: v4 (1), v3 (2, adding into v1 → v5), v2 (1), v1 (1; its pattern [1, 0]
    # meets [0, 1]: no addition): 5 multiplications, 1 addition.
    report = explain("x*y + sin(x)", "x=1,y=2", mode="reverse", eliminate="reverse")
    steps = report.split("Vertex elimination, reverse")[1]
    rows = [line.split() for line in steps.splitlines() if line[:1].isdigit()]
    eliminated = [row[1] for row in rows]
    assert eliminated == ["v4", "v3", "v2", "v1"]
    assert [int(row[-3]) for row in rows] == [1, 2, 1, 1]
    assert "reverse: 5 multiplications, 1 additions" in steps


def test_the_report_tabulates_each_orders_count_on_the_diagonal_and_draws_it():
    results = Results()
    for n, m in ((4, 4), (4, 16), (16, 16)):
        instance = get_problem("hourglass").build(n=n, m=m)
        for name in ("eliminate:forward", "eliminate:markowitz", "forward"):
            mode = get_mode(name)
            work = mode.prepare(instance)
            cell = {"problem": "hourglass", "mode": name, "size": {"n": n, "m": m}}
            cell |= {"n": n, "m": m, "status": "ok", "time": {"median": 0.001}}
            results.add(cell | {"counts": count_work(instance, mode, work)})
    # n = m only: forward 2kn + kn² + n², Markowitz 3kn + kn², k = 1
    assert on_diagonal(results, "hourglass", "eliminate:forward", "multiplications") == {
        4: 2 * 4 + 16 + 16,
        16: 2 * 16 + 256 + 256,
    }
    lines = elimination_section(results, {})
    assert "| 16 | 544 (1 ms) | 304 (1 ms) | 1 ms |" in lines
    figure = elimination_figure(results, "hourglass")
    assert [len(ax.lines) for ax in figure.axes] == [2, 3]


def _scalar_program(n_ops: int, seed: int, zero_partial: bool):
    """A random straight-line program on three scalars; with ``zero_partial`` the third
    is ``0 · x`` (a dot product with zeros), whose edge from the input is structurally empty."""
    rng = np.random.default_rng(seed)
    picks = [(int(rng.integers(3)), *rng.integers(0, 3 + i, 2)) for i in range(n_ops)]

    def f(x):
        values = [x[0], x[1], ad.dot(np.zeros(3), x) if zero_partial else x[2]]
        for op, a, b in picks:
            u, v = values[a], values[b]
            values.append((ad.sin(u) * v, u + ad.exp(v), u * v)[op])
        return ad.stack([values[-1], values[-2] + values[2]])

    return f


@pytest.mark.parametrize("zero_partial", [False, True])
@pytest.mark.parametrize("seed", [0, 3])
def test_exact_search_finds_the_cheapest_of_every_order(seed, zero_partial):
    # The search's lower bound (one multiplication per intermediate left) holds only
    # without structurally zero edges; every order is tried here, so it must not prune
    # away the cheapest one in either case.
    import itertools

    from adcompare.elimination.orders import _each_costs_one

    graph = linearize(_scalar_program(1, seed, zero_partial), np.array([0.3, 0.5, 0.7]))
    assert 4 <= len(graph.intermediates) <= 7
    assert _each_costs_one(graph) is not zero_partial  # the bound is used, or not
    best = min(
        eliminate(graph.copy(values=False), list(order)).multiplications
        for order in itertools.permutations(graph.intermediates)
    )
    order, count = optimal_order(graph)
    assert count == best == eliminate(graph, order).multiplications
