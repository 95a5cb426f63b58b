"""Run a module with other values in place of its parameters.

``functional_call`` (PyTorch's ``torch.func.functional_call``) turns a
module into a function of its parameters, so the transforms can
differentiate it with respect to them in either mode: a ``Dual`` carrying
``P`` tangent lanes in place of the weights gives the whole gradient in
one forward pass.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping

import numpy as np

from adcompare.nn.module import Module
from adcompare.ops import getitem, reshape
from adcompare.ops.registry import Box, raw, shape_of

__all__ = [
    "functional_call",
    "parameters_to_vector",
    "per_example_gradients",
    "vector_to_parameters",
]


def functional_call(module: Module, parameters: Mapping, *args, **kwargs):
    """``module(*args, **kwargs)`` with ``parameters`` (by dotted name) in place of its own.

    Names not given keep the module's own parameters; the module is left as
    it was afterwards.

    >>> from adcompare import nn
    >>> layer = nn.Linear(1, 1)
    >>> out = functional_call(layer, {"weight": np.array([[2.0]]), "bias": np.array([1.0])},
    ...                       np.array([[3.0]]))
    >>> print(out)
    [[7.]]
    """
    own = dict(module.named_parameters())
    unknown = [name for name in parameters if name not in own]
    if unknown:
        raise KeyError(
            f"functional_call: {', '.join(unknown)} name no parameter of this "
            f"{type(module).__name__}; its parameters are {', '.join(own)}"
        )
    owners = {}
    for module_name, sub in module.named_modules():
        for name in sub._parameters:
            owners[f"{module_name}.{name}" if module_name else name] = (sub, name)
    saved = []
    try:
        for name, value in parameters.items():
            if shape_of(value) != own[name].shape:
                raise ValueError(
                    f"functional_call: {name} has shape {shape_of(value)} but the parameter "
                    f"has shape {own[name].shape}"
                )
            sub, short = owners[name]
            saved.append((sub, short, sub._parameters[short]))
            sub._parameters[short] = value
        return module(*args, **kwargs)
    finally:
        for sub, short, original in reversed(saved):
            sub._parameters[short] = original


def per_example_gradients(
    module: Module, loss: Callable, inputs, targets, mode: str = "reverse"
) -> dict:
    """The gradient of ``loss(module(x), y)`` for each example, by parameter name.

    This is ``vmap(grad(example_loss), in_axes=(None, 0, 0))`` over a
    functional call (torch.func's recipe, what Opacus computes): entry
    ``name`` has shape ``(batch, *parameter.shape)``, and its mean over the
    batch is the gradient of the mean loss. ``loss`` sees one example as a
    batch of one. Targets must be floating (regression, or one-hot classes).

    >>> from adcompare import nn
    >>> _ = nn.init.manual_seed(0)
    >>> model = nn.Linear(3, 2)
    >>> x, y = np.ones((5, 3)), np.zeros((5, 2))
    >>> grads = per_example_gradients(model, nn.functional.mse_loss, x, y)
    >>> grads["weight"].shape, grads["bias"].shape
    ((5, 2, 3), (5, 2))
    """
    from adcompare.transforms import grad, vmap

    targets = np.asarray(raw(targets)) if not isinstance(targets, Box) else targets
    if not np.issubdtype(np.result_type(raw(targets)), np.floating):
        raise TypeError(
            "per_example_gradients: the targets are integers; vmap maps floating arrays, so "
            "pass one-hot targets and a loss of them, e.g. "
            "lambda z, t: -ad.sum(t * nn.functional.log_softmax(z))"
        )
    parameters = {name: np.asarray(p.data) for name, p in module.named_parameters()}

    def example_loss(parameters, x, y):
        out = functional_call(module, parameters, reshape(x, (1, *shape_of(x))))
        return loss(out, reshape(y, (1, *shape_of(y))))

    return vmap(grad(example_loss, mode=mode), in_axes=(None, 0, 0))(parameters, inputs, targets)


def parameters_to_vector(parameters) -> np.ndarray:
    """The parameters' values, flattened and joined into one vector.

    >>> from adcompare import nn
    >>> parameters_to_vector(nn.Linear(3, 2).parameters()).shape
    (8,)
    """
    return np.concatenate([p.detach().numpy().ravel() for p in parameters])


def vector_to_parameters(vector, named_shapes: Mapping[str, tuple[int, ...]]) -> dict:
    """Cut ``vector`` into pieces shaped as ``named_shapes`` (the inverse of the above).

    Works on any value the op set takes, so a ``Dual`` or ``Tensor`` vector
    gives pieces that carry its derivative.

    >>> pieces = vector_to_parameters(np.arange(5.0), {"w": (2, 2), "b": (1,)})
    >>> print(pieces["w"], pieces["b"])
    [[0. 1.]
     [2. 3.]] [4.]
    """
    total = sum(math.prod(shape) for shape in named_shapes.values())
    if shape_of(vector) != (total,):
        raise ValueError(
            f"vector_to_parameters: a vector of shape {shape_of(vector)} for parameters "
            f"with {total} elements in all; pass a 1-D vector of length {total}"
        )
    pieces = {}
    start = 0
    for name, shape in named_shapes.items():
        size = math.prod(shape)
        pieces[name] = reshape(getitem(vector, slice(start, start + size)), shape)
        start += size
    return pieces
