"""Reading and checking GradBench's ht input: JSON to :class:`HandData`, or one
:class:`InputError` sentence saying what is wrong and what to send instead.

>>> from adcompare.gradbench.ht_instances import hand_input
>>> problem = read_input(hand_input(nverts=40, ntriangles=30, npoints=5, variant="simple"))
>>> problem.theta.shape, problem.us is None, problem.data.points.shape
((26,), True, (5, 3))
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from adcompare.gradbench.evals import InputError
from adcompare.gradbench.ht_model import HandData

__all__ = ["HTProblem", "read_input"]

_MODEL_FIELDS = (
    "bone_names",
    "parents",
    "base_relatives",
    "inverse_base_absolutes",
    "base_positions",
    "weights",
    "triangles",
    "is_mirrored",
)


@dataclass
class HTProblem:
    """One prepared ht input: ``theta`` (26), ``us`` ((npts, 2), or ``None`` for the
    simple variant) and the model with its correspondences. ``cache`` holds what
    a mode records once per input (the replayed program)."""

    theta: np.ndarray
    us: np.ndarray | None
    data: HandData
    cache: dict = field(default_factory=dict)

    @property
    def complicated(self) -> bool:
        """Whether correspondences are triangles (with ``us``) rather than vertices."""
        return self.us is not None


def _field(mapping, key: str, where: str):
    if not isinstance(mapping, dict):
        raise InputError(f"ht: {where} must be a JSON object, not {type(mapping).__name__}")
    if key not in mapping:
        raise InputError(f"ht: {where} has no field {key!r}; send it as GradBench's ht format says")
    return mapping[key]


def _array(value, name: str, shape: tuple, integer: bool = False) -> np.ndarray:
    """``value`` as an array of ``shape`` (None: any length), finite, else InputError."""
    kind = "integers" if integer else "numbers"
    try:
        array = np.array(value, dtype=np.float64)
    except (TypeError, ValueError):
        raise InputError(f"ht: {name} must be a (nested) list of {kind}") from None
    fits = array.ndim == len(shape) and all(s in (None, n) for s, n in zip(shape, array.shape))
    if not fits:
        wanted = " × ".join("n" if s is None else str(s) for s in shape)
        raise InputError(f"ht: {name} has shape {array.shape}; it must be {wanted}")
    if not np.all(np.isfinite(array)):
        raise InputError(f"ht: {name} holds NaN or infinity; send finite numbers")
    if integer:
        if np.any(array != np.round(array)):
            raise InputError(f"ht: {name} must hold integers, not fractions")
        return array.astype(np.intp)
    return array


def _in_range(indices: np.ndarray, bound: int, name: str, of: str) -> None:
    if indices.size and (indices.min() < 0 or indices.max() >= bound):
        raise InputError(f"ht: {name} holds an index outside 0 … {bound - 1}, the {of}")


def _levels(parents: np.ndarray):
    """The bones grouped by depth, each parent's slot in that order, and each bone's slot."""
    if parents[0] != -1 or np.any(parents[1:] < 0) or np.any(parents[1:] >= np.arange(1, 22)):
        raise InputError(
            "ht: parents must name bone 0 as the root (−1) and give every other bone a "
            "parent that comes before it"
        )
    depth = np.zeros(22, dtype=np.intp)
    for bone in range(1, 22):
        depth[bone] = depth[parents[bone]] + 1
    levels = tuple(np.flatnonzero(depth == d) for d in range(depth.max() + 1))
    order = np.argsort(np.concatenate(levels), kind="stable")
    parent_slots = tuple(order[parents[level]] for level in levels[1:])
    return levels, parent_slots, order


def _model(model: dict) -> dict:
    """The model's arrays, checked against each other."""
    values = {key: _field(model, key, "data.model") for key in _MODEL_FIELDS}
    names = values["bone_names"]
    if not isinstance(names, list) or len(names) != 22:
        raise InputError("ht: data.model.bone_names must list the 22 bones of ADBench's hand")
    if not isinstance(values["is_mirrored"], bool):
        raise InputError("ht: data.model.is_mirrored must be true or false")
    arrays = {
        "parents": _array(values["parents"], "data.model.parents", (22,), integer=True),
        "base_relatives": _array(values["base_relatives"], "base_relatives", (22, 4, 4)),
        "inverse_base_absolutes": _array(
            values["inverse_base_absolutes"], "inverse_base_absolutes", (22, 4, 4)
        ),
        "base_positions": _array(values["base_positions"], "base_positions", (None, 4)),
        "triangles": _array(values["triangles"], "triangles", (None, 3), integer=True),
    }
    nverts = len(arrays["base_positions"])
    arrays["weights"] = _array(values["weights"], "data.model.weights", (nverts, 22))
    _in_range(arrays["triangles"], nverts, "data.model.triangles", "model's vertices")
    arrays["mirrored"] = values["is_mirrored"]
    return arrays


def _corners(model: dict, correspondences: np.ndarray, complicated: bool) -> np.ndarray:
    if complicated:
        _in_range(correspondences, len(model["triangles"]), "correspondences", "triangles")
        return model["triangles"][correspondences]
    _in_range(correspondences, len(model["base_positions"]), "correspondences", "vertices")
    return correspondences[:, None]


def _hand_data(data: dict, complicated: bool) -> HandData:
    model = _model(_field(data, "model", "data"))
    correspondences = _array(
        _field(data, "correspondences", "data"), "data.correspondences", (None,), integer=True
    )
    points = _array(_field(data, "points", "data"), "data.points", (len(correspondences), 3))
    used, local = np.unique(_corners(model, correspondences, complicated), return_inverse=True)
    levels, parent_slots, order = _levels(model["parents"])
    return HandData(
        base_relatives=model["base_relatives"],
        inverse_base_absolutes=model["inverse_base_absolutes"],
        weights=np.ascontiguousarray(model["weights"][used].T),
        base_positions=np.ascontiguousarray(model["base_positions"][used].T),
        mirror=np.array([-1.0 if model["mirrored"] else 1.0, 1.0, 1.0]),
        points=points,
        used=used,
        corners=local.reshape(len(points), -1),
        all_used=np.arange(len(used)),
        levels=levels,
        parent_slots=parent_slots,
        order=order,
    )


def read_input(message_input) -> HTProblem:
    """An evaluate message's ht input as arrays; :class:`InputError` if it cannot be one."""
    theta = _array(_field(message_input, "theta", "the input"), "theta", (26,))
    us = _field(message_input, "us", "the input")
    complicated = not (isinstance(us, list) and len(us) == 0)
    data = _hand_data(_field(message_input, "data", "the input"), complicated)
    if complicated:
        us = _array(us, "us", (len(data.points), 2))
    return HTProblem(theta=theta, us=us if complicated else None, data=data)
