#!/usr/bin/env python3
"""The library's public surface as rustdoc documents it: every item a user of `bitexact::`
can name, counted from rustdoc's JSON output for each wing crate (issue 47's measure).

    scripts/api_surface.py [--no-build] [--list] [--max N] [--max-reach N] [--max-reach-paths N]

For each wing (`host/wings/*`) it runs `cargo rustdoc --lib -- --output-format json` (the
pinned nightly's unstable JSON output), then walks the crate from its root the way a user
can: a module's items, a re-export's target, and the inherent methods, constants and types
of each struct, enum, union and trait. `#[doc(hidden)]` items, and items no public path
reaches, are not part of the surface. Counted: modules, structs, enums, unions, traits,
functions and methods, constants, statics, type aliases, macros, and associated consts,
types and functions (a trait's included); a re-export of another crate's item counts
once (rustdoc shows its page, but its methods are that crate's API: `gpu::DeviceBuffer`
is cudarc's `CudaSlice`). Enum variants and fields are parts of their type.

It also names **leaks**: a counted item whose signature names an item of this workspace
that is not on the surface (hidden, or reachable by no public path): its argument, result
and field types, its variants, its bounds, a trait's items, and the traits a type
implements with their arguments (`impl From<X> for T` makes `X` part of `T`'s promise;
an impl marked `#[doc(hidden)]` is not shown and is not read). Workspace crates other
than the wings (`shared`, `ptx_builder`) are APIs of their own and are not checked here. A leak is a public
promise the API cannot keep, so the script fails on one, and on an undocumented item, and
when the count reaches `--max` (300 by default: the goal of issue 47).

Last, **reach**: every path into the library that a test, bench, example or fuzz target
names (`bitexact::…`, `bitexact_<wing>::…`, in `use` trees, in code, and through a name a
`use` brought in; comments and string literals are not read) is resolved against the
surface. A path that leaves the surface (a hidden module or item, as in
`bitexact::files::containers::npy_header`, or a hidden member of a type on it, as in
`ConversionForm::ALL`) is listed. Member access (`v.ops`, `c.run_form(..)`) is matched
by name: for each type on the surface that a file names, or that an item it names returns
or holds (`table::find` returns a `Variant`), the file is searched for `.member` of each
of that type's hidden fields and methods. That can count a method of the same name on
another type, and it misses a value whose type the file reaches by no name. Issue 47
asks that tests reach only the API; what still does is its remaining work, so the script
fails when more files, or more (file, path) pairs, do so than `--max-reach` and
`--max-reach-paths` allow, numbers that only go down.
"""
import argparse
import json
import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# The rustdoc JSON format of the nightly pinned in rust-toolchain.toml.
FORMAT_VERSIONS = {61}
COUNTED = {
    "module",
    "struct",
    "enum",
    "union",
    "trait",
    "function",
    "constant",
    "static",
    "type_alias",
    "macro",
    "assoc_const",
    "assoc_type",
}


def wings():
    """(package name, crate name) of `host` (the `bitexact` library, which re-exports the
    wings) and of each wing, from its Cargo.toml."""
    out = [("host", "bitexact")]
    for manifest in sorted((ROOT / "host" / "wings").glob("*/Cargo.toml")):
        for line in manifest.read_text().splitlines():
            if line.startswith("name = "):
                package = line.split('"')[1]
                out.append((package, package.replace("-", "_")))
                break
    return out


def build(package):
    cmd = ["cargo", "rustdoc", "-q", "-p", package, "--lib", "--"]
    cmd += ["-Zunstable-options", "--output-format", "json", "--document-hidden-items"]
    subprocess.run(cmd, cwd=ROOT, check=True)


def kind_of(item):
    return next(iter(item["inner"]))


def is_hidden(item):
    """Whether the item carries `#[doc(hidden)]` (or `#[doc(hidden, ...)]`)."""
    return any(
        isinstance(a, dict) and a.get("other", "").replace(" ", "").startswith(("#[doc(hidden)", "#[doc(hidden,"))
        for a in item["attrs"]
    )


def surface(doc):
    """The ids a user can reach from the crate root by public paths, the way rustdoc's
    pages show them: through public modules that are not hidden, through each re-export
    that is not hidden (an item re-exported from a hidden or private module is shown where
    it is re-exported), and through the inherent items of each type reached. With the
    external re-exports (counted once each) as (id of the `use` item, its source)."""
    index = doc["index"]
    seen, external, stack = set(), [], [doc["root"]]
    while stack:
        at = stack.pop()
        if at in seen or str(at) not in index:
            continue
        item = index[str(at)]
        if at != doc["root"] and (item["visibility"] != "public" or is_hidden(item)):
            # inherent methods are `public` when `pub`; trait impl methods are `default`
            continue
        seen.add(at)
        kind, inner = kind_of(item), item["inner"][kind_of(item)]
        if kind == "module":
            stack.extend(inner["items"])
        elif kind == "use":
            target = inner.get("id")
            if target is not None and str(target) in index and index[str(target)]["crate_id"] == 0:
                if inner["is_glob"]:
                    glob = index[str(target)]["inner"]
                    if "module" not in glob:
                        sys.exit(f"error: `pub use {inner['source']}::*` is a glob of a {kind_of(index[str(target)])}: not read")
                    stack.extend(glob["module"]["items"])
                else:
                    stack.append(target)
            else:
                external.append((at, inner["source"]))
        elif kind in ("struct", "enum", "union"):
            for impl_id in inner.get("impls", []):
                impl = index.get(str(impl_id))
                if impl and impl["inner"]["impl"]["trait"] is None and not is_hidden(impl):
                    stack.extend(impl["inner"]["impl"]["items"])
        elif kind == "trait":
            # a trait's methods, associated consts and types have no visibility of their own
            seen.update(i for i in inner["items"] if str(i) in index and not is_hidden(index[str(i)]))
    return seen, external


def trait_impls(item, index):
    """The trait impls of a type that rustdoc shows on its page (written in the source,
    not hidden): what they name is the type's promise too (`impl From<X> for T`)."""
    inner = item["inner"][kind_of(item)]
    out = []
    for impl_id in inner.get("impls", []) if isinstance(inner, dict) else []:
        impl = index.get(str(impl_id))
        if impl is None or is_hidden(impl):
            continue
        body = impl["inner"]["impl"]
        if body["trait"] is None or body["is_synthetic"] or body["blanket_impl"] is not None:
            continue
        out.append(impl)
    return out


def resolved_paths(value):
    """Every item path named anywhere in a JSON value, as (id, path as written): a type's
    `resolved_path`, a trait bound's or an impl's trait (rustdoc's `Path`: `path`, `id`)."""
    if isinstance(value, dict):
        if isinstance(value.get("path"), str) and "id" in value:
            yield value["id"], value["path"]
        for v in value.values():
            yield from resolved_paths(v)
    elif isinstance(value, list):
        for v in value:
            yield from resolved_paths(v)


def parts(item, index):
    """The ids of a type's public fields, of its variants and their fields, and of a
    trait's items: the parts of its signature a user can name."""
    kind = kind_of(item)
    inner = item["inner"][kind]
    ids = []
    if kind in ("struct", "union"):
        shape = inner["kind"] if kind == "struct" else inner
        if isinstance(shape, dict) and "plain" in shape:
            ids = shape["plain"]["fields"]
        elif isinstance(shape, dict) and "tuple" in shape:
            ids = [i for i in shape["tuple"] if i is not None]
        elif "fields" in inner:
            ids = inner["fields"]
        ids = [i for i in ids if index.get(str(i), {}).get("visibility") == "public" and not is_hidden(index[str(i)])]
    elif kind == "trait":
        ids = [i for i in inner["items"] if str(i) in index and not is_hidden(index[str(i)])]
    elif kind == "enum":
        for variant in inner["variants"]:
            if is_hidden(index[str(variant)]):
                continue
            ids.append(variant)
            shape = index[str(variant)]["inner"]["variant"]["kind"]
            if isinstance(shape, dict) and "struct" in shape:
                ids.extend(shape["struct"]["fields"])
            elif isinstance(shape, dict) and "tuple" in shape:
                ids.extend(i for i in shape["tuple"] if i is not None)
    return [i for i in ids if str(i) in index]


# Where the library's users live in this workspace: tests, benches, examples and fuzz
# targets (the wings' own unit tests and the `bitexact` binary are inside the house).
REACH_DIRS = ["host/tests", "host/benches", "host/examples", "tests", "examples", "fuzz", "device-support/tests"]
# Files that still name paths off the surface, and (file, path) pairs (issue 47's
# remaining work); both only go down.
MAX_REACH = 5
MAX_REACH_PATHS = 34


def api_paths(docs):
    """Every path a user can write into the library, as a tuple of names, mapped to what it
    names: "module" (more names may follow), "item" (a type, function or constant: what
    follows is its own member), or ("alias", path) for a re-export of another wing's module
    (`bitexact::files` is `bitexact_files`). A name that is both a module and an item (the
    function `files::cast` beside the module `files::cast`) is kept as the module: a path
    that goes on after it can only mean the module.

    Also, for each type on the surface, its members (`members`: the names of its methods,
    associated consts, variants and fields that are on it, and of those that are public
    but hidden), and for each item the types its signature names (`names_types`: a
    function's result, a static's type), so that `x.hidden_field` can be seen where `x`
    came from such an item."""
    out, members, names_types, canonical = {}, {}, {}, {}
    for name, (doc, _, _) in docs.items():
        index, summaries = doc["index"], doc["paths"]
        crate_names = {str(k): v["name"] for k, v in doc["external_crates"].items()}

        def canonical_of(ref):
            summary = summaries.get(str(ref))
            if summary is None:
                return None
            owner = name if summary["crate_id"] == 0 else crate_names.get(str(summary["crate_id"]))
            return (owner,) + tuple(summary["path"][1:])

        def record_members(item, path):
            visible, hidden = set(), set()
            ids = parts(item, index)  # public fields, variants, a trait's items (not hidden)
            visible.update(index[str(i)]["name"] for i in ids if index[str(i)].get("name"))
            inner = item["inner"][kind_of(item)]
            if kind_of(item) == "trait":  # a trait's hidden items (`Element::BITS`)
                hidden.update(index[str(i)]["name"] for i in inner["items"] if str(i) in index and is_hidden(index[str(i)]))
            for impl_id in inner.get("impls", []) if isinstance(inner, dict) else []:
                impl = index.get(str(impl_id))
                if impl is None or impl["inner"]["impl"]["trait"] is not None:
                    continue
                for i in impl["inner"]["impl"]["items"]:
                    it = index.get(str(i))
                    if it is None or it["visibility"] != "public":
                        continue
                    (hidden if is_hidden(impl) or is_hidden(it) else visible).add(it["name"])
            shape = inner.get("kind")
            fields = shape["plain"]["fields"] if isinstance(shape, dict) and "plain" in shape else []
            for i in fields + inner.get("variants", []):  # the hidden ones among them
                it = index.get(str(i))
                if it is not None and it.get("name") and is_hidden(it) and it["visibility"] in ("public", "default"):
                    hidden.add(it["name"])
            members[path] = (visible, hidden - visible)

        def walk(at, path, depth):
            item = index.get(str(at))
            if item is None or depth > 16:
                return
            if depth and (item["visibility"] != "public" or is_hidden(item)):
                return
            kind = kind_of(item)
            if kind == "module":
                out[path] = "module"
                for child in item["inner"]["module"]["items"]:
                    c = index.get(str(child))
                    if c is None:
                        continue
                    if kind_of(c) == "use":
                        use = c["inner"]["use"]
                        if c["visibility"] != "public" or is_hidden(c) or use["id"] is None:
                            continue
                        target = str(use["id"])
                        if target in index and index[target]["crate_id"] == 0:
                            if use["is_glob"]:
                                for g in index[target]["inner"].get("module", {}).get("items", []):
                                    if str(g) in index and index[str(g)]["name"]:
                                        walk(g, path + (index[str(g)]["name"],), depth + 1)
                            else:
                                walk(int(target), path + (use["name"],), depth + 1)
                        else:
                            summary = summaries.get(target)
                            owner = crate_names.get(str(summary["crate_id"])) if summary else None
                            if summary and summary["kind"] == "module" and owner in docs:
                                out[path + (use["name"],)] = ("alias", (owner,) + tuple(summary["path"][1:]))
                            else:
                                out.setdefault(path + (use["name"],), "item")
                    elif c.get("name"):
                        walk(child, path + (c["name"],), depth + 1)
            elif kind != "use":
                out.setdefault(path, "item")  # a module of the same name (`files::cast`) wins
                canonical.setdefault(canonical_of(at), path)
                if kind in ("struct", "enum", "union", "trait"):
                    record_members(item, path)
                if kind in ("function", "static", "constant"):
                    names_types[path] = {canonical_of(ref) for ref, _ in resolved_paths(item["inner"])}

        walk(doc["root"], (name,), 0)
    for path, named in names_types.items():
        names_types[path] = {canonical[c] for c in named if c in canonical}
    return out, members, names_types


def use_paths(tree, prefix=""):
    """The paths a `use` tree names, with the name each brings into scope (None for a
    glob, whose module is the path named)."""
    tree = " ".join(tree.split())
    if "{" not in tree:
        path, _, alias = tree.partition(" as ")
        path = (prefix + path).strip()
        if path.endswith("::*"):
            return [(path[: -len("::*")], None)]  # the module itself is named; no one name comes in
        if path.endswith("::self"):
            path = path[: -len("::self")]
        last = alias.strip() or path.split("::")[-1]
        return [(path, last)] if path else []
    head, body = tree.split("{", 1)
    body = body[: body.rfind("}")]
    parts, depth, cur = [], 0, ""
    for ch in body:
        depth += ch == "{"
        depth -= ch == "}"
        if ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
        else:
            cur += ch
    parts.append(cur)
    out = []
    for part in parts:
        if part.strip():
            out += use_paths(part.strip(), prefix + head.strip())
    return out


def resolve(path, api):
    """None if `path` (a tuple of names) stays on the surface, else its prefix that leaves;
    a name after a type is its member (`ConversionForm::ALL`), hidden or not."""
    return landing(path, api)[0]


def landing(path, api):
    """(the prefix of `path` that leaves the surface, or None; the surface item the path
    lands on, or None)."""
    surface, members, _ = api
    at = path[:1]
    for i, name in enumerate(path[1:], start=1):
        at = at + (name,)
        kind = surface.get(at)
        if kind is None:
            return at, None
        if kind == "item":
            rest = path[i + 1 :]
            if rest and rest[0] in members.get(at, (set(), set()))[1]:
                return at + (rest[0],), None
            return None, at
        if isinstance(kind, tuple):
            at = kind[1]
    return None, None


def code_only(text):
    """Rust source with its comments and string literals (raw ones included) blanked out,
    so that a path written in a doc or a message is not read as a use of it."""
    out, i, n = [], 0, len(text)
    while i < n:
        if text.startswith("//", i):
            i = text.find("\n", i)
            i = n if i < 0 else i
        elif text.startswith("/*", i):
            i = text.find("*/", i + 2)
            i = n if i < 0 else i + 2
        elif (m := re.match(r'b?r(#*)"', text[i : i + 70])) and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
            end = text.find('"' + m.group(1), i + m.end())
            i = n if end < 0 else end + 1 + len(m.group(1))
            out.append('""')
        elif text[i] == '"':
            i += 1
            while i < n and text[i] != '"':
                i += 2 if text[i] == "\\" else 1
            i += 1
            out.append('""')
        elif text[i] == "'" and (m := re.match(r"'(\\u\{[0-9a-fA-F]+\}|\\.|[^\\'\n])'", text[i : i + 12])):
            i += m.end()  # a char literal ('"' included); a lifetime has no closing quote
            out.append("' '")
        else:
            out.append(text[i])
            i += 1
    return "".join(out)


def check_the_reach_check(api):
    """The reach check's own parts on known cases, so that it cannot quietly pass
    everything: a use tree's paths and names, comments and strings left unread, and one
    path on and two off today's surface."""
    got = use_paths("bitexact::files::{cast::{self as c, chunks}, scan::*, normalize}")
    want = [("bitexact::files::cast", "c"), ("bitexact::files::cast::chunks", "chunks"),
            ("bitexact::files::scan", None), ("bitexact::files::normalize", "normalize")]
    assert got == want, got
    text = 'a // b::c\nd /* e */ "f::g\\"" r#"h"# \'"\' \'\\n\' <\'a> i'
    assert code_only(text) == "a \nd  \"\" \"\" ' ' ' ' <'a> i", code_only(text)
    assert resolve(("bitexact", "files", "scan", "ScanOptions", "default"), api) is None
    assert resolve(("bitexact", "files", "containers", "npy_header"), api) == ("bitexact_files", "containers")
    assert resolve(("bitexact", "files", "cast", "chunks"), api) == ("bitexact_files", "cast", "chunks")
    conversion = ("bitexact_cpu", "convert", "CpuConversion")
    assert resolve(("bitexact", "cpu", "convert", "CpuConversion", "run_streaming_at"), api) == conversion + (
        "run_streaming_at",
    )
    assert resolve(("bitexact", "cpu", "convert", "ConversionForm", "ALL"), api) is None
    assert "ops" in api[1][("bitexact_verify", "table", "Variant")][1]
    assert ("bitexact_verify", "table", "Variant") in api[2][("bitexact_verify", "table", "find")]


def reach(api):
    """{file: sorted off-surface paths} for the tests, benches, examples and fuzz targets."""
    surface, members, names_types = api
    crates = {p[0] for p in surface}
    found = {}
    for top in REACH_DIRS:
        for path in sorted((ROOT / top).rglob("*.rs")):
            if "target" in path.parts:
                continue
            text = re.sub(r"\s*::\s*", "::", code_only(path.read_text()))
            named, aliases = [], {}
            for m in re.finditer(r"\b(?:use|extern\s+crate)\s+(bitexact(?:_\w+)?)\s+as\s+(\w+)\s*;", text):
                aliases[m.group(2)] = m.group(1)
            for m in re.finditer(r"\buse\s+(?:::)?((?:bitexact|bitexact_\w+)::[^;]+);", text):
                for full, last in use_paths(m.group(1)):
                    named.append(full)
                    if last is not None:
                        aliases[last] = full
            named += re.findall(r"\b(?:bitexact|bitexact_[a-z_]+)(?:::\w+)+", text)
            for alias, full in aliases.items():
                named += [full + rest for rest in re.findall(r"(?<![\w:])" + re.escape(alias) + r"((?:::\w+)+)", text)]
            off, landed = set(), set()
            for full in named:
                segments = tuple(x for x in full.split("::") if x)
                if segments and segments[0] in crates:
                    left, at = landing(segments, api)
                    if left is not None:
                        off.add("::".join(left))
                    elif at is not None:
                        landed.add(at)
                        landed.update(names_types.get(at, ()))
            # `x.member` and `x.member()` of a type the file reaches, or that what it
            # reaches returns: its hidden fields and methods
            for at in landed:
                for member in members.get(at, (set(), set()))[1]:
                    if re.search(r"\.\s*" + re.escape(member) + r"\b", text):
                        off.add("::".join(at + (member,)))
            if off:
                found[str(path.relative_to(ROOT))] = sorted(off)
    return found


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--no-build", action="store_true", help="read the JSON already in target/doc")
    parser.add_argument("--list", action="store_true", help="print every counted item's path")
    parser.add_argument("--max", type=int, default=300, help="fail when the surface has this many items or more")
    parser.add_argument(
        "--max-reach", type=int, default=MAX_REACH, help="fail when more files than this name paths off the surface"
    )
    parser.add_argument(
        "--max-reach-paths", type=int, default=MAX_REACH_PATHS, help="fail when more (file, path) pairs leave it"
    )
    args = parser.parse_args()

    crates = wings()
    docs, reachable_paths = {}, {}
    for package, name in crates:
        if not args.no_build:
            build(package)
        doc = json.loads((ROOT / "target" / "doc" / f"{name}.json").read_text())
        if doc.get("format_version") not in FORMAT_VERSIONS:
            sys.exit(
                f"error: {name}.json is rustdoc JSON format {doc.get('format_version')}; this script reads "
                f"{sorted(FORMAT_VERSIONS)} (the pinned nightly's): check its walk against the new format"
            )
        seen, external = surface(doc)
        docs[name] = (doc, seen, external)
        reachable_paths[name] = {tuple(doc["paths"][str(i)]["path"]) for i in seen if str(i) in doc["paths"]}

    total, problems = 0, []
    for name, (doc, seen, external) in docs.items():
        index, paths = doc["index"], doc["paths"]
        counted = [index[str(i)] for i in seen if kind_of(index[str(i)]) in COUNTED and i != doc["root"]]
        crate_names = {str(k): v["name"] for k, v in doc["external_crates"].items()}
        for item in counted:
            where = f"{item['span']['filename']}:{item['span']['begin'][0]}" if item.get("span") else name
            if not (item.get("docs") or "").strip():
                problems.append(f"{where}: `{item['name']}` has no doc comment")
            named = [item["inner"]] + [index[str(i)]["inner"] for i in parts(item, index)]
            named += [impl["inner"]["impl"]["trait"] for impl in trait_impls(item, index)]
            for ref, written in set(resolved_paths(named)):
                summary = paths.get(str(ref))
                if str(ref) in index and index[str(ref)]["crate_id"] == 0:
                    hidden = ref not in seen
                elif summary is None:
                    continue  # a generic parameter's or a primitive's path
                elif summary["crate_id"] == 0:
                    hidden = ref not in seen
                else:
                    owner = crate_names.get(str(summary["crate_id"]))
                    hidden = owner in reachable_paths and tuple(summary["path"]) not in reachable_paths[owner]
                if hidden:
                    problems.append(f"{where}: `{item['name']}` names `{'::'.join(summary['path'])}`, which is not API")
            if args.list:
                print(f"{name}: {kind_of(item)} {item['name']}  ({where})")
        for _, source in external:
            if args.list:
                print(f"{name}: re-export {source}")
        n = len(counted) + len(external)
        print(f"{name}: {n} items ({len(external)} re-exported from other crates)")
        total += n
    print(f"{total} public items in the library's documented surface (goal: under {args.max})")
    api = api_paths(docs)
    check_the_reach_check(api)
    off = reach(api)
    for file, paths in off.items():
        print(f"reach: {file}: {', '.join(paths)}")
    pairs = sum(len(paths) for paths in off.values())
    print(
        f"{len(off)} test, bench and example files name paths off the surface (at most {args.max_reach}), "
        f"{pairs} (file, path) pairs (at most {args.max_reach_paths})"
    )
    for p in sorted(set(problems)):
        print(f"problem: {p}")
    if problems or total >= args.max or len(off) > args.max_reach or pairs > args.max_reach_paths:
        sys.exit(1)


if __name__ == "__main__":
    main()
