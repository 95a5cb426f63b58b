"""What the adapter cannot map: autograd's internals, which have no adcompare counterpart."""


class NotApplicableError(Exception):
    """A test reached a part of autograd's machinery that adcompare does not model."""


def not_applicable(name: str, why: str):
    """A stand-in for autograd's ``name`` that raises :class:`NotApplicableError`."""

    def refuse(*args, **kwargs):
        raise NotApplicableError(f"autograd.{name}: {why}")

    refuse.__name__ = name.rsplit(".", 1)[-1]
    return refuse
