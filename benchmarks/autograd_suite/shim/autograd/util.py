"""autograd.util: deprecated helpers."""

from autograd.adapter import not_applicable

quick_grad_check = not_applicable("util.quick_grad_check", "deprecated autograd helper")
