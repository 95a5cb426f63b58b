"""Where the external data of ``../shared/data`` is, for the tests that compare with it.

The repository never holds those files (ADBench's and GradBench's recordings):
a test that needs one calls :func:`shared_file`, which skips the test with a
sentence saying what is missing and where it was looked for.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from adcompare.gradbench.published import shared_data

#: ``ADCOMPARE_SHARED_DATA`` if set, else ``../shared/data`` beside the checkout.
SHARED_DATA = shared_data()


def shared_file(*parts: str) -> Path:
    """The path of ``SHARED_DATA/<parts>``, or skip the calling test saying why."""
    path = SHARED_DATA.joinpath(*parts)
    if not path.exists():
        pytest.skip(
            f"{path} is absent: this test compares with external data kept outside the "
            "repository (set ADCOMPARE_SHARED_DATA to the folder holding gradbench/ and adbench/)"
        )
    return path
