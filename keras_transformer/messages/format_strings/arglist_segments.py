"""The segments of gettext's argument lists (format-lisp.c's `struct segment`, the `initial`
and `repeated` parts of a `struct format_arg_list`): C elements in order, each constraining
`repcount` consecutive arguments. A segment here keeps its elements as runs (element, times)
of equal elements, and its counts of arguments and elements: the C code steps element by
element from the start, and a string of 100,000 directives makes a list of 100,000 elements
(`~a` each adds one), so what the C code does to such a list, element after element, is done
here to a run at once, and an argument is found from the nearer end.

An element (format-lisp.c's `struct format_arg`) is a plain tuple (repcount, presence, type,
list): immutable, equal elements are equal tuples, and Python's garbage collector stops
tracking those that hold no list (it untracks exact tuples only; a list of 100,000 tracked
elements makes each full collection slower). Runs are canonical (neighbouring runs hold
different elements), so equal segments have equal runs."""

import itertools
import operator

COUNT, PRESENCE, TYPE, SUBLIST = range(4)  # an element's fields
REQUIRED, OPTIONAL = "required", "optional"  # its presences


def with_count(element, repcount):
    return (repcount, element[PRESENCE], element[TYPE], element[SUBLIST])


def with_presence(element, presence):
    return (element[COUNT], presence, element[TYPE], element[SUBLIST])


class _RequiredRuns(dict):
    """run -> the run of its elements made required, each made once: a long list's runs are
    few distinct ones, shared."""

    def __missing__(self, run):
        made = self[run] = (with_presence(run[0], REQUIRED), run[1])
        return made


class Segment:
    __slots__ = ("runs", "length", "count", "_required", "_required_length")

    def __init__(self, runs=()):
        self.runs = []  # (element, times)
        self.length = 0  # arguments: the sum of repcount * times
        self.count = 0  # C elements: the sum of times
        # The first `_required` runs hold required elements only and take `_required_length`
        # arguments (a lower bound of the required prefix, which `required_prefix` extends).
        self._required = self._required_length = 0
        for element, times in runs:
            self.append(element, times)

    @classmethod
    def of(cls, elements):
        """The segment of C elements in order (equal neighbours become a run)."""
        elements = list(elements)
        if any(map(operator.eq, elements, elements[1:])):
            runs = []
            for element in elements:
                if runs and runs[-1][0] == element:
                    runs[-1] = (element, runs[-1][1] + 1)
                else:
                    runs.append((element, 1))
        else:  # at C speed: neighbours mostly differ
            runs = list(zip(elements, itertools.repeat(1)))
        segment = cls()
        segment.fill(runs, sum([element[COUNT] for element in elements]), len(elements))
        return segment

    def copy(self):
        segment = Segment.__new__(Segment)
        segment.runs, segment.length, segment.count = list(self.runs), self.length, self.count
        segment._required, segment._required_length = self._required, self._required_length
        return segment

    def __bool__(self):
        return self.count > 0

    def elements(self):
        """The C elements, one by one."""
        for element, times in self.runs:
            for _ in range(times):
                yield element

    def first(self):
        return self.runs[0][0]

    def last(self):
        return self.runs[-1][0]

    def append(self, element, times=1):
        runs = self.runs
        if runs and runs[-1][0] == element:
            if len(runs) <= self._required:
                self._required_length += element[COUNT] * times
            runs[-1] = (element, runs[-1][1] + times)
        else:
            runs.append((element, times))
        self.length += element[COUNT] * times
        self.count += times

    def extend(self, other, times=1):
        """Appends `times` copies of `other`'s elements (unfold_loop's and rotate_loop's
        copies of a loop): the runs are shared, not copied, and copied in a block, so that a
        loop of two elements rotated ten million times (`~@{~a~d~}~10000000@*~a`) takes 160 MB
        of references, not a run object each."""
        runs, length, count = list(other.runs), other.length, other.count  # other may be self
        if times <= 0 or not runs:
            return
        if len(runs) == 1:  # one element: a longer run
            self.append(runs[0][0], runs[0][1] * times)
            return
        first, last = runs[0], runs[-1]
        self.append(*first)
        if first[0] == last[0]:  # each copy's last run merges with the next copy's first
            middle = runs[1:-1]
            self.runs += (middle + [(last[0], last[1] + first[1])]) * (times - 1) + middle + [last]
        else:
            self.runs += runs[1:] + runs * (times - 1)
        self.length += length * times - first[0][COUNT] * first[1]
        self.count += count * times - first[1]

    def map_lists(self, function):
        """A segment whose list-typed elements hold `function(their list)` (the other runs
        are shared)."""
        runs = []
        for run in self.runs:
            element, times = run
            if element[SUBLIST] is not None:
                element = (element[COUNT], element[PRESENCE], element[TYPE],
                           function(element[SUBLIST]))
                if runs and runs[-1][0] == element:  # two lists mapped to one
                    runs[-1] = (element, runs[-1][1] + times)
                    continue
                run = (element, times)
            runs.append(run)
        return Segment._of_runs(runs, self.length, self.count)

    def locate(self, n):
        """(the index of the run holding argument n, the arguments before that run), found
        from the nearer end; (the number of runs, length) for n at or past the end."""
        runs = self.runs
        if n >= self.length:
            return len(runs), self.length
        if 2 * n < self.length:
            index, before = 0, 0
            if n >= self._required_length:
                index, before = self._required, self._required_length
            while True:
                element, times = runs[index]
                span = element[COUNT] * times
                if n < before + span:
                    return index, before
                index, before = index + 1, before + span
        index, before = len(runs), self.length
        while True:
            index -= 1
            element, times = runs[index]
            before -= element[COUNT] * times
            if n >= before:
                return index, before

    def element_at(self, n):
        """The C element that holds argument n."""
        return self.runs[self.locate(n)[0]][0]

    def split_at(self, n):
        """Makes argument n start an element, splitting the one that holds it in two (the split
        of initial_splitelement)."""
        index, before = self.locate(n)
        if index == len(self.runs):
            return
        element, times = self.runs[index]
        whole, offset = divmod(n - before, element[COUNT])
        if offset:
            pieces = [(element, whole)] if whole else []
            pieces += [(with_count(element, offset), 1),
                       (with_count(element, element[COUNT] - offset), 1)]
            if times - whole - 1:
                pieces.append((element, times - whole - 1))
            self._replace(index, index + 1, pieces)

    def isolate(self, n):
        """Gives argument n an element of its own, splitting the one that holds it in up to
        three (initial_unshare's split)."""
        index, before = self.locate(n)
        element, times = self.runs[index]
        if element[COUNT] > 1:
            whole, offset = divmod(n - before, element[COUNT])
            pieces = [(element, whole)] if whole else []
            if offset:
                pieces.append((with_count(element, offset), 1))
            pieces.append((with_count(element, 1), 1))
            if element[COUNT] - offset - 1:
                pieces.append((with_count(element, element[COUNT] - offset - 1), 1))
            if times - whole - 1:
                pieces.append((element, times - whole - 1))
            self._replace(index, index + 1, pieces)

    @classmethod
    def _of_runs(cls, runs, length, count):
        """The segment of canonical `runs` (a list it keeps), which take `length` arguments
        in `count` elements."""
        segment = cls()
        segment.fill(runs, length, count)
        return segment

    def fill(self, runs, length, count):
        """Makes an empty segment one of canonical `runs` (a list it keeps), which take
        `length` arguments in `count` elements."""
        if self.runs:
            raise ValueError("fill is for an empty segment")
        self.runs, self.length, self.count = runs, length, count

    def split(self, n):
        """(the elements before argument n, those from it), argument n starting an element:
        the runs on either side of it are copied whole (the totals of the side nearer the
        end are counted, as `locate` counts)."""
        runs = self.runs
        index, before = self.locate(n)
        if index == len(runs):
            return self.copy(), Segment()
        element, times = runs[index]
        whole, offset = divmod(n - before, element[COUNT])
        left, right = runs[:index], runs[index + 1:]
        if 2 * index < len(runs):
            left_length, left_count = before, sum(times for _, times in left)
        else:
            right_length = sum(element[COUNT] * times for element, times in right)
            right_count = sum(times for _, times in right)
            left_length = self.length - right_length - element[COUNT] * times
            left_count = self.count - right_count - times
        left_pieces = [(element, whole)] if whole else []
        right_pieces = []
        if offset:
            left_pieces.append((with_count(element, offset), 1))
            right_pieces.append((with_count(element, element[COUNT] - offset), 1))
        if times - whole - (1 if offset else 0):
            right_pieces.append((element, times - whole - (1 if offset else 0)))
        left_segment = Segment._of_runs(left, left_length, left_count)
        for piece in left_pieces:
            left_segment.append(*piece)
        right_segment = Segment._of_runs(right_pieces, 0, 0)
        for element, times in right_pieces:
            right_segment.length += element[COUNT] * times
            right_segment.count += times
        if right:  # its first run may be the last piece's element (a cut one)
            right_segment.append(*right[0])
            right_segment.runs += right[1:]
            right_segment.length = self.length - left_segment.length
            right_segment.count = self.count + (1 if offset else 0) - left_segment.count
        return left_segment, right_segment

    def replace_at(self, n, element):
        """Puts `element` in place of the C element that holds argument n."""
        index, before = self.locate(n)
        old, times = self.runs[index]
        whole = (n - before) // old[COUNT]
        pieces = ([(old, whole)] if whole else []) + [(element, 1)]
        if times - whole - 1:
            pieces.append((old, times - whole - 1))
        self._replace(index, index + 1, pieces)

    def truncate(self, n):
        """Drops the elements from argument n on (n starts an element)."""
        index, before = self.locate(n)
        if index < len(self.runs):
            element, _ = self.runs[index]
            whole = (n - before) // element[COUNT]
            self._replace(index, len(self.runs), [(element, whole)] if whole else [])

    def insert_first(self, element):
        self._replace(0, 0, [(element, 1)])

    def pop_run(self):
        """Drops the last run."""
        self._replace(len(self.runs) - 1, len(self.runs), [])

    def pop_element(self):
        """Drops the last C element."""
        element, times = self.runs[-1]
        self._replace(len(self.runs) - 1, len(self.runs),
                      [(element, times - 1)] if times > 1 else [])

    def required_prefix(self):
        """How many arguments from the first on the segment's first required elements take."""
        runs, index, before = self.runs, self._required, self._required_length
        while index < len(runs) and runs[index][0][PRESENCE] == REQUIRED:
            element, times = runs[index]
            index, before = index + 1, before + element[COUNT] * times
        self._required, self._required_length = index, before
        return before

    def required_runs(self):
        """How many runs the arguments `required_prefix` counted take (call it first)."""
        return self._required

    def set_required(self, n):
        """Makes the elements that hold arguments 0..n-1 required (n starts an element)."""
        before = self.required_prefix()
        if before >= n:
            return
        start = self._required
        stop, before = self.locate(n)  # the run holding argument n, the arguments before it
        made = _RequiredRuns()
        pieces = [made[run] for run in self.runs[start:stop]]
        if before < n:  # n cuts the run: its elements before n become required
            element, times = self.runs[stop]
            whole = (n - before) // element[COUNT]
            pieces += [(with_presence(element, REQUIRED), whole), (element, times - whole)]
            stop += 1
        self._replace(start, stop, pieces)
        self._required, self._required_length = self.locate(n)

    def _replace(self, start, stop, pieces):
        """Puts the runs `pieces` in place of runs[start:stop], merging equal neighbours."""
        runs = self.runs
        firsts = [element for element, _ in pieces]
        if all(map(operator.ne, firsts, firsts[1:])):  # at C speed: set_required's pieces
            merged = list(pieces)
        else:
            merged = []
            for run in pieces:
                if merged and merged[-1][0] == run[0]:
                    merged[-1] = (run[0], merged[-1][1] + run[1])
                else:
                    merged.append(run)
        if start and merged and runs[start - 1][0] == merged[0][0]:
            start -= 1
            merged[0] = (merged[0][0], runs[start][1] + merged[0][1])
        if stop < len(runs):
            if merged and runs[stop][0] == merged[-1][0]:
                merged[-1] = (merged[-1][0], merged[-1][1] + runs[stop][1])
                stop += 1
            elif not merged and start and runs[start - 1][0] == runs[stop][0]:
                merged = [(runs[stop][0], runs[start - 1][1] + runs[stop][1])]
                start, stop = start - 1, stop + 1
        if start < self._required:
            self._required_length -= _totals(runs[start:self._required])[0]
            self._required = start
        (old_length, old_count), (new_length, new_count) = _totals(runs[start:stop]), _totals(merged)
        self.length += new_length - old_length
        self.count += new_count - old_count
        runs[start:stop] = merged


def _totals(runs):
    """(the arguments, the elements) of runs: a few (most edits) in a loop, many at C speed."""
    if len(runs) < 16:
        length = count = 0
        for element, times in runs:
            length, count = length + element[COUNT] * times, count + times
        return length, count
    times = [times for _, times in runs]
    return sum(map(operator.mul, [element[COUNT] for element, _ in runs], times)), sum(times)
