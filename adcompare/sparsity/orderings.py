"""Vertex orderings for greedy colouring.

The first five are the ones ColPack and SparseMatrixColorings.jl offer;
``saturation-degree`` is Brélaz's DSATUR, whose order depends on the colours
given so far. Each takes a graph as a symmetric boolean ``scipy.sparse``
adjacency matrix without diagonal and returns the vertices in the order the
greedy colouring visits them.
"""

from __future__ import annotations

import heapq

import numpy as np
import scipy.sparse as sparse

__all__ = ["ORDERINGS", "order_vertices"]


def _neighbours(graph: sparse.csr_array, v: int) -> np.ndarray:
    return graph.indices[graph.indptr[v] : graph.indptr[v + 1]]


def _degrees(graph: sparse.csr_array) -> np.ndarray:
    return np.diff(graph.indptr)


def natural(graph: sparse.csr_array) -> np.ndarray:
    """Vertices in their own order."""
    return np.arange(graph.shape[0])


def largest_first(graph: sparse.csr_array) -> np.ndarray:
    """Vertices by decreasing degree (Welsh and Powell)."""
    return np.argsort(-_degrees(graph), kind="stable")


def _dynamic(graph: sparse.csr_array, key, update) -> list[int]:
    """Pick the vertex of smallest ``key`` each step; ``update`` changes its neighbours' keys."""
    keys = [key(int(d)) for d in _degrees(graph)]
    heap = [(k, v) for v, k in enumerate(keys)]
    heapq.heapify(heap)
    done = np.zeros(graph.shape[0], dtype=bool)
    picked = []
    while heap:
        k, v = heapq.heappop(heap)
        if done[v] or k != keys[v]:
            continue  # a stale entry: the vertex's key changed since it was pushed
        done[v] = True
        picked.append(v)
        for w in _neighbours(graph, v):
            if not done[w]:
                keys[w] = update(keys[w])
                heapq.heappush(heap, (keys[w], int(w)))
    return picked


def smallest_last(graph: sparse.csr_array) -> np.ndarray:
    """Repeatedly remove a vertex of smallest degree in what remains; colour in reverse
    (Matula and Beck)."""
    return np.array(_dynamic(graph, lambda d: d, lambda k: k - 1)[::-1], dtype=np.int64)


def incidence_degree(graph: sparse.csr_array) -> np.ndarray:
    """Next, the vertex with the most neighbours already ordered (Coleman and Moré)."""
    return np.array(_dynamic(graph, lambda d: 0, lambda k: k - 1), dtype=np.int64)


def dynamic_largest_first(graph: sparse.csr_array) -> np.ndarray:
    """Next, the vertex with the most neighbours not yet ordered."""
    return np.array(_dynamic(graph, lambda d: -d, lambda k: k + 1), dtype=np.int64)


def saturation_degree(graph: sparse.csr_array) -> np.ndarray:
    """Next, the vertex whose neighbours hold the most distinct colours (its saturation),
    ties by degree, then by number (Brélaz 1979, DSATUR).

    The order is made by colouring as it goes (each vertex the smallest colour
    no neighbour holds), so the greedy colouring in this order gives those
    colours back. On the distance-2 graph of a five-point stencil it finds
    the optimal 5 colours where the static orderings take 6 or 7. Each step
    scans every vertex (vectorised): a clique costs no more than a path.
    """
    n = graph.shape[0]
    degrees = _degrees(graph)
    colours = np.full(n, -1, dtype=np.int64)
    # key = saturation * (largest degree + 1) + degree, so its first maximum is the next
    # vertex; -1 once coloured.
    key = degrees.astype(np.int64)
    step = int(degrees.max(initial=0)) + 1
    held = np.zeros((n, 4), dtype=bool)  # held[v, c]: a neighbour of v has colour c
    picked = np.empty(n, dtype=np.int64)
    for position in range(n):
        v = int(np.argmax(key))
        colour = int(np.argmin(held[v]))
        if held[v, colour]:
            colour = held.shape[1]
        if colour + 1 >= held.shape[1]:
            held = np.concatenate([held, np.zeros_like(held)], axis=1)
        colours[v] = colour
        key[v] = -1
        picked[position] = v
        news = _neighbours(graph, v)
        news = news[(colours[news] < 0) & ~held[news, colour]]
        held[news, colour] = True
        key[news] += step
    return picked


#: The orderings by name.
ORDERINGS = {
    "natural": natural,
    "largest-first": largest_first,
    "smallest-last": smallest_last,
    "incidence-degree": incidence_degree,
    "dynamic-largest-first": dynamic_largest_first,
    "saturation-degree": saturation_degree,
}


def order_vertices(graph: sparse.csr_array, order: str) -> np.ndarray:
    """The vertices of ``graph`` in the named order.

    >>> path = sparse.csr_array(np.eye(3, k=1, dtype=bool) | np.eye(3, k=-1, dtype=bool))
    >>> order_vertices(path, "largest-first").tolist()
    [1, 0, 2]
    >>> order_vertices(path, "smallest-last").tolist()
    [2, 1, 0]
    """
    if order not in ORDERINGS:
        raise ValueError(
            f"unknown vertex ordering {order!r}; use one of {', '.join(map(repr, ORDERINGS))}"
        )
    return ORDERINGS[order](sparse.csr_array(graph))
