#!/usr/bin/env python3
"""Layers of src/runtime/ (runtime/mod.rs has the map): no file names a module
of a higher layer, nor goro's user-facing modules above the runtime (chan, sync,
time, net, spawn.rs, ...), and files import each other in a circle only inside
the scheduler (sched/), its records (proc/) and the root (start-up and the
tracer), each circle of at most
CIRCLES' number of files. A file's layer is its folder under src/runtime/;
files directly in src/runtime/ are the root (public face, start-up), which may
name every layer. Above the runtime,
goro's other files reach it only through `runtime::wait`, `runtime::exports`,
`runtime::netpoll` and the public items of `runtime/mod.rs`. Every
`crate::`/`super::` path in code counts, in `use` lines and inline; comments
and strings do not. Items under #[cfg(test)] are not checked: tests may use the
public API. Exit status 1 and one line per problem if any; else one line with
the two circles.

Usage: python3 .ci/layers.py [--circles]   (from anywhere; it reads the
repository's src/). --circles also prints each circle's files and the import
edges inside it, with the names each edge takes."""
import os, re, sys

LAYERS = ["sys", "task", "queue", "proc", "sched", "wait", "netpoll", "monitor"]  # bottom to top
# The folders whose files may import each other in a circle, and the most files
# it may hold: sched/'s is the recursion the scheduler has (readying wakes Ms,
# parking and waking Ms hands Ps on and polls, the poll readies); proc/'s, the
# records that name each other (Sched its Ms and Ps, a P its M, an M its P);
# the root's, start-up and the tracer (the start begins a `GORO_TRACE` trace,
# and a trace's start starts the runtime first).
CIRCLES = {"sched": 4, "proc": 7, "root": 2}
GATES = {"wait", "exports", "netpoll", "trace"}  # the runtime's modules open to the crate above it
RANK = {name: i for i, name in enumerate(LAYERS)}
ROOT, USER = len(LAYERS), len(LAYERS) + 1
CFG_TEST = re.compile(r"#\[cfg\((?:all\()?\s*test\b")
USE = re.compile(r"\b(?:pub(?:\([^)]*\))?\s+)?use\s+([^;]+);")
PATH = re.compile(r"\b((?:crate|super)(?:::(?:super|self))*(?:::[A-Za-z_]\w*)+)")


def code_lines(text):
    """(line, code): comments and string contents blanked, #[cfg(test)] items dropped."""
    keep_nl = lambda m: '""' + "\n" * m.group(0).count("\n")
    text = re.sub(r"/\*.*?\*/", lambda m: "\n" * m.group(0).count("\n"), text, flags=re.S)
    text = re.sub(r"\bpub\(in [^)]*\)", "pub(crate)", text)  # a visibility path names no dependency
    text = re.sub(r'r(#*)".*?"\1', keep_nl, text, flags=re.S)
    text = re.sub(r'"(?:\\.|[^"\\])*"', keep_nl, text, flags=re.S)
    out, skip, depth, opened = [], False, 0, False
    for n, line in enumerate(text.split("\n"), 1):
        code = re.sub(r"//.*", "", line)
        if not skip and CFG_TEST.search(code):
            skip, depth, opened = True, 0, False
        elif skip:
            depth += code.count("{") - code.count("}")
            opened = opened or "{" in code
            skip = not ((opened and depth <= 0) or (not opened and code.rstrip().endswith(";")))
        else:
            out.append((n, code))
    return out


def expand(tree):
    """'a::{b::c, d as e, f::{self, g}}' -> a::b::c, a::d, a::f, a::f::g."""
    tree = re.sub(r"\s+", " ", tree).strip()
    if "{" not in tree:
        path = re.sub(r"\s+as\s+\w+$", "", tree).replace(" ", "")
        return [path[:-6] if path.endswith("::self") else path]
    b = tree.find("{")
    head, inner, parts, level, cur = tree[:b], tree[b + 1 : tree.rfind("}")], [], 0, ""
    for ch in inner:
        level += (ch == "{") - (ch == "}")
        if ch == "," and level == 0:
            parts, cur = parts + [cur], ""
        else:
            cur += ch
    return [p for part in parts + [cur] if part.strip() for p in expand(head.strip() + part.strip())]


def inline_mods(code):
    """(start, end, name) of each inline `mod name { ... }` in `code`."""
    out = []
    for m in re.finditer(r"\bmod\s+(\w+)\s*\{", code):
        depth, i = 0, m.end() - 1
        while i < len(code):
            depth += (code[i] == "{") - (code[i] == "}")
            if depth == 0:
                break
            i += 1
        out.append((m.start(), i, m.group(1)))
    return out


def references(text):
    """(line, inline modules, path) of every crate::/super:: path in code, use
    trees expanded; `inline modules` are the `mod x { }` blocks around it."""
    joined, starts = "", []
    for n, code in code_lines(text):
        starts.append((len(joined), n))
        joined += code + "\n"
    line_of = lambda pos: max((n for off, n in starts if off <= pos), default=0)
    mods = inline_mods(joined)
    nest_of = lambda pos: [name for a, e, name in mods if a < pos < e]
    refs, spans = [], []
    for m in USE.finditer(joined):
        spans.append((m.start(), m.end()))
        refs += [(line_of(m.start()), nest_of(m.start()), p) for p in expand(m.group(1))
                 if p.startswith(("crate::", "super::"))]
    refs += [(line_of(m.start()), nest_of(m.start()), m.group(1)) for m in PATH.finditer(joined)
             if not any(a <= m.start() < e for a, e in spans)]
    return refs


def module_of(rel):  # src/runtime/sched/m.rs -> [runtime, sched, m]; mod.rs -> its folder
    parts = rel[4:-3].split("/")
    return parts[:-1] if parts[-1] in ("mod", "lib", "main") else parts


def absolute(module, path):
    segs, base = path.split("::"), list(module)
    if segs[0] == "crate":
        return segs[1:]
    while segs and segs[0] in ("super", "self"):
        base = base[:-1] if segs[0] == "super" else base
        segs = segs[1:]
    return base + segs


def rank(segs):
    if not segs or segs[0] != "runtime":
        return USER
    return RANK.get(segs[1], ROOT) if len(segs) > 1 else ROOT


def file_of(segs, files):  # the file of the longest module prefix
    for k in range(len(segs), 0, -1):
        for cand in ("src/%s.rs" % "/".join(segs[:k]), "src/%s/mod.rs" % "/".join(segs[:k])):
            if cand in files:
                return cand
    return None


def circles(graph):  # strongly connected components of more than one file (Tarjan)
    index, low, stack, on, out = {}, {}, [], set(), []
    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v); on.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w); low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while not comp or comp[-1] != v:
                comp.append(stack.pop()); on.discard(comp[-1])
            if len(comp) > 1:
                out.append(sorted(comp))
    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def runtime_modules(files):
    """The modules directly under src/runtime/ (files and folders), by name."""
    return {f[len("src/runtime/"):].split("/")[0].removesuffix(".rs") for f in files
            if f.startswith("src/runtime/")} - {"mod"}


def main():
    os.chdir(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    files = {os.path.join(d, n) for d, _, ns in os.walk("src") for n in ns if n.endswith(".rs")}
    closed = runtime_modules(files) - GATES
    errors, graph, names = [], {}, {}
    for rel in sorted(files):
        module = module_of(rel)
        inside = rel.startswith("src/runtime/")
        if inside and len(module) > 2 and module[1] not in RANK:
            errors.append((rel, 0, f"{rel}: runtime/{module[1]}/ is not a layer ({', '.join(LAYERS)})"))
        for line, nest, path in references(open(rel, encoding="utf-8").read()):
            segs = absolute(module + nest, path)
            if not inside:
                if len(segs) > 1 and segs[0] == "runtime" and segs[1] in closed:
                    errors.append((rel, line, f"{rel}:{line}: {path} reaches into runtime::{segs[1]} "
                                   f"(above the runtime: only runtime::{{{', '.join(sorted(GATES))}}} and its public items)"))
                continue
            target = file_of(segs, files)
            if target and target != rel:
                graph.setdefault(rel, set()).add(target)
                names.setdefault((rel, target), set()).add(segs[-1])
            if rank(segs) > rank(module):
                where = "runtime::" + segs[1] if rank(segs) < USER else "crate::" + (segs or ["?"])[0]
                errors.append((rel, line, f"{rel}:{line}: {path} reaches up into {where}"))
    problems = [text for _, _, text in sorted(errors)]
    sizes = {}
    for comp in circles(graph):
        folders = {module_of(f)[1] if len(module_of(f)) > 2 else "root" for f in comp}
        folder = folders.pop() if len(folders) == 1 else None
        if folder not in CIRCLES:
            problems.append("import circle outside %s: %s" % (", ".join(f + "/" for f in CIRCLES), " -> ".join(comp)))
        elif len(comp) > CIRCLES[folder]:
            problems.append("the %s/ circle has %d files, more than %d: %s" % (folder, len(comp), CIRCLES[folder], ", ".join(comp)))
        else:
            sizes[folder] = comp
        if "--circles" in sys.argv:
            inner = sorted((a, b) for a, b in names if a in comp and b in comp)
            print("circle of %d files, %d import edges:" % (len(comp), len(inner)))
            for a, b in inner:
                print("  %s -> %s: %s" % (a[len("src/runtime/"):], b[len("src/runtime/"):], ", ".join(sorted(names[a, b]))))
    if problems:
        print("\n".join(problems))
        print("layers: %d problem(s); bottom to top: %s, root, user-facing" % (len(problems), ", ".join(LAYERS)), file=sys.stderr)
        return 1
    print("layers: ok; " + "; ".join("the %s/ circle: %d files (at most %d)%s" % (
        folder, len(sizes.get(folder, [])), limit,
        ": " + ", ".join(os.path.basename(f) for f in sizes[folder]) if folder in sizes else "")
        for folder, limit in CIRCLES.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
