"""GradBench's gmm, ba and lstm evals: the recorded answers, finite differences, bad input.

Conformance reads GradBench's recorded inputs and its reference tool's outputs
from ``../shared/data/gradbench`` (skipped, saying why, where absent) and
judges each output by GradBench's rule, stricter in one place: every number
must be finite. The slowest recorded cases (LSTM's replay records a program
of about 150,000 instructions first; forward mode carries one lane per
parameter) run with ``ADCOMPARE_GRADBENCH_SLOW=1``; the same code paths run
on small generated instances below.
"""

from __future__ import annotations

import json
import math
import os

import numpy as np
import pytest

from adcompare.adbench import BAProblem, generate_ba, generate_gmm, generate_lstm
from adcompare.adbench.gmm_format import gradbench_gmm_input
from adcompare.adbench.plain import plain_objective
from adcompare.check import finite_differences
from adcompare.gradbench import InputError, get_eval
from tests.shared_data import shared_file

EVALS = ("gmm", "ba", "lstm")
MODES = ("reverse", "forward", "replay")
#: ``auto`` is one of these (see the test of ``Eval.auto`` below), so it is not run again.
DERIVATIVE_MODES = ("reverse", "forward", "replay")
SLOW = os.environ.get("ADCOMPARE_GRADBENCH_SLOW") == "1"
#: Recorded (eval, workload, mode) cases that take tens of seconds each.
SLOW_CASES = {
    ("gmm", "10_5_1000", "forward"),
    ("lstm", "l=4,c=1024", "forward"),
}


def mismatches(reference, output, where: str = "output") -> list[str]:
    """Where ``output`` fails GradBench's comparison with ``reference`` (tolerance 1e-4),
    or holds a number that is not finite."""
    if isinstance(reference, int) and isinstance(output, float) and not isinstance(reference, bool):
        reference = float(reference)
    if isinstance(output, int) and isinstance(reference, float) and not isinstance(output, bool):
        output = float(output)
    if type(reference) is not type(output):
        return [f"{where}: {type(output).__name__}, expected {type(reference).__name__}"]
    if isinstance(reference, dict):
        if set(reference) != set(output):
            return [f"{where}: keys {sorted(output)}, expected {sorted(reference)}"]
        return [m for key in reference for m in mismatches(reference[key], output[key], key)]
    if isinstance(reference, list):
        if len(reference) != len(output):
            return [f"{where}: {len(output)} entries, expected {len(reference)}"]
        pairs = zip(reference, output)
        return [m for i, (a, b) in enumerate(pairs) for m in mismatches(a, b, f"{where}[{i}]")]
    if isinstance(reference, float):
        if not math.isfinite(output):
            return [f"{where}: {output} is not finite"]
        error = abs(reference - output) / max(1.0, abs(reference) + abs(output))
        return [f"{where}: {output} vs {reference} (ρ = {error:.2g})"] if error > 1e-4 else []
    return [] if reference == output else [f"{where}: {output!r}, expected {reference!r}"]


@pytest.mark.parametrize("name", EVALS)
def test_auto_stands_for_one_of_the_modes_tested_here(name):
    evaluation = get_eval(name)
    workloads = evaluation.workloads()
    # gmm's auto turns from replay to reverse at its largest workload.
    chosen = {
        evaluation.resolve("auto", evaluation.prepare(w.make()))
        for w in (workloads[0], workloads[-1] if name == "gmm" else workloads[0])
    }
    assert chosen <= set(DERIVATIVE_MODES) and evaluation.modes == MODES
    if name == "gmm":
        assert chosen == {"replay", "reverse"}


def test_the_comparison_fails_what_gradbench_fails_and_non_finite_numbers():
    assert mismatches({"a": [1.0, 2]}, {"a": [1.00001, 2.0]}) == []
    assert mismatches([1.0], [1.0, 2.0]) and mismatches({"a": 1.0}, {"b": 1.0})
    assert mismatches(3, 4) and mismatches(1.0, 1.01) and mismatches(1.0, float("nan"))
    assert mismatches(0.0, 2e-4) and not mismatches(0.0, 5e-5)


def _recorded():
    for name in EVALS:
        with open(shared_file("gradbench", f"{name}.jsonl")) as lines:
            for line in lines:
                record = json.loads(line)
                derivative = record["function"] == get_eval(name).derivative
                for mode in DERIVATIVE_MODES if derivative else ("reverse",):
                    yield name, record, mode


def _cases():
    try:
        return [
            pytest.param(
                name, record, mode, id=f"{name}-{record['workload']}-{record['function']}-{mode}"
            )
            for name, record, mode in _recorded()
        ]
    except pytest.skip.Exception as reason:
        return [pytest.param(None, None, None, marks=pytest.mark.skip(reason=str(reason)))]


@pytest.mark.parametrize(("name", "record", "mode"), _cases())
def test_recorded_workloads_are_reproduced_within_gradbenchs_rule(name, record, mode):
    evaluation = get_eval(name)
    if (name, record["workload"], mode) in SLOW_CASES and not SLOW:
        pytest.skip("takes tens of seconds here; run with ADCOMPARE_GRADBENCH_SLOW=1")
    prepared = evaluation.prepare({**record["input"], "min_runs": 1})
    result = evaluation.functions[record["function"]](prepared, mode)
    output = json.loads(json.dumps(evaluation.encode(record["function"], result)))
    assert mismatches(record["output"], output) == []


# --- finite differences on small generated instances, in every mode ---------------------


def _lstm_input(layers: int, characters: int) -> dict:
    data = generate_lstm(layers, characters, 3)
    return {
        "main_params": data.main_params.reshape(2 * layers, 12).tolist(),
        "extra_params": data.extra_params.tolist(),
        "state": data.state.reshape(2 * layers, 3).tolist(),
        "sequence": data.sequence.tolist(),
    }


def _ba_input(n: int, m: int, p: int) -> dict:
    data = generate_ba(n, m, p)
    return {
        "n": n,
        "m": m,
        "p": p,
        "cam": data.cameras[0].tolist(),
        "x": data.points[0].tolist(),
        "w": float(data.weights[0]),
        "feat": data.features[0].tolist(),
    }


SMALL = {
    "gmm": lambda: gradbench_gmm_input(generate_gmm(3, 2, 6, gamma=1.5, m=1)),
    "lstm": lambda: _lstm_input(2, 5),
}


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", sorted(SMALL))
def test_gradients_match_central_differences(name, mode):
    evaluation = get_eval(name)
    problem = evaluation.prepare(SMALL[name]())
    gradient = evaluation.functions["jacobian"](problem, mode)
    flat = (
        np.concatenate([np.ravel(part) for part in gradient.values()])
        if isinstance(gradient, dict)
        else gradient
    )
    if name == "gmm":  # α, μ, then q and l per component, as the parameters
        d, k = problem.data.sizes[:2]
        q, lower = flat[k + k * d :][: k * d].reshape(k, d), flat[k + k * d + k * d :]
        flat = np.concatenate([flat[: k + k * d], np.hstack([q, lower.reshape(k, -1)]).ravel()])
    expected = finite_differences(plain_objective(problem))(problem.params)
    np.testing.assert_allclose(flat, expected, rtol=1e-6, atol=1e-7)
    assert evaluation.functions["objective"](problem, mode) == pytest.approx(
        float(problem.objective(problem.params)), rel=1e-12
    )


def test_lstm_replays_one_recorded_character_and_gives_reverse_mode_s_gradient():
    import adcompare.gradbench.lstm as lstm_eval

    evaluation = get_eval("lstm")
    lstm_eval._REPLAYS.clear()
    programs = []
    for characters in (5, 9):
        problem = evaluation.prepare(_lstm_input(2, characters))
        replayed = evaluation.functions["jacobian"](problem, "replay")
        reverse = evaluation.functions["jacobian"](problem, "reverse")
        assert replayed.tobytes() == reverse.tobytes()
        programs.append(
            {k: [len(p.steps) for p in c.programs()] for k, c in lstm_eval._REPLAYS.items()}
        )
    # One step's two stages, recorded once for (l, b), the first step's and the others':
    # the same for 5 and 9 characters.
    assert programs[0] == programs[1] and len(programs[0]) == 2
    assert all(c.recordings == 1 for c in lstm_eval._REPLAYS.values())
    assert evaluation.auto == "replay"


def test_a_gmm_replay_reads_the_points_of_each_input():
    # The objective maps the points in homogeneous coordinates (x_i, 1), built from the
    # input's x: a second input of the same sizes must replay with its own points.
    evaluation = get_eval("gmm")
    first = SMALL["gmm"]()
    moved = {**first, "x": (np.asarray(first["x"]) + 0.5).tolist()}
    evaluation.functions["jacobian"](evaluation.prepare(first), "replay")
    problem = evaluation.prepare(moved)
    replayed = evaluation.functions["jacobian"](problem, "replay")
    reverse = evaluation.functions["jacobian"](problem, "reverse")
    for part in reverse:
        np.testing.assert_allclose(replayed[part], reverse[part], rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("mode", MODES)
def test_ba_jacobian_is_the_whole_csr_jacobian_of_central_differences(mode, monkeypatch):
    import adcompare.gradbench.ba as ba_eval

    monkeypatch.setattr(ba_eval, "OBSERVATIONS_PER_BLOCK", 4)  # three blocks, the last short
    data = ba_eval.EVAL.prepare(_ba_input(3, 4, 10))
    jacobian = ba_eval.EVAL.functions["jacobian"](data, mode)
    problem = BAProblem(data)
    rows, cols = problem.jacobian_pattern()  # ADBench's CSR order, built independently
    assert jacobian.shape == (30, 3 * 11 + 4 * 3 + 10) and jacobian.nnz == 310
    np.testing.assert_array_equal(jacobian.indices, cols)
    np.testing.assert_array_equal(np.repeat(np.arange(30), np.diff(jacobian.indptr)), rows)
    dense = finite_differences(plain_objective(problem))(data.params)
    np.testing.assert_allclose(jacobian.toarray(), dense, rtol=1e-6, atol=1e-6)
    residuals = ba_eval.EVAL.functions["objective"](data, mode)
    output = ba_eval.EVAL.encode("objective", residuals)
    assert output["reproj_error"]["repeated"] == output["w_err"]["repeated"] == 10
    assert output["w_err"]["element"] == pytest.approx(1 - data.weights[0] ** 2, rel=1e-14)


def test_ba_sends_the_first_thirty_and_the_last_entry_of_each_csr_array():
    evaluation = get_eval("ba")
    jacobian = evaluation.functions["jacobian"](evaluation.prepare(_ba_input(2, 3, 5)), "reverse")
    sent = evaluation.encode("jacobian", jacobian)
    assert sent["rows"][:3] == [0, 15, 30] and sent["rows"][-1] == 31 * 5
    assert all(isinstance(v, int) for v in sent["rows"] + sent["cols"])
    assert sent["vals"] == [*jacobian.data[:30].tolist(), float(jacobian.data[-1])]
    assert sent["cols"][-1] == 2 * 11 + 3 * 3 + 4  # the last weight's column


# --- bad input ------------------------------------------------------------------------


def _gmm_input() -> dict:
    return SMALL["gmm"]()


@pytest.mark.parametrize(
    ("name", "change", "message"),
    [
        ("gmm", {"d": True}, "'input.d' is True; expected a positive integer"),
        ("gmm", {"gamma": -1.0}, "'input.gamma' is -1.0; expected a positive number"),
        ("gmm", {"mu": [[0.0] * 3]}, "'mu' has shape (1, 3); expected shape (2, 3)"),
        ("gmm", {"x": [[1.0], [1.0, 2.0]]}, "'x' is not a regular array of numbers; expected"),
        ("ba", {"p": 0}, "ba: 'p' is 0; expected a positive integer"),
        ("ba", {"cam": [1.0] * 10}, "'cam' has shape (10,); expected shape (11,)"),
        ("ba", {"w": float("nan")}, "ba: 'w' is nan; expected a finite number"),
        ("lstm", {"main_params": [[0.0] * 12] * 3}, "send 2l rows of 4b numbers"),
        ("lstm", {"sequence": [[0.0] * 3]}, "'sequence' has 1 character; send at least 2"),
        ("lstm", {"state": [[0.0] * 3] * 2}, "'state' has shape (2, 3); expected shape (4, 3)"),
        ("lstm", {"extra_params": 7}, "'extra_params' has shape (); expected shape (3, 3)"),
    ],
)
def test_bad_input_is_one_sentence_saying_what_to_send(name, change, message):
    record = {
        "gmm": _gmm_input,
        "ba": lambda: _ba_input(2, 3, 4),
        "lstm": lambda: _lstm_input(2, 3),
    }
    with pytest.raises(InputError) as error:
        get_eval(name).prepare({**record[name](), **change})
    assert message in str(error.value) and str(error.value).startswith(name)


@pytest.mark.parametrize("name", EVALS)
def test_an_input_that_is_not_an_object_is_refused(name):
    with pytest.raises(InputError, match=f"^{name}: expected an object with"):
        get_eval(name).prepare([1.0])


# --- workloads --------------------------------------------------------------------------


@pytest.mark.parametrize("name", EVALS)
def test_workloads_are_gradbenchs_published_list(name):
    published = json.loads(shared_file("gradbench", "published.json").read_text())
    expected = list(published["evals"][name]["tools"]["manual"]["workloads"])
    assert [w.description for w in get_eval(name).workloads()] == expected


def test_the_smallest_workloads_have_the_sizes_their_names_say():
    gmm, ba, lstm = (get_eval(name).workloads()[0] for name in EVALS)
    assert get_eval("gmm").prepare(gmm.make()).data.sizes == (2, 5, 1000)
    assert get_eval("ba").prepare(ba.make()).sizes == (49, 7776, 31843)
    assert get_eval("lstm").prepare(lstm.make()).data.sizes == (2, 1024, 14)
    assert gmm.make() == gmm.make()  # seeded: the same input each time
