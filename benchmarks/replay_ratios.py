"""The replay ratios in one run: interleaved rounds, medians, glibc's allocator pinned.

Run from the repository root: ``python -m benchmarks.replay_ratios [ROUNDS] [--lstm]``.
Before anything is measured, the harness's
:func:`~adcompare.bench.harness.env.pin_allocator` fixes glibc's mmap threshold at
32 MiB (so n = 10⁶ temporaries come from the heap) and its trim threshold at 1 GiB,
which also stops glibc adapting them. Each sample runs an entry enough times for 20 ms
of CPU time; a round takes one sample of every entry in turn. Times are medians of
CPU time (one BLAS thread; robust to other processes' load) and of wall time.

Every replayed entry is called :data:`WARM_UP` times before it is timed: CPython 3.11
specialises a function's bytecode only after its eighth call, and a replay is one
function called once per gradient. The LSTM's replay takes a tenth of a second a call,
so its seven samples timed mostly unspecialised code.
"""

from __future__ import annotations

import sys
import time

from adcompare.bench.harness.env import allocator_text, pin_allocator


def _cpu(work) -> float:
    start = time.process_time()
    work()
    return time.process_time() - start


def entries(with_lstm: bool) -> dict:
    """``{(group, name): work}``, each derivative checked before it is timed."""
    import numpy as np

    import adcompare as ad
    from adcompare.bench.problems import PROBLEMS
    from adcompare.bench.problems.mlp import make_mlp
    from adcompare.bench.targets.problems import chain, rosenbrock, rosenbrock_gradient

    found = {}
    gmm = PROBLEMS["gradbench-gmm-1k"].build()
    f_np, f_ad, x = gmm.on(np), gmm.on(ad), gmm.x
    reverse, forward = ad.compile(f_ad, x), ad.compile(f_ad, x, mode="forward")
    eager, eager_forward = ad.grad(f_ad), ad.jacfwd(f_ad)
    expected = eager(x)
    assert np.allclose(reverse.grad(x), expected, rtol=1e-10)
    assert np.allclose(forward.jacobian(x), expected, rtol=1e-10)
    found["gmm", "numpy objective"] = lambda: f_np(x)
    found["gmm", "op-set objective"] = lambda: f_ad(x)
    found["gmm", "eager reverse"] = lambda: eager(x)
    found["gmm", "replayed reverse"] = lambda: reverse.grad(x)
    found["gmm", "eager forward"] = lambda: eager_forward(x)
    found["gmm", "replayed forward"] = lambda: forward.jacobian(x)

    ch = chain(200)
    chained = ad.compile(ch.on(ad), ch.x)
    found["chain", "replayed fwd+bwd"] = lambda: chained.value_and_grad(ch.x)

    rb = rosenbrock(10**6)
    rf_np, rf_ad, rx = rb.on(np), rb.on(ad), rb.x
    replayed, eager_rb = ad.compile(rf_ad, rx), ad.grad(rf_ad)
    assert np.allclose(replayed.grad(rx), rosenbrock_gradient(rx), rtol=1e-12)
    found["rosenbrock", "numpy f"] = lambda: rf_np(rx)
    found["rosenbrock", "replayed reverse"] = lambda: replayed.grad(rx)
    found["rosenbrock", "eager reverse"] = lambda: eager_rb(rx)
    found["rosenbrock", "hand-written gradient"] = lambda: rosenbrock_gradient(rx)

    mlp, mlp_gradient = make_mlp()
    mf_np, mf_ad, w = mlp.on(np), mlp.on(ad), mlp.x
    replayed_mlp, eager_mlp = ad.compile(mf_ad, w), ad.grad(mf_ad)
    assert np.allclose(replayed_mlp.grad(w), mlp_gradient(w), rtol=1e-9, atol=1e-12)
    found["mlp", "numpy f"] = lambda: mf_np(w)
    found["mlp", "replayed reverse"] = lambda: replayed_mlp.grad(w)
    found["mlp", "eager reverse"] = lambda: eager_mlp(w)

    if with_lstm:
        lstm = PROBLEMS["adbench-lstm"].build()
        lf_np, lf_ad, lx = lstm.on(np), lstm.on(ad), lstm.x
        replayed_lstm, eager_lstm = ad.compile(lf_ad, lx), ad.grad(lf_ad)
        found["lstm", "numpy objective"] = lambda: lf_np(lx)
        found["lstm", "replayed reverse"] = lambda: replayed_lstm.grad(lx)
        found["lstm", "eager reverse"] = lambda: eager_lstm(lx)
    return found


#: Calls of each replayed entry before timing: its bytecode is then specialised.
WARM_UP = 10

RATIOS = [
    ("gmm", "eager reverse", "numpy objective"),
    ("gmm", "replayed reverse", "numpy objective"),
    ("gmm", "eager forward", "numpy objective"),
    ("gmm", "replayed forward", "numpy objective"),
    ("gmm", "op-set objective", "numpy objective"),
    ("rosenbrock", "replayed reverse", "numpy f"),
    ("rosenbrock", "eager reverse", "numpy f"),
    ("rosenbrock", "hand-written gradient", "numpy f"),
    ("mlp", "replayed reverse", "numpy f"),
    ("mlp", "eager reverse", "numpy f"),
    ("lstm", "replayed reverse", "numpy objective"),
    ("lstm", "eager reverse", "numpy objective"),
]


def main(argv: list[str]) -> None:
    """Measure and print every median and ratio."""
    print(f"allocator: {allocator_text(pin_allocator())}")
    import numpy as np
    from threadpoolctl import threadpool_limits

    threadpool_limits(1)
    work = entries("--lstm" in argv)
    rounds = next((int(a) for a in argv if a.isdigit()), 25)
    for key, w in work.items():
        for _ in range(WARM_UP if key[1].startswith("replayed") else 1):
            w()
    calls = {
        key: max(1, int(0.02 / max(min(_cpu(w) for _ in range(3)), 1e-7)))
        for key, w in work.items()
    }
    cpu = {key: [] for key in work}
    wall = {key: [] for key in work}
    for _ in range(rounds):
        for key, w in work.items():
            if key[0] == "lstm" and len(cpu[key]) >= 7:
                continue  # seconds a call: seven samples
            wall_start, cpu_start = time.perf_counter(), time.process_time()
            for _ in range(calls[key]):
                w()
            cpu[key].append((time.process_time() - cpu_start) / calls[key])
            wall[key].append((time.perf_counter() - wall_start) / calls[key])
    cpu_median = {key: float(np.median(v)) for key, v in cpu.items()}
    wall_median = {key: float(np.median(v)) for key, v in wall.items()}
    for key in work:
        print(
            f"{key[0]:11s} {key[1]:24s} cpu {cpu_median[key] * 1e3:10.4f} ms  "
            f"wall {wall_median[key] * 1e3:10.4f} ms  ({len(cpu[key])} samples)"
        )
    for group, numerator, denominator in RATIOS:
        if (group, numerator) in work:
            a, b = (group, numerator), (group, denominator)
            print(
                f"{group} {numerator} ÷ {denominator}: cpu {cpu_median[a] / cpu_median[b]:.3f}, "
                f"wall {wall_median[a] / wall_median[b]:.3f}"
            )
    per_op = ("chain", "replayed fwd+bwd")
    print(
        f"chain replayed forward+backward per op: cpu {cpu_median[per_op] / 200 * 1e6:.3f} µs, "
        f"wall {wall_median[per_op] / 200 * 1e6:.3f} µs"
    )


if __name__ == "__main__":
    main(sys.argv[1:])
