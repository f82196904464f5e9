"""TAP for the protocol's check scripts (check_protocol.py,
check_cached.py): an ok / not ok line per check, then the plan and the
exit status."""
import sys

_count = 0
_failed = False


def tap(ok, what, why="", width=600):
    """One check: 'why' (cut to 'width' characters) explains a failure."""
    global _count, _failed
    _count += 1
    print(("ok %d - %s" if ok else "not ok %d - %s") % (_count, what))
    if not ok:
        _failed = True
        if why:
            print("# " + str(why)[:width])


def done():
    """The plan, and the exit status: 1 when a check failed."""
    print("1..%d" % _count)
    sys.exit(1 if _failed else 0)
