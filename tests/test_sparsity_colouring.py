"""Colourings, checked by an independent validity checker and against known colour counts.

The checkers below read only the pattern and the colours (never the
algorithms' own bookkeeping): a colouring is never trusted because the
algorithm that made it says so.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import scipy.sparse as sparse

from adcompare.sparsity import (
    ORDERINGS,
    acyclic_colouring,
    column_colouring,
    row_colouring,
    star_bicolouring,
    star_colouring,
)

# --- independent checkers ----------------------------------------------------------------


def assert_partial_distance_2(pattern: np.ndarray, colours: np.ndarray) -> None:
    """No row holds two columns of one colour."""
    assert (colours >= 0).all()
    for i, row in enumerate(pattern):
        seen = colours[np.flatnonzero(row)]
        assert len(set(seen)) == len(seen), f"row {i} holds two columns of one colour"


def _graph(pattern: np.ndarray) -> list[set[int]]:
    n = len(pattern)
    return [{j for j in range(n) if j != i and (pattern[i, j] or pattern[j, i])} for i in range(n)]


def assert_star(pattern: np.ndarray, colours: np.ndarray) -> None:
    """Distance-1, and no path on four vertices is two-coloured."""
    graph = _graph(pattern)
    for v, neighbours in enumerate(graph):
        assert all(colours[v] != colours[w] for w in neighbours), f"edge at {v} is one colour"
    for w, neighbours in enumerate(graph):
        for x in neighbours:
            for v in neighbours - {x}:
                for y in graph[x] - {w, v}:
                    assert not (colours[v] == colours[x] and colours[w] == colours[y]), (
                        f"path {v}-{w}-{x}-{y} is two-coloured"
                    )


def assert_acyclic(pattern: np.ndarray, colours: np.ndarray) -> None:
    """Distance-1, and the edges between any two colours form a forest."""
    graph = _graph(pattern)
    for v, neighbours in enumerate(graph):
        assert all(colours[v] != colours[w] for w in neighbours)
    for c, d in itertools.combinations(sorted(set(colours)), 2):
        parent = list(range(len(graph)))

        def find(v):
            while parent[v] != v:
                v = parent[v]
            return v

        for v, neighbours in enumerate(graph):
            for w in neighbours:
                if v < w and {colours[v], colours[w]} == {c, d}:
                    a, b = find(v), find(w)
                    assert a != b, f"colours {c}, {d} close a cycle at edge {v}-{w}"
                    parent[a] = b


def assert_bicolouring(pattern: np.ndarray, rows: np.ndarray, columns: np.ndarray) -> None:
    """Every non-zero can be read directly from a JVP (its column colour is alone in its
    row) or from a VJP (its row colour is alone in its column)."""
    for i, j in zip(*np.nonzero(pattern)):
        in_row = columns[np.flatnonzero(pattern[i])]
        in_column = rows[np.flatnonzero(pattern[:, j])]
        from_jvp = columns[j] >= 0 and np.count_nonzero(in_row == columns[j]) == 1
        from_vjp = rows[i] >= 0 and np.count_nonzero(in_column == rows[i]) == 1
        assert from_jvp or from_vjp, f"entry ({i}, {j}) cannot be recovered"


def colour_count(colours: np.ndarray) -> int:
    return len(set(colours[colours >= 0].tolist()))


# --- structured matrices with known optimal counts --------------------------------------


def banded(n: int, width: int) -> np.ndarray:
    return sum(np.eye(n, k=k, dtype=bool) for k in range(-(width // 2), width - width // 2))


def arrowhead(n: int) -> np.ndarray:
    pattern = np.eye(n, dtype=bool)
    pattern[0, :] = pattern[:, 0] = True
    return pattern


def laplacian_2d(k: int) -> np.ndarray:
    """The five-point stencil on a k × k grid."""
    line = sparse.diags_array([1, 1, 1], offsets=[-1, 0, 1], shape=(k, k), dtype=bool)
    eye = sparse.eye_array(k, dtype=bool)
    return (sparse.kron(eye, line) + sparse.kron(line, eye)).toarray()


def random_pattern(m: int, n: int, density: float, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return rng.random((m, n)) < density


def random_symmetric(n: int, density: float, seed: int) -> np.ndarray:
    upper = random_pattern(n, n, density, seed)
    return upper | upper.T | np.eye(n, dtype=bool)


ORDERS = list(ORDERINGS)
PATTERNS = {
    "banded": banded(20, 5),
    "arrowhead": arrowhead(12),
    "laplacian": laplacian_2d(6),
    "random": random_pattern(25, 18, 0.15, 1),
}
SYMMETRIC = {
    "banded": banded(20, 5),
    "arrowhead": arrowhead(12),
    "laplacian": laplacian_2d(6),
    "random": random_symmetric(24, 0.1, 2),
}


@pytest.mark.parametrize("order", ORDERS)
@pytest.mark.parametrize("name", PATTERNS)
def test_column_and_row_colourings_are_valid(name, order):
    pattern = PATTERNS[name]
    assert_partial_distance_2(pattern, column_colouring(pattern, order))
    assert_partial_distance_2(pattern.T, row_colouring(pattern, order))


@pytest.mark.parametrize("order", ORDERS)
@pytest.mark.parametrize("name", SYMMETRIC)
def test_star_and_acyclic_colourings_are_valid(name, order):
    pattern = SYMMETRIC[name]
    assert_star(pattern, star_colouring(pattern, order))
    assert_acyclic(pattern, acyclic_colouring(pattern, order))


@pytest.mark.parametrize("order", ORDERS)
@pytest.mark.parametrize("name", PATTERNS)
def test_star_bicolourings_are_valid(name, order):
    pattern = PATTERNS[name]
    rows, columns = star_bicolouring(pattern, order)
    assert_bicolouring(pattern, rows, columns)


def test_the_checkers_catch_invalid_colourings():
    path = banded(4, 3)
    with pytest.raises(AssertionError):
        assert_partial_distance_2(path, np.array([0, 1, 0, 1]))  # rows 1, 2 hold 0 twice
    with pytest.raises(AssertionError):
        assert_star(path, np.array([0, 1, 0, 1]))  # the path itself is two-coloured
    cycle = banded(4, 3)
    cycle[0, 3] = cycle[3, 0] = True
    with pytest.raises(AssertionError):
        assert_acyclic(cycle, np.array([0, 1, 0, 1]))
    with pytest.raises(AssertionError):
        assert_bicolouring(arrowhead(3), np.array([-1, -1, -1]), np.array([0, 1, 1]))


@pytest.mark.parametrize("width", [1, 3, 5, 7])
def test_banded_needs_its_bandwidth(width):
    pattern = banded(30, width)
    assert colour_count(column_colouring(pattern)) == width
    assert colour_count(row_colouring(pattern)) == width
    # A tridiagonal Hessian: star 3, acyclic 2 (a path's star and acyclic chromatic numbers).
    if width == 3:
        assert colour_count(star_colouring(pattern)) == 3
        assert colour_count(acyclic_colouring(pattern)) == 2


@pytest.mark.parametrize("n", [5, 40])
def test_arrowhead_needs_n_colours_one_way_and_three_both_ways(n):
    pattern = arrowhead(n)
    assert colour_count(column_colouring(pattern)) == n
    assert colour_count(row_colouring(pattern)) == n
    rows, columns = star_bicolouring(pattern, "largest-first")
    assert colour_count(rows) + colour_count(columns) == 3


def test_laplacian_colour_counts():
    """The five-point stencil holds a plus-shaped 5-clique in the column graph, so 5 is a
    lower bound for columns (and reached by colouring (i + 2j) mod 5); a 2-D grid's star
    chromatic number is 5 and its acyclic chromatic number 3 (Fertin, Raspaud and Reed,
    cited by Gebremedhin, Manne and Pothen 2005). Greedy colouring reaches: columns 7
    with the static orderings (6 on the small grid with largest-first) and the optimal 5
    with saturation degree; star 5 with dynamic largest-first (6 with the others),
    acyclic 4.
    """
    for k in (6, 12):
        pattern = laplacian_2d(k)
        counts = {order: colour_count(column_colouring(pattern, order)) for order in ORDERS}
        assert min(counts.values()) >= 5
        assert counts["natural"] == 7
        assert colour_count(star_colouring(pattern, "dynamic-largest-first")) == 5
        assert min(colour_count(acyclic_colouring(pattern, o)) for o in ORDERS) == 4
    i, j = np.divmod(np.arange(36), 6)
    assert_partial_distance_2(laplacian_2d(6), (i + 2 * j) % 5)


@pytest.mark.parametrize("k", [4, 7, 16, 30])
def test_saturation_degree_finds_the_laplacians_five_colours(k):
    pattern = laplacian_2d(k)
    columns = column_colouring(pattern, "saturation-degree")
    rows = row_colouring(pattern, "saturation-degree")
    assert_partial_distance_2(pattern, columns)
    assert_partial_distance_2(pattern.T, rows)
    assert colour_count(columns) == colour_count(rows) == 5
    assert colour_count(column_colouring(pattern, "largest-first")) > 5


def edge_incidence(edges: list[tuple[int, int]], n: int) -> np.ndarray:
    """A pattern whose column graph is the given graph: one row per edge."""
    pattern = np.zeros((len(edges), n), dtype=bool)
    for row, (a, b) in enumerate(edges):
        pattern[row, [a, b]] = True
    return pattern


def test_saturation_degree_two_colours_a_crown_where_a_static_order_needs_n():
    """A crown graph (two sides of n, each vertex joined to every vertex of the other
    side but its partner) in the order a₀, b₀, a₁, b₁, ... makes greedy colouring give
    each pair a new colour; DSATUR colours every bipartite graph with 2 (Brélaz 1979)."""
    n = 8
    edges = [(2 * a, 2 * b + 1) for a in range(n) for b in range(n) if a != b]
    pattern = edge_incidence(edges, 2 * n)
    natural = column_colouring(pattern, "natural")
    saturation = column_colouring(pattern, "saturation-degree")
    assert_partial_distance_2(pattern, natural)
    assert_partial_distance_2(pattern, saturation)
    assert (colour_count(natural), colour_count(saturation)) == (n, 2)
    rng = np.random.default_rng(3)
    side = rng.integers(0, 2, 40)
    edges = [
        (a, b) for a in range(40) for b in range(a) if side[a] != side[b] and rng.random() < 0.1
    ]
    assert colour_count(column_colouring(edge_incidence(edges, 40), "saturation-degree")) == 2


def test_unknown_ordering_is_refused():
    with pytest.raises(ValueError, match="smallest-last"):
        column_colouring(banded(4, 3), "alphabetical")
