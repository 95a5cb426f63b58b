"""A seeded mini-batch iterator over arrays, and what mini-batches do to gradients.

The mean reduction makes the loss of a batch the average of its samples'
losses, and differentiation is linear, so the gradient of the mean loss is
the average of the per-sample gradients; with ``reduction="sum"`` it is
``N`` times larger. The batch goes through each layer as one matrix, so the
graph holds one tensor operation per layer, not one per sample:

>>> import numpy as np
>>> import adcompare as ad
>>> from adcompare import nn
>>> layer = nn.Linear(2, 1, generator=np.random.default_rng(0))
>>> x, y = np.random.default_rng(1).normal(size=(8, 2)), np.zeros((8, 1))
>>> def gradient(inputs, targets, reduction):
...     layer.zero_grad()
...     nn.functional.mse_loss(layer(inputs), targets, reduction).backward()
...     return layer.weight.grad.detach().numpy()
>>> per_sample = [gradient(x[i : i + 1], y[i : i + 1], "mean") for i in range(8)]
>>> bool(np.allclose(gradient(x, y, "mean"), np.mean(per_sample, axis=0)))
True
>>> bool(np.allclose(gradient(x, y, "sum"), 8 * gradient(x, y, "mean")))
True
>>> def records(n):
...     with ad.count() as cost:
...         layer(x[:n])
...     return cost.tape_records
>>> records(1), records(8)  # transpose, matmul, add: whatever the batch size
(3, 3)
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

__all__ = ["MiniBatches"]


class MiniBatches:
    """Iterate over aligned arrays in mini-batches, reshuffled every epoch.

    Each ``iter()`` (each epoch) draws a new order from a generator seeded
    once with ``seed``, so a run is the same every time and the epochs
    differ from one another. ``drop_last`` drops a final short batch.

    >>> x, y = np.arange(10.0).reshape(5, 2), np.arange(5)
    >>> batches = MiniBatches(x, y, batch_size=2, shuffle=False)
    >>> len(batches), [yb.tolist() for _, yb in batches]
    (3, [[0, 1], [2, 3], [4]])
    >>> shuffled = MiniBatches(x, y, batch_size=2, seed=0)
    >>> sorted(np.concatenate([yb for _, yb in shuffled]).tolist())  # each sample once
    [0, 1, 2, 3, 4]
    >>> [len(yb) for _, yb in MiniBatches(x, y, batch_size=2, drop_last=True)]
    [2, 2]
    """

    def __init__(
        self,
        *arrays: np.ndarray,
        batch_size: int,
        shuffle: bool = True,
        drop_last: bool = False,
        seed: int | None = 0,
    ) -> None:
        if not arrays:
            raise ValueError("MiniBatches needs at least one array")
        self.arrays = [np.asarray(a) for a in arrays]
        lengths = {len(a) for a in self.arrays}
        if len(lengths) != 1:
            raise ValueError(
                f"MiniBatches: the arrays have different lengths {[len(a) for a in self.arrays]}; "
                "every array needs one row per sample"
            )
        if not isinstance(batch_size, (int, np.integer)) or batch_size < 1:
            raise ValueError(
                f"MiniBatches: batch_size must be a positive integer, got {batch_size!r}"
            )
        self.n_samples = lengths.pop()
        self.batch_size = int(batch_size)
        self.shuffle = shuffle
        self.drop_last = drop_last
        self._rng = np.random.default_rng(seed)

    def __len__(self) -> int:
        if self.drop_last:
            return self.n_samples // self.batch_size
        return -(-self.n_samples // self.batch_size)

    def __iter__(self) -> Iterator[tuple[np.ndarray, ...]]:
        order = self._rng.permutation(self.n_samples) if self.shuffle else np.arange(self.n_samples)
        for batch in range(len(self)):
            rows = order[batch * self.batch_size : (batch + 1) * self.batch_size]
            yield tuple(a[rows] for a in self.arrays)
