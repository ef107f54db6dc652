"""Segments of gettext's argument lists kept as runs, against a plain list of their C
elements: splitting and building keep the same elements, canonical runs and totals."""

import random

import pytest

from keras_transformer.messages.format_strings.arglist_segments import COUNT
from keras_transformer.messages.format_strings.arglist_segments import OPTIONAL
from keras_transformer.messages.format_strings.arglist_segments import REQUIRED
from keras_transformer.messages.format_strings.arglist_segments import Segment
from keras_transformer.messages.format_strings.arglist_segments import with_count


def random_elements(rng):
    """C elements with few distinct values, so that runs of equal ones and equal types of
    other counts (which must stay apart) are common."""
    elements = []
    for _ in range(rng.randint(0, 8)):
        element = (rng.randint(1, 3), rng.choice([REQUIRED, OPTIONAL]), rng.randint(0, 1), None)
        elements += [element] * rng.randint(1, 3)
    return elements


def model_split(elements, n):
    """The C elements before argument n and from it, the element holding n cut in two."""
    left, right, before = [], [], 0
    for element in elements:
        if before + element[COUNT] <= n:
            left.append(element)
        elif before >= n:
            right.append(element)
        else:
            left.append(with_count(element, n - before))
            right.append(with_count(element, before + element[COUNT] - n))
        before += element[COUNT]
    return left, right


def assert_holds(segment, elements):
    assert list(segment.elements()) == elements
    assert all(times >= 1 for _, times in segment.runs)
    assert all(a[0] != b[0] for a, b in zip(segment.runs, segment.runs[1:]))  # canonical
    assert segment.length == sum(element[COUNT] for element in elements)
    assert segment.count == len(elements)


@pytest.mark.parametrize("seed", range(4))
def test_of_and_split_keep_the_elements_runs_and_totals(seed):
    rng = random.Random(seed)
    for _ in range(500):
        elements = random_elements(rng)
        segment = Segment.of(elements)
        assert_holds(segment, elements)
        for n in range(segment.length + 2):
            left, right = segment.split(n)
            wanted_left, wanted_right = model_split(elements, n)
            assert_holds(left, wanted_left)
            assert_holds(right, wanted_right)
            assert_holds(segment, elements)  # split leaves the segment as it was
            left.append((1, REQUIRED, 0, None))  # the parts are lists of their own
            assert_holds(segment, elements)


def test_fill_is_for_an_empty_segment():
    segment = Segment.of([(1, REQUIRED, 0, None)])
    with pytest.raises(ValueError, match="empty segment"):
        segment.fill([], 0, 0)


@pytest.mark.parametrize("seed", range(2))
def test_extend_appends_copies_of_the_elements(seed):
    rng = random.Random(seed)
    for _ in range(2000):
        elements, other = random_elements(rng), random_elements(rng)
        if other and rng.random() < 0.5:  # a loop whose first and last elements are equal
            other.append(other[0])
        times = rng.randint(0, 4)
        segment, loop = Segment.of(elements), Segment.of(other)
        segment.extend(loop, times)
        assert_holds(segment, elements + other * times)
        assert_holds(loop, other)  # the copied segment is left as it was
        segment.append((1, REQUIRED, 0, None))  # and shares no list with it
        assert_holds(loop, other)
        itself = Segment.of(other)  # a segment extended with itself
        itself.extend(itself, times)
        assert_holds(itself, other * (times + 1))
