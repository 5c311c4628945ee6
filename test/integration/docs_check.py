#!/usr/bin/env python3
"""docs_check.py ROOT: the documents' links and commands hold.

For README.md, doc/*.md and bindings/erlang/README.md:
 - every relative link or image names a file or folder that exists, and a
   #fragment names a heading of its target (GitHub's anchors);
 - every `./scripts/gw COMMAND` shown is a command scripts/gw lists, every
   `gwctl WHAT` one gwctl takes, and every path of the tree shown in code
   (scripts/..., app/..., config/..., test/..., lib/..., doc/...) exists,
   from the top of the tree or from the document's folder.
One line per problem, then a count; exit 1 if there is any.
"""
import glob
import os
import re
import subprocess
import sys

ROOT = sys.argv[1] if len(sys.argv) > 1 else "."
TREE = ("scripts/", "app/", "config/", "test/", "lib/", "drivers/", "bindings/", "doc/", "debian/")


def slug(title):
    """GitHub's anchor of a heading."""
    s = re.sub(r"[^\w\- ]", "", title.strip().lower())
    return s.replace(" ", "-")


def prose_and_code(text):
    """The lines outside fenced blocks, and the code (fenced or inline)."""
    prose, code, fenced = [], [], False
    for line in text.split("\n"):
        if line.startswith("```"):
            fenced = not fenced
            continue
        (code if fenced else prose).append(line)
    code += re.findall(r"`([^`\n]+)`", "\n".join(prose))
    return prose, code


def anchors(path):
    seen, out = {}, set()
    prose, _ = prose_and_code(open(path, encoding="utf-8").read())
    for line in prose:
        m = re.match(r"^#{1,6} (.*)", line)
        if m:
            s = slug(m.group(1))
            n = seen.get(s, 0)
            seen[s] = n + 1
            out.add(s if n == 0 else f"{s}-{n}")
    return out


def gw_commands():
    usage = subprocess.run([os.path.join(ROOT, "scripts/gw"), "help"], capture_output=True,
                           text=True, check=False).stdout
    return {m.group(1) for m in re.finditer(r"^  ([a-z]+)", usage, re.M)}


def gwctl_commands():
    src = open(os.path.join(ROOT, "app/gwctl/gwctl"), encoding="utf-8").read()
    m = re.search(r'add_argument\("what", choices=\[([^\]]*)\]', src, re.S)
    return set(re.findall(r'"([a-z]+)"', m.group(1)))


def main():
    docs = [os.path.join(ROOT, "README.md"), os.path.join(ROOT, "bindings/erlang/README.md")]
    docs += sorted(glob.glob(os.path.join(ROOT, "doc/*.md")))
    gw, gwctl = gw_commands(), gwctl_commands()
    problems, links, cmds = [], 0, 0
    for doc in docs:
        name = os.path.relpath(doc, ROOT)
        prose, code = prose_and_code(open(doc, encoding="utf-8").read())
        for target in re.findall(r"!?\[[^\]]*\]\(([^)\s]+)\)", "\n".join(prose)):
            if re.match(r"[a-z]+:", target):
                continue  # http:, https:, mailto:, file:
            links += 1
            path, _, frag = target.partition("#")
            dest = os.path.normpath(os.path.join(os.path.dirname(doc), path)) if path else doc
            if not os.path.exists(dest):
                problems.append(f"{name}: link to {target}: no such file")
            elif frag and dest.endswith(".md") and frag not in anchors(dest):
                problems.append(f"{name}: link to {target}: no heading #{frag} in "
                                f"{os.path.relpath(dest, ROOT)}")
        for snippet in code:
            for m in re.finditer(r"(?:^|[\s(])(?:\./)?scripts/gw ([a-z]+)", snippet):
                cmds += 1
                if m.group(1) not in gw:
                    problems.append(f"{name}: `./scripts/gw {m.group(1)}`: not a command of scripts/gw")
            for m in re.finditer(r"(?:^|[\s(/])gwctl(?: -n \S+)? ([a-z]+)", snippet):
                cmds += 1
                if m.group(1) not in gwctl:
                    problems.append(f"{name}: `gwctl {m.group(1)}`: not a command of gwctl")
            for m in re.finditer(r"(?:^|[\s(\[`'\"=])((?:\./)?(?:%s)[\w./-]*)" % "|".join(TREE),
                                 snippet):
                path = m.group(1).rstrip(".,;:)").removeprefix("./")
                # A placeholder, a glob or a pattern names no one file.
                if re.search(r"[<*{]|[A-Z]{3,}|\.\.\.|XXX", snippet[m.start(1):m.end(1) + 1]):
                    continue
                cmds += 1
                if not any(os.path.exists(os.path.join(d, path))
                           for d in (ROOT, os.path.dirname(doc))):
                    problems.append(f"{name}: `{path}`: no such file in the tree")
    for p in problems:
        print(p)
    print(f"{len(docs)} documents, {links} links, {cmds} commands and paths, {len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
