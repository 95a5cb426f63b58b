"""Assertions for users' own test suites, at the path they import them from.

The helpers live in :mod:`adcompare.check.testing`, beside the checks they
assert on; this module keeps ``adcompare.testing`` (and ``ad.testing``)
working, as ``numpy.testing`` does for numpy.

>>> import adcompare as ad
>>> from adcompare.testing import assert_grad_close
>>> assert_grad_close(lambda x: ad.sum(ad.sin(x) * x), [0.1, 0.2, 0.3]).passed
True
"""

from adcompare.check.testing import assert_grad_close

__all__ = ["assert_grad_close"]
