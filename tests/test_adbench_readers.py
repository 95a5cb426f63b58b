"""The ADBench and GradBench readers: what they read, and their errors on bad files.

The readers are tested on ADBench's and GradBench's own files, read from
``../shared/data`` (these tests skip, saying why, where it is absent).
Malformed files are made from them by changing one thing, so each error must
name the file, the line and what was expected there.
"""

from __future__ import annotations

import json
import re

import numpy as np
import pytest

from adcompare import adbench
from adcompare.adbench import FormatError
from adcompare.adbench.gmm_format import gmm_input, gradbench_gmm_input
from tests.shared_data import shared_file


def shared(name: str):
    """The path of ``name`` under ``../shared/data`` (``adbench/...`` or ``gradbench/...``)."""
    return shared_file(*name.split("/"))


def shared_lines(name: str) -> list[str]:
    return shared(name).read_text().splitlines()


def write(tmp_path, lines: list[str], name: str = "bad.txt"):
    path = tmp_path / name
    path.write_text("\n".join(lines) + "\n")
    return path


def test_gmm_reader_lays_out_parameters_in_adbench_gradient_order():
    data = adbench.load_gmm(shared("adbench/gmm/test.txt")).data
    lines = shared_lines("adbench/gmm/test.txt")
    assert data.sizes == (2, 3, 1)
    np.testing.assert_array_equal(data.alpha, [float(v) for v in lines[1:4]])
    np.testing.assert_array_equal(data.icf[2], [float(v) for v in lines[9].split()])
    np.testing.assert_array_equal(data.params[3:5], data.mu[0])
    np.testing.assert_array_equal(data.params[9:12], data.icf[0])


def test_ba_reader_replicates_like_adbench():
    data = adbench.load_ba(shared("adbench/ba/test.txt")).data
    assert data.sizes == (2, 10, 10)
    assert (data.cameras == data.cameras[0]).all() and (data.points == data.points[0]).all()
    np.testing.assert_array_equal(data.observations[:, 0], np.arange(10) % 2)
    np.testing.assert_array_equal(data.observations[:, 1], np.arange(10) % 10)


def test_lstm_reader_splits_parameters_state_and_sequence():
    data = adbench.load_lstm(shared("adbench/lstm/lstm_l2_c1024.txt")).data
    lines = shared_lines("adbench/lstm/lstm_l2_c1024.txt")
    assert data.sizes == (2, 1024, 14)
    # Lines 3-6 hold one weight or bias row of 4·14 values each: layer 1's weights are line 5.
    np.testing.assert_array_equal(data.main_params[1, :56], [float(v) for v in lines[4].split()])
    assert set(np.unique(data.sequence)) <= {0.0, 1.0}


@pytest.mark.parametrize(
    ("name", "line", "replacement", "message"),
    [
        ("adbench/gmm/test.txt", 1, "2 three 1", "expected the sizes D K N (3 integers), found"),
        ("adbench/gmm/test.txt", 1, "0 3 1", "the sizes D K N to be at least 1, found 0"),
        ("adbench/gmm/test.txt", 6, "0.345561 oops", "the 3 means of 2 values each"),
        ("adbench/gmm/test.txt", 12, "1.000000 0.5", "the Wishart m (1 integer), found '0.5'"),
        ("adbench/ba/test.txt", 2, "1 2 3 4 5 6 7 8 9 10", "ends early: expected one feature"),
        ("adbench/ba/test.txt", 5, "-525.672849 161.811929 7", "expected the end of the file"),
        ("adbench/ba/test.txt", 3, "4.173048 5.586898 1.4e", "one 3-D point (3 numbers), found"),
        ("adbench/lstm/lstm_l2_c1024.txt", 1, "2 1 14", "at least 2 characters"),
    ],
)
def test_text_readers_name_the_file_line_and_expectation(
    tmp_path, name, line, replacement, message
):
    lines = shared_lines(name)
    lines[line - 1] = replacement
    path = write(tmp_path, lines)
    loader = {"gmm": adbench.load_gmm, "ba": adbench.load_ba, "lstm": adbench.load_lstm}
    with pytest.raises(FormatError) as error:
        loader[name.split("/")[1]](path)
    text = str(error.value)
    assert text.startswith(f"{path}:")
    assert message in text
    if "ends early" not in message:
        assert f":{line}:" in text


def test_truncated_lstm_file_says_which_block_is_short(tmp_path):
    path = write(tmp_path, shared_lines("adbench/lstm/lstm_l2_c1024.txt")[:-10])
    with pytest.raises(FormatError, match=re.escape("expected the sequence (c·b = 14336")):
        adbench.load_lstm(path)


def test_missing_file_is_a_format_error_naming_it(tmp_path):
    with pytest.raises(FormatError, match=re.escape("nowhere.txt: cannot read the file")):
        adbench.load_gmm(tmp_path / "nowhere.txt")


def gradbench_document() -> dict:
    return json.loads(shared("gradbench/gmm_2_5_1000.json").read_text())


def break_mu_shape(document):
    document["input"]["mu"][2] = [1.0]


def break_k(document):
    document["input"]["k"] = "five"


def drop_input(document):
    del document["input"]


def break_gradient(document):
    del document["reference_outputs_from_gradbench_manual_tool"]["jacobian"]["q"]


@pytest.mark.parametrize(
    ("damage", "message"),
    [
        (break_mu_shape, "'mu' is not a regular array of numbers; expected shape (5, 2)"),
        (break_k, "'input.k' is 'five'; expected a positive integer"),
        (drop_input, "expected a JSON object with an 'input' object"),
        (break_gradient, "the input has no 'q'; expected an array of shape (5, 2)"),
    ],
)
def test_gradbench_reader_says_what_is_wrong(tmp_path, damage, message):
    document = gradbench_document()
    damage(document)
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(document))
    with pytest.raises(FormatError, match=re.escape(message)):
        adbench.load_gradbench_gmm(path)


def test_gradbench_reader_gives_the_line_of_invalid_json(tmp_path):
    path = tmp_path / "bad.json"
    path.write_text('{\n  "input": {\n    "d": 2,,\n  }\n}\n')
    with pytest.raises(FormatError, match=re.escape(f"{path}:3: not valid JSON")):
        adbench.load_gradbench_gmm(path)


def test_gradbench_reader_without_reference_outputs(tmp_path):
    document = gradbench_document()
    del document["reference_outputs_from_gradbench_manual_tool"]
    path = tmp_path / "input_only.json"
    path.write_text(json.dumps(document))
    problem = adbench.load_gradbench_gmm(path)
    assert problem.reference is None and problem.n_params == 30


def test_problems_reject_wrongly_shaped_parameters():
    problem = adbench.bundled("adbench-ba-test")
    with pytest.raises(ValueError, match="expected a flat vector of 62 parameters, got shape"):
        problem.residuals(problem.params[:-1])


def test_unknown_names_list_the_known_ones():
    with pytest.raises(ValueError, match="adbench-gmm-test"):
        adbench.bundled("gmm")
    with pytest.raises(ValueError, match="unknown convention 'pytorch'"):
        adbench.GMMProblem(adbench.bundled("adbench-gmm-test").data, "pytorch")


def test_gradbench_reader_refuses_non_finite_numbers(tmp_path):
    document = gradbench_document()
    document["input"]["x"][3][1] = float("inf")
    path = tmp_path / "inf.json"
    path.write_text(json.dumps(document))
    with pytest.raises(FormatError, match=re.escape("'x' holds NaN or infinite numbers")):
        adbench.load_gradbench_gmm(path)


def test_a_gradbench_gmm_input_written_from_data_reads_back_equal():
    data = adbench.generate_gmm(3, 4, 7, gamma=1.5, m=2)
    again = gmm_input(json.loads(json.dumps(gradbench_gmm_input(data))), "written")
    for field in ("alpha", "mu", "icf", "x"):
        np.testing.assert_array_equal(getattr(again, field), getattr(data, field))
    assert (again.gamma, again.m) == (1.5, 2)


@pytest.mark.parametrize(
    ("name", "sizes"),
    [
        ("adbench-gmm-test", (2, 3, 1)),
        ("adbench-gmm-1k", (2, 5, 1000)),
        ("gradbench-gmm-1k", (2, 5, 1000)),
        ("adbench-ba-test", (2, 10, 10)),
        ("adbench-lstm", (2, 1024, 14)),
    ],
)
def test_built_in_instances_are_generated_at_adbench_sizes_the_same_each_time(name, sizes):
    first, second = adbench.bundled(name), adbench.bundled(name)
    assert first.data.sizes == sizes and first.reference is None
    np.testing.assert_array_equal(first.params, second.params)
    assert np.isfinite(first.params).all()


def test_generated_ba_replicates_like_adbench_and_sees_its_point():
    data = adbench.generate_ba(3, 5, 9)
    assert (data.cameras == data.cameras[0]).all() and (data.points == data.points[0]).all()
    np.testing.assert_array_equal(
        data.observations, np.stack([np.arange(9) % 3, np.arange(9) % 5], 1)
    )
    residuals = adbench.BAProblem(data).residuals(data.params)
    assert np.isfinite(residuals).all() and np.ptp(residuals[:18].reshape(9, 2), axis=0).max() == 0
