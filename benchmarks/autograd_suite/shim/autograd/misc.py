"""autograd.misc: ``flatten`` by adcompare's pytrees; ``const_graph`` is autograd's own."""

import numpy as np

import adcompare as ad
from autograd.adapter import not_applicable
from autograd.operators import make_vjp

const_graph = not_applicable("misc.const_graph", "caches autograd's traced graph")


def _flatten(value):
    leaves, _ = ad.tree_flatten(value)
    return ad.concatenate([ad.ravel(leaf) for leaf in leaves]) if leaves else np.array([])


def flatten(value):
    """``(vector, unflatten)``: the leaves of a container in one vector, and back."""
    unflatten, flat = make_vjp(_flatten)(value)
    return flat, unflatten
