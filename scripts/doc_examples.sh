#!/usr/bin/env bash
# Lists the public items of goro whose rustdoc has no runnable example.
#
# The list of public items is taken from rustdoc's own HTML output
# (`cargo doc --no-deps`), so it is exactly what a user of the crate sees:
# `pub` items inside private modules that are not re-exported, `pub(crate)`
# items and `#[doc(hidden)]` items are not there. Checked:
#   - every module page (crate root included) and every item page listed in
#     all.html (structs, enums, functions, macros, traits, ...): the item's own
#     doc comment must contain a ```-block that rustdoc renders as a Rust
#     example (`ignore` and `compile_fail` blocks do not count);
#   - every inherent method and associated const/type of those items, and every
#     method of a public trait: the same, for its own doc comment.
# Not checked: trait-impl methods (Read, Write, Iterator, Drop, Debug, ...), enum
# variants and struct fields.
#
# Usage: scripts/doc_examples.sh [--no-build] [--list]
#   --no-build  reuse the existing target/doc output instead of running cargo doc
#   --list      print every checked item with its status, not only the failures
# Exit status: 0 if every item has an example, 1 if some lack one, 2 on error.
# Needs only bash, cargo and python3 (standard library).
set -euo pipefail

cd "$(dirname "$0")/.."

build=1
list=0
for arg in "$@"; do
    case "$arg" in
    --no-build) build=0 ;;
    --list) list=1 ;;
    -h | --help)
        sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'
        exit 0
        ;;
    *)
        echo "doc_examples.sh: unknown argument: $arg" >&2
        exit 2
        ;;
    esac
done

if [ "$build" = 1 ]; then
    cargo doc --no-deps --quiet
fi

target_dir=$(cargo metadata --format-version 1 --no-deps |
    python3 -c 'import json, sys; print(json.load(sys.stdin)["target_directory"])')
doc_dir="$target_dir/doc/goro"
if [ ! -f "$doc_dir/all.html" ]; then
    echo "doc_examples.sh: $doc_dir/all.html not found; run cargo doc --no-deps" >&2
    exit 2
fi

DOC_DIR="$doc_dir" LIST="$list" python3 - <<'PY'
import html
import os
import re
import sys

doc_dir = os.environ["DOC_DIR"]
list_all = os.environ["LIST"] == "1"


def read(rel):
    with open(os.path.join(doc_dir, rel), encoding="utf-8") as f:
        text = f.read()
    # Only the page's main content: the sidebar repeats names and links.
    start = text.find('id="main-content"')
    return text[start:] if start >= 0 else text


# A section header of the page (docblock headings have no class).
SECTION = re.compile(r'<h2 id="([^"]*)" class="section-header"')
EXAMPLE = re.compile(r'<pre class="rust rust-example-rendered([^"]*)"')


def has_example(fragment):
    """True if the fragment holds a rendered Rust example that is run."""
    for m in EXAMPLE.finditer(fragment):
        extra = m.group(1).split()
        if "ignore" not in extra and "compile_fail" not in extra:
            return True
    return False


def top_doc(page):
    """The item's own docblock, or None if it has no doc comment."""
    m = re.search(r'<details class="toggle top-doc"[^>]*>.*?<div class="docblock">', page, re.S)
    if not m:
        return None
    # The top docblock ends where the page's first section header starts.
    end = SECTION.search(page, m.end())
    return page[m.end() : end.start() if end else len(page)]


# Sections of an item page whose members are checked one by one (trait
# implementations, auto-trait and blanket impls, Deref methods are not).
MEMBER_SECTIONS = {
    "implementations",
    "required-methods",
    "provided-methods",
    "required-associated-types",
    "provided-associated-types",
    "required-associated-consts",
    "provided-associated-consts",
}
MEMBER_KINDS = ("method.", "tymethod.", "associatedconstant.", "associatedtype.")


def members(page):
    """(kind, name, docblock or None) for each inherent method/assoc item."""
    out = []
    heads = list(SECTION.finditer(page))
    for i, head in enumerate(heads):
        if head.group(1) not in MEMBER_SECTIONS:
            continue
        part = page[head.end() : heads[i + 1].start() if i + 1 < len(heads) else len(page)]
        chunks = part.split('<section id="')
        for chunk in chunks[1:]:
            ident = chunk[: chunk.find('"')]
            if not ident.startswith(MEMBER_KINDS):
                continue
            kind, name = ident.split(".", 1)
            kind = {"tymethod": "method", "associatedconstant": "const", "associatedtype": "type"}.get(kind, kind)
            doc = chunk.find('<div class="docblock">')
            out.append((kind, name, chunk[doc:] if doc >= 0 else None))
    return out


def module_pages(rel="index.html", path="goro"):
    """(path, page) for the crate root and every public module under it."""
    yield path, rel
    page = read(rel)
    base = os.path.dirname(rel)
    for href, name in re.findall(r'<a class="mod" href="([^"]+/index\.html)"[^>]*>([^<]+)</a>', page):
        yield from module_pages(os.path.normpath(os.path.join(base, href)), f"{path}::{html.unescape(name)}")


KINDS = {
    "struct": "struct",
    "enum": "enum",
    "fn": "fn",
    "macro": "macro",
    "trait": "trait",
    "type": "type",
    "constant": "const",
    "static": "static",
    "union": "union",
    "traitalias": "trait alias",
    "attr": "attr macro",
    "derive": "derive macro",
}

items = []  # (kind, path, page file)
for path, rel in module_pages():
    items.append(("mod", path, rel))
all_html = read("all.html")
seen = set()
for href in re.findall(r'<li><a href="([^"#]+\.html)">', all_html):
    if href in seen:
        continue
    seen.add(href)
    base = os.path.basename(href)
    kind = base.split(".", 1)[0]
    name = base.split(".", 1)[1][: -len(".html")]
    module = os.path.dirname(href).replace("/", "::")
    path = "goro::" + (module + "::" if module else "") + name
    items.append((KINDS.get(kind, kind), path + ("!" if kind == "macro" else ""), href))

if len(items) <= len(list(module_pages())):
    print("doc_examples.sh: found no items in all.html (has rustdoc's HTML changed?)", file=sys.stderr)
    sys.exit(2)

checked = 0
missing = []


def check(kind, path, doc):
    global checked
    checked += 1
    if doc is None:
        status = "NO DOCS"
    elif not has_example(doc):
        status = "NO EXAMPLE"
    else:
        status = "ok"
    if status != "ok":
        missing.append((kind, path, status))
    if list_all:
        print(f"{status:10}  {kind:8} {path}")


for kind, path, rel in items:
    page = read(rel)
    check(kind, path, top_doc(page))
    if kind in ("struct", "enum", "union", "trait", "type"):
        for mkind, name, doc in members(page):
            check(mkind, f"{path}::{name}", doc)

if list_all:
    print()
for kind, path, status in missing:
    if not list_all:
        print(f"{status:10}  {kind:8} {path}")
print(f"doc_examples.sh: {checked} public items checked, {len(missing)} without a runnable example")
sys.exit(1 if missing else 0)
PY
