"""autograd.extend: defining primitives and their rules (autograd.core's, and Box)."""

from autograd.core import *  # noqa: F403 - autograd.extend re-exports them
from autograd.tracer import Box, notrace_primitive  # noqa: F401 - re-exported
