"""``adcompare train``: train an MLP on synthetic data and write the pictures."""

from __future__ import annotations

import json
import sys
from dataclasses import fields
from pathlib import Path

from adcompare.cli.outfolder import LATEST, OutputPathError, check_output_folder, output_folder
from adcompare.durations import format_duration
from adcompare.train.datasets import DATASETS
from adcompare.train.loop import TrainingConfig, TrainingRun, train
from adcompare.train.mlp import ACTIVATIONS

DEFAULT_OUT = LATEST / "train"  # git-ignored, as run and targets write
#: The committed reference run.
REFERENCE = Path("reports") / "train"


def report_lines(run: TrainingRun, written: list[Path]) -> list[str]:
    """The command's report: the set-up, the figures, the files written.

    >>> run = train(TrainingConfig(dataset="moons", epochs=2))
    >>> print(report_lines(run, [])[0])
    moons: 200 points, MLP 2 → 32 → 32 → 2 (ReLU), 1218 parameters
    """
    config = run.config
    widths = " → ".join(["2"] + [str(config.hidden)] * config.depth + ["2"])
    n_parameters = sum(p.size for p in run.model.parameters())
    steps = len(run.step_losses)
    reached = run.epoch_target_reached
    lines = [
        f"{config.dataset}: {len(run.y)} points, MLP {widths} "
        f"({type(run.model[1]).__name__}), {n_parameters} parameters",
        f"Adam lr={config.lr:g}, mini-batches of {config.batch_size}, {config.epochs} epochs "
        f"({steps} steps), seed {config.seed}",
        f"loss {run.epoch_losses[0]:.4f} (epoch 1) -> {run.epoch_losses[-1]:.4f} "
        f"(epoch {config.epochs})",
        f"training accuracy {run.final_accuracy:.1%} after {run.seconds:.2f} s; "
        + (
            f"{config.target_accuracy:.0%} first reached at epoch {reached}"
            if reached is not None
            else f"the target {config.target_accuracy:.0%} was not reached"
        ),
    ]
    lines += [f"wrote {path}" for path in written]
    return lines


def _option_name(message: str) -> str:
    """``n_per_class must be ...`` as the command line spells it: ``--n-per-class must be ...``."""
    name, _, rest = message.partition(" ")
    return f"--{name.replace('_', '-')} {rest}" if name.islower() and rest else message


def run_command(args) -> int:
    """Train with the options given, write the PNGs and the summary; print the report.

    Bad options and an output folder that cannot be written are refused
    before training, with one line and exit status 2.
    """
    from adcompare.train.plots import plot_decision_boundary, plot_loss_curve

    names = [f.name for f in fields(TrainingConfig) if hasattr(args, f.name)]
    options = {name: getattr(args, name) for name in names}
    try:
        config = TrainingConfig(**options)
        out = check_output_folder(output_folder(args.out, "train", refresh=args.refresh_reference))
    except OutputPathError as error:
        print(f"adcompare train: {error}", file=sys.stderr)
        return 2
    except ValueError as error:
        print(f"adcompare train: {_option_name(str(error))}", file=sys.stderr)
        return 2
    run = train(config)
    summary = out / "train.json"
    summary.write_text(json.dumps(run.summary(), indent=2) + "\n")
    written = [
        plot_loss_curve(run, out / "loss_curve.png"),
        plot_decision_boundary(run, out / "decision_boundary.png"),
        summary,
    ]
    if args.step_cost:
        written += _step_cost(out)
    print("\n".join(report_lines(run, written)))
    return 0


def _step_cost(out: Path) -> list[Path]:
    """Measure the training step by reverse and forward mode through the benchmark
    harness into ``training_step.json`` (a results file), plot it, print a line per P."""
    from adcompare.bench.harness.results import open_for_writing
    from adcompare.bench.harness.sweep import SweepConfig, run_sweep
    from adcompare.train.plots import plot_training_step
    from adcompare.train.step import MODES, parameter_counts, step_rows

    config = SweepConfig(
        problems=["training_step"],
        modes=list(MODES),
        sizes=parameter_counts(),
        repeats=3,
        budget=60.0,
        memory=False,
    )
    results = open_for_writing(out / "training_step.json", resume=False, overwrite=True)
    try:
        run_sweep(config, results)
    finally:
        results.close()
    rows = step_rows(results.cells)
    for row in rows:
        ratio = row["forward"]["elements"] / row["reverse"]["elements"]
        print(
            f"training step, P = {row['n_params']:>5}: "
            f"reverse {format_duration(row['reverse']['seconds'])}, "
            f"forward {format_duration(row['forward']['seconds'])}, "
            f"forward/reverse work {ratio:.0f}×"
        )
    return [plot_training_step(rows, out / "training_step.png"), results.path]


def add_parser(subparsers) -> None:
    """Register ``adcompare train``."""
    defaults = TrainingConfig()
    parser = subparsers.add_parser(
        "train",
        help="train an MLP on two spirals (or moons) and plot the loss and decision boundary",
        description="Train an MLP classifier with adcompare.nn and adcompare.optim on a "
        "synthetic data set made with numpy, with a fixed seed, and write the loss curve, "
        "the decision boundary and a JSON summary.",
    )
    _add_data_options(parser, defaults)
    _add_model_options(parser, defaults)
    _add_training_options(parser, defaults)
    where = parser.add_mutually_exclusive_group()
    where.add_argument(
        "--out",
        type=Path,
        help=f"output folder, checked before training (default {DEFAULT_OUT}, git-ignored)",
    )
    where.add_argument(
        "--refresh-reference",
        action="store_true",
        help=f"write into the committed reference folder {REFERENCE}",
    )
    parser.add_argument(
        "--step-cost",
        action="store_true",
        help="also measure the gradient of the MLP loss by reverse mode against forward mode "
        "as the number of parameters grows, and plot it",
    )
    parser.set_defaults(run=run_command)


def _add_data_options(parser, d: TrainingConfig) -> None:
    """The synthetic data set: which, how many points, how much jitter."""
    parser.add_argument(
        "--dataset",
        choices=sorted(DATASETS),
        default=d.dataset,
        help=f"the synthetic data set (default {d.dataset})",
    )
    parser.add_argument(
        "--n-per-class",
        dest="n_per_class",
        type=int,
        default=d.n_per_class,
        metavar="N",
        help=f"points per class, at least 2 (default {d.n_per_class})",
    )
    parser.add_argument(
        "--noise",
        type=float,
        default=d.noise,
        help=f"standard deviation of the points' jitter, 0 or more (default {d.noise:g})",
    )


def _add_model_options(parser, d: TrainingConfig) -> None:
    """The MLP: its width, depth and activation."""
    parser.add_argument(
        "--hidden", type=int, default=d.hidden, help=f"hidden layer width (default {d.hidden})"
    )
    parser.add_argument(
        "--depth", type=int, default=d.depth, help=f"number of hidden layers (default {d.depth})"
    )
    parser.add_argument(
        "--activation",
        choices=sorted(ACTIVATIONS),
        default=d.activation,
        help=f"the hidden layers' activation (default {d.activation})",
    )


def _add_training_options(parser, d: TrainingConfig) -> None:
    """Adam's run: epochs, mini-batches, learning rate, seed."""
    parser.add_argument(
        "--epochs", type=int, default=d.epochs, help=f"passes over the data (default {d.epochs})"
    )
    parser.add_argument(
        "--batch-size",
        dest="batch_size",
        type=int,
        default=d.batch_size,
        metavar="N",
        help=f"points per mini-batch (default {d.batch_size})",
    )
    parser.add_argument(
        "--lr", type=float, default=d.lr, help=f"Adam's learning rate (default {d.lr:g})"
    )
    parser.add_argument(
        "--seed",
        type=int,
        default=d.seed,
        help=f"fixes the data, the initial weights and the batch order (default {d.seed})",
    )
