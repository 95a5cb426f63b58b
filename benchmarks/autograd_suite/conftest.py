"""Not a test folder: ``pytest benchmarks`` must not import the adapter (it would shadow
HIPS autograd) nor collect its modules as doctests. run.py runs autograd's suite."""

collect_ignore_glob = ["*"]
