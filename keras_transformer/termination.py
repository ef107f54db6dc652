"""SIGTERM as an exception while a file is being replaced, so that nothing is left behind.

A process ended by SIGTERM runs no `finally` block: a temporary file or folder
written beside an output would stay. Inside `terminate_by_exception()`, SIGTERM
raises instead, the block's clean-up runs, and then the signal is sent again
with the handler of before, so the process ends as SIGTERM would have ended it.
"""

import contextlib
import signal
import threading


class _Terminated(BaseException):
    """SIGTERM inside `terminate_by_exception`: raised so that clean-up code runs."""


@contextlib.contextmanager
def terminate_by_exception(what):
    """While the block runs in the main thread, SIGTERM raises rather than ending the process
    at once; after the block's clean-up the handler before is restored and the signal re-sent.

    Args:
        what: what the block does, for the `InterruptedError` raised when the re-sent signal
            does not end the process (a handler that ignores it).

    Example:
    >>> with terminate_by_exception("writing the report"):
    ...     pass
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    received = []

    def handler(signum, frame):
        received.append(signum)
        raise _Terminated()

    previous = signal.signal(signal.SIGTERM, handler)
    try:
        yield
    except _Terminated:
        pass
    finally:
        signal.signal(signal.SIGTERM, previous)
    if received:  # the work was abandoned and cleaned up: now let SIGTERM do what it did
        signal.raise_signal(signal.SIGTERM)
        raise InterruptedError(f"{what} was interrupted by SIGTERM")
