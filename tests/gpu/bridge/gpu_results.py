# SPDX-License-Identifier: MIT
"""Result lines for the bridge's Python GPU scripts: ok/not ok PREFIX/NAME[: why]."""


class Results:
    def __init__(self, prefix):
        self.prefix, self.failed = prefix, False

    def check(self, cond, name, why=""):
        if cond:
            print("ok %s/%s" % (self.prefix, name), flush=True)
        else:
            print("not ok %s/%s: %s" % (self.prefix, name, why), flush=True)
            self.failed = True
        return cond
