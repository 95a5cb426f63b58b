"""The interpreters that carry derivatives through the op set.

``box`` is what the boxed values share (operators, methods, numpy interop);
``forward`` is the dual-number engine, ``reverse`` the tape engine with its
``Tensor``, and ``replay`` records a reverse sweep once and replays it as
straight-line code. Engines know how to carry values; the op records know
the mathematics.
"""
