"""One writer per results file: the writer's lock, and what a killed writer left behind.

A writer holds an exclusive lock (``fcntl.flock`` on ``RESULTS.json.lock``,
or where there is no ``fcntl`` the lock file's exclusive creation) from
before it reads the file until it exits; a second writer waits a bounded
time, then refuses with a :class:`~adcompare.bench.harness.cells.ResultsError`.
"""

from __future__ import annotations

import contextlib
import os
import re
import time
from pathlib import Path

from adcompare.bench.harness.cells import ResultsError

try:
    import fcntl
except ImportError:  # not POSIX: the lock is the lock file's exclusive creation
    fcntl = None

__all__ = ["LOCK_WAIT", "WriterLock", "cannot_write", "file_stamp", "remove_stale_temporaries"]

#: How long a second writer waits for the first to finish before refusing, in seconds.
LOCK_WAIT = 5.0


def file_stamp(path: Path) -> tuple | None:
    """What changes when ``path`` is rewritten (``None``: no such file)."""
    try:
        info = path.stat()
    except OSError:
        return None
    return info.st_ino, info.st_mtime_ns, info.st_size


def cannot_write(path: Path, error: OSError) -> str:
    if path.is_dir():
        return (
            f"cannot write the results file {path}: it is a folder; give a file name, "
            f"like {path / 'results.json'}"
        )
    return (
        f"cannot write the results file {path}: {error.strerror or error}; "
        "choose a writable place with --out"
    )


def _running(pid: int) -> bool:
    """Whether process ``pid`` exists (on POSIX; elsewhere assume it does)."""
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OSError, AttributeError):
        return True
    return True


def remove_stale_temporaries(path: str | os.PathLike) -> list[Path]:
    """Delete the temporary files a killed writer of ``path`` left; returns what went.

    A temporary is ``RESULTS.json.<pid>.<random>.tmp``: it is stale when
    process ``pid`` no longer runs. Other files are never touched.
    """
    path = Path(path)
    pattern = re.compile(re.escape(path.name) + r"\.(\d+)\.[^.]+\.tmp")
    removed = []
    try:
        candidates = list(path.parent.iterdir())
    except OSError:
        return removed
    for candidate in candidates:
        found = pattern.fullmatch(candidate.name)
        if found and not _running(int(found.group(1))):
            candidate.unlink(missing_ok=True)
            removed.append(candidate)
    return removed


class WriterLock:
    """The exclusive right to write one results file, held until :meth:`release` or exit.

    On POSIX it is ``fcntl.flock`` on ``RESULTS.json.lock`` (the kernel drops
    it when the process ends, however it ends); elsewhere it is the lock
    file itself, created exclusively and holding the writer's process id, and
    a lock file whose process no longer runs is taken over.

    >>> import tempfile, pathlib
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "results.json"
    >>> first, second = WriterLock(path), WriterLock(path)
    >>> first.acquire()
    >>> second.acquire(wait=0)
    Traceback (most recent call last):
    ...
    adcompare.bench.harness.cells.ResultsError: ... is being written by another adcompare ...
    >>> first.release(); second.acquire(wait=0); second.release()
    """

    def __init__(self, path: str | os.PathLike):
        self.path = Path(path)
        self.lock_path = self.path.with_name(self.path.name + ".lock")
        self._handle: int | None = None

    def acquire(self, wait: float = LOCK_WAIT) -> None:
        """Take the lock, waiting up to ``wait`` seconds for another writer to finish."""
        deadline = time.monotonic() + wait
        while not self._try():
            if time.monotonic() >= deadline:
                raise ResultsError(
                    f"{self.path} is being written by another adcompare process"
                    f"{self._holder()}; wait for it to finish (then --resume), or measure into "
                    "another file with --out"
                )
            time.sleep(min(0.05, max(0.0, deadline - time.monotonic())))

    def _holder_pid(self) -> int | None:
        try:
            pid = self.lock_path.read_text().strip()
        except OSError:
            return None
        return int(pid) if pid.isdigit() else None

    def _holder(self) -> str:
        pid = self._holder_pid()
        return "" if pid is None else f" (process {pid})"

    def _open(self, flags: int) -> int:
        if self.path.is_dir():
            raise ResultsError(cannot_write(self.path, IsADirectoryError(21, "is a folder")))
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as error:
            raise ResultsError(cannot_write(self.path, error)) from None
        try:
            return os.open(self.lock_path, flags, 0o644)
        except FileExistsError:
            raise
        except OSError as error:
            raise ResultsError(cannot_write(self.path, error)) from None

    def _try(self) -> bool:
        if fcntl is None:
            return self._try_exclusive_file()
        handle = self._open(os.O_RDWR | os.O_CREAT)
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(handle)
            return False
        # The lock file may have been removed and recreated while we waited: retry on the new one.
        if (
            file_stamp(self.lock_path) is None
            or os.fstat(handle).st_ino != self.lock_path.stat().st_ino
        ):
            os.close(handle)
            return False
        os.ftruncate(handle, 0)
        os.write(handle, str(os.getpid()).encode())
        self._handle = handle
        return True

    def _try_exclusive_file(self) -> bool:
        try:
            handle = self._open(os.O_RDWR | os.O_CREAT | os.O_EXCL)
        except FileExistsError:
            pid = self._holder_pid()
            if pid is not None and not _running(pid):
                self.lock_path.unlink(missing_ok=True)
            return False
        os.write(handle, str(os.getpid()).encode())
        self._handle = handle
        return True

    def release(self) -> None:
        """Give the lock up (and remove the lock file)."""
        if self._handle is None:
            return
        self.lock_path.unlink(missing_ok=True)
        os.close(self._handle)
        self._handle = None

    def __del__(self):
        with contextlib.suppress(Exception):
            self.release()
