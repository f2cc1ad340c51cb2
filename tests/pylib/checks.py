"""checks: the one pass/fail counter of every Python test (the counterpart of tests/testutil.c).

    sys.path.insert(0, <tests>/pylib); from checks import check, finish
    check(cond, "what is checked", detail)   # counts; prints "ok   what" or "FAIL what detail"
    finish()                                 # prints "N passed, N failed"; exits 1 on a
                                             # failure or when nothing was checked
"""
import sys

passed = 0
failed = 0
quiet = False  # True: print failures only


def check(cond, what, detail=""):
    global passed, failed
    if cond:
        passed += 1
        if not quiet:
            print("ok  ", what, flush=True)
    else:
        failed += 1
        print("FAIL", what, str(detail)[-3000:], flush=True)
    return cond


def finish():
    print(f"{passed} passed, {failed} failed", flush=True)
    sys.exit(1 if failed or not passed else 0)
