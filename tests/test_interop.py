"""numpy functions and operators meet boxes: dispatch, or a clear refusal."""

from __future__ import annotations

import re

import numpy as np
import pytest

import adcompare as ad


def test_ndarray_on_the_left_gives_a_box():
    a = np.array([1.0, 2.0])
    t = ad.Tensor([3.0, 5.0], requires_grad=True)
    out = a - t
    assert isinstance(out, ad.Tensor) and out.grad_fn.name == "SubBackward"
    out.sum().backward()
    np.testing.assert_array_equal(t.grad.numpy(), [-1.0, -1.0])
    d = a * ad.Dual([3.0, 5.0], [1.0, 0.0])
    assert isinstance(d, ad.Dual)
    np.testing.assert_array_equal(d.tangent, [1.0, 0.0])
    assert isinstance(2.0**t, ad.Tensor) and isinstance(a @ t, ad.Tensor)


def test_numpy_functions_dispatch_to_the_op_set():
    t = ad.Tensor([[0.5, 1.0], [1.5, 2.0]], requires_grad=True)
    y = np.sum(np.sin(t) * np.exp(t), axis=0)
    assert isinstance(y, ad.Tensor)
    np.mean(y).backward()
    x = t.detach().numpy()
    np.testing.assert_allclose(t.grad.numpy(), 0.5 * np.exp(x) * (np.cos(x) + np.sin(x)))
    d = np.maximum(ad.Dual(2.0, 1.0), 1.0)
    assert d.tangent == 1.0
    assert np.abs(ad.Dual(-2.0, 1.0)).tangent == -1.0


def test_functions_without_rules_refuse_to_drop_the_derivative():
    t = ad.Tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(TypeError, match=r"np\.unwrap.*x\.detach\(\)"):
        np.unwrap(t)
    np.testing.assert_array_equal(np.unwrap(t.detach()), [1.0, 2.0])  # what it advises works
    # A Dual has no .detach(): the advice in forward mode is its .primal.
    with pytest.raises(TypeError, match=r"np\.unwrap.*x\.primal; a Dual has no \.detach"):
        np.unwrap(ad.Dual(np.array([1.0, 2.0]), np.ones(2)))
    with pytest.raises(TypeError, match=r"np\.spacing.*drop"):
        np.spacing(ad.Dual(1.5, 1.0))
    with pytest.raises(TypeError, match=r"adcompare\.sum"):
        np.add.reduce(t)
    # Values that carry no derivative go through numpy as usual.
    assert np.allclose(ad.Tensor([1.0, 2.0]), [1.0, 2.0])
    np.testing.assert_array_equal(np.unwrap(ad.Tensor([1.0, 2.0])), [1.0, 2.0])


def test_comparisons_give_plain_booleans():
    t = ad.Tensor([1.0, 3.0], requires_grad=True)
    mask = t > 2.0
    assert isinstance(mask, np.ndarray) and mask.tolist() == [False, True]
    assert (ad.Dual(1.0, 1.0) == 1.0).item() is True
    assert np.isfinite(t).all()


def test_methods_follow_numpy():
    t = ad.Tensor(np.arange(6.0).reshape(2, 3), requires_grad=True)
    assert t.sum(axis=0).shape == (3,)
    assert t.mean().item() == 2.5
    assert t.reshape(3, 2).shape == (3, 2) and t.reshape((6,)).shape == (6,)
    assert t.T.shape == (3, 2) and t.transpose(1, 0).shape == (3, 2)
    assert t.max(axis=1).detach().numpy().tolist() == [2.0, 5.0]
    assert len(t) == 2 and [row.shape for row in t] == [(3,), (3,)]
    assert t[np.arange(2), np.array([2, 0])].detach().numpy().tolist() == [2.0, 3.0]
    with pytest.raises(TypeError, match="0-d"):
        len(ad.Tensor(1.0))


def test_shape_errors_name_the_op_and_both_shapes():
    with pytest.raises(ValueError, match=r"matmul.*\(2, 3\).*\(2, 3\)"):
        ad.Tensor(np.ones((2, 3))) @ np.ones((2, 3))
    with pytest.raises(ValueError, match=r"multiply.*\(3,\).*\(4,\)"):
        ad.Tensor(np.ones(3), requires_grad=True) * np.ones(4)
    with pytest.raises(ValueError, match=r"reshape.*\(2, 3\).*\(4,\)"):
        ad.reshape(np.ones((2, 3)), (4,))
    with pytest.raises(ValueError, match=r"axis 2 is out of range.*rank 2"):
        ad.sum(np.ones((2, 3)), axis=2)
    with pytest.raises(IndexError, match=r"getitem.*\(3,\)"):
        ad.Tensor(np.ones(3))[5]


#: numpy's keywords adcompare's functions do not all take, with a value to pass.
NUMPY_KEYWORDS = {"out": None, "where": True, "dtype": np.float64, "initial": 0.0}


def _numpy_function(name):
    found = np
    for part in name.split("."):
        found = getattr(found, part, None)
    return found


def _keyword_calls():
    """``(name, keyword)`` for every numpy function adcompare stands in for whose keyword
    adcompare's function does not take, where numpy's takes it."""
    import inspect

    from adcompare.engines.box import unknown_keywords
    from adcompare.ops.registry import NUMPY_NAMES

    for name, fn in sorted(NUMPY_NAMES.items()):
        func = _numpy_function(name)
        if func is None:
            continue
        if isinstance(func, np.ufunc):
            # A generalised ufunc (matmul) takes no where=.
            takes = {"out", "dtype"} | ({"where"} if func.signature is None else set())
            arity = func.nin
        else:
            try:
                parameters = inspect.signature(func).parameters.values()
            except (TypeError, ValueError):
                continue
            takes = {p.name for p in parameters}
            required = [p for p in parameters if p.default is inspect.Parameter.empty]
            arity = len(required) if all(p.kind <= 1 for p in required) else 0
        for keyword in sorted(set(NUMPY_KEYWORDS) & takes):
            if arity in (1, 2) and keyword in unknown_keywords(fn, [keyword]):
                yield name, keyword, arity


@pytest.mark.parametrize(("name", "keyword", "arity"), list(_keyword_calls()))
def test_a_numpy_keyword_adcompare_does_not_take_is_named_as_numpy_names_it(name, keyword, arity):
    """np.max(t, initial=0) used to fail with "_prepare_axes() got an unexpected keyword
    argument 'initial'": the refusal names numpy's keyword and the way out."""
    t = ad.Tensor([0.25, 0.5, 0.75], requires_grad=True)
    value = np.empty(3) if keyword == "out" else NUMPY_KEYWORDS[keyword]
    with pytest.raises(TypeError) as refused:
        _numpy_function(name)(*[t] * arity, **{keyword: value})
    message = str(refused.value)
    assert f"{keyword}=" in message and "unexpected keyword" not in message, message


def test_writing_into_a_box_with_out_is_refused_not_a_recursion():
    for t in (ad.Tensor([0.5, 1.0]), ad.Tensor([0.5, 1.0], requires_grad=True)):
        with pytest.raises(TypeError, match=r"np\.exp\(\.\.\., out=\.\.\.\).*adcompare\.exp"):
            np.exp(t, out=t)


@pytest.mark.parametrize(
    ("mode", "plain"),
    [("reverse", lambda v: v.detach()), ("forward", lambda v: v.primal)],
)
def test_float_inside_a_transform_advises_what_works_in_that_mode(mode, plain):
    """The refusal used to advise float(stop_gradient(x)), refused too; it now names the
    mode's own way (.detach() of a Tensor, .primal of a Dual), and that way works."""
    advice = "x.detach()" if mode == "reverse" else "x.primal; a Dual has no .detach()"
    with pytest.raises(TypeError, match=re.escape(advice)):
        ad.grad(lambda v: v * float(v), mode=mode)(3.0)
    assert ad.grad(lambda v: v * float(plain(v)) ** 2, mode=mode)(3.0) == 9.0
