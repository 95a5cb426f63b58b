"""Reader for ADBench's LSTM text format.

The file holds ``l c b`` (layers, characters, bits per character), then the
main parameters (l layers × [4 weight blocks, 4 bias blocks] × b values:
forget, input, output and change gates), the extra parameters (input
weights, output weights, output biases: 3 × b), the initial state (l layers ×
[hidden, cell] × b) and the sequence (c characters × b bits).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from adcompare.adbench.tokens import FormatError, NumberStream

__all__ = ["LSTMData", "read_adbench_lstm"]


@dataclass(frozen=True)
class LSTMData:
    """An LSTM instance: parameters, initial state and a character sequence."""

    main_params: np.ndarray  # (l, 8b): per layer 4 weight blocks then 4 bias blocks
    extra_params: np.ndarray  # (3, b): input weights, output weights, output biases
    state: np.ndarray  # (l, 2, b): per layer hidden then cell
    sequence: np.ndarray  # (c, b)

    @property
    def sizes(self) -> tuple[int, int, int]:
        """``(l, c, b)``: layers, characters, bits per character."""
        return self.state.shape[0], self.sequence.shape[0], self.sequence.shape[1]

    @property
    def params(self) -> np.ndarray:
        """The flat parameter vector: main parameters, then extra parameters."""
        return np.concatenate([self.main_params.ravel(), self.extra_params.ravel()])


def read_adbench_lstm(path: str | Path) -> LSTMData:
    """Read an ADBench LSTM file.

    >>> import pathlib, tempfile
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "lstm.txt"
    >>> _ = path.write_text("1 3 2\\n" + "0.5 " * (16 + 6 + 4) + "\\n1 0\\n0 1\\n1 1\\n")
    >>> data = read_adbench_lstm(path)
    >>> data.sizes, data.params.size
    ((1, 3, 2), 22)
    """
    stream = NumberStream(path)
    layers, chars, bits = (int(v) for v in stream.ints(3, "the sizes l c b", minimum=1))
    if chars < 2:
        raise FormatError(
            f"{stream.path}:1: the sequence needs at least 2 characters (each predicts the "
            f"next), found c = {chars}"
        )
    main = stream.floats(8 * layers * bits, f"the main parameters (8·l·b = {8 * layers * bits})")
    extra = stream.floats(3 * bits, f"the extra parameters (3·b = {3 * bits})")
    state = stream.floats(2 * layers * bits, f"the initial state (2·l·b = {2 * layers * bits})")
    sequence = stream.floats(chars * bits, f"the sequence (c·b = {chars * bits})")
    stream.expect_end()
    return LSTMData(
        main_params=main.reshape(layers, 8 * bits),
        extra_params=extra.reshape(3, bits),
        state=state.reshape(layers, 2, bits),
        sequence=sequence.reshape(chars, bits),
    )
