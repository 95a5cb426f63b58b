"""Load a user's function named on the command line: ``PKG.MODULE:NAME`` or
``path/to/file.py:NAME``, the one way every command does it.

Anything that stops the load (no such file or module, a module that raises
on import, a missing name, a name that is not callable) is a
:class:`FunctionSpecError`: one sentence saying what to do.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
from collections.abc import Callable
from pathlib import Path

__all__ = ["FunctionSpecError", "load_function", "user_problem"]


class FunctionSpecError(ValueError):
    """A ``--function`` or ``--inputs`` that cannot be loaded, said in one sentence."""


def load_function(spec: str, option: str = "--function") -> Callable:
    """The callable ``spec`` names: ``PKG.MODULE:NAME`` or ``path/to/file.py:NAME``.

    The current folder is searched first for modules (as ``python -m`` does),
    and a file's own folder while it is imported, so it can import its neighbours.

    >>> load_function("math:hypot")(3.0, 4.0)
    5.0
    >>> for spec in ["math", "math:tau"]:
    ...     try:
    ...         load_function(spec)
    ...     except FunctionSpecError as error:
    ...         print(error)
    --function math: give the function as PKG.MODULE:NAME or path/to/file.py:NAME, ...
    --function math:tau: math.tau is a float, not a function; name a function
    """
    where, _, name = spec.rpartition(":")
    if not where or not name or not all(part.isidentifier() for part in name.split(".")):
        raise FunctionSpecError(
            f"{option} {spec}: give the function as PKG.MODULE:NAME or path/to/file.py:NAME, "
            "e.g. mymodel.py:f"
        )
    module = _import_file(where, spec, option) if _is_path(where) else _import(where, spec, option)
    found = module
    for part in name.split("."):
        if not hasattr(found, part):
            listed = ", ".join(n for n, v in vars(module).items() if _is_own_callable(v, module))
            raise FunctionSpecError(
                f"{option} {spec}: {where} has no {name}; "
                + (f"its functions are {listed}" if listed else "it defines no function")
            )
        found = getattr(found, part)
    if not callable(found):
        raise FunctionSpecError(
            f"{option} {spec}: {where}.{name} is a {type(found).__name__}, not a function; "
            "name a function"
        )
    return found


def _is_path(where: str) -> bool:
    return where.endswith(".py") or "/" in where or "\\" in where


def _is_own_callable(value, module) -> bool:
    return callable(value) and getattr(value, "__module__", None) == module.__name__


def _import(where: str, spec: str, option: str):
    """Import the module ``where``, the current folder first on the path."""
    if "" not in sys.path and str(Path.cwd()) not in sys.path:
        sys.path.insert(0, "")
    try:
        return importlib.import_module(where)
    except ModuleNotFoundError as error:
        if error.name and where.startswith(error.name):
            raise FunctionSpecError(
                f"{option} {spec}: no module {error.name} here; run from the folder that holds "
                f"it, install its package, or give the file's path (path/to/{where}.py:NAME)"
            ) from None
        raise _raised_on_import(where, spec, option, error) from error
    except Exception as error:
        raise _raised_on_import(where, spec, option, error) from error


def _import_file(where: str, spec: str, option: str):
    """Import the file ``where`` as a module named after it, its folder on the path."""
    path = Path(where)
    if not path.is_file():
        raise FunctionSpecError(
            f"{option} {spec}: no file {where}; give the path of a .py file from the current "
            f"folder ({Path.cwd()})"
        )
    name = path.stem if path.stem.isidentifier() else "user_function"
    loader_spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(loader_spec)
    folder = str(path.resolve().parent)
    sys.path.insert(0, folder)
    sys.modules[name] = module  # dataclasses and pickling look the module up by name
    try:
        loader_spec.loader.exec_module(module)
    except Exception as error:
        sys.modules.pop(name, None)
        raise _raised_on_import(where, spec, option, error) from error
    finally:
        sys.path.remove(folder)
    return module


def _raised_on_import(where: str, spec: str, option: str, error: Exception) -> FunctionSpecError:
    message = " ".join(str(error).split())
    return FunctionSpecError(
        f"{option} {spec}: importing {where} raised {type(error).__name__}: {message}; "
        "fix the module so that it imports (python -c 'import ...' shows the traceback)"
    )


def user_problem(function: str, inputs: str | None = None):
    """The benchmark problem of the function ``--function`` names, with the input builder
    ``--inputs`` names (a callable of the size, ``inputs(n)``; default a seeded normal
    vector of n), named after the function.

    >>> p = user_problem("numpy:cumsum")
    >>> p.name, p.build(n=3).m
    ('cumsum', 3)
    """
    from adcompare.bench import problem

    f = load_function(function)
    make_inputs = None if inputs is None else load_function(inputs, "--inputs")
    return problem(f, name=function.rpartition(":")[2].rpartition(".")[2], inputs=make_inputs)
