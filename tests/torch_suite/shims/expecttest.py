"""A stand-in for the `expecttest` package, which torch's test utilities import and Debian 12
does not ship (and PyPI is out of reach here). torch's common_utils only needs TestCase with
assertExpectedInline; this one compares without rewriting the test file (no EXPECTTEST_ACCEPT).
"""

import unittest

# torch reads it to decide whether failing expectations may be rewritten; never here.
ACCEPT = False


class TestCase(unittest.TestCase):
    longMessage = True

    def assertExpectedInline(self, actual, expect, skip=0):  # noqa: N802 (expecttest's name)
        self.assertMultiLineEqual(_normalize(expect), _normalize(actual))

    def assertExpectedRaisesInline(self, exc_type, callable_, expect, *args, **kwargs):  # noqa: N802
        with self.assertRaises(exc_type) as raised:
            callable_(*args, **kwargs)
        self.assertExpectedInline(str(raised.exception), expect)


def _normalize(text):
    lines = str(text).strip("\n").splitlines()
    indents = [len(line) - len(line.lstrip()) for line in lines if line.strip()]
    cut = min(indents) if indents else 0
    return "\n".join(line[cut:] for line in lines)
