"""What every ADBench problem shares: it is differentiated with respect to
one flat parameter vector, so ``grad`` and ``jacobian`` apply directly."""

from __future__ import annotations

import numpy as np

from adcompare.ops.registry import shape_of


class FlatParameters:
    """A problem with a ``data.params`` vector and a ``name``.

    >>> from adcompare.adbench import bundled
    >>> problem = bundled("adbench-gmm-test")
    >>> problem.n_params, problem.params.shape
    (18, (18,))
    """

    @property
    def params(self) -> np.ndarray:
        """The instance's parameters, flat."""
        return self.data.params

    @property
    def n_params(self) -> int:
        """How many parameters the objective takes."""
        return self.params.size

    def check_flat(self, params) -> None:
        """Refuse anything but a flat vector of ``n_params`` entries."""
        if shape_of(params) != (self.n_params,):
            raise ValueError(
                f"{self.name}: expected a flat vector of {self.n_params} parameters, got "
                f"shape {shape_of(params)}"
            )
