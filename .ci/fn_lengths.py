#!/usr/bin/env python3
"""No function in src/ is longer than LIMIT lines, from its `fn` line to its
closing brace (doc comments and attributes not counted; comments inside are).
A long function is a search or a state machine that wants its steps named.
Exit status 1 and one line per function over the limit; else one line naming
the longest.

Usage: python3 .ci/fn_lengths.py [--top N]   (from anywhere; reads src/)."""
import os, re, sys

LIMIT = 120
FN = re.compile(r"\bfn\s+(\w+)")


def blank(text):
    """Comments, strings and char literals blanked, line breaks kept."""
    nl = lambda m: " " * 0 + "\n" * m.group(0).count("\n")
    text = re.sub(r"/\*.*?\*/", nl, text, flags=re.S)
    text = re.sub(r"//[^\n]*", "", text)
    text = re.sub(r'(?<!\w)r(#*)".*?"\1', nl, text, flags=re.S)
    text = re.sub(r'"(?:\\.|[^"\\])*"', nl, text, flags=re.S)
    return re.sub(r"'(?:\\.|[^'\\])'", "' '", text)


def functions(text):
    """(name, first line, line count) of every fn with a body."""
    code = blank(text)
    line_at = lambda pos: code.count("\n", 0, pos) + 1
    for m in FN.finditer(code):
        i = m.end()
        while i < len(code) and code[i] not in "{;":
            i += 1
        if i >= len(code) or code[i] == ";":
            continue  # a declaration: no body
        depth, j = 0, i
        while j < len(code):
            depth += (code[j] == "{") - (code[j] == "}")
            if depth == 0:
                break
            j += 1
        start, end = line_at(m.start()), line_at(j)
        yield m.group(1), start, end - start + 1


def main():
    os.chdir(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    found = []
    for d, _, ns in os.walk("src"):
        for n in ns:
            if n.endswith(".rs"):
                rel = os.path.join(d, n)
                found += [(lines, rel, line, name) for name, line, lines in functions(open(rel, encoding="utf-8").read())]
    found.sort(reverse=True)
    top = int(sys.argv[sys.argv.index("--top") + 1]) if "--top" in sys.argv else 0
    for lines, rel, line, name in found[:top]:
        print("%5d  %s:%d %s" % (lines, rel, line, name))
    over = [f for f in found if f[0] > LIMIT]
    for lines, rel, line, name in over:
        print("%s:%d: fn %s is %d lines (at most %d)" % (rel, line, name, lines, LIMIT))
    if over:
        return 1
    lines, rel, line, name = found[0]
    print("fn_lengths: ok; the longest is %s:%d %s, %d lines (at most %d)" % (rel, line, name, lines, LIMIT))
    return 0


if __name__ == "__main__":
    sys.exit(main())
