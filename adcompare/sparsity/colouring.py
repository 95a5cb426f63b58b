"""Greedy colourings of sparsity patterns, as published.

- :func:`column_colouring`: partial distance-2 colouring of the columns
  (Coleman and Moré 1983): columns sharing no row get one colour, and one
  JVP per colour gives all of them (forward mode).
- :func:`row_colouring`: the same for rows (one VJP per colour, reverse mode).
- :func:`star_colouring`: star colouring of a symmetric pattern (Gebremedhin,
  Manne and Pothen 2005, Algorithm 4.1): every path on four vertices uses at
  least three colours, so every Hessian entry is read off directly.
- :func:`acyclic_colouring`: every cycle uses at least three colours
  (Gebremedhin, Tarafdar, Manne and Pothen 2007, with the 2-coloured forests
  kept as disjoint sets); fewer colours, recovered by substitution.
- :func:`star_bicolouring`: rows and columns together (Coleman and Verma
  1998; GMP 2005, section 6): a star colouring of the bipartite graph, after
  which colours no entry is read from become neutral. An arrowhead needs
  three passes where either mode alone needs ``n``.

Colours are numbered from 0; ``-1`` marks a row or column that is never
seeded (bicolouring). ``order`` names a vertex ordering from
:mod:`adcompare.sparsity.orderings`.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sparse

from adcompare.sparsity.orderings import order_vertices

__all__ = [
    "acyclic_colouring",
    "adjacency_graph",
    "colours_in_rows",
    "column_colouring",
    "column_intersection_graph",
    "row_colouring",
    "star_bicolouring",
    "star_colouring",
]


def _bool_csr(pattern) -> sparse.csr_array:
    matrix = sparse.csr_array(pattern, dtype=bool)
    matrix.sum_duplicates()
    matrix.eliminate_zeros()
    return matrix


def _without_diagonal(graph: sparse.csr_array) -> sparse.csr_array:
    graph = sparse.csr_array(graph, dtype=bool)
    graph.setdiag(False)
    graph.eliminate_zeros()
    graph.sort_indices()
    return graph


def column_intersection_graph(pattern) -> sparse.csr_array:
    """Columns as vertices, joined where they share a row: ``PᵀP`` without its diagonal."""
    matrix = _bool_csr(pattern)
    return _without_diagonal(matrix.T @ matrix)


def adjacency_graph(pattern) -> sparse.csr_array:
    """The graph of a symmetric pattern: an edge per off-diagonal non-zero."""
    matrix = _bool_csr(pattern)
    return _without_diagonal(matrix + matrix.T)


def _neighbours(graph: sparse.csr_array, v: int) -> np.ndarray:
    return graph.indices[graph.indptr[v] : graph.indptr[v + 1]]


def _greedy(graph: sparse.csr_array, order: str) -> np.ndarray:
    """Distance-1 colouring: each vertex takes the smallest colour no neighbour has."""
    n = graph.shape[0]
    colours = np.full(n, -1, dtype=np.int64)
    forbidden = np.full(n + 1, -1, dtype=np.int64)
    for v in order_vertices(graph, order):
        forbidden[colours[_neighbours(graph, v)]] = v
        colours[v] = int(np.argmax(forbidden[:-1] != v)) if n else 0
    return colours


def column_colouring(pattern, order: str = "natural") -> np.ndarray:
    """Partial distance-2 colouring of the columns: no row holds two columns of one colour.

    >>> tridiagonal = np.eye(5) + np.eye(5, k=1) + np.eye(5, k=-1)
    >>> column_colouring(tridiagonal).tolist()
    [0, 1, 2, 0, 1]
    """
    return _greedy(column_intersection_graph(pattern), order)


def row_colouring(pattern, order: str = "natural") -> np.ndarray:
    """Partial distance-2 colouring of the rows: no column holds two rows of one colour.

    >>> row_colouring([[1, 1, 1], [0, 1, 0], [0, 0, 1]]).tolist()
    [0, 1, 1]
    """
    return column_colouring(_bool_csr(pattern).T, order)


def star_colouring(pattern, order: str = "natural") -> np.ndarray:
    """Star colouring of a symmetric pattern's graph (GMP 2005, Algorithm 4.1).

    A distance-1 colouring in which every path on four vertices uses at least
    three colours: each Hessian entry is then alone in its row among the
    columns of its colour, in its row or in its column (direct recovery).

    >>> star = np.eye(4, dtype=bool); star[0, :] = star[:, 0] = True
    >>> star_colouring(star).tolist()
    [0, 1, 1, 1]
    """
    graph = adjacency_graph(pattern)
    n = graph.shape[0]
    colours = np.full(n, -1, dtype=np.int64)
    forbidden = np.full(n + 1, -1, dtype=np.int64)
    # around[x, c]: how many coloured neighbours of x have colour c.
    around = np.zeros((n, 4), dtype=np.int32)
    for v in order_vertices(graph, order):
        for w in _neighbours(graph, v):
            colour_w = colours[w]
            if colour_w >= 0:
                forbidden[colour_w] = v
            xs = _neighbours(graph, w)
            xs = xs[(xs != v) & (colours[xs] >= 0)]
            if colour_w >= 0:
                # v - w - x - y with y coloured like w (y is not w: a second one around x):
                # v must not take x's colour, or the path is two-coloured.
                xs = xs[around[xs, colour_w] >= 2]
            forbidden[colours[xs]] = v
        colour = int(np.argmax(forbidden[:-1] != v)) if n else 0
        colours[v] = colour
        if colour >= around.shape[1]:
            around = np.concatenate([around, np.zeros_like(around)], axis=1)
        around[_neighbours(graph, v), colour] += 1
    return colours


class _DisjointSets:
    """Union-find over vertices, with path halving; absent vertices are singletons."""

    def __init__(self):
        self.parent: dict[int, int] = {}

    def find(self, v: int) -> int:
        parent = self.parent
        while parent.get(v, v) != v:
            parent[v] = parent.get(parent[v], parent[v])
            v = parent[v]
        return v

    def union(self, a: int, b: int) -> None:
        self.parent[self.find(a)] = self.find(b)


def acyclic_colouring(pattern, order: str = "natural") -> np.ndarray:
    """Acyclic colouring: distance-1, and every cycle uses at least three colours.

    Each pair of colours keeps the forest its edges form as disjoint sets;
    a vertex may take colour ``c`` only if no two of its neighbours of one
    colour ``d`` already lie in the same tree of the ``(c, d)`` forest (that
    would close a two-coloured cycle).

    >>> cycle = np.eye(4, k=1) + np.eye(4, k=-1); cycle[0, 3] = cycle[3, 0] = 1
    >>> acyclic_colouring(cycle).tolist()
    [0, 1, 0, 2]
    """
    graph = adjacency_graph(pattern)
    colours = np.full(graph.shape[0], -1, dtype=np.int64)
    forests: dict[tuple[int, int], _DisjointSets] = {}

    def forest(c: int, d: int) -> _DisjointSets:
        return forests.setdefault((min(c, d), max(c, d)), _DisjointSets())

    for v in order_vertices(graph, order):
        coloured = [int(w) for w in _neighbours(graph, v) if colours[w] >= 0]
        taken = {int(colours[w]) for w in coloured}
        c = 0
        while c in taken or _closes_cycle(coloured, colours, forest, c):
            c += 1
        colours[v] = c
        for w in coloured:
            forest(c, int(colours[w])).union(int(v), w)
    return colours


def _closes_cycle(coloured, colours, forest, c: int) -> bool:
    seen: set[tuple[int, int]] = set()
    for w in coloured:
        d = int(colours[w])
        root = (d, forest(c, d).find(w))
        if root in seen:
            return True
        seen.add(root)
    return False


def star_bicolouring(pattern, order: str = "natural") -> tuple[np.ndarray, np.ndarray]:
    """Row and column colours for a bidirectional Jacobian: ``(row_colours, column_colours)``.

    The bipartite graph of the pattern (columns first, then rows) is star
    coloured; then every non-zero is assigned to a colour it can be read
    from directly, the column side first, and colours no entry needs become
    ``-1`` (never seeded). Forward passes: the distinct column colours;
    reverse sweeps: the distinct row colours.

    >>> arrow = np.eye(5, dtype=bool); arrow[0, :] = arrow[:, 0] = True
    >>> rows, columns = star_bicolouring(arrow, "largest-first")
    >>> len(set(rows[rows >= 0])) + len(set(columns[columns >= 0]))
    3
    """
    matrix = _bool_csr(pattern)
    n = matrix.shape[1]
    bipartite = sparse.block_array([[None, matrix.T], [matrix, None]], format="csr")
    colours = star_colouring(bipartite, order)
    column_colours, row_colours = colours[:n].copy(), colours[n:].copy()
    entries = matrix.tocoo()
    i, j = entries.row, entries.col
    by_column = colours_in_rows(matrix, column_colours)[i, column_colours[j]] == 1
    by_row = colours_in_rows(matrix.T, row_colours)[j, row_colours[i]] == 1
    if not np.all(by_column | by_row):
        raise AssertionError("star colouring of the bipartite graph left an entry unrecoverable")
    # Entries only one side can give fix that side's colour as used; the others use the
    # column side where its colour is already needed, else the row side's.
    used_columns = set(column_colours[j[by_column & ~by_row]])
    used_rows = set(row_colours[i[by_row & ~by_column]])
    for a, b in zip(i[by_column & by_row], j[by_column & by_row]):
        if column_colours[b] in used_columns or row_colours[a] in used_rows:
            continue
        used_columns.add(column_colours[b])
    column_colours[~np.isin(column_colours, list(used_columns))] = -1
    row_colours[~np.isin(row_colours, list(used_rows))] = -1
    return _renumbered(row_colours), _renumbered(column_colours)


def colours_in_rows(matrix, colours: np.ndarray) -> np.ndarray:
    """``counts[r, c]``: how many non-zeros of row ``r`` lie in columns of colour ``c``
    (columns coloured ``-1`` are not counted).

    >>> colours_in_rows(np.array([[1, 1, 0], [0, 1, 1]]), np.array([0, 1, 0])).tolist()
    [[1, 1], [1, 1]]
    """
    seeded = colours >= 0
    count = int(colours.max(initial=-1)) + 1
    onehot = sparse.csr_array(
        (np.ones(int(seeded.sum()), dtype=np.int64), (np.flatnonzero(seeded), colours[seeded])),
        shape=(len(colours), max(count, 1)),
    )
    return (sparse.csr_array(matrix, dtype=np.int64) @ onehot).toarray()


def _renumbered(colours: np.ndarray) -> np.ndarray:
    """Colours ``0..p-1`` in order of first use, ``-1`` kept."""
    out = np.full_like(colours, -1)
    used = colours >= 0
    _, first, inverse = np.unique(colours[used], return_index=True, return_inverse=True)
    rank = np.argsort(np.argsort(first))
    out[used] = rank[inverse]
    return out
