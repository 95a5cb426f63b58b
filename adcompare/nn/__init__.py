"""A small neural-network library on top of ``Tensor``, with PyTorch's surface.

Reverse mode matters because training needs the gradient of one loss with
respect to every weight: one backward sweep gives all of them.

>>> import numpy as np
>>> import adcompare as ad
>>> from adcompare import nn
>>> _ = nn.init.manual_seed(0)
>>> model = nn.Sequential(nn.Linear(2, 8), nn.Tanh(), nn.Linear(8, 3))
>>> logits = model(np.ones((4, 2)))
>>> loss = nn.functional.cross_entropy(logits, np.array([0, 1, 2, 0]))
>>> loss.backward()
>>> model[0].weight.grad.shape
(8, 2)
"""

from adcompare.nn import functional, init
from adcompare.nn.batches import MiniBatches
from adcompare.nn.layers import Flatten, Linear, ReLU, Sequential, Sigmoid, Tanh
from adcompare.nn.losses import BCEWithLogitsLoss, CrossEntropyLoss, MSELoss
from adcompare.nn.module import Module
from adcompare.nn.parameter import Parameter
from adcompare.nn.stateless import (
    functional_call,
    parameters_to_vector,
    per_example_gradients,
    vector_to_parameters,
)

__all__ = [
    "BCEWithLogitsLoss",
    "CrossEntropyLoss",
    "Flatten",
    "Linear",
    "MSELoss",
    "MiniBatches",
    "Module",
    "Parameter",
    "ReLU",
    "Sequential",
    "Sigmoid",
    "Tanh",
    "functional",
    "functional_call",
    "init",
    "parameters_to_vector",
    "per_example_gradients",
    "vector_to_parameters",
]
