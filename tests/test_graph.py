"""Graph inspection: statistics, DOT text, pictures, and evaluation-trace tables."""

from __future__ import annotations

import re
import struct

import numpy as np
import pytest

import adcompare as ad
from adcompare.engines.reverse import Placeholder
from adcompare.graph import draw, graph_of, stats, to_dot, trace_table


def worked(x, y):
    return 3 * x**2 + x * y + 5 * y**2


def worked_graph():
    x = ad.Tensor(2.0, requires_grad=True)
    y = ad.Tensor(3.0, requires_grad=True)
    return worked(x, y), {"x": x, "y": y}


def mlp_graph(seed=0):
    """A two-layer MLP with a mean-squared-error loss, built from plain ops."""
    rng = np.random.default_rng(seed)
    inputs, targets = rng.standard_normal((4, 3)), rng.standard_normal((4, 1))
    params = {
        "W1": ad.Tensor(rng.standard_normal((3, 8)), requires_grad=True),
        "b1": ad.Tensor(np.zeros(8), requires_grad=True),
        "W2": ad.Tensor(rng.standard_normal((8, 1)), requires_grad=True),
        "b2": ad.Tensor(np.zeros(1), requires_grad=True),
    }
    hidden = ad.tanh(ad.matmul(inputs, params["W1"]) + params["b1"])
    out = ad.matmul(hidden, params["W2"]) + params["b2"]
    return ad.mean((out - targets) ** 2), params


def saved_arrays_by_hand(tensor):
    """The arrays the records actually hold, read from their slots, each once.

    Placeholders stand in for values a record did not keep: they hold no array.
    """
    seen = {}
    stack, visited = [tensor.grad_fn], set()
    while stack:
        node = stack.pop()
        if node is None or node in visited or not hasattr(node, "saved_args"):
            continue
        visited.add(node)
        for value in [*(node.saved_args or ()), node.saved_out]:
            if value is not None and not isinstance(value, Placeholder):
                seen[id(value)] = value
        stack.extend(node.next)
    return list(seen.values())


def saved_bytes_by_hand(tensor):
    """Bytes saved for backward: each record's distinct values, summed over the records."""
    total, stack, visited = 0, [tensor.grad_fn], set()
    while stack:
        node = stack.pop()
        if node is None or node in visited or not hasattr(node, "saved_args"):
            continue
        visited.add(node)
        values = [*(node.saved_args or ()), node.saved_out]
        kept = {id(v): v for v in values if v is not None and not isinstance(v, Placeholder)}
        total += sum(np.asarray(v).nbytes for v in kept.values())
        stack.extend(node.next)
    return total


# --- the worked example's trace ----------------------------------------------------------


def test_worked_example_primal_column():
    table = trace_table(worked, 2.0, 3.0)
    values = [float(row.value) for row in table.rows]
    for expected in (4, 6, 9, 12, 45, 63):  # x², xy, y², 3x², 5y², f
        assert expected in values
    assert [row.name for row in table.rows if row.is_input] == ["x", "y"]
    assert table.output.name == "f" and float(table.output.value) == 63
    assert table.rows[-1].is_output


def test_worked_example_forward_sweeps():
    with ad.count() as cost:
        table = trace_table(worked, 2.0, 3.0, mode="forward")
    assert table.forward_sweeps == 2 and cost.passes == 2
    assert table.reverse_sweeps == 0 and cost.sweeps == 0
    assert table.seeds == ("x", "y")
    assert [float(t) for t in table.output.tangents] == [15.0, 32.0]
    assert table.forward_gradient == (15.0, 32.0)
    xy = next(row for row in table.rows if row.expression == "x * y")
    assert [float(t) for t in xy.tangents] == [3.0, 2.0]  # d(xy)/dx = y, d(xy)/dy = x
    assert all(row.adjoint is None for row in table.rows)


def test_worked_example_reverse_sweep():
    with ad.count() as cost:
        table = trace_table(worked, 2.0, 3.0, mode="reverse")
    assert table.reverse_sweeps == 1 and cost.sweeps == 1
    assert table.forward_sweeps == 0 and cost.passes == 0
    adjoints = {row.name: float(row.adjoint) for row in table.rows}
    assert adjoints["x"] == 15.0 and adjoints["y"] == 32.0
    assert adjoints["f"] == 1.0
    square = next(row for row in table.rows if row.expression == "x ** 2")
    assert float(square.adjoint) == 3.0  # f = 3·v1 + ...
    assert all(row.tangents is None for row in table.rows)


def test_both_modes_agree_and_count_their_sweeps():
    table = trace_table(worked, 2.0, 3.0, mode="both")
    assert (table.forward_sweeps, table.reverse_sweeps) == (2, 1)
    assert table.forward_gradient == table.reverse_gradient == table.gradient == (15.0, 32.0)
    # Every forward column agrees with the adjoints through <v̄, v̇> at the inputs:
    # the output tangent of sweep j is the adjoint of input j.
    inputs = [row for row in table.rows if row.is_input]
    for j, tangent in enumerate(table.output.tangents):
        assert float(tangent) == float(inputs[j].adjoint)


def test_text_table_is_aligned():
    text = trace_table(worked, 2.0, 3.0).to_text()
    assert "forward mode needed 2 sweeps" in text
    assert "reverse mode needed 1 sweep" in text
    assert "df/dx = 15, df/dy = 32" in text
    block = text.split("\n\n")[1].splitlines()  # the forward table
    header, rule, *body = block
    assert set(rule) <= {"-", " "} and len(body) == 9
    # The value column is right-aligned: its last character sits at one place.
    end = header.index("value") + len("value")
    for line in body:
        assert line[end - 1].isdigit(), line
        assert line[end] == " "


def test_markdown_table():
    markdown = trace_table(worked, 2.0, 3.0).to_markdown()
    tables = [block for block in markdown.split("\n\n") if block.startswith("|")]
    assert len(tables) == 2
    for block in tables:
        lines = block.splitlines()
        widths = {line.count("|") - line.count("\\|") for line in lines}
        assert len(widths) == 1  # same number of cells in every line
        assert re.fullmatch(r"\|(:---|---:)(\|(:---|---:))*\|", lines[1])
        assert len(lines) == 2 + 9
    assert "| v1 | power | `x ** 2` | 4 | 4 | 0 |" in markdown
    assert "- gradient: df/dx = 15, df/dy = 32" in markdown


def test_names_come_from_signature_expression_or_argument():
    from adcompare.cli.expr import parse_expression

    assert trace_table(lambda a, b: a * b, 1.0, 2.0).inputs == ("a", "b")
    assert trace_table(parse_expression("q*p"), 1.0, 2.0).inputs == ("q", "p")
    assert trace_table(lambda *xs: xs[0] * xs[1], 1.0, 2.0).inputs == ("x1", "x2")
    assert trace_table(lambda a, b: a * b, 1.0, 2.0, names=["s", "t"]).inputs == ("s", "t")
    # An input called v or f does not clash with the intermediates' names.
    table = trace_table(lambda f, v: ad.sin(f) * v, 1.0, 2.0)
    names = [row.name for row in table.rows]
    assert len(set(names)) == len(names) and table.output.name not in ("f", "v")


def test_array_inputs_take_one_forward_sweep_per_element():
    table = trace_table(lambda w: ad.sum(w * w), np.array([1.0, 2.0, 3.0]))
    assert table.forward_sweeps == 3 and table.seeds == ("w[0]", "w[1]", "w[2]")
    assert table.reverse_sweeps == 1
    np.testing.assert_allclose(table.forward_gradient[0], [2.0, 4.0, 6.0])
    np.testing.assert_allclose(table.reverse_gradient[0], [2.0, 4.0, 6.0])


def test_forward_mode_of_a_vector_function_gives_jacobian_columns():
    x = np.array([0.5, 1.0])
    table = trace_table(lambda v: ad.sin(v) * v, x, mode="forward")
    jac = np.column_stack([np.asarray(t) for t in table.output.tangents])
    np.testing.assert_allclose(jac, np.diag(np.cos(x) * x + np.sin(x)))
    assert table.gradient is None
    with pytest.raises(ValueError, match="one number"):
        trace_table(lambda v: ad.sin(v) * v, x, mode="reverse")


def test_unused_intermediates_have_zero_adjoint():
    def f(x):
        ad.sin(x)  # computed and dropped
        return x * 3

    table = trace_table(f, 1.0)
    dropped = next(row for row in table.rows if row.op == "sin")
    assert float(dropped.adjoint) == 0.0
    assert float(dropped.tangents[0]) == pytest.approx(np.cos(1.0))


def test_trace_table_refuses_bad_calls():
    with pytest.raises(ValueError, match="mode"):
        trace_table(worked, 2.0, 3.0, mode="sideways")
    with pytest.raises(ValueError, match="computed from its inputs"):
        trace_table(lambda x: 3.0, 1.0)
    with pytest.raises(ValueError, match="point"):
        trace_table(worked)


# --- statistics ---------------------------------------------------------------------------


def test_stats_of_the_worked_example():
    f, _ = worked_graph()
    s = stats(f)
    assert (s.nodes, s.leaves, s.edges, s.constants) == (7, 2, 10, 4)
    assert s.ops == {"power": 2, "multiply": 3, "add": 2}
    assert s.output_shape == ()


def test_stats_on_a_known_graph_counts_each_saved_array_once():
    x = ad.Tensor(np.ones(1000), requires_grad=True)
    y = ad.sin(x)  # keeps x (8000 bytes)
    z = y * y  # keeps y, twice, counted once (8000 bytes)
    w = ad.exp(z)  # keeps its output (8000 bytes)
    s = ad.sum(w)  # keeps nothing
    summary = stats(s)
    assert (summary.nodes, summary.leaves, summary.edges) == (4, 1, 5)
    assert summary.ops == {"sin": 1, "multiply": 1, "exp": 1, "sum": 1}
    assert summary.saved_values == 3
    assert summary.saved_bytes == 3 * 8000
    assert summary.saved_bytes == sum(a.nbytes for a in saved_arrays_by_hand(s))


@pytest.mark.parametrize("build", [worked_graph, mlp_graph])
def test_saved_bytes_are_the_arrays_actually_saved(build):
    out, _ = build()
    assert stats(out).saved_bytes == saved_bytes_by_hand(out) > 0
    assert stats(out).saved_values == len(saved_arrays_by_hand(out))


def test_backward_frees_the_graph_unless_retained():
    loss, _ = mlp_graph()
    before = stats(loss)
    loss.backward(retain_graph=True)
    kept = stats(loss)
    assert kept.saved_bytes == before.saved_bytes > 0 and kept.freed == 0
    loss.backward()
    after = stats(loss)
    assert after.saved_bytes == 0 and after.saved_values == 0
    assert after.freed == after.nodes == before.nodes
    assert (after.leaves, after.edges) == (before.leaves, before.edges)
    assert "freed by backward" in str(after)


def test_stats_of_tensors_without_a_graph():
    assert stats(ad.Tensor([1.0, 2.0])).nodes == 0
    leaf = stats(ad.Tensor([1.0, 2.0], requires_grad=True))
    assert (leaf.nodes, leaf.leaves, leaf.edges, leaf.saved_bytes) == (0, 1, 0, 0)
    with pytest.raises(TypeError, match="Tensor"):
        stats(np.ones(2))


def test_graph_order_is_execution_order():
    loss, _ = mlp_graph()
    graph = graph_of(loss)
    seqs = [node.seq for node in graph.nodes]
    assert seqs == sorted(seqs) and graph.nodes[-1] is loss.grad_fn
    assert [n.op.name for n in graph.nodes][:3] == ["matmul", "add", "tanh"]


# --- DOT ------------------------------------------------------------------------------------

_ID = r'"([^"\\]+)"'
_VALUE = r'(?:"(?:[^"\\]|\\.)*"|[\w.#-]+)'
_ATTRS = rf"\[((?:\w+={_VALUE}(?:, )?)*)\]"
_NODE = re.compile(rf"^\s*{_ID} {_ATTRS};$")
_EDGE = re.compile(rf"^\s*{_ID} -> {_ID}(?: {_ATTRS})?;$")
_DEFAULTS = re.compile(rf"^\s*(graph|node|edge) {_ATTRS};$")


def parse_dot(text):
    """Parse the DOT subset to_dot writes; fail on anything else."""
    lines = text.strip().splitlines()
    assert lines[0] == "digraph adcompare {" and lines[-1] == "}"
    nodes, edges = {}, []
    for line in lines[1:-1]:
        if _DEFAULTS.match(line):
            continue
        if m := _EDGE.match(line):
            attrs = dict(re.findall(rf"(\w+)=({_VALUE})", m.group(3) or ""))
            edges.append((m.group(1), m.group(2), attrs))
        elif m := _NODE.match(line):
            attrs = dict(re.findall(rf"(\w+)=({_VALUE})", m.group(2)))
            assert m.group(1) not in nodes, f"node {m.group(1)} declared twice"
            nodes[m.group(1)] = attrs
        else:
            raise AssertionError(f"not DOT this parser knows: {line!r}")
    for a, b, _ in edges:
        assert a in nodes and b in nodes, f"edge {a} -> {b} to an undeclared node"
    return nodes, edges


def is_acyclic(nodes, edges) -> bool:
    indegree = dict.fromkeys(nodes, 0)
    for _, b, _ in edges:
        indegree[b] += 1
    ready = [n for n, d in indegree.items() if d == 0]
    seen = 0
    while ready:
        n = ready.pop()
        seen += 1
        for a, b, _ in edges:
            if a == n:
                indegree[b] -= 1
                if indegree[b] == 0:
                    ready.append(b)
    return seen == len(nodes)


@pytest.mark.parametrize("build", [worked_graph, mlp_graph])
def test_to_dot_structure(build):
    out, names = build()
    summary = stats(out)
    nodes, edges = parse_dot(to_dot(out, names=names))
    kinds = {}
    for name in nodes:
        kind = re.match(r"[a-z]+", name).group()
        kinds[kind] = kinds.get(kind, 0) + 1
    assert kinds == {
        "leaf": summary.leaves,
        "op": summary.nodes,
        "saved": summary.saved_values,
        "output": 1,
    }
    data = [(a, b) for a, b, attrs in edges if "dir" not in attrs]
    saved = [(a, b) for a, b, attrs in edges if attrs.get("dir") == "none"]
    assert len(data) == summary.edges + 1  # and the last record to the output
    assert all(a.startswith("saved") and b.startswith("op") for a, b in saved)
    assert is_acyclic(nodes, edges)
    # every leaf reaches the output
    for leaf in (n for n in nodes if n.startswith("leaf")):
        frontier, reached = [leaf], set()
        while frontier:
            n = frontier.pop()
            reached.add(n)
            frontier += [b for a, b in data if a == n and b not in reached]
        assert "output" in reached
    labels = " ".join(attrs["label"] for attrs in nodes.values())
    for leaf_name in names:
        assert leaf_name in labels
    assert "Backward" in labels


def test_to_dot_marks_saved_values_and_escapes_labels():
    x = ad.Tensor(2.0, requires_grad=True)
    nodes, edges = parse_dot(to_dot(x * x, names={'a "quoted" name': x}))
    assert r"a \"quoted\" name = 2" in nodes["leaf0"]["label"]
    saved = [n for n in nodes if n.startswith("saved")]
    assert len(saved) == 1  # x is kept twice by the record, counted once
    assert nodes[saved[0]]["fillcolor"] == '"#ffa500"'
    assert [(a, attrs["style"]) for a, b, attrs in edges if a in saved] == [(saved[0], "dashed")]
    assert len([e for e in edges if e[0] == "leaf0"]) == 2  # x enters the product twice
    nodes, _ = parse_dot(to_dot(x * x, show_saved=False))
    assert not [n for n in nodes if n.startswith("saved")]


def test_to_dot_after_backward_shows_freed_records():
    f, names = worked_graph()
    f.backward()
    nodes, _ = parse_dot(to_dot(f, names=names))
    assert not [n for n in nodes if n.startswith("saved")]
    assert all("freed" in attrs["label"] for n, attrs in nodes.items() if n.startswith("op"))


# --- PNG ------------------------------------------------------------------------------------


def png_size(path):
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack(">II", data[16:24])
    return len(data), width, height


@pytest.mark.parametrize("build", [worked_graph, mlp_graph])
def test_draw_writes_a_png(tmp_path, build):
    out, names = build()
    path = tmp_path / "graph.png"
    assert draw(out, path, names=names) == str(path)
    nbytes, width, height = png_size(path)
    assert 10_000 < nbytes < 5_000_000
    assert 400 < width < 4000 and 400 < height < 4000


def test_draw_after_backward_and_without_a_graph(tmp_path):
    loss, names = mlp_graph()
    loss.backward()
    draw(loss, tmp_path / "freed.png", names=names)
    draw(ad.Tensor(1.0), tmp_path / "nothing.png")
    draw(ad.Tensor([1.0, 2.0], requires_grad=True), tmp_path / "leaf.png")
    for name in ("freed.png", "nothing.png", "leaf.png"):
        assert png_size(tmp_path / name)[0] > 5_000


def test_draw_handles_fifty_records(tmp_path):
    xs = [ad.Tensor(float(i + 1), requires_grad=True) for i in range(5)]
    acc = xs[0]
    for i in range(12):
        step = ad.sin(acc) * xs[(i + 1) % 5]
        acc = step + ad.exp(xs[(i + 2) % 5] * 0.1) if i % 3 else step - acc
    assert stats(acc).nodes >= 50
    draw(acc, tmp_path / "big.png", dpi=60)
    nbytes, width, height = png_size(tmp_path / "big.png")
    assert nbytes > 20_000 and height > width


def test_saved_bytes_are_one_number_everywhere(tmp_path, capsys):
    """stats, count(), explain, demo, the picture's header and its node labels agree."""
    from adcompare.cli import main
    from adcompare.cli.demo import demo_lines
    from adcompare.graph.picture import _build

    x, y = ad.Tensor(2.0, requires_grad=True), ad.Tensor(3.0, requires_grad=True)
    with ad.count() as cost:
        f = 3 * x**2 + x * y + 5 * y**2
    # x**2 and y**2 keep base and exponent, x*y both factors, 3*· and 5*· their constant:
    # 8 float64 values of 8 bytes; the records that keep nothing are the two additions.
    by_hand = (2 + 1 + 2 + 2 + 1) * 8
    assert stats(f).saved_bytes == cost.tape_bytes == by_hand == 64
    vertices, _ = _build(f, {"x": x, "y": y})
    labels = [line for v in vertices for line in v.lines if line.startswith("saved ")]
    assert sum(int(line.split()[1]) for line in labels) == by_hand
    assert f"({by_hand} bytes saved for the backward pass)" in "\n".join(demo_lines())
    formula = "3*x**2 + x*y + 5*y**2"
    assert main(["explain", formula, "--at", "x=2,y=3", "--dot", str(tmp_path / "g.dot")]) == 0
    assert f"{by_hand} bytes saved for backward" in capsys.readouterr().out
