#!/usr/bin/env python3
"""Prints the body of kLowercaseRanges in evaluation/unicode_text.cc.

The table holds every single-code-point lowercase mapping of the Unicode version of the Python
that runs this script (3.11: Unicode 14.0), as {first, last, stride, delta} ranges: the code
points first, first + stride, ..., last lowercase to code point + delta. Ranges are disjoint
(a stride-2 range has nothing mapped between its members) and sorted, for binary search.
U+0130, whose lowercase is two code points, and the final sigma are handled in the code.
"""

mapping = {c: ord(chr(c).lower()) for c in range(0x110000)
           if chr(c).lower() != chr(c) and len(chr(c).lower()) == 1}
code_points = sorted(mapping)
i = 0
while i < len(code_points):
    first = code_points[i]
    delta = mapping[first] - first

    def same_delta(k):
        return mapping[code_points[k]] - code_points[k] == delta

    # The longest run of consecutive code points with this delta ...
    j = i
    while (j + 1 < len(code_points) and code_points[j + 1] == code_points[j] + 1
           and same_delta(j + 1)):
        j += 1
    # ... and the longest run two apart.
    k = i
    while (k + 1 < len(code_points)
           and code_points[k + 1] == code_points[k] + 2 and same_delta(k + 1)):
        k += 1
    if k > j:
        print(f"    {{0x{first:04X}, 0x{code_points[k]:04X}, 2, {delta}}},")
        i = k + 1
    else:
        print(f"    {{0x{first:04X}, 0x{code_points[j]:04X}, 1, {delta}}},")
        i = j + 1
