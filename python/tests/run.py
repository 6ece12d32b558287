#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Runs the package's tests, one line per test in the project's runner format:
ok NAME / not ok NAME: why / skip NAME: why. Exit status 1 when any failed."""
import os
import sys
import unittest

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(here))


class Lines(unittest.TestResult):
    def name(self, t):
        return "python/" + t.id().split(".", 1)[-1].replace(".", "/")

    def addSuccess(self, t):
        print("ok " + self.name(t), flush=True)

    def addSkip(self, t, why):
        print("skip %s: %s" % (self.name(t), why), flush=True)

    def _bad(self, t, err):
        self.failures.append((t, ""))
        msg = str(err[1]).replace("\n", " ")[:300]
        print("not ok %s: %s: %s" % (self.name(t), err[0].__name__, msg), flush=True)

    def addFailure(self, t, err):
        self._bad(t, err)

    def addError(self, t, err):
        self._bad(t, err)


suite = unittest.defaultTestLoader.discover(here, pattern="test_*.py")
result = Lines()
suite.run(result)
sys.exit(1 if result.failures else 0)
