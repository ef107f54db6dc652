"""Recursion on an explicit stack: gettext's C parsers recurse as deep as their input nests
(parse_upto in format-lisp.c and format-scheme.c, message_format_parse and
choice_format_parse in format-java.c) and so do its operations on lists of lists; their ports
here are generators that `run_nested` runs, however deep, without Python's recursion limit."""

import contextlib
import gc
import threading


def run_nested(call):
    """Runs the generator `call` and those it calls, and returns what it returns: a generator
    calls another by yielding it, and gets back at the `yield` what that one returns, or has
    its exception raised there, as a call would. The generators wait on a list, not on
    Python's stack."""
    stack, value, error = [call], None, None
    while True:
        try:
            call = stack[-1].throw(error) if error is not None else stack[-1].send(value)
        except StopIteration as stop:
            stack.pop()
            value, error = stop.value, None
        except Exception as exception:  # noqa: BLE001 - raised in its caller, as in a call
            stack.pop()
            if not stack:
                raise
            value, error = None, exception
        else:
            stack.append(call)
            value = None
            continue
        if not stack:
            return value


_PAUSES = {"count": 0, "resume": False}  # parses under way, and whether the last one resumes
_PAUSES_LOCK = threading.Lock()


@contextlib.contextmanager
def collector_paused():
    """Pauses Python's cyclic garbage collector while any parse is under way (unless it was
    off already), whatever the threads.

    A string nested 20,000 levels deep keeps tens of thousands of generators and lists alive
    at once, and its lists of lists as many frozen lists: enough new objects to set off the
    collector's full collections, each of which walks every object of the process (about
    0.25 s each with keras loaded, and 8 of them for `~{` nested 22,500 deep: 5.3 s where the
    parse itself takes 2). The parsers make no garbage cycles but a few (a frozen list whose
    intersection with itself is itself), which the next collection frees. The collector is
    the process's: the pauses of parses in several threads are counted, and the last one to
    end turns it back on, if the first found it on."""
    with _PAUSES_LOCK:
        if _PAUSES["count"] == 0:
            _PAUSES["resume"] = gc.isenabled()
            gc.disable()
        _PAUSES["count"] += 1
    try:
        yield
    finally:
        with _PAUSES_LOCK:
            _PAUSES["count"] -= 1
            if _PAUSES["count"] == 0 and _PAUSES["resume"]:
                gc.enable()
