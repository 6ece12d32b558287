#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# test_fork_registration.sh - the library's fork handling is registered when it is loaded
# (src/process/fork.h): glibc runs, in a fork's child, only the handlers registered before
# that fork began, so a part that registered at its first use could do it during another
# thread's fork, and that child kept the lock the thread held. From the sources of the library
# (src/, util/):
#  - pthread_atfork is called in src/process/fork.c only (its one set of handlers);
#  - vr_fork_protect_mutex and vr_fork_on_child are called only from a constructor
#    (__attribute__((constructor))), never from a function a first use runs (under
#    pthread_once, say).
# wb_fork_first_use.c forks at the first uses themselves; this keeps new parts to the rule.
set -u
cd "$(dirname "$0")/../.."
. tests/lib/t.sh
command -v python3 >/dev/null || { echo "python3 is not installed"; exit 77; }

git ls-files 'src/*.c' 'util/*.c' | python3 -c '
import re, sys

def code_only(text):
    """The text with comments and string or character literals blanked (lines kept)."""
    q = "\x27"   # a single quote, which this shell string cannot hold
    pat = re.compile(r"/\*.*?\*/|//[^\n]*|\"(?:\\.|[^\"\\\n])*\"|" +
                     q + r"(?:\\.|[^\\\n" + q + r"])*" + q, re.S)
    return pat.sub(lambda m: re.sub(r"[^\n]", " ", m.group(0)), text)

atfork, late = [], []
for path in sys.stdin.read().split():
    code = code_only(open(path).read())
    depth, head, fn, ctor = 0, "", "", False
    for i, line in enumerate(code.split("\n"), 1):
        for tok in re.finditer(r"[{};]|\b\w+\s*\(|[^{};]", line):
            t = tok.group(0)
            if t == "{":
                if depth == 0:   # a body opens: what stood before it says what it is
                    ctor = "constructor" in head
                    m = re.findall(r"(\w+)\s*\(", head)
                    fn = m[-1] if m else "?"
                depth += 1
            elif t == "}":
                depth -= 1
                if depth == 0:
                    head = ""
            elif t == ";" and depth == 0:
                head = ""
            elif depth == 0:
                head += t
            else:
                name = t.rstrip("( \t")
                if name == "pthread_atfork" and path != "src/process/fork.c":
                    atfork.append("%s:%d (%s)" % (path, i, fn))
                if name in ("vr_fork_protect_mutex", "vr_fork_on_child") and not ctor:
                    late.append("%s:%d %s in %s" % (path, i, name, fn))

def verdict(name, bad, why):
    print(("not ok fork_registration/%s: %s: %s" % (name, why, "; ".join(bad))) if bad
          else "ok fork_registration/%s" % name)
verdict("pthread_atfork_in_fork_c_only", atfork, "pthread_atfork outside src/process/fork.c "
        "(register a child hook or mutex with fork.h instead)")
verdict("registered_at_load", late, "registered outside a constructor (fork.h: at load, not "
        "at a first use)")
sys.exit(1 if atfork or late else 0)
'
