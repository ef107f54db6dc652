"""explicit_stack: generators run as calls however deep, and the collector paused per process."""

import gc
import threading

import pytest

from keras_transformer.messages.format_strings.explicit_stack import collector_paused
from keras_transformer.messages.format_strings.explicit_stack import run_nested


def _depth(n):
    if n == 0:
        return 0
    return (yield _depth(n - 1)) + 1


def _failing(n):
    if n == 0:
        raise ValueError("innermost")
    try:
        yield _failing(n - 1)
    except ValueError as error:
        raise ValueError(f"{error} < {n}") from None


def test_nested_calls_return_and_raise_as_calls_do_past_the_recursion_limit():
    assert run_nested(_depth(50_000)) == 50_000
    with pytest.raises(ValueError, match="innermost < 1 < 2 < 3$"):
        run_nested(_failing(3))


def test_overlapping_pauses_in_two_threads_resume_the_collector_when_the_last_ends():
    assert gc.isenabled()
    first_in, second_in, first_out = threading.Event(), threading.Event(), threading.Event()

    def first():
        with collector_paused():
            first_in.set()
            second_in.wait(10)
        first_out.set()

    thread = threading.Thread(target=first)
    thread.start()
    first_in.wait(10)
    with collector_paused():  # the second parse starts while the first runs ...
        second_in.set()
        first_out.wait(10)  # ... and is still running when the first ends
        paused_after_the_first = not gc.isenabled()
    thread.join(10)
    assert paused_after_the_first
    assert gc.isenabled()


def test_a_collector_off_before_stays_off():
    gc.disable()
    try:
        with collector_paused():
            assert not gc.isenabled()
        assert not gc.isenabled()
    finally:
        gc.enable()
