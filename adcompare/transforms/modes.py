"""Modes other than forward and reverse (``"symbolic"``), registered by the layers above."""

from __future__ import annotations

from collections.abc import Callable

_MODES: dict[str, dict[str, Callable]] = {}


def register_mode(
    name: str,
    *,
    value_and_grad: Callable,
    jacobian: Callable,
    hessian: Callable | None = None,
) -> None:
    """Make ``mode=name`` available in :func:`grad`, :func:`jacobian` and :func:`hessian`.

    ``value_and_grad(f, argnums)``, ``jacobian(f, argnums)`` and
    ``hessian(f, argnums)`` each return a function of the same arguments as
    ``f``. Used by ``adcompare.symbolic``.
    """
    _MODES[name] = {"value_and_grad": value_and_grad, "jacobian": jacobian}
    if hessian is not None:
        _MODES[name]["hessian"] = hessian


def registered_modes(what: str = "value_and_grad") -> tuple[str, ...]:
    """The registered modes that give ``what`` (``"value_and_grad"``, ``"jacobian"``, ...).

    >>> import adcompare as ad  # registers "symbolic"
    >>> "symbolic" in registered_modes("hessian")
    True
    """
    return tuple(name for name, functions in _MODES.items() if what in functions)


def registered(mode: str, what: str) -> Callable:
    """The function a registered mode gives for ``what``."""
    return _MODES[mode][what]
