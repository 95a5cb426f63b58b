"""The interpreters that carry derivatives through the op set.

The engines are ``forward`` (dual numbers with tangent lanes), ``reverse``
(the tape and its ``Tensor``) and ``batched`` (vmap's box). Each is a
package whose ``interface`` module is what the transforms use, and none
imports another: what they share is below them (``runtime``, ``ops``) or is
``box``, what the boxed values share (operators, methods, numpy interop),
which is no engine. ``replay`` is a layer above the engines: it records a
function with the forward engine's ``Dual`` or the reverse engine's tape and
sweep once, and replays it as straight-line code. Engines know how to carry
values; the op records know the mathematics.
"""
