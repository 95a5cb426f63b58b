"""See the graph: statistics, pictures and evaluation-trace tables.

``stats(tensor)`` counts a graph's records, edges, leaves, ops and the
bytes it keeps for the backward pass; ``to_dot(tensor)`` writes Graphviz
DOT text in torchviz's style; ``draw(tensor, path)`` renders a PNG with
matplotlib; ``trace_table(f, *args)`` shows the evaluation trace (Wengert
list) of ``f`` with its forward tangents and reverse adjoints.

>>> import adcompare as ad
>>> from adcompare.graph import stats
>>> x = ad.Tensor(2.0, requires_grad=True)
>>> y = ad.Tensor(3.0, requires_grad=True)
>>> f = 3 * x**2 + x * y + 5 * y**2
>>> print(stats(f))
graph of a tensor of shape (): 7 op record(s), 2 leaf tensor(s), 10 edge(s), 4 constant input(s)
ops: power ×2, multiply ×3, add ×2
saved for backward: 64 bytes, the values each record keeps (5 distinct array(s))
"""

from adcompare.graph.dot import to_dot
from adcompare.graph.picture import draw
from adcompare.graph.records import Graph, GraphStats, SavedValue, graph_of, stats
from adcompare.graph.trace import TraceRow, TraceTable, trace_table

__all__ = [
    "Graph",
    "GraphStats",
    "SavedValue",
    "TraceRow",
    "TraceTable",
    "draw",
    "graph_of",
    "stats",
    "to_dot",
    "trace_table",
]
