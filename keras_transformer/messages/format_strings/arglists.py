"""The argument list constraints of gettext 0.21's format-lisp.c and format-scheme.c (the
same code in both): a list is an initial segment and an endlessly repeated one, each of
elements that constrain `repcount` consecutive arguments (may the list end before them, of
what type, for a list argument the constraints of its elements). The operations follow the
C functions of the same names step by step, their slips included: normalization tries one
period only (`for (m = 2; m <= n / 2; n++)`), and `make_repeated_list` takes the initial
segment's elements for the repeated ones. Where the C code then reads memory it never set,
`Undefined` is raised: msgfmt's verdict cannot be known."""

import math

(OBJECT, CHARACTER_INTEGER_NULL, CHARACTER_NULL, CHARACTER, INTEGER_NULL, INTEGER, REAL,
 COMPLEX, LIST, FORMATSTRING, FUNCTION) = range(11)
REQUIRED, OPTIONAL = "required", "optional"
_NULLS = (CHARACTER_INTEGER_NULL, CHARACTER_NULL, INTEGER_NULL)
_NARROWER = {  # a type and the types it narrows to, in both intersection and union
    CHARACTER_INTEGER_NULL: (CHARACTER_NULL, CHARACTER, INTEGER_NULL, INTEGER),
    CHARACTER_NULL: (CHARACTER,), INTEGER_NULL: (INTEGER,), REAL: (INTEGER,),
}


class Undefined(Exception):
    """gettext's C code reads memory it has not set (or aborts) on this string."""


class Element:
    __slots__ = ("repcount", "presence", "type", "list")

    def __init__(self, repcount, presence, kind, sublist=None):
        self.repcount, self.presence, self.type, self.list = repcount, presence, kind, sublist

    def copy(self):
        return Element(self.repcount, self.presence, self.type,
                       self.list.copy() if self.type == LIST else None)


class ArgList:
    __slots__ = ("initial", "repeated")

    def __init__(self, initial=(), repeated=()):
        self.initial, self.repeated = list(initial), list(repeated)

    def copy(self):
        return ArgList([e.copy() for e in self.initial], [e.copy() for e in self.repeated])

    @property
    def initial_length(self):
        return sum(e.repcount for e in self.initial)

    @property
    def repeated_length(self):
        return sum(e.repcount for e in self.repeated)


def _lcm_factors(n1, n2):
    g = math.gcd(n1, n2)
    return n2 // g, n1 // g


def equal_element(e1, e2):
    """Equal constraints, whatever the repcounts."""
    return (e1.presence == e2.presence and e1.type == e2.type
            and (e1.type != LIST or equal_list(e1.list, e2.list)))


def equal_list(list1, list2):
    return all(len(a) == len(b) and all(x.repcount == y.repcount and equal_element(x, y)
                                        for x, y in zip(a, b))
               for a, b in ((list1.initial, list2.initial), (list1.repeated, list2.repeated)))


def _combine_adjacent(segment):
    out = []
    for element in segment:
        if out and equal_element(element, out[-1]):
            out[-1].repcount += element.repcount
        else:
            out.append(element)
    segment[:] = out


def normalize_outermost_list(arglist):
    """Merges equal neighbours, shortens the loop's period (trying 2 only, as gettext does
    by incrementing n instead of m) and rolls the initial segment's tail into the loop."""
    _combine_adjacent(arglist.initial)
    _combine_adjacent(arglist.repeated)
    rep, initial = arglist.repeated, arglist.initial
    if not rep:
        return
    n, extra = len(rep), 0
    if n > 1 and equal_element(rep[0], rep[n - 1]):
        extra, n = rep[n - 1].repcount, n - 1
    if n >= 4:  # m stays 2 while n grows: the first even n decides, or none does
        n += n % 2
        length = arglist.repeated_length
        for i in range(n - 2):
            if i + 2 >= len(rep):
                raise Undefined("normalization reads past the loop")
            if not (rep[i].repcount + (extra if i == 0 else 0) == rep[i + 2].repcount
                    and equal_element(rep[i], rep[i + 2])):
                break
        else:
            rep[2:] = rep[n:n + 1]
            if length // (n // 2) != arglist.repeated_length:
                raise Undefined("normalization miscounts the loop")
    if len(rep) == 1:
        if initial and equal_element(initial[-1], rep[0]):
            initial.pop()
        return
    while initial and equal_element(initial[-1], rep[-1]):
        moved = min(initial[-1].repcount, rep[-1].repcount)
        if equal_element(rep[0], rep[-1]):
            rep[0].repcount += moved
        else:
            rep.insert(0, rep[-1].copy())
            rep[0].repcount = moved
        rep[-1].repcount -= moved
        if rep[-1].repcount == 0:
            rep.pop()
        initial[-1].repcount -= moved
        if initial[-1].repcount == 0:
            initial.pop()


def normalize_list(arglist):
    for element in arglist.initial + arglist.repeated:
        if element.type == LIST:
            normalize_list(element.list)
    normalize_outermost_list(arglist)


def make_unconstrained_list():
    return ArgList([], [Element(1, OPTIONAL, OBJECT)])


def is_empty_list(arglist):
    return not arglist.initial and not arglist.repeated


def unfold_loop(arglist, m):
    arglist.repeated += [element.copy() for _ in range(m - 1) for element in arglist.repeated]


def rotate_loop(arglist, m):
    """Makes the initial segment m long, taking from the loop (which must not be empty)."""
    have = arglist.initial_length
    if m == have:
        return
    if m < have or not arglist.repeated:
        raise Undefined("a loop rotated backwards")
    rep = arglist.repeated
    if len(rep) == 1:
        element = rep[0].copy()
        element.repcount = m - have
        arglist.initial.append(element)
        return
    q, r = divmod(m - have, arglist.repeated_length)
    s, t = 0, r
    while s < len(rep) and t >= rep[s].repcount:
        t, s = t - rep[s].repcount, s + 1
    arglist.initial += [element.copy() for _ in range(q) for element in rep]
    arglist.initial += [element.copy() for element in rep[:s]]
    if t > 0:
        element = rep[s].copy()
        element.repcount = t
        arglist.initial.append(element)
    if r > 0:
        rotated = rep[s:] + rep[:s]
        if t > 0:
            tail = rotated[0].copy()
            rotated[0].repcount -= t
            tail.repcount = t
            rotated.append(tail)
        arglist.repeated = rotated


def _skip(segment, n):
    s, t = 0, n
    while s < len(segment) and t >= segment[s].repcount:
        t, s = t - segment[s].repcount, s + 1
    return s, t


def initial_splitelement(arglist, n):
    """Splits the initial segment at index n; the index of the element that starts there."""
    if n > arglist.initial_length:
        rotate_loop(arglist, n)
    initial = arglist.initial
    s, t = _skip(initial, n)
    if t == 0:
        return s
    old = initial[s].repcount
    second = initial[s].copy()
    initial[s].repcount, second.repcount = t, old - t
    initial.insert(s + 1, second)
    return s + 1


def initial_unshare(arglist, n):
    """Gives argument n an element of its own in the initial segment; its index."""
    if n >= arglist.initial_length:
        rotate_loop(arglist, n + 1)
    initial = arglist.initial
    s, t = _skip(initial, n)
    old = initial[s].repcount
    if old > 1:
        if t == 0 or t == old - 1:
            initial.insert(s + 1, initial[s].copy())
            initial[s].repcount, initial[s + 1].repcount = (1, old - 1) if t == 0 else (old - 1, 1)
        else:
            initial[s + 1:s + 1] = [initial[s].copy(), initial[s].copy()]
            initial[s].repcount, initial[s + 1].repcount, initial[s + 2].repcount = t, 1, old - 1 - t
        if t > 0:
            s += 1
    return s


def shift_list(arglist, n):
    """n unconstrained required arguments before the list."""
    if n > 0:
        arglist.initial.insert(0, Element(n, REQUIRED, OBJECT))
        normalize_outermost_list(arglist)


def make_intersected_element(e1, e2):
    """(presence, (type, list) or None on a contradiction) of both constraints."""
    presence = REQUIRED if REQUIRED in (e1.presence, e2.presence) else OPTIONAL
    t1, t2 = e1.type, e2.type
    if t1 == OBJECT or t2 == OBJECT:
        source = e2 if t1 == OBJECT else e1
        return presence, (source.type, source.list.copy() if source.type == LIST else None)
    for a, b in ((e1, e2), (e2, e1)):
        if a.type == LIST and b.type in _NULLS:
            sublist = make_intersection_with_empty_list(a.list)
            return presence, None if sublist is None else (LIST, sublist)
    for narrow in (_narrowest, _complex_narrowest):
        for a, b in ((t1, t2), (t2, t1)):
            if b in narrow(a):
                return presence, (b, None)
    if t1 == t2:
        if t1 != LIST:
            return presence, (t1, None)
        sublist = make_intersected_list(e1.list.copy(), e2.list.copy())
        return presence, None if sublist is None else (LIST, sublist)
    return presence, None


def _narrowest(kind):
    return _NARROWER.get(kind, ())


def _complex_narrowest(kind):  # Scheme's complex numbers: tried after the others
    return (REAL, INTEGER) if kind == COMPLEX else ()


def _backtrack_in_initial(arglist):
    """Cuts a finite list at its last optional end; None when it has none."""
    initial = arglist.initial
    while initial:
        if initial[-1].presence == REQUIRED:
            initial.pop()
        else:
            if initial[-1].repcount > 1:
                initial[-1].repcount -= 1
            else:
                initial.pop()
            return arglist
    return None


def _intersect_segments(segment1, segment2, into):
    """Intersects two segments element by element into `into`: (the failed element's
    presence or None, the indices reached)."""
    i1 = i2 = 0
    while i1 < len(segment1) and i2 < len(segment2):
        e1, e2 = segment1[i1], segment2[i2]
        count = min(e1.repcount, e2.repcount)
        presence, kind = make_intersected_element(e1, e2)
        if kind is None:
            return presence, i1, i2
        into.append(Element(count, presence, *kind))
        e1.repcount -= count
        e2.repcount -= count
        i1 += e1.repcount == 0
        i2 += e2.repcount == 0
    return None, i1, i2


def _equalize_loops(list1, list2):
    m1, m2 = _lcm_factors(list1.repeated_length, list2.repeated_length)
    unfold_loop(list1, m1)
    unfold_loop(list2, m2)


def make_intersected_list(list1, list2):
    """Both constraints at once (consumes both lists); None on a contradiction."""
    if list1.repeated and list2.repeated:
        _equalize_loops(list1, list2)
    if list1.repeated or list2.repeated:
        m = max(list1.initial_length, list2.initial_length)
        for arglist in (list1, list2):
            if arglist.repeated:
                rotate_loop(arglist, m)
    result = ArgList()
    failed, i1, i2 = _intersect_segments(list1.initial, list2.initial, result.initial)
    if failed is not None or not (list1.repeated and list2.repeated):
        if failed is None:
            rest = [(list1, i1), (list2, i2)]
            for (arglist, index), (other, _) in zip(rest, rest[::-1]):
                if index < len(arglist.initial) or arglist.repeated and not other.repeated:
                    first = (arglist.initial[index] if index < len(arglist.initial)
                             else arglist.repeated[0])
                    failed = first.presence
                    break
        if failed == REQUIRED:
            result = _backtrack_in_initial(result)
    else:
        failed, _, _ = _intersect_segments(list1.repeated, list2.repeated, result.repeated)
        if failed is not None:
            result.initial += result.repeated
            result.repeated = []
            if failed == REQUIRED:
                result = _backtrack_in_initial(result)
    if result is not None:
        normalize_outermost_list(result)
    return result


def make_intersection_with_empty_list(arglist):
    first = arglist.initial[:1] or arglist.repeated[:1]
    return None if first and first[0].presence == REQUIRED else ArgList()


def make_union_element(e1, e2, count):
    presence = REQUIRED if e1.presence == e2.presence == REQUIRED else OPTIONAL
    t1, t2 = e1.type, e2.type
    if t1 == t2:
        sublist = make_union_list(e1.list.copy(), e2.list.copy()) if t1 == LIST else None
        return Element(count, presence, t1, sublist)
    for narrow in (_narrowest, _complex_narrowest):
        for a, b in ((t1, t2), (t2, t1)):
            if b in narrow(a):
                return Element(count, presence, a)
    for a, b in ((e1, e2), (e2, e1)):
        if a.type == LIST and is_empty_list(a.list):
            kind = (b.type if b.type in _NULLS else CHARACTER_NULL if b.type == CHARACTER
                    else INTEGER_NULL if b.type == INTEGER else OBJECT)
            return Element(count, presence, kind)
    for a, b in ((t1, t2), (t2, t1)):
        if a in (CHARACTER, CHARACTER_NULL) and b in (INTEGER, INTEGER_NULL):
            return Element(count, presence, CHARACTER_INTEGER_NULL)
    return Element(count, presence, OBJECT)


def _union_segments(segment1, segment2, into):
    i1 = i2 = 0
    while i1 < len(segment1) and i2 < len(segment2):
        e1, e2 = segment1[i1], segment2[i2]
        count = min(e1.repcount, e2.repcount)
        into.append(make_union_element(e1, e2, count))
        e1.repcount -= count
        e2.repcount -= count
        i1 += e1.repcount == 0
        i2 += e2.repcount == 0
    return i1, i2


def make_union_list(list1, list2):
    """Either constraint (consumes both lists)."""
    if list1.repeated and list2.repeated:
        _equalize_loops(list1, list2)
        m = max(list1.initial_length, list2.initial_length)
        rotate_loop(list1, m)
        rotate_loop(list2, m)
    else:
        for a, b in ((list1, list2), (list2, list1)):
            if a.repeated:
                if b.initial_length >= a.initial_length:
                    rotate_loop(a, b.initial_length)
                    if a.repeated[0].presence == REQUIRED:
                        rotate_loop(a, a.initial_length + 1)
                break
    result = ArgList()
    i1, i2 = _union_segments(list1.initial, list2.initial, result.initial)
    for arglist, index in ((list1, i1), (list2, i2)):
        rest = arglist.initial[index:]
        if rest:
            if rest[0].presence == REQUIRED:
                first = rest[0].copy()
                first.presence, first.repcount = OPTIONAL, 1
                result.initial.append(first)
                rest[0].repcount -= 1
                rest = rest[1:] if rest[0].repcount == 0 else rest
            result.initial += [element.copy() for element in rest]
            break
    if list1.repeated and list2.repeated:
        _union_segments(list1.repeated, list2.repeated, result.repeated)
    else:
        result.repeated = [element.copy() for element in list1.repeated or list2.repeated]
    normalize_outermost_list(result)
    return result


def make_union_with_empty_list(arglist):
    first = arglist.initial[:1] or arglist.repeated[:1]
    if first and first[0].presence == REQUIRED:
        initial_splitelement(arglist, 1)
        arglist.initial[0].presence = OPTIONAL
        normalize_outermost_list(arglist)
    return arglist


def union(list1, list2):
    """make_union_list where None (a contradiction) is no alternative."""
    if list1 is None or list2 is None:
        return list2 if list1 is None else list1
    return make_union_list(list1, list2)


def is_required(arglist, n):
    """Whether arguments 0..n must all be present."""
    t = n + 1
    for segment in (arglist.initial, arglist.repeated):
        if segment is arglist.repeated and not segment:
            return False
        s = 0
        while s < len(segment) and t >= segment[s].repcount:
            if segment[s].presence != REQUIRED:
                return False
            t, s = t - segment[s].repcount, s + 1
        if t == 0:
            return True
        if s < len(segment):
            return segment[s].presence == REQUIRED
    return True


def add_required_constraint(arglist, n):
    if arglist is None or not arglist.repeated and arglist.initial_length <= n:
        return None
    initial_splitelement(arglist, n + 1)
    index, rest = 0, n + 1
    while rest > 0:
        arglist.initial[index].presence = REQUIRED
        rest -= arglist.initial[index].repcount
        index += 1
    return arglist


def add_end_constraint(arglist, n):
    """The list ends before argument n."""
    if arglist is None or not arglist.repeated and arglist.initial_length <= n:
        return arglist
    s = initial_splitelement(arglist, n)
    presence = (arglist.initial[s] if s < len(arglist.initial) else arglist.repeated[0]).presence
    del arglist.initial[s:]
    arglist.repeated = []
    return _backtrack_in_initial(arglist) if presence == REQUIRED else arglist


def add_type_constraint(arglist, n, kind, sublist=None):
    """Argument n (already required) is of type `kind` (for LIST, of elements `sublist`)."""
    if arglist is None:
        return None
    s = initial_unshare(arglist, n)
    _, result = make_intersected_element(arglist.initial[s], Element(1, OPTIONAL, kind, sublist))
    if result is None:
        return add_end_constraint(arglist, n)
    arglist.initial[s].type, arglist.initial[s].list = result
    return arglist


def add_req_type_constraint(arglist, position, kind, sublist=None):
    return add_type_constraint(add_required_constraint(arglist, position), position, kind, sublist)


def make_repeated_list_of_lists(sublist):
    if sublist is None:
        return ArgList()
    return ArgList([], [Element(1, OPTIONAL, LIST, sublist)])


def make_repeated_list(sublist, period):
    """The union of 0, 1, 2, ... copies of sublist, each shifted by `period` more."""
    if not sublist.repeated:
        if sublist.initial_length < period:
            return make_union_with_empty_list(sublist)
        source, p, n = sublist.initial, period, sublist.initial_length
    else:
        m = period // math.gcd(period, sublist.repeated_length)
        unfold_loop(sublist, m)
        p = m * sublist.repeated_length
        count = len(sublist.repeated)
        if count > len(sublist.initial):
            raise Undefined("make_repeated_list reads past the initial segment")
        source = sublist.initial + sublist.initial[:count]  # gettext 0.21's slip
        n = sublist.initial_length + sublist.repeated_length

    def at(index):
        if index >= len(source):
            raise Undefined("make_repeated_list reads past its source")
        return source[index]

    result = ArgList()
    initial = result.initial
    i = ti = si = 0
    while i < p:
        count = min(at(si).repcount - ti, p - i)
        element = at(si).copy()
        element.repcount = count
        initial.append(element)
        i, ti = i + count, ti + count
        if ti == at(si).repcount:
            ti, si = 0, si + 1
    if initial[0].presence == REQUIRED:
        initial_splitelement(result, 1)
        initial[0].presence = OPTIONAL
    tj = sj = 0
    ended = False
    while i < n:
        count = min(at(si).repcount - ti, initial[sj].repcount - tj)
        presence, kind = make_intersected_element(at(si), initial[sj])
        if kind is None:
            if presence == REQUIRED:
                return _backtrack_in_initial(result)
            ended = True
            break
        initial.append(Element(count, presence, *kind))
        i, ti = i + count, ti + count
        if ti == at(si).repcount:
            ti, si = 0, si + 1
        tj += count
        if tj == initial[sj].repcount:
            tj, sj = 0, sj + 1
    if not ended and result.initial_length != n:
        raise Undefined("make_repeated_list fails its assertion")
    i = 0
    while i < result.initial_length:
        result.initial[initial_unshare(result, i)].presence = OPTIONAL
        i += period
    if not ended:
        split = initial_splitelement(result, n - p)
        if n > len(result.initial):  # it copies elements split..n-1 (n a length, not a count)
            raise Undefined("make_repeated_list writes past the loop it allocates")
        result.initial, result.repeated = result.initial[:split], result.initial[split:]
    return result


def compare_lists(msgid_list, msgstr_list, strict, pretty):
    """format_check of format-lisp.c and format-scheme.c: strict, the same constraints;
    else msgstr's must be a subset of msgid's (their intersection is msgstr's)."""
    msgid, msgstr = pretty
    if strict:
        if not equal_list(msgid_list, msgstr_list):
            return f"format specifications in '{msgid}' and '{msgstr}' are not equivalent"
        return None
    intersection = make_intersected_list(msgid_list.copy(), msgstr_list.copy())
    if intersection is not None:
        normalize_list(intersection)
    if intersection is None or not equal_list(intersection, msgstr_list):
        return f"format specifications in '{msgstr}' are not a subset of those in '{msgid}'"
    return None
