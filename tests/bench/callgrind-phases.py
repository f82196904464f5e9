"""The instructions each named function took, inclusive, from a callgrind
output file (make bench: the phases of bench-gpt3, which a shared
machine's load does not move).

usage: callgrind-phases.py FILE FUNCTION...

Prints one line per FUNCTION: its name and the instructions (event Ir)
of every call made to it from another function, summed (calls of a
function to itself are inside the outer call and not counted again).
A function never called prints 0.  Reads the file's own format: 'fn=' and
'cfn=' name a function by '(id) name' the first time and '(id)' after,
and a 'calls=' line is followed by the call's position and inclusive
cost.
"""
import re
import sys

if len(sys.argv) < 3:
    sys.exit(__doc__.strip().splitlines()[-9])

names = {}  # id -> function name


def name_of(spec):
    m = re.match(r"\((\d+)\)(?:\s+(.*))?$", spec.strip())
    if not m:  # an uncompressed name
        return spec.strip()
    if m.group(2):
        names[m.group(1)] = m.group(2)
    return names.get(m.group(1), "")


wanted = sys.argv[2:]
total = dict.fromkeys(wanted, 0)
fn = cfn = None
pending = False
with open(sys.argv[1]) as f:
    for line in f:
        if pending:  # the line after calls=: position, then the cost
            pending = False
            parts = line.split()
            if cfn in total and cfn != fn and len(parts) > 1:
                total[cfn] += int(parts[1])
            continue
        if line.startswith("fn="):
            fn = name_of(line[3:])
        elif line.startswith("cfn="):
            cfn = name_of(line[4:])
        elif line.startswith("calls="):
            pending = True
for w in wanted:
    print(w, total[w])
