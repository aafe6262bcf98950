#!/usr/bin/env python3
"""Checks what scripts/reproduce.sh wrote into DIR (issue #17): every markdown table parses (the same
number of cells on its header, separator and every row), every CSV parses (a header and rows of its
width), every figure a markdown file shows exists and is a valid PNG or SVG, and README.md has the
seven sections, each with its figure or its one line saying why not. Python's standard library only.
Prints one line per problem and a count of what it checked; exits 1 on any problem.
Usage: check_outputs.py DIR
"""
import csv
import os
import re
import struct
import sys
import xml.etree.ElementTree as ET
import zlib

problems, checked = [], {"markdown tables": 0, "csv files": 0, "figures": 0, "sections": 0}


def bad(msg):
    problems.append(msg)


def cells(line):
    """A table line's cells: split on | not escaped as \\|, the outer pipes dropped."""
    s = line.strip()
    return re.split(r"(?<!\\)\|", s[1:-1])


def check_markdown(path):
    tables, cur, fenced = [], None, False
    for no, line in enumerate(open(path, encoding="utf-8"), 1):
        s = line.strip()
        if s.startswith("```"):
            fenced = not fenced
            cur = None
            continue
        if fenced:
            continue
        if s.startswith("|"):
            if not s.endswith("|") or len(s) < 2:
                bad(f"{path}:{no}: table line does not end with '|'")
                continue
            if cur is None:
                cur = {"start": no, "width": len(cells(s)), "rows": 0, "sep": False}
                tables.append(cur)
                continue
            c = cells(s)
            if len(c) != cur["width"]:
                bad(f"{path}:{no}: {len(c)} cells, the table's header (line {cur['start']}) has {cur['width']}")
            if not cur["sep"]:
                if not all(re.fullmatch(r"\s*:?-+:?\s*", x) for x in c):
                    bad(f"{path}:{no}: the line under a table's header is not a separator (| --- |)")
                cur["sep"] = True
            else:
                cur["rows"] += 1
        else:
            if cur is not None and not cur["sep"]:
                bad(f"{path}:{cur['start']}: a table header without a separator line")
            cur = None
    for t in tables:
        if t["rows"] == 0:
            bad(f"{path}:{t['start']}: a table without rows")
    checked["markdown tables"] += len(tables)
    for m in re.finditer(r"!\[[^\]]*\]\(([^)]+)\)", open(path, encoding="utf-8").read()):
        check_figure(os.path.join(os.path.dirname(path), m.group(1)), f"{path} shows it")
    return len(tables)


def check_csv(path):
    with open(path, newline="", encoding="utf-8") as f:
        rows = list(csv.reader(f))
    if len(rows) < 2:
        bad(f"{path}: no rows under the header")
        return
    for i, r in enumerate(rows[1:], 2):
        if len(r) != len(rows[0]):
            bad(f"{path}:{i}: {len(r)} fields, the header has {len(rows[0])}")
    checked["csv files"] += 1


def check_png(path):
    data = open(path, "rb").read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        return "not a PNG (magic bytes)"
    pos, seen = 8, []
    while pos + 8 <= len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        crc = data[pos + 8 + length:pos + 12 + length]
        if len(body) != length or len(crc) != 4:
            return f"chunk {kind!r} cut short"
        if zlib.crc32(kind + body) != struct.unpack(">I", crc)[0]:
            return f"chunk {kind!r}: CRC mismatch"
        seen.append(kind)
        pos += 12 + length
        if kind == b"IEND":
            break
    if not seen or seen[0] != b"IHDR" or b"IDAT" not in seen or seen[-1] != b"IEND":
        return "PNG chunks not IHDR ... IDAT ... IEND"
    w, h = struct.unpack(">II", data[16:24])
    if w == 0 or h == 0:
        return "PNG of zero size"
    return None


def check_svg(path):
    try:
        root = ET.parse(path).getroot()
    except ET.ParseError as e:
        return f"SVG does not parse as XML: {e}"
    if not root.tag.endswith("svg"):
        return f"root element <{root.tag}>, not <svg>"
    return None


def check_figure(path, why):
    if not os.path.isfile(path):
        bad(f"{path}: missing ({why})")
        return
    err = check_png(path) if path.endswith(".png") else check_svg(path) if path.endswith(".svg") else "not .png or .svg"
    if err:
        bad(f"{path}: {err}")
    checked["figures"] += 1


def main():
    if len(sys.argv) != 2 or not os.path.isdir(sys.argv[1]):
        sys.exit("usage: check_outputs.py DIR")
    d = sys.argv[1]
    readme = os.path.join(d, "README.md")
    if not os.path.isfile(readme):
        sys.exit(f"{readme}: missing")
    text = open(readme, encoding="utf-8").read()
    parts = re.split(r"^## (\d+)\. ", text, flags=re.M)
    sections = {int(parts[i]): parts[i + 1] for i in range(1, len(parts) - 1, 2)}
    for n in range(1, 8):
        body = sections.get(n)
        if body is None:
            bad(f"{readme}: no section '## {n}. '")
            continue
        paragraph = [l for l in body.splitlines()[1:] if l.strip()]
        if not paragraph:
            bad(f"{readme}: section {n} has no text")
        elif "![" not in body and "not built" not in body and "failed" not in body:
            bad(f"{readme}: section {n} has neither a figure nor a line saying what is not built")
        if "This run failed" in body:
            bad(f"{readme}: section {n} failed in this run")
        checked["sections"] += 1
    for name in sorted(os.listdir(d)):
        p = os.path.join(d, name)
        if name.endswith(".md"):
            n = check_markdown(p)
            base = name[:-3]
            # Each table file the script writes has its CSV beside it (the bench scripts' reports
            # with several tables have theirs under other names: synth_*.csv, plan_gaps.csv).
            if n and not any(f.startswith(base) and f.endswith(".csv") for f in os.listdir(d)) \
                    and base not in ("README", "recorded"):
                bad(f"{p}: {n} table(s) and no CSV beside it")
        elif name.endswith(".csv"):
            check_csv(p)
        elif name.endswith(".png") or name.endswith(".svg"):
            check_figure(p, "written by the run")
    for msg in problems:
        print(f"FAIL: {msg}")
    print("checked: " + ", ".join(f"{v} {k}" for k, v in checked.items()) + f"; {len(problems)} problem(s)")
    if checked["figures"] == 0 or checked["csv files"] == 0 or checked["markdown tables"] == 0:
        print("FAIL: nothing of one kind was checked")
        sys.exit(1)
    sys.exit(1 if problems else 0)


if __name__ == "__main__":
    main()
