"""GradBench's ht eval: the recorded reference answers, finite differences, ADBench's
own files, the synthetic hands, and the input it refuses."""

from __future__ import annotations

import copy
import dataclasses
import functools
import json
import math

import numpy as np
import pytest

import adcompare as ad
from adcompare.gradbench import get_eval
from adcompare.gradbench.evals import InputError
from adcompare.gradbench.ht_instances import POINTS, hand_input, ht_workloads, synthetic_model
from tests.ht_files import read_instance
from tests.shared_data import shared_file

EVAL = get_eval("ht")
MODES = ("auto", "forward", "replay", "reverse")


@functools.cache
def _lines() -> tuple:
    """GradBench's recorded ht messages (4 MB: read once)."""
    lines = shared_file("gradbench", "ht.jsonl").read_text().splitlines()
    return tuple(json.loads(line) for line in lines)


@pytest.fixture(scope="module")
def recorded():
    """GradBench's recorded ht messages, one prepared input per workload (three)."""
    lines = _lines()
    prepared = {}
    for line in lines:
        prepared.setdefault(line["eval_args"], EVAL.prepare(line["input"]))
    return lines, prepared


def _assert_gradbench_close(reference, output) -> None:
    """GradBench's rule (|a − b| / max(1, |a| + |b|) ≤ 1e-4) on equal shapes, and every
    number a finite float (GradBench's own comparison would let NaN through)."""
    assert type(output) is list and len(output) == len(reference)
    for ref, out in zip(reference, output):
        if isinstance(ref, list):
            _assert_gradbench_close(ref, out)
        else:
            assert type(out) is float and math.isfinite(out)
            assert abs(out - ref) / max(1.0, abs(out) + abs(ref)) <= 1e-4, (out, ref)


@pytest.mark.parametrize("line", range(6))
@pytest.mark.parametrize("mode", MODES)
def test_recorded_outputs_are_reproduced(recorded, line, mode):
    lines, prepared = recorded
    message = lines[line]
    result = EVAL.functions[message["function"]](prepared[message["eval_args"]], mode)
    _assert_gradbench_close(message["output"], EVAL.encode(message["function"], result))


def _finite_differences(problem, step=1e-6) -> np.ndarray:
    """Central differences of the objective: 26 theta columns, then (complicated) one
    column per us coordinate, moving that coordinate of every point at once (exact
    for the compressed columns, since residual i reads us[i] only)."""
    objective = EVAL.functions["objective"]
    columns = []
    for name, count in (("us", 2 * problem.complicated), ("theta", 26)):
        for k in range(count):
            value = getattr(problem, name)
            direction = np.zeros_like(value)
            direction[..., k] = step
            ahead = dataclasses.replace(problem, **{name: value + direction})
            behind = dataclasses.replace(problem, **{name: value - direction})
            columns.append((objective(ahead, "auto") - objective(behind, "auto")) / (2 * step))
    return np.stack(columns, axis=1)


@pytest.mark.parametrize("variant", ["simple", "complicated"])
def test_jacobian_matches_finite_differences_in_every_mode(variant):
    problem = EVAL.prepare(hand_input(nverts=60, ntriangles=50, npoints=7, variant=variant))
    expected = _finite_differences(problem)
    assert expected.shape == (21, 28 if variant == "complicated" else 26)
    assert np.abs(expected).max() > 0.1  # the check compares real derivatives
    for mode in MODES:
        jacobian = EVAL.functions["jacobian"](problem, mode)
        assert jacobian.shape == expected.shape
        np.testing.assert_allclose(jacobian, expected, rtol=1e-6, atol=1e-7, err_msg=mode)


def test_a_mirrored_hand_mirrors_x_before_the_global_transform():
    message = hand_input(nverts=40, ntriangles=30, npoints=6, variant="simple")
    message["theta"][0:3] = [0.0, 0.0, 0.0]  # no global rotation: only the translation
    mirrored = copy.deepcopy(message)
    mirrored["data"]["model"]["is_mirrored"] = True
    points, translation = np.array(message["data"]["points"]), np.array(message["theta"][3:6])
    plain, flipped = (
        points - EVAL.functions["objective"](EVAL.prepare(m), "auto").reshape(-1, 3) - translation
        for m in (message, mirrored)
    )
    np.testing.assert_allclose(flipped, plain * [-1.0, 1.0, 1.0], atol=1e-15)


def test_synthetic_hand_rests_where_its_vertices_are_at_zero_pose():
    """theta = 0 leaves every bone at its base pose (Rodrigues' identity below 1e-4,
    every Euler angle 0), so each model point is its base position."""
    message = hand_input(nverts=80, ntriangles=60, npoints=9, variant="simple", seed=3)
    message["theta"] = [0.0] * 26
    residuals = EVAL.functions["objective"](EVAL.prepare(message), "auto").reshape(-1, 3)
    base = np.array(message["data"]["model"]["base_positions"])[:, :3]
    corners = base[message["data"]["correspondences"]]
    np.testing.assert_allclose(np.array(message["data"]["points"]) - residuals, corners, atol=1e-14)


def test_workloads_are_gradbench_default_list():
    published = json.loads(shared_file("gradbench", "published.json").read_text())
    descriptions = list(published["evals"]["ht"]["tools"]["manual"]["workloads"])
    assert [w.description for w in EVAL.workloads()] == descriptions
    first = EVAL.workloads()[0].make()
    assert len(first["data"]["model"]["base_positions"]) == 10_000
    assert len(first["us"]) == len(first["data"]["points"]) == POINTS[0]
    assert len(ht_workloads("simple", "small")[0].make()["us"]) == 0


@pytest.mark.parametrize(
    ("folder", "complicated", "eval_args"),
    [
        ("complicated_big", True, "--model big --variant complicated"),
        ("complicated_small", True, "--model small --variant complicated"),
        ("simple_small", False, "--model small --variant simple"),
    ],
)
def test_adbench_files_read_as_the_recorded_input(folder, complicated, eval_args):
    path = shared_file("gradbench", "files", "ht", folder, "hand1_t26_c100.txt")
    message = next(m for m in _lines() if m["eval_args"].endswith(eval_args))
    read = read_instance(path, complicated)
    recorded = message["input"]
    assert read["theta"] == recorded["theta"] and read["us"] == recorded["us"]
    for key in ("correspondences", "points"):
        assert read["data"][key] == recorded["data"][key]
    for key, value in recorded["data"]["model"].items():
        assert read["data"]["model"][key] == value, key


def test_modes_agree_on_an_adbench_hand():
    path = shared_file("gradbench", "files", "ht", "complicated_small", "hand3_t26_c200.txt")
    problem = EVAL.prepare(read_instance(path, complicated=True))
    forward = EVAL.functions["jacobian"](problem, "forward")
    assert forward.shape == (600, 28)
    for mode in ("replay", "reverse"):
        np.testing.assert_allclose(EVAL.functions["jacobian"](problem, mode), forward, atol=1e-12)


def _broken(change) -> dict:
    message = hand_input(nverts=30, ntriangles=20, npoints=4)
    change(message)
    return message


def _set(path: str, value):
    def change(message):
        *parents, last = path.split(".")
        target = message
        for key in parents:
            target = target[key]
        target[last] = value

    return change


@pytest.mark.parametrize(
    ("change", "words"),
    [
        (lambda m: m.pop("theta"), "no field 'theta'"),
        (_set("theta", [0.0] * 25), "theta has shape (25,)"),
        (_set("theta", "x"), "theta must be"),
        (_set("us", [[0.1, 0.2]] * 3), "us has shape (3, 2)"),
        (_set("data.points", [[float("nan")] * 3] * 4), "NaN or infinity"),
        (_set("data.correspondences", [0, 1, 2, 20]), "outside 0 … 19"),
        (_set("data.correspondences", [0, 1, 2.5, 3]), "integers"),
        (_set("data.model.parents", [-1, *range(20, -1, -1)]), "comes before it"),
        (_set("data.model.bone_names", ["wrist"]), "22 bones"),
        (_set("data.model.is_mirrored", 0), "true or false"),
        (_set("data.model.weights", [[0.0] * 22] * 29), "weights has shape (29, 22)"),
        (_set("data.model.triangles", [[0, 1, 30]] * 20), "model's vertices"),
        (_set("data.model", []), "data.model must be a JSON object"),
    ],
)
def test_bad_input_is_refused_in_one_sentence(change, words):
    with pytest.raises(InputError) as error:
        EVAL.prepare(_broken(change))
    message = str(error.value)
    assert words in message and message.count(". ") == 0


def test_synthetic_models_are_seeded():
    first, again = synthetic_model(50, 40, seed=5), synthetic_model.__wrapped__(50, 40, seed=5)
    for key in ("base_relatives", "weights", "triangles"):
        np.testing.assert_array_equal(first[key], again[key])


def test_jacobian_op_count_does_not_grow_with_the_points():
    """The model is batched over bones and points: the forward Jacobian applies the same
    ops at 5 and at 50 points, and its tangent work grows with the points it reads."""
    counts = []
    for npoints in (5, 50):
        problem = EVAL.prepare(hand_input(nverts=60, ntriangles=50, npoints=npoints))
        with ad.count() as cost:
            EVAL.functions["jacobian"](problem, "forward")
        counts.append(cost)
    assert counts[0].ops == counts[1].ops
    assert counts[0].elements["forward"] < counts[1].elements["forward"]
