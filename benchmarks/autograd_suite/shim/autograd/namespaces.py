"""``autograd.numpy`` and ``autograd.scipy.*``: numpy's and SciPy's own functions.

Each name is looked up, in this order:

1. numpy's (``autograd.numpy``, ``.linalg``, ``.fft``, ``.random``): numpy's own
   function, so a call on adcompare's box reaches adcompare's op by numpy's
   dispatch (``__array_function__``/``__array_ufunc__``), as a user's numpy code does;
   except numpy's array constructors (``array``, ``asarray``, ``r_``, ``c_``), which
   take no dispatch (numpy converts each item itself): there adcompare's, which
   build the array by stacking, as autograd's own ``autograd.numpy.array`` does and
   as a user porting autograd code writes them (``CONSTRUCTORS``);
2. SciPy's ufuncs (``scipy.special.gammaln``): SciPy's own, dispatched the same way;
3. a SciPy name that adcompare registers for dispatch (``NUMPY_NAMES["scipy.linalg.x"]``);
4. ``scipy.stats.<dist>.<fn>``: ``adcompare.stats.<dist>.<fn>`` where it exists;
   ``scipy.special``, ``scipy.linalg``, ``scipy.signal`` and ``scipy.integrate``: adcompare's
   function of the same name where it exists (``adcompare.logsumexp``);
5. otherwise SciPy's own function, which adcompare's boxes reach only if it
   converts them (and adcompare then refuses, naming the alternative).
"""

import importlib
import sys
import types

import numpy as np

import adcompare as ad
from adcompare.ops.registry.numpy_names import NUMPY_NAMES

#: SciPy's submodules whose names adcompare exports under the same name.
SAME_NAME_IN_ADCOMPARE = ("special", "linalg", "signal", "integrate")
#: numpy's constructors, which take no dispatch: adcompare's stand in for them.
CONSTRUCTORS = ("array", "asarray", "r_", "c_")
STATS = ("norm", "t", "gamma", "beta", "chi2", "poisson", "dirichlet", "multivariate_normal")
#: Where each name resolved to, for the report: ``{"scipy.stats.norm.cdf": "adcompare.stats"}``.
ROUTES: dict = {}


def resolve(scipy_path: str, name: str):
    """The function autograd's ``autograd.<scipy_path>.<name>`` stands for here."""
    parts = scipy_path.split(".")
    library = importlib.import_module(".".join(parts[:2]))
    for part in parts[2:]:  # scipy.stats.norm is an object, not a module
        library = getattr(library, part)
    own = getattr(library, name, None)
    full = f"{scipy_path}.{name}"
    if isinstance(own, np.ufunc):
        ROUTES[full] = "scipy ufunc, numpy dispatch"
        return own
    if full in NUMPY_NAMES:
        ROUTES[full] = "adcompare (registered scipy name)"
        return NUMPY_NAMES[full]
    if parts[1:2] == ["stats"] and len(parts) == 3:
        found = getattr(getattr(ad.stats, parts[2], None), name, None)
        if found is not None:
            ROUTES[full] = "adcompare.stats"
            return found
    if parts[1:] and parts[1] in SAME_NAME_IN_ADCOMPARE and len(parts) == 2:
        found = getattr(ad, name, None)
        if callable(found):
            ROUTES[full] = "adcompare (same name)"
            return found
    if own is None:
        raise AttributeError(f"module {scipy_path!r} has no attribute {name!r}")
    ROUTES[full] = "scipy itself"
    return own


def _proxy(name: str, scipy_path: str) -> types.ModuleType:
    module = types.ModuleType(name, f"autograd's {scipy_path}, resolved by namespaces.resolve")
    module.__getattr__ = lambda attr: resolve(scipy_path, attr)
    sys.modules[name] = module
    return module


def install() -> None:
    """Put ``autograd.numpy`` (numpy) and ``autograd.scipy.*`` (proxies) in ``sys.modules``."""
    package = sys.modules["autograd"]
    numpy = types.ModuleType("autograd.numpy", "numpy itself, names looked up on numpy")
    numpy.__getattr__ = lambda attr: getattr(ad if attr in CONSTRUCTORS else np, attr)
    numpy.__path__ = []
    for sub in ("random", "linalg", "fft"):
        setattr(numpy, sub, getattr(np, sub))
        sys.modules[f"autograd.numpy.{sub}"] = getattr(np, sub)
    # autograd's two private helpers of numpy.linalg that its tests call, by numpy's names
    linalg = types.ModuleType("autograd.numpy.linalg", "numpy.linalg, with _dot and T")
    linalg.__getattr__ = lambda attr: getattr(np.linalg, attr)
    linalg._dot = np.matmul
    linalg.T = lambda x: np.swapaxes(x, -1, -2)
    sys.modules["autograd.numpy.linalg"] = numpy.linalg = linalg
    sys.modules["autograd.numpy"] = package.numpy = numpy
    scipy = _proxy("autograd.scipy", "scipy")
    scipy.__path__ = []
    package.scipy = scipy
    for sub in ("special", "linalg", "signal", "integrate", "misc", "stats"):
        module = _proxy(f"autograd.scipy.{sub}", f"scipy.{sub}")
        setattr(scipy, sub, module)
    stats = sys.modules["autograd.scipy.stats"]
    stats.__path__ = []
    for dist in STATS:
        setattr(stats, dist, _proxy(f"autograd.scipy.stats.{dist}", f"scipy.stats.{dist}"))
