"""``Module``: the base of layers and models, with PyTorch's bookkeeping.

Parameters and submodules register themselves when they are assigned as
attributes, in assignment order; that order names them in
``named_parameters()`` and ``state_dict()`` (``0.weight``, ``0.bias``, ...),
as in PyTorch, so weights can be exchanged with a PyTorch model.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterator

import numpy as np

from adcompare.engines.reverse import Tensor
from adcompare.nn.parameter import Parameter
from adcompare.ops.registry import raw, shape_of

__all__ = ["Module"]


class Module:
    """Base class of every layer and model: subclass it and define ``forward``.

    >>> from adcompare import nn
    >>> class Affine(nn.Module):
    ...     def __init__(self):
    ...         super().__init__()
    ...         self.scale = nn.Parameter([2.0])
    ...         self.inner = nn.Linear(1, 1)
    ...     def forward(self, x):
    ...         return self.inner(x) * self.scale
    >>> model = Affine()
    >>> [name for name, _ in model.named_parameters()]
    ['scale', 'inner.weight', 'inner.bias']
    >>> model
    Affine(
      (inner): Linear(in_features=1, out_features=1, bias=True)
    )
    >>> hasattr(model, "missing")
    False
    """

    def __init__(self) -> None:
        object.__setattr__(self, "_parameters", OrderedDict())
        object.__setattr__(self, "_modules", OrderedDict())
        object.__setattr__(self, "training", True)

    # --- registration -------------------------------------------------------------
    def _registries(self) -> tuple[OrderedDict, OrderedDict]:
        try:
            return self.__dict__["_parameters"], self.__dict__["_modules"]
        except KeyError:
            raise AttributeError(
                f"{type(self).__name__}.__init__ must call super().__init__() before "
                "assigning attributes"
            ) from None

    def __setattr__(self, name: str, value) -> None:
        parameters, modules = self._registries()
        if isinstance(value, Parameter):
            modules.pop(name, None)
            self.__dict__.pop(name, None)
            parameters[name] = value
        elif isinstance(value, Module):
            parameters.pop(name, None)
            self.__dict__.pop(name, None)
            modules[name] = value
        elif value is None and (name in parameters or name in modules):
            # An optional parameter or submodule that is absent (bias=False).
            (parameters if name in parameters else modules)[name] = None
        else:
            if isinstance(value, Tensor) and name in parameters:
                raise TypeError(
                    f"cannot assign a plain Tensor to parameter {name!r}; wrap it as "
                    "nn.Parameter(...) or change the parameter's data with load_state_dict"
                )
            parameters.pop(name, None)
            modules.pop(name, None)
            object.__setattr__(self, name, value)

    def __getattr__(self, name: str):
        # Called only when normal lookup fails: parameters and submodules live here.
        registries = self.__dict__
        for registry in ("_parameters", "_modules"):
            if name in registries.get(registry, ()):
                return registries[registry][name]
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    def __delattr__(self, name: str) -> None:
        parameters, modules = self._registries()
        if name in parameters:
            del parameters[name]
        elif name in modules:
            del modules[name]
        else:
            object.__delattr__(self, name)

    def register_parameter(self, name: str, parameter: Parameter | None) -> None:
        """Register ``parameter`` under ``name`` (``None``: an absent optional one).

        >>> from adcompare import nn
        >>> m = nn.Module(); m.register_parameter("bias", None)
        >>> m.bias is None, list(m.parameters())
        (True, [])
        """
        if parameter is not None and not isinstance(parameter, Parameter):
            raise TypeError(
                f"register_parameter({name!r}, ...) needs an nn.Parameter or None, "
                f"not {type(parameter).__name__}"
            )
        self._registries()[0][name] = parameter

    # --- calling ------------------------------------------------------------------
    def forward(self, *args, **kwargs):
        """The computation; every subclass defines it."""
        raise NotImplementedError(
            f"{type(self).__name__} has no forward(); define forward(self, ...) in the subclass"
        )

    def __call__(self, *args, **kwargs):
        return self.forward(*args, **kwargs)

    # --- traversal ----------------------------------------------------------------
    def named_children(self) -> Iterator[tuple[str, Module]]:
        """The direct submodules with their attribute names."""
        for name, module in self._modules.items():
            if module is not None:
                yield name, module

    def children(self) -> Iterator[Module]:
        """The direct submodules."""
        for _, module in self.named_children():
            yield module

    def named_modules(self, prefix: str = "") -> Iterator[tuple[str, Module]]:
        """This module and every submodule, depth first, each once, with dotted names.

        >>> from adcompare import nn
        >>> [name for name, _ in nn.Sequential(nn.Linear(2, 2), nn.ReLU()).named_modules()]
        ['', '0', '1']
        """
        seen: set[int] = set()
        stack = [(prefix, self)]
        while stack:
            name, module = stack.pop()
            if id(module) in seen:
                continue
            seen.add(id(module))
            yield name, module
            below = [
                (f"{name}.{child_name}" if name else child_name, child)
                for child_name, child in module.named_children()
            ]
            stack.extend(reversed(below))

    def modules(self) -> Iterator[Module]:
        """This module and every submodule, depth first."""
        for _, module in self.named_modules():
            yield module

    def named_parameters(self, prefix: str = "") -> Iterator[tuple[str, Parameter]]:
        """Every parameter with its dotted name; a shared parameter appears once.

        >>> from adcompare import nn
        >>> [(n, p.shape) for n, p in nn.Sequential(nn.Linear(3, 2)).named_parameters()]
        [('0.weight', (2, 3)), ('0.bias', (2,))]
        """
        seen: set[int] = set()
        for module_name, module in self.named_modules(prefix):
            for name, parameter in module._parameters.items():
                if parameter is None or id(parameter) in seen:
                    continue
                seen.add(id(parameter))
                yield (f"{module_name}.{name}" if module_name else name), parameter

    def parameters(self) -> Iterator[Parameter]:
        """Every parameter, in registration order (what optimizers take)."""
        for _, parameter in self.named_parameters():
            yield parameter

    # --- modes and gradients ------------------------------------------------------
    def train(self, mode: bool = True) -> Module:
        """Set training mode on this module and every submodule; returns ``self``."""
        for module in self.modules():
            object.__setattr__(module, "training", bool(mode))
        return self

    def eval(self) -> Module:
        """Set evaluation mode (``train(False)``); returns ``self``.

        >>> from adcompare import nn
        >>> model = nn.Sequential(nn.Linear(1, 1)).eval()
        >>> model.training, model[0].training
        (False, False)
        """
        return self.train(False)

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Clear every parameter's gradient: to ``None``, or to zeros.

        >>> from adcompare import nn
        >>> layer = nn.Linear(2, 1); layer(np.ones((1, 2))).sum().backward()
        >>> layer.zero_grad(set_to_none=False); print(layer.bias.grad)
        tensor([0.])
        >>> layer.zero_grad(); print(layer.bias.grad)
        None
        """
        for parameter in self.parameters():
            if set_to_none or parameter.grad is None:
                parameter.grad = None
            else:
                parameter.grad = np.zeros(parameter.shape, dtype=parameter.dtype)

    # --- saving and loading -------------------------------------------------------
    def state_dict(self) -> OrderedDict[str, Tensor]:
        """Every parameter by dotted name, detached; like PyTorch's, the tensors
        share memory with the parameters, so take a copy to keep a snapshot.

        >>> from adcompare import nn
        >>> list(nn.Sequential(nn.Linear(2, 3), nn.ReLU(), nn.Linear(3, 1)).state_dict())
        ['0.weight', '0.bias', '2.weight', '2.bias']
        """
        return OrderedDict((name, p.detach()) for name, p in self.named_parameters())

    def load_state_dict(self, state_dict: dict, strict: bool = True) -> None:
        """Copy values (tensors or arrays) into the parameters of the same names.

        With ``strict`` every parameter must be given and no other key; a value
        whose shape differs from its parameter's is always an error. The values
        are copied, so later training does not change the dictionary.

        >>> from adcompare import nn
        >>> layer = nn.Linear(2, 1)
        >>> layer.load_state_dict({"weight": [[1.0, 2.0]], "bias": [0.5]})
        >>> print(layer(np.array([[1.0, 1.0]])).item())
        3.5
        """
        own = dict(self.named_parameters())
        missing = [name for name in own if name not in state_dict]
        unexpected = [name for name in state_dict if name not in own]
        problems = []
        if strict and missing:
            problems.append("missing key(s): " + ", ".join(missing))
        if strict and unexpected:
            problems.append(
                f"unexpected key(s): {', '.join(unexpected)} (this model has: {', '.join(own)})"
            )
        values = {}
        for name in own:
            if name not in state_dict:
                continue
            value = np.array(raw(state_dict[name]), dtype=own[name].dtype)
            if shape_of(value) != own[name].shape:
                problems.append(
                    f"size mismatch for {name}: the state_dict has shape {shape_of(value)}, "
                    f"the parameter in this model has shape {own[name].shape}"
                )
            values[name] = value
        if problems:
            raise RuntimeError(
                f"error(s) in loading state_dict for {type(self).__name__}: " + "; ".join(problems)
            )
        for name, value in values.items():
            own[name].data = value

    # --- printing -----------------------------------------------------------------
    def extra_repr(self) -> str:
        """The settings shown inside this module's parentheses (layers override it)."""
        return ""

    def __repr__(self) -> str:
        lines = [
            f"({name}): " + repr(module).replace("\n", "\n  ")
            for name, module in self.named_children()
        ]
        extra = self.extra_repr()
        if not lines:
            return f"{type(self).__name__}({extra})"
        body = ([extra] if extra else []) + lines
        return f"{type(self).__name__}(\n  " + "\n  ".join(body) + "\n)"
