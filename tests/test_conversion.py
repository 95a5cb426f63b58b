"""Converting a traced value to a Python number raises instead of dropping its derivative."""

from __future__ import annotations

import math

import numpy as np
import pytest

import adcompare as ad

AT = np.array([0.2, 0.5])
CONVERSIONS = {
    "math.sin": lambda x: math.sin(x[0]) * x[1],
    "float": lambda x: float(x[0]) * x[1],
    "item": lambda x: x[0].item() * x[1],
    "int": lambda x: int(x[0] + 1.0) * x[1],
}


@pytest.mark.parametrize("mode", ["reverse", "forward"])
@pytest.mark.parametrize("name", sorted(CONVERSIONS))
def test_converting_a_traced_value_to_a_number_raises_naming_the_alternatives(name, mode):
    # Each mode's own way to drop the derivative: a Tensor's detach(), a Dual's primal.
    way = r"x\.detach\(\)" if mode == "reverse" else r"x\.primal; a Dual has no \.detach\(\)"
    with pytest.raises(
        TypeError, match=rf"ad\.sin\(x\[0\]\).*\({way}\), or call \.item\(\) outside"
    ):
        ad.grad(CONVERSIONS[name], mode=mode)(AT)


def test_the_second_order_trace_refuses_too():
    with pytest.raises(TypeError, match="carries a derivative"):
        ad.hessian(lambda x: float(x[0]) * x[1] ** 2)(AT)


def test_a_tensor_outside_transforms_converts_as_in_pytorch():
    t = ad.Tensor([2.5, 3.0], requires_grad=True)
    assert float(t[0]) == 2.5 and t[1].item() == 3.0 and int(t[1]) == 3
    assert math.sin(ad.Tensor(0.5)) == math.sin(0.5)


def test_a_constant_inside_a_transform_still_converts():
    # Only values that carry a derivative are refused: a closed-over constant is plain.
    scale = ad.Tensor(2.0)
    assert ad.grad(lambda x: float(scale) * x)(1.0) == 2.0
