"""A module that fails on import."""

raise ImportError("no module named 'mylab_private'")
