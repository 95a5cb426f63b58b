"""The one registry of problems: the built-in ones, the studies', and third parties'.

Every study finds its problems here (:func:`problems_of`), so a new study
needs no registry of its own. Third-party packages add problems without
editing adcompare through the entry-point group ``adcompare.problems``: each
entry names a :class:`~adcompare.bench.problems.define.Problem`, or a
callable returning one (or several). They are loaded lazily, the first time
a name is looked up or the problems are listed; one that fails to load says
so when asked for, and does not stop the others.
"""

from __future__ import annotations

import importlib.metadata
from collections.abc import Iterable

from adcompare.bench.problems.define import Problem, ProblemError

__all__ = [
    "ENTRY_POINT_GROUP",
    "REGISTRY",
    "available_problems",
    "get_problem",
    "load_entry_points",
    "problems_of",
    "register",
]

ENTRY_POINT_GROUP = "adcompare.problems"

#: Every registered problem by name, the studies' and the entry points' loaded so far.
REGISTRY: dict[str, Problem] = {}
#: Entry points that failed to load: name -> the sentence saying why.
_FAILED: dict[str, str] = {}
_loaded: set[str] = set()


def register(*problems: Problem) -> None:
    """Add problems to the registry (a later one replaces one of the same name)."""
    for p in problems:
        REGISTRY[p.name] = p


def loaded_objects(group: str, kind: type) -> Iterable[tuple[str, object]]:
    """``(entry-point name, object)`` for each entry point of ``group`` not loaded before:
    the object it names, or the objects a callable returns; a failure gives ``(name, the
    sentence saying why)``.

    >>> list(loaded_objects("adcompare.no-such-group", Problem))
    []
    """
    for entry in importlib.metadata.entry_points(group=group):
        key = f"{group}:{entry.name}"
        if key in _loaded:
            continue
        _loaded.add(key)
        try:
            value = entry.load()
            if callable(value) and not isinstance(value, kind):
                value = value()
            values = [value] if isinstance(value, kind) else list(value)
            wrong = [v for v in values if not isinstance(v, kind)]
            if wrong:
                raise TypeError(f"it gives a {type(wrong[0]).__name__}, not a {kind.__name__}")
        except Exception as error:
            where = f"{entry.value}" + (f" (from {entry.dist.name})" if entry.dist else "")
            yield (
                entry.name,
                (
                    f"the {group} entry point {entry.name!r} = {where} fails to load: "
                    f"{type(error).__name__}: {error}; fix or uninstall its package"
                ),
            )
            continue
        for v in values:
            yield entry.name, v


def load_entry_points() -> None:
    """Load the ``adcompare.problems`` entry points not loaded yet into the registry."""
    for name, value in loaded_objects(ENTRY_POINT_GROUP, Problem):
        if isinstance(value, str):
            _FAILED[name] = value
        else:
            register(value)


def get_problem(name: str) -> Problem:
    """The problem called ``name``, built-in or from an entry point; a clear error for an
    unknown one, a :class:`ProblemError` for one whose entry point fails to load.

    >>> get_problem("mlp").family
    'many-inputs'
    """
    if name not in REGISTRY:
        load_entry_points()
    if name in _FAILED:
        raise ProblemError(_FAILED[name])
    try:
        return REGISTRY[name]
    except KeyError:
        raise ValueError(
            f"unknown problem {name!r}; the problems are {', '.join(REGISTRY)}"
        ) from None


def available_problems() -> dict[str, str]:
    """Every problem's name and description, built-in and from entry points (one that
    fails to load is listed with the reason).

    >>> "rosenbrock" in available_problems()
    True
    """
    load_entry_points()
    listed = {name: p.description for name, p in REGISTRY.items()}
    return listed | _FAILED


def problems_of(study: str) -> list[Problem]:
    """The problems ``study`` measures by default (``"bench"``, ``"sparse"``, ``"memory"``).

    >>> [p.name for p in problems_of("sparse")][:2]
    ['bratu-1d', 'laplacian-2d']
    """
    load_entry_points()
    return [p for p in REGISTRY.values() if study in p.studies]
