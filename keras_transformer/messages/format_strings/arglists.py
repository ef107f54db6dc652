"""The argument list constraints of gettext 0.21's format-lisp.c and format-scheme.c (the
same code in both): a list is an initial segment and an endlessly repeated one, each of
elements that constrain `repcount` consecutive arguments (may the list end before them, of
what type, for a list argument the constraints of its elements). The operations follow the
C functions of the same names step by step, their slips included: normalization tries one
period only (`for (m = 2; m <= n / 2; n++)`), and `make_repeated_list` takes the initial
segment's elements for the repeated ones. Where that reads past the initial segment's
elements, it reads what the C array still holds there: for the list of an iteration with a
`~^` (`~{~^~a~}`), what make_union_list left in its array (`stale_slots`). Where the C code
reads memory it never set, or a list it may have freed, `Undefined` is raised: msgfmt's
verdict cannot be known.

What differs is how the lists are kept, so that what the C code does in time quadratic in a
string's length (or worse) mostly takes linear time here, with the same results:
- Segments are runs of equal elements (`arglist_segments.Segment`; elements are plain
  tuples): the C code steps through lists of as many elements as the string has directives,
  once or more per directive. (A list whose neighbouring elements all differ, `~a~d` repeated, gains
  nothing from runs: where such a list is copied and united at each directive, by `~^` or a
  nested `~[`, the time stays quadratic, as msgfmt's.)
- A list that is an element's list (a list of lists) is frozen: never changed, so the C
  code's copies (copy_list) share it, and equal frozen lists are one object (`freeze`), so
  that equal_list is `is` for them. What copy_list copies to change, a list's `copy` copies
  (its segments; the lists in its elements are shared).
- The intersection, union, normalization and repeated list (make_repeated_list) of frozen
  lists are computed once and kept with them: nested `~{ ~}` intersect a list with itself at
  each level, which the C code does by walking and copying the whole nest below, again at
  each level (msgfmt takes 20 s for 100 levels, and our first port 100 s).
- Where the C functions recurse into lists of lists (make_intersected_list through
  make_intersected_element, make_union_list through make_union_element, normalize_list),
  they run on an explicit stack (`explicit_stack.run_nested`), as deep as lists nest."""

import math
import operator
import weakref

from keras_transformer.messages.format_strings.explicit_stack import collector_paused
from keras_transformer.messages.format_strings.explicit_stack import run_nested
from keras_transformer.messages.format_strings.arglist_segments import COUNT
from keras_transformer.messages.format_strings.arglist_segments import OPTIONAL
from keras_transformer.messages.format_strings.arglist_segments import PRESENCE
from keras_transformer.messages.format_strings.arglist_segments import REQUIRED
from keras_transformer.messages.format_strings.arglist_segments import Segment
from keras_transformer.messages.format_strings.arglist_segments import SUBLIST
from keras_transformer.messages.format_strings.arglist_segments import TYPE
from keras_transformer.messages.format_strings.arglist_segments import with_count
from keras_transformer.messages.format_strings.arglist_segments import with_presence

(OBJECT, CHARACTER_INTEGER_NULL, CHARACTER_NULL, CHARACTER, INTEGER_NULL, INTEGER, REAL,
 COMPLEX, LIST, FORMATSTRING, FUNCTION) = range(11)
_NULLS = (CHARACTER_INTEGER_NULL, CHARACTER_NULL, INTEGER_NULL)
_NARROWER = {  # a type and the types it narrows to, in both intersection and union
    CHARACTER_INTEGER_NULL: (CHARACTER_NULL, CHARACTER, INTEGER_NULL, INTEGER),
    CHARACTER_NULL: (CHARACTER,), INTEGER_NULL: (INTEGER,), REAL: (INTEGER,),
}
_ANY = (OPTIONAL, OBJECT)  # the presence and type of an unconstrained element
# What a frozen list keeps: its intersections, unions, normalized list, repeated lists.
_MEET, _JOIN, _NORMAL, _REPEATED = "intersection", "union", "normalized", "repeated"


class Undefined(Exception):
    """gettext's C code reads memory it has not set, or aborts, on this string: msgfmt's
    verdict on its arguments cannot be known (it reads on and reports a later syntax error,
    or crashes, aborts or loops: it refuses `~{~^~2*~}~q` for its `~q`, and crashes on
    `~{~1@*~}~q`)."""


class TooLarge(Undefined):
    """A loop would be copied into a list of more than `MAX_RUNS` runs of elements (a list
    of a loop of two elements rotated 50 million times for `~@{~a~d~}~100000000@*~a`): the
    arguments are left unchecked, as where gettext's verdict is unknown, rather than take
    gigabytes (msgfmt takes 4.7 GB and 4.8 s for an entry whose msgid and msgstr are that
    string)."""


# The most runs a loop's copies may make: a list of 16.8 million runs of elements takes about
# 1.5 GB here (a run costs 8 bytes of reference, and the lists are copied a few times over).
MAX_RUNS = 1 << 24


def _copy_loop(segment, loop, times):
    """`segment.extend(loop, times)`, or TooLarge past `MAX_RUNS`."""
    if len(loop.runs) > 1 and len(segment.runs) + len(loop.runs) * times > MAX_RUNS:
        raise TooLarge(f"a loop copied {times} times")
    segment.extend(loop, times)


class ArgList:
    """format-lisp.c's `struct format_arg_list`. A frozen list (`freeze`) is never changed and
    keeps what was computed from it (`_memo`); `copy` gives a list that may be. A list that
    `unite_exit` returned keeps what it united (`_united`), and a list that `union` returned
    what it needs to tell what gettext's C array of the initial segment holds past its
    elements (`_slots`, read by `stale_slots`). A list keeps its loop array's `allocated` as
    gettext counts it (`_loop_allocated`), and, where rotate_loop gave the loop a new array
    and left `allocated` as it was, the new array's size (`_loop_block`; see
    `_grow_loop`)."""
    __slots__ = ("initial", "repeated", "_memo", "_united", "_slots", "_loop_allocated",
                 "_loop_block", "__weakref__")

    def __init__(self, initial=None, repeated=None):
        self.initial = initial if initial is not None else Segment()
        self.repeated = repeated if repeated is not None else Segment()
        self._memo = self._united = self._slots = self._loop_block = None
        self._loop_allocated = self.repeated.count  # a new array holds its elements exactly

    def copy(self):
        return ArgList(self.initial.copy(), self.repeated.copy())


_FROZEN = weakref.WeakValueDictionary()  # (initial runs, repeated runs) -> the frozen list


def freeze(arglist):
    """The frozen list equal to `arglist` (a list of lists holds frozen lists only)."""
    if arglist._memo is not None:
        return arglist
    key = (tuple(arglist.initial.runs), tuple(arglist.repeated.runs))
    frozen = _FROZEN.get(key)
    if frozen is None:
        frozen = arglist.copy()
        frozen._memo = {}
        _FROZEN[key] = frozen
    return frozen


def _lcm_factors(n1, n2):
    g = math.gcd(n1, n2)
    return n2 // g, n1 // g


def equal_element(e1, e2):
    """Equal constraints, whatever the repcounts (equal frozen lists are one list)."""
    return e1[PRESENCE] == e2[PRESENCE] and e1[TYPE] == e2[TYPE] and e1[SUBLIST] is e2[SUBLIST]


def equal_list(list1, list2):
    return list1.initial.runs == list2.initial.runs and list1.repeated.runs == list2.repeated.runs


def _combined(segment):
    """The segment's elements with equal neighbours merged (normalize_outermost_list's first
    step), as a Python list (neighbours compared at C speed: most differ)."""
    runs = segment.runs
    elements = [with_count(element, element[COUNT] * times) if times > 1 else element
                for element, times in runs]
    constraints = [element[PRESENCE:] for element in elements]  # equal_element's fields
    if not any(map(operator.eq, constraints, constraints[1:])):
        return elements
    return _merged_neighbours(elements)[0]


def _merged_neighbours(elements):
    """normalize_outermost_list's first step on a Python list of elements: (the elements with
    equal neighbours merged, where each element went: its index there, or None where it was
    merged into the one before it, which frees its list)."""
    out, moved_to = [], []
    for element in elements:
        if out and out[-1][PRESENCE:] == element[PRESENCE:]:  # equal_element
            out[-1] = with_count(out[-1], out[-1][COUNT] + element[COUNT])
            moved_to.append(None)
        else:
            out.append(element)
            moved_to.append(len(out) - 1)
    return out, moved_to


def normalize_outermost_list(arglist):
    """Merges equal neighbours, shortens the loop's period (trying 2 only, as gettext does
    by incrementing n instead of m) and rolls the initial segment's tail into the loop."""
    rep = _combined(arglist.repeated)
    if _is_combined(arglist.initial):  # what is left to do touches its end only
        peak = _normalize_elements(_End(arglist.initial), rep)
    else:
        initial = _combined(arglist.initial)
        peak = _normalize_elements(initial, rep)
        arglist.initial = Segment.of(initial)
    if peak is not None:
        _grow_loop(arglist, peak)
    arglist.repeated = Segment.of(rep)


def _is_combined(segment):
    """Whether the segment's elements have no equal neighbours (merging changes nothing):
    checked at C speed, as a list ten million elements long is (`~@{~a~d~}~10000000@*~a`)."""
    runs = segment.runs
    if segment.count != len(runs):  # a run of more than one element
        return False
    constraints = [element[PRESENCE:] for element, _ in runs]  # equal_element's fields
    return all(map(operator.ne, constraints, constraints[1:]))


class _End:
    """A segment seen as the list of its elements (`_combined`'s) at its end, where
    normalization's roll takes them from an initial segment."""
    __slots__ = ("segment",)

    def __init__(self, segment):
        self.segment = segment

    def __bool__(self):
        return bool(self.segment)

    def __getitem__(self, index):
        if index != -1:
            raise IndexError("a segment's end only")
        return self.segment.last()

    def __setitem__(self, index, element):
        self.pop(index)
        self.segment.append(element)

    def pop(self, index=-1):
        if index != -1:
            raise IndexError("a segment's end only")
        self.segment.pop_element()


def _normalize_elements(initial, rep):
    """normalize_outermost_list after its merges, on Python lists of elements: returns the
    most elements the loop's roll made it hold, or None where it added none (its array grows
    by one where an element moves to its start)."""
    if not rep:
        return None
    n, extra = len(rep), 0
    if n > 1 and equal_element(rep[0], rep[n - 1]):
        extra, n = rep[n - 1][COUNT], n - 1
    if n >= 4:  # m stays 2 while n grows: the first even n decides, or none does
        n += n % 2
        length = sum(element[COUNT] for element in rep)
        for i in range(n - 2):
            if i + 2 >= len(rep):
                raise Undefined("normalization reads past the loop")
            if not (rep[i][COUNT] + (extra if i == 0 else 0) == rep[i + 2][COUNT]
                    and equal_element(rep[i], rep[i + 2])):
                break
        else:
            rep[2:] = rep[n:n + 1]
            if length // (n // 2) != sum(element[COUNT] for element in rep):
                raise Undefined("normalization miscounts the loop")
    peak = None
    if len(rep) == 1:
        if initial and equal_element(initial[-1], rep[0]):
            initial.pop()
        return peak
    while initial and equal_element(initial[-1], rep[-1]):
        moved = min(initial[-1][COUNT], rep[-1][COUNT])
        if equal_element(rep[0], rep[-1]):
            rep[0] = with_count(rep[0], rep[0][COUNT] + moved)
        else:
            rep.insert(0, with_count(rep[-1], moved))
            peak = max(peak or 0, len(rep))
        rep[-1] = with_count(rep[-1], rep[-1][COUNT] - moved)
        if rep[-1][COUNT] == 0:
            rep.pop()
        initial[-1] = with_count(initial[-1], initial[-1][COUNT] - moved)
        if initial[-1][COUNT] == 0:
            initial.pop()
    return peak


def normalize_list(arglist):
    """normalize_list: the lists of lists first (each frozen list once), then the list."""
    arglist.initial = arglist.initial.map_lists(_normalized)
    arglist.repeated = arglist.repeated.map_lists(_normalized)
    normalize_outermost_list(arglist)


def _normalized(frozen):
    """The normalized frozen list of a frozen list, its lists of lists first, without
    recursion: a list waits on the stack until its lists are done."""
    stack = [frozen]
    while stack:
        top = stack[-1]
        if _NORMAL in top._memo:
            stack.pop()
            continue
        pending = [element[SUBLIST] for segment in (top.initial, top.repeated)
                   for element, _ in segment.runs
                   if element[SUBLIST] is not None and _NORMAL not in element[SUBLIST]._memo]
        if pending:
            stack += pending
            continue
        work = ArgList(top.initial.map_lists(lambda sublist: sublist._memo[_NORMAL]),
                       top.repeated.map_lists(lambda sublist: sublist._memo[_NORMAL]))
        normalize_outermost_list(work)
        top._memo[_NORMAL] = freeze(work)
        stack.pop()
    return frozen._memo[_NORMAL]


def make_unconstrained_list():
    return ArgList(repeated=Segment([((1, OPTIONAL, OBJECT, None), 1)]))


def is_empty_list(arglist):
    return not arglist.initial and not arglist.repeated


def unfold_loop(arglist, m):
    if m > 1:
        _grow_loop(arglist, m * arglist.repeated.count)
        _copy_loop(arglist.repeated, arglist.repeated, m - 1)


def rotate_loop(arglist, m, cut=None):
    """Makes the initial segment m long, taking from the loop (which must not be empty).
    Where that cuts an element of the loop in two, gettext 0.21 leaves the loop's count one
    short (the cut's second part, at the loop's end, is not counted): `array_broken`, or,
    given a list `cut`, the list is put in it (make_intersected_list walks the short loop;
    add_end_constraint drops the loop)."""
    have = arglist.initial.length
    if m == have:
        return
    if m < have or not arglist.repeated:
        raise Undefined("a loop rotated backwards")
    rep = arglist.repeated
    if rep.count == 1:
        arglist.initial.append(with_count(rep.first(), m - have))
        return
    q, r = divmod(m - have, rep.length)
    left, right = rep.split(r)
    if left.count + right.count > rep.count:
        # r cuts an element in two: gettext 0.21 puts both parts in the rotated loop's new
        # array, but leaves its count as it was, so that the loop's elements no longer add
        # up to its length (msgfmt aborts at the next VERIFY_LIST or ASSERT on it:
        # `~@{~a~a~a~}~1@*~a`)
        if cut is None:
            array_broken("rotate_loop splits an element of the loop")
        cut.append(arglist)
    _copy_loop(arglist.initial, rep, q)
    arglist.initial.extend(left)
    if r > 0:
        right.extend(left)
        arglist.repeated = right
        # a new array of the loop's elements; gettext leaves `allocated` as it was
        arglist._loop_block = (right.count if right.count != arglist._loop_allocated
                               else None)


def _grow_loop(arglist, count):
    """ensure_repeated_alloc: the loop's array grows to hold `count` elements (normalization's
    roll: one more than it holds). Where rotate_loop gave the loop a new array smaller than
    gettext's `allocated`, gettext reallocates only once `count` passes `allocated`, and
    writes past the array before (msgfmt corrupts its heap:
    `~b~@{~2*~r~v^~va~#^~^~}~3@*~a`): `array_broken`."""
    block, allocated = arglist._loop_block, arglist._loop_allocated
    if block is not None and block < count <= allocated:
        array_broken("a rotated loop grows past its array")
    if count > allocated:  # reallocated: the array holds what gettext counts
        arglist._loop_allocated, arglist._loop_block = max(2 * allocated + 1, count), None


def _grown(count):
    """gettext's `allocated` after grow_repeated_alloc made room for `count` elements one by
    one, from none (0, 1, 3, 7, ...)."""
    allocated = 0
    while allocated < count:
        allocated = 2 * allocated + 1
    return allocated


def array_broken(reason):
    """Raises Undefined: gettext 0.21's rotate_loop left a loop's count short (msgfmt aborts,
    or its intersection's ASSERT does), or its array smaller than its `allocated`, and the
    loop grows past the array here (msgfmt writes past it)."""
    raise Undefined(reason)


def initial_splitelement(arglist, n, cut=None):
    """Makes argument n start an element of the initial segment (`cut`: see rotate_loop)."""
    if n > arglist.initial.length:
        rotate_loop(arglist, n, cut)
    arglist.initial.split_at(n)


def initial_unshare(arglist, n):
    """Gives argument n an element of its own in the initial segment."""
    if n >= arglist.initial.length:
        rotate_loop(arglist, n + 1)
    arglist.initial.isolate(n)


def shift_list(arglist, n):
    """n unconstrained required arguments before the list."""
    if n > 0:
        arglist.initial.insert_first((n, REQUIRED, OBJECT, None))
        normalize_outermost_list(arglist)


def _meet_presence(e1, e2):
    return REQUIRED if REQUIRED in (e1[PRESENCE], e2[PRESENCE]) else OPTIONAL


def _meet_type(e1, e2):
    """make_intersected_element's (type, list) of two elements not both of list type, or None
    on a contradiction."""
    t1, t2 = e1[TYPE], e2[TYPE]
    if t1 == OBJECT or t2 == OBJECT:
        source = e2 if t1 == OBJECT else e1
        return source[TYPE], source[SUBLIST]
    for a, b in ((e1, e2), (e2, e1)):
        if a[TYPE] == LIST and b[TYPE] in _NULLS:
            sublist = make_intersection_with_empty_list(a[SUBLIST])
            return None if sublist is None else (LIST, freeze(sublist))
    for narrow in (_narrowest, _complex_narrowest):
        for a, b in ((t1, t2), (t2, t1)):
            if b in narrow(a):
                return b, None
    return (t1, None) if t1 == t2 else None


def _meet_frozen(list1, list2):
    """The frozen intersection of two frozen lists (None on a contradiction), computed once;
    a generator for `run_nested`."""
    if (_MEET, list2) not in list1._memo:
        result = yield _meet_lists(list1.copy(), list2.copy())
        list1._memo[_MEET, list2] = None if result is None else freeze(result)
    return list1._memo[_MEET, list2]


def make_intersected_element(e1, e2):
    """(presence, (type, list) or None on a contradiction) of both constraints."""
    if e1[TYPE] == e2[TYPE] == LIST:
        sublist = run_nested(_meet_frozen(e1[SUBLIST], e2[SUBLIST]))
        return _meet_presence(e1, e2), None if sublist is None else (LIST, sublist)
    return _meet_presence(e1, e2), _meet_type(e1, e2)


def _narrowest(kind):
    return _NARROWER.get(kind, ())


def _complex_narrowest(kind):  # Scheme's complex numbers: tried after the others
    return (REAL, INTEGER) if kind == COMPLEX else ()


def _backtrack_in_initial(arglist):
    """Cuts a finite list at its last optional end; None when it has none."""
    initial = arglist.initial
    while initial:
        last = initial.last()
        if last[PRESENCE] == REQUIRED:
            initial.pop_run()
        else:
            initial.pop_element()
            if last[COUNT] > 1:
                initial.append(with_count(last, last[COUNT] - 1))
            return arglist
    return None


def _aligned(segment1, segment2, start=0):
    """The steps of gettext's loops over two segments at once (make_intersected_list's and
    make_union_list's): each step pairs the current elements and takes the arguments both
    have left (the smaller count), until either segment ends. Yields (element1, element2,
    count, steps): `steps` such steps in a row, alike (a run of elements against a run of
    equal repcount, or against one element that holds several of them). From run `start` of
    both (the runs before take the same arguments)."""
    runs1, runs2 = segment1.runs, segment2.runs
    index1 = index2 = start  # the current runs
    within1 = within2 = 0  # the elements of them taken
    used1 = used2 = 0  # the arguments of the current elements taken
    while index1 < len(runs1) and index2 < len(runs2):
        e1, times1 = runs1[index1]
        e2, times2 = runs2[index2]
        left1, left2 = e1[COUNT] - used1, e2[COUNT] - used2
        fresh1 = 0 if used1 else times1 - within1  # untouched elements of the run
        fresh2 = 0 if used2 else times2 - within2
        if left1 == left2:
            count, steps = left1, max(1, min(fresh1, fresh2))
        elif left1 < left2 and fresh1:
            count, steps = left1, min(fresh1, left2 // left1)
        elif left2 < left1 and fresh2:
            count, steps = left2, min(fresh2, left1 // left2)
        else:
            count, steps = min(left1, left2), 1
        yield e1, e2, count, steps
        if not used1 and count == e1[COUNT]:
            within1 += steps
        else:
            used1 += count * steps
            if used1 == e1[COUNT]:
                used1, within1 = 0, within1 + 1
        if within1 == times1:
            index1, within1 = index1 + 1, 0
        if not used2 and count == e2[COUNT]:
            within2 += steps
        else:
            used2 += count * steps
            if used2 == e2[COUNT]:
                used2, within2 = 0, within2 + 1
        if within2 == times2:
            index2, within2 = index2 + 1, 0


def _intersect_segments(segment1, segment2, into):
    """Intersects two segments element by element into `into`: (the failed element's
    presence or None, the arguments intersected). A generator for `run_nested`."""
    taken = 0
    for e1, e2, count, steps in _aligned(segment1, segment2):
        presence = _meet_presence(e1, e2)
        if e1[TYPE] == e2[TYPE] == LIST:
            sublist = yield _meet_frozen(e1[SUBLIST], e2[SUBLIST])
            kind = None if sublist is None else (LIST, sublist)
        else:
            kind = _meet_type(e1, e2)
        if kind is None:
            return presence, taken
        into.append((count, presence, *kind), steps)
        taken += count * steps
    return None, taken


def _equalize_loops(list1, list2):
    m1, m2 = _lcm_factors(list1.repeated.length, list2.repeated.length)
    unfold_loop(list1, m1)
    unfold_loop(list2, m2)


def make_intersected_list(list1, list2):
    """Both constraints at once (consumes both lists); None on a contradiction."""
    return run_nested(_meet_lists(list1, list2))


def _meet_lists(list1, list2):
    """make_intersected_list, a generator for `run_nested`."""
    if list1.repeated and list2.repeated:
        _equalize_loops(list1, list2)
    cut = []  # the lists whose loop gettext counts one element short (see rotate_loop)
    if list1.repeated or list2.repeated:
        m = max(list1.initial.length, list2.initial.length)
        for arglist in (list1, list2):
            if arglist.repeated:
                rotate_loop(arglist, m, cut)
    result = ArgList()
    failed, taken = yield from _intersect_segments(list1.initial, list2.initial, result.initial)
    if failed is not None or not (list1.repeated and list2.repeated):
        if failed is None:
            for arglist, other in ((list1, list2), (list2, list1)):
                if taken < arglist.initial.length or arglist.repeated and not other.repeated:
                    first = (arglist.initial.element_at(taken) if taken < arglist.initial.length
                             else arglist.repeated.first())
                    failed = first[PRESENCE]
                    break
        if failed == REQUIRED:
            result = _backtrack_in_initial(result)
    else:
        loops = [arglist.repeated.split(arglist.repeated.length - arglist.repeated.last()[COUNT])[0]
                 if arglist in cut else arglist.repeated for arglist in (list1, list2)]
        failed, _ = yield from _intersect_segments(*loops, result.repeated)
        if failed is None and loops[0].length != loops[1].length:  # they end apart
            array_broken("make_intersected_list's loops end apart (its ASSERT aborts)")
        result._loop_allocated = _grown(result.repeated.count)  # (an element a step)
        if failed is not None:  # append_repeated_to_initial (gettext may keep an allocation
            # of 1 for the empty loop: no array grows in place from here, so it does not matter)
            result.initial.extend(result.repeated)
            result.repeated = Segment()
            result._loop_allocated = 0
            if failed == REQUIRED:
                result = _backtrack_in_initial(result)
    if result is not None:
        normalize_outermost_list(result)
    return result


def make_intersection_with_empty_list(arglist):
    first = arglist.initial or arglist.repeated
    return None if first and first.first()[PRESENCE] == REQUIRED else ArgList()


def _join_element(e1, e2, count):
    """make_union_element of two elements not both of list type."""
    presence = REQUIRED if e1[PRESENCE] == e2[PRESENCE] == REQUIRED else OPTIONAL
    t1, t2 = e1[TYPE], e2[TYPE]
    if t1 == t2:
        return (count, presence, t1, None)
    for narrow in (_narrowest, _complex_narrowest):
        for a, b in ((t1, t2), (t2, t1)):
            if b in narrow(a):
                return (count, presence, a, None)
    for a, b in ((e1, e2), (e2, e1)):
        if a[TYPE] == LIST and is_empty_list(a[SUBLIST]):
            kind = (b[TYPE] if b[TYPE] in _NULLS else CHARACTER_NULL if b[TYPE] == CHARACTER
                    else INTEGER_NULL if b[TYPE] == INTEGER else OBJECT)
            return (count, presence, kind, None)
    for a, b in ((t1, t2), (t2, t1)):
        if a in (CHARACTER, CHARACTER_NULL) and b in (INTEGER, INTEGER_NULL):
            return (count, presence, CHARACTER_INTEGER_NULL, None)
    return (count, presence, OBJECT, None)


def _join_frozen(list1, list2):
    """The frozen union of two frozen lists, computed once; a generator for `run_nested`."""
    if (_JOIN, list2) not in list1._memo:
        result = yield _join_lists(list1.copy(), list2.copy())
        list1._memo[_JOIN, list2] = freeze(result)
    return list1._memo[_JOIN, list2]


def _union_segments(segment1, segment2, into):
    """Unites two segments element by element into `into` (empty): the arguments united. A
    generator for `run_nested`.

    The union is normalized after (make_union_list), which merges equal neighbouring
    elements: so what is united argument by argument may be taken in longer elements. The
    runs both segments begin with unite into themselves (join(e, e) is e, but for a list of
    lists) and are taken at once; and where what one segment has left is one unconstrained
    element (optional, of any type), the other's rest unites with it into it (`_ANY`): a
    `~[` clause's list united with the list before it (`~[~d` nested) costs what the
    clause changed, not all of the list."""
    runs1, runs2 = segment1.runs, segment2.runs
    shared = length = count = 0
    for run1, run2 in zip(runs1, runs2):
        if run1 != run2 or run1[0][TYPE] == LIST:
            break
        shared, length, count = shared + 1, length + run1[0][COUNT] * run1[1], count + run1[1]
    into.fill(runs1[:shared], length, count)
    taken = length
    for rest in (runs1[shared:], runs2[shared:]):
        if len(rest) == 1 and rest[0][1] == 1 and rest[0][0][PRESENCE:TYPE + 1] == _ANY:
            left = min(segment1.length, segment2.length) - taken
            if left:
                into.append((left, OPTIONAL, OBJECT, None))
            return taken + left
    for e1, e2, count, steps in _aligned(segment1, segment2, shared):
        into.append((yield from _joined(e1, e2, count)), steps)
        taken += count * steps
    return taken


def _joined(e1, e2, count):
    """make_union_element of two elements, `count` arguments: a generator for `run_nested`
    (a union of lists of lists)."""
    if e1[TYPE] == e2[TYPE] == LIST:
        presence = REQUIRED if e1[PRESENCE] == e2[PRESENCE] == REQUIRED else OPTIONAL
        return (count, presence, LIST, (yield _join_frozen(e1[SUBLIST], e2[SUBLIST])))
    return _join_element(e1, e2, count)


def _union_rest(list1, list2, taken):
    """What make_union_list copies after the arguments both initial segments have (`taken`):
    (the first argument left, made optional, or None if it is optional; the elements after
    it), of the longer segment; (None, an empty segment) where they end together."""
    for arglist in (list1, list2):
        if taken < arglist.initial.length:
            rest = arglist.initial.split(taken)[1]
            if rest.first()[PRESENCE] != REQUIRED:
                return None, rest
            return with_count(with_presence(rest.first(), OPTIONAL), 1), rest.split(1)[1]
    return None, Segment()


def make_union_list(list1, list2):
    """Either constraint (consumes both lists)."""
    return run_nested(_join_lists(list1, list2))


def _join_lists(list1, list2, keep_slots=False):
    """make_union_list, a generator for `run_nested`; with `keep_slots`, the result keeps
    what `stale_slots` needs (the two initial segments united and the loop, before
    normalization)."""
    if list1.repeated and list2.repeated:
        _equalize_loops(list1, list2)
        m = max(list1.initial.length, list2.initial.length)
        rotate_loop(list1, m)
        rotate_loop(list2, m)
    else:
        for a, b in ((list1, list2), (list2, list1)):
            if a.repeated:
                if b.initial.length >= a.initial.length:
                    rotate_loop(a, b.initial.length)
                    if a.repeated.first()[PRESENCE] == REQUIRED:
                        rotate_loop(a, a.initial.length + 1)
                break
    sources = (ArgList(list1.initial.copy()), ArgList(list2.initial.copy())) if keep_slots else None
    result = ArgList()
    taken = yield from _union_segments(list1.initial, list2.initial, result.initial)
    first, rest = _union_rest(list1, list2, taken)
    if first is not None:
        result.initial.append(first)
    result.initial.extend(rest)
    if list1.repeated and list2.repeated:
        yield from _union_segments(list1.repeated, list2.repeated, result.repeated)
        # an element a step of gettext's loop (_union_segments may take several at once)
        result._loop_allocated = _grown(sum(steps for *_, steps in _aligned(list1.repeated,
                                                                            list2.repeated)))
    else:
        result.repeated = (list1.repeated or list2.repeated).copy()
        result._loop_allocated = result.repeated.count
    loop = result.repeated.copy() if keep_slots else None
    normalize_outermost_list(result)
    if keep_slots:
        result._slots = (result.initial, tuple(result.initial.runs), sources, loop)
    return result


def unite_exit(escape, exit_list):
    """union(escape, exit_list) for a `~^`: `escape` unites the lists at the `~^`s before,
    `exit_list` is the list ending at this one.

    Both are finite where the `~^`'s position is known (the list ends there), and the union of
    finite lists unites them argument by argument (then the longer's rest, its first argument
    made optional). Uniting an argument's constraint with one it was united with before
    changes nothing (join(join(e, x), x) is join(e, x), for every element but a list of
    lists). So where `escape` is the list this function returned last, unchanged, the
    arguments the runs of `exit_list` share with the exit list united then, up to the first
    list of lists, keep `escape`'s constraints, and only the rest is united again: at a
    `~^` after each directive (`~a~^` repeated) this takes time linear in the string, not
    quadratic (the C code's). The result is that of make_union_list (both normalized: no
    two neighbouring elements are equal)."""
    if escape is None or exit_list is None or escape.repeated or exit_list.repeated:
        return union(escape, exit_list)
    exit_runs = list(exit_list.initial.runs)
    united = escape._united
    if united is None or escape.initial.runs != united[2]:
        result = make_union_list(escape, exit_list)
        shared = 0
    else:
        shared = _shared_runs(exit_runs, united[0], united[1])
        start = exit_list.initial.length - sum(element[COUNT] * times
                                              for element, times in exit_runs[shared:])
        kept, escape_rest = escape.initial.split(start)
        rest = make_union_list(ArgList(escape_rest), ArgList(exit_list.initial.split(start)[1]))
        result = ArgList(_joined_normalized(kept, rest.initial))
    first_list = next((index for index in range(shared, len(exit_runs))
                       if exit_runs[index][0][TYPE] == LIST), len(exit_runs))
    result._united = (exit_runs, first_list, list(result.initial.runs))
    return result


def _shared_runs(runs1, runs2, most):
    """How many runs, `most` at the most, the two lists of runs begin with alike (their
    slices compared at C speed, halving the range)."""
    low, high = 0, min(len(runs1), len(runs2), most)
    if runs1[:high] == runs2[:high]:
        return high
    while low < high:
        middle = (low + high + 1) // 2
        if runs1[:middle] == runs2[:middle]:
            low = middle
        else:
            high = middle - 1
    return low


def _joined_normalized(left, right):
    """The segment of normalized segments `left` then `right`, normalized: their elements at
    the seam merged if equal (normalize_outermost_list's merge, done there only)."""
    runs = left.runs + right.runs
    length, count = left.length + right.length, left.count + right.count
    if left and right and equal_element(left.last(), right.first()):
        at = len(left.runs) - 1
        runs[at:at + 2] = [(with_count(left.last(), left.last()[COUNT] + right.first()[COUNT]), 1)]
        count -= 1
    return Segment._of_runs(runs, length, count)


def make_union_with_empty_list(arglist):
    first = arglist.initial or arglist.repeated
    if first and first.first()[PRESENCE] == REQUIRED:
        initial_splitelement(arglist, 1)
        arglist.initial.replace_at(0, with_presence(arglist.initial.first(), OPTIONAL))
        normalize_outermost_list(arglist)
    return arglist


def union(list1, list2):
    """make_union_list where None (a contradiction) is no alternative. The result keeps what
    `stale_slots` needs to tell what its C array holds past its elements: a `~{`'s list is
    this union's (of the list and its `~^` exits), and make_repeated_list reads past it."""
    if list1 is None or list2 is None:
        result = list2 if list1 is None else list1
        if result is not None:  # a list made before: what its array holds is not known here
            result._slots = None
        return result
    return run_nested(_join_lists(list1, list2, keep_slots=True))


_UNSET = None  # a slot of a C array that was allocated and never written
_FREED = "freed"  # a slot whose element's list gettext freed (its copy in the slot dangles)


def stale_slots(arglist):
    """What gettext's C array of a list's initial segment holds past its elements, up to its
    allocation (elements; `_FREED` for a list element whose list gettext freed; `_UNSET`),
    where the list is `union`'s result unchanged; else None (unknown).

    make_union_list appends the elements of its result one by one (the array growing from 0
    to 1, 3, 7, ... slots: grow_initial_alloc), then normalizes it in place: merging equal
    neighbours copies elements towards the start and leaves the array's tail as it was, and
    rolling the tail into the loop drops elements from the end (the repcount of one dropped
    in normalize_outermost_list's `while` loop is 0, as the loop leaves it). The result here
    is made by other steps (runs, `_union_segments`' shortcuts), so the C array is made again
    from the two segments united, element by element, as the C code makes it."""
    record = arglist._slots
    if (record is None or record[0] is not arglist.initial
            or tuple(arglist.initial.runs) != record[1]):
        return None
    (list1, list2), loop = record[2], record[3]
    elements, allocated, taken = [], 0, 0

    def grow():  # grow_initial_alloc: room for one more element
        nonlocal allocated
        if len(elements) >= allocated:
            allocated = max(2 * allocated + 1, len(elements) + 1)

    for e1, e2, count, steps in _aligned(list1.initial, list2.initial):
        element = run_nested(_joined(e1, e2, count))
        for _ in range(steps):
            grow()
            elements.append(element)
        taken += count * steps
    first, rest = _union_rest(list1, list2, taken)
    if first is not None:
        grow()
        elements.append(first)
    if len(elements) + rest.count > allocated:  # ensure_initial_alloc
        allocated = max(2 * allocated + 1, len(elements) + rest.count)
    elements += rest.elements()
    merged, moved_to = _merged_neighbours(elements)  # step 1
    merged = _Dropped(merged)
    kept = len(merged)  # slots [kept:] are as they were appended
    _normalize_elements(merged, _combined(loop))
    if merged != list(arglist.initial.elements()):
        return None  # not the list this function made again (cannot happen)
    dropped = merged.dropped[::-1]  # slots [len(merged):kept]
    freed = {len(merged) + index for index, element in enumerate(dropped) if element[COUNT] == 0}
    tail = [_FREED if element[TYPE] == LIST and (moved_to[index] is None
                                                 or moved_to[index] in freed) else element
            for index, element in enumerate(elements[kept:], kept)]
    return dropped + tail + [_UNSET] * (allocated - len(elements))


class _Unreadable:
    """A slot that make_repeated_list copies and whose reading gives no known verdict."""

    __slots__ = ("reason",)

    def __init__(self, reason):
        self.reason = reason


_NEVER_SET = _Unreadable("make_repeated_list reads a slot never set")
_DANGLING = _Unreadable("make_repeated_list reads a dropped list or element")


class _Dropped(list):
    """A list of elements that records the ones `pop` drops, last first."""

    def __init__(self, elements=()):
        super().__init__(elements)
        self.dropped = []

    def pop(self, index=-1):
        element = super().pop(index)
        self.dropped.append(element)
        return element


def is_required(arglist, n):
    """Whether arguments 0..n must all be present."""
    prefix = arglist.initial.required_prefix()
    if n < prefix:
        return True
    t = n + 1 - prefix  # the required prefix's runs are all taken: counted at once
    for segment in (arglist.initial, arglist.repeated):
        if segment is arglist.repeated and not segment:
            return False
        runs = segment.runs
        for index in range(segment.required_runs() if segment is arglist.initial else 0,
                           len(runs)):
            element, times = runs[index]
            whole = min(times, t // element[COUNT])
            if whole and element[PRESENCE] != REQUIRED:
                return False
            t -= whole * element[COUNT]
            if whole < times:  # argument n is in this run
                return t == 0 or element[PRESENCE] == REQUIRED
        if t == 0:
            return True
    return True


def add_required_constraint(arglist, n):
    if arglist is None or not arglist.repeated and arglist.initial.length <= n:
        return None
    initial_splitelement(arglist, n + 1)
    arglist.initial.set_required(n + 1)
    return arglist


def add_end_constraint(arglist, n):
    """The list ends before argument n."""
    if arglist is None or not arglist.repeated and arglist.initial.length <= n:
        return arglist
    # a loop cut short reads as the whole loop here: its first element, then none of it
    initial_splitelement(arglist, n, cut=[])
    presence = (arglist.initial.element_at(n) if n < arglist.initial.length
                else arglist.repeated.first())[PRESENCE]
    arglist.initial.truncate(n)
    arglist.repeated = Segment()
    arglist._loop_allocated, arglist._loop_block = 0, None
    return _backtrack_in_initial(arglist) if presence == REQUIRED else arglist


def add_type_constraint(arglist, n, kind, sublist=None):
    """Argument n (already required) is of type `kind` (for LIST, of elements `sublist`)."""
    if arglist is None:
        return None
    initial_unshare(arglist, n)
    element = arglist.initial.element_at(n)
    constraint = (1, OPTIONAL, kind, None if sublist is None else freeze(sublist))
    _, result = make_intersected_element(element, constraint)
    if result is None:
        return add_end_constraint(arglist, n)
    arglist.initial.replace_at(n, (element[COUNT], element[PRESENCE], *result))
    return arglist


def add_req_type_constraint(arglist, position, kind, sublist=None):
    """add_required_constraint, then add_type_constraint. On the argument just past an
    initial segment all required, of a list whose loop is one element (what most directives
    meet), these append the loop's element, once, required, of the type: done so here, without
    their searches; else (or on a contradiction) as they do it."""
    if (arglist is not None and position == arglist.initial.length and arglist.repeated.count == 1
            and arglist.initial.required_prefix() == position):
        constraint = (1, OPTIONAL, kind, None if sublist is None else freeze(sublist))
        _, result = make_intersected_element(arglist.repeated.first(), constraint)
        if result is not None:
            arglist.initial.append((1, REQUIRED, *result))
            return arglist
    return add_type_constraint(add_required_constraint(arglist, position), position, kind, sublist)


def make_repeated_list_of_lists(sublist):
    if sublist is None:
        return ArgList()
    return ArgList(repeated=Segment([((1, OPTIONAL, LIST, freeze(sublist)), 1)]))


def make_repeated_list(sublist, period):
    """The union of 0, 1, 2, ... copies of sublist, each shifted by `period` more (consumes
    sublist), computed once for equal sublists and periods (a `~{...~}` repeated)."""
    if _reads_past_initial(sublist, period) or sublist._loop_block is not None:
        return _repeated_list(sublist, period)  # the list's history matters, not only its value
    frozen = freeze(sublist)
    if (_REPEATED, period) not in frozen._memo:
        result = _repeated_list(sublist, period)
        frozen._memo[_REPEATED, period] = None if result is None else freeze(result)
    result = frozen._memo[_REPEATED, period]
    return None if result is None else result.copy()


def _reads_past_initial(sublist, period):
    """Whether make_repeated_list copies elements of the initial segment's array past its last
    one (gettext 0.21's slip: it copies the loop's elements from the initial segment)."""
    if not sublist.repeated:
        return False
    m = period // math.gcd(period, sublist.repeated.length)
    return m * sublist.repeated.count > sublist.initial.count


def _repeated_list(sublist, period):
    """make_repeated_list; its loops step element by element: here over Python lists of the
    elements."""
    if not sublist.repeated:
        if sublist.initial.length < period:
            return make_union_with_empty_list(sublist)
        source, p, n = list(sublist.initial.elements()), period, sublist.initial.length
    else:
        loop = sublist.repeated.length  # gettext's Lp, read before the loop is unfolded
        m = period // math.gcd(period, loop)
        count = m * sublist.repeated.count  # the loop's elements once unfolded
        initial = list(sublist.initial.elements())  # (unfolding the loop leaves these)
        copied = initial  # the array the slip copies the loop's elements from
        if count > len(initial):  # the slots past the initial elements: known before unfolding
            past = stale_slots(sublist)
            if past is None or count - len(initial) > len(past):
                raise Undefined("make_repeated_list reads past the initial segment")
            # Copying a slot is harmless; what the walk below reads of it (`at`) is not
            # known where it was never set or holds a list gettext freed (its deep copy reads
            # it), and an element of repcount 0 makes VERIFY_LIST abort.
            copied = initial + [_NEVER_SET if element is _UNSET else
                                _DANGLING if element is _FREED or element[COUNT] == 0 else element
                                for element in past[:count - len(initial)]]
        unfold_loop(sublist, m)
        p = m * loop
        source = initial + copied[:count]  # gettext 0.21's slip
        n = sublist.initial.length + sublist.repeated.length

    def at(index):
        if index >= len(source):
            raise Undefined("make_repeated_list reads past its source")
        if isinstance(source[index], _Unreadable):
            raise Undefined(source[index].reason)
        return source[index]

    initial = []
    i = ti = si = 0
    while i < p:
        count = min(at(si)[COUNT] - ti, p - i)
        initial.append(with_count(at(si), count))
        i, ti = i + count, ti + count
        if ti == at(si)[COUNT]:
            ti, si = 0, si + 1
    if initial[0][PRESENCE] == REQUIRED:  # initial_splitelement (list, 1), then optional
        first = initial[0]
        initial[:1] = [with_count(with_presence(first, OPTIONAL), 1)] + (
            [with_count(first, first[COUNT] - 1)] if first[COUNT] > 1 else [])
    tj = sj = 0
    ended = False
    while i < n:
        count = min(at(si)[COUNT] - ti, initial[sj][COUNT] - tj)
        presence, kind = make_intersected_element(at(si), initial[sj])
        if kind is None:
            if presence == REQUIRED:
                return _backtrack_in_initial(ArgList(Segment.of(initial)))
            ended = True
            break
        initial.append((count, presence, *kind))
        i, ti = i + count, ti + count
        if ti == at(si)[COUNT]:
            ti, si = 0, si + 1
        tj += count
        if tj == initial[sj][COUNT]:
            tj, sj = 0, sj + 1
    result = ArgList(Segment.of(initial))
    if not ended and result.initial.length != n:
        raise Undefined("make_repeated_list fails its assertion")
    for i in range(0, result.initial.length, period):
        initial_unshare(result, i)
        element = result.initial.element_at(i)
        result.initial.replace_at(i, with_presence(element, OPTIONAL))
    if not ended:
        initial_splitelement(result, n - p)
        if n > result.initial.count:  # it copies elements split..n-1 (n a length, not a count)
            raise Undefined("make_repeated_list writes past the loop it allocates")
        result.initial, result.repeated = result.initial.split(n - p)
        result._loop_allocated = result.repeated.count
    return result


def compare_lists(msgid_list, msgstr_list, strict, pretty):
    """format_check of format-lisp.c and format-scheme.c: strict, the same constraints;
    else msgstr's must be a subset of msgid's (their intersection is msgstr's)."""
    msgid, msgstr = pretty
    if strict:
        if not equal_list(msgid_list, msgstr_list):
            return f"format specifications in '{msgid}' and '{msgstr}' are not equivalent"
        return None
    with collector_paused():
        intersection = make_intersected_list(msgid_list.copy(), msgstr_list.copy())
        if intersection is not None:
            normalize_list(intersection)
    if intersection is None or not equal_list(intersection, msgstr_list):
        return f"format specifications in '{msgstr}' are not a subset of those in '{msgid}'"
    return None
