#!/usr/bin/env python3
"""How far collkit's best plan is from the lower bound, preset by preset (issue #10).

Drives the CLI the way a user does, with its defaults:
  coll-topo synth --node PRESET --nodes N --fabric F -o T.json
  coll-plan generate --topo T.json --coll C --size S --algo auto -o plan.json
and reads predicted_us, bound_us, algorithm and params from the plan. For each row more than
25% above its bound it also runs `coll-plan simulate plan.json --topo T.json`, whose bound split
(bandwidth / latency), witness and busiest link say where the time goes.

Writes a markdown report (default results/plan_gaps.md) and a CSV beside it.
Usage: bench/plan_gaps.py [--bin build/bin] [--out results/plan_gaps.md] [--quick] [--jobs N]
                          [--timeout SECONDS] [--match REGEX --reuse OLD.csv]
--match runs only the topologies whose name ("mi300x x16 torus:dims=4x4") matches; --reuse takes
every other row from an earlier run's CSV (the report says which rows came from where).
"""
import argparse
import concurrent.futures
import csv
import datetime
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time

COLLECTIVES = ["allreduce", "reducescatter", "allgather", "alltoall", "broadcast", "reduce"]
SIZES = ["1M", "64M", "1G"]
HOSTS = [1, 2, 16]
EXPLAIN_ABOVE_PCT = 25.0

# Issue #10's "today" gaps of the best (auto) AllReduce plan at 1 GiB, as quoted in the issue on
# 2026-12-02: (preset, hosts, fabric kind) -> (low %, high %). hosts None: the issue gives no host
# count (dgx1-v100) or a range over tori (mi300x), so the figure is shown on every such row.
BASELINE_DATE = "2026-12-02"
BASELINE = {
    ("dgx-a100", 2, "fat-tree"): (180, 180),
    ("dgx-a100", 4, "fat-tree"): (158, 158),
    ("dgx-h100", 2, "fat-tree"): (30, 30),
    ("dgx-h100", 16, "fat-tree"): (17, 17),
    ("dgx-h100", 128, "fat-tree"): (95, 95),
    ("mi300x", 4, "fat-tree"): (599, 599),
    ("dgx1-v100", None, "fat-tree"): (232, 232),
    ("mi300x", None, "torus"): (593, 788),
}


def baseline_for(preset, hosts, kind):
    return BASELINE.get((preset, hosts, kind)) or BASELINE.get((preset, None, kind))


def baseline_text(b):
    return f"{b[0]}%" if b[0] == b[1] else f"{b[0]}-{b[1]}%"


class Topo:
    def __init__(self, preset, hosts, fabric, sizes):
        self.preset, self.hosts, self.fabric, self.sizes = preset, hosts, fabric, sizes
        self.kind = fabric.split(":")[0]
        self.name = f"{preset} x{hosts} {fabric}"
        self.file = None
        self.ranks = None
        self.error = None


def topologies(presets, quick):
    """The rows the issue asks for: every preset at 1, 2 and 16 hosts on the default fat-tree,
    tori at 16 hosts (and 4), and the issue's extra rows (dgx-a100 x4, mi300x x4, dgx-h100 x128)."""
    if quick:
        return [Topo(p, n, "fat-tree", ["1G"]) for p in presets for n in (1, 2)]
    out = [Topo(p, n, "fat-tree", SIZES) for p in presets for n in HOSTS]
    out += [Topo(p, 16, "torus:dims=4x4", SIZES) for p in presets]
    out += [Topo(p, 4, "torus:dims=2x2", SIZES) for p in ("dgx-h100", "mi300x") if p in presets]
    out += [Topo(p, 4, "fat-tree", SIZES) for p in ("dgx-a100", "mi300x") if p in presets]
    if "dgx-h100" in presets:
        out.append(Topo("dgx-h100", 128, "fat-tree", ["1G"]))  # 1024 ranks: 1 GiB only
    return sorted(out, key=lambda t: (t.preset, t.kind != "fat-tree", t.hosts))


def run(cmd, timeout):
    """(status, stdout, stderr): status 'ok', 'timeout' or 'error: <first line of stderr>'."""
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return f"timeout ({timeout:g} s)", "", ""
    except OSError as e:
        return f"error: {cmd[0]}: {e.strerror}", "", ""
    if p.returncode != 0:
        first = (p.stderr.strip() or p.stdout.strip() or f"exit {p.returncode}").splitlines()[0]
        return f"error: {first}", p.stdout, p.stderr
    return "ok", p.stdout, p.stderr


def list_presets(bindir):
    status, out, _ = run([os.path.join(bindir, "coll-topo"), "presets"], 60)
    if status != "ok":
        sys.exit(f"plan_gaps: coll-topo presets: {status}")
    names = []
    for line in out.splitlines():
        if not line.strip():
            break  # the fabric list follows a blank line
        names.append(line.split()[0])
    return names


KNOB_ORDER = ["channels", "pipeline", "bidirectional", "inter", "allgather", "reduce_scatter", "slice_chunks"]


def knobs(params):
    """The settings a user could pass, without the ring orders, the host shape and the long lists
    a plan derives (synth's trees, host arcs and symmetric patterns: up to hundreds of KB)."""
    keys = [k for k in params
            if not re.fullmatch(r"order\d*", k) and k not in ("hosts", "local") and len(str(params[k])) <= 64]
    keys.sort(key=lambda k: (KNOB_ORDER.index(k) if k in KNOB_ORDER else len(KNOB_ORDER), k))
    return " ".join(f"{k}={params[k]}" for k in keys)


def parse_generate(out):
    """Runner-up and plans left out, from generate's 'auto chose' line."""
    r = {}
    m = re.search(r"runner-up (.*?) ([\d.]+) us \(\+([\d.]+)%\)", out)
    if m:
        r["runner_up"], r["runner_up_us"] = m.group(1), float(m.group(2))
    m = re.search(r"(\d+) left out as too big to simulate", out)
    r["left_out"] = int(m.group(1)) if m else 0
    return r


def parse_simulate(out):
    r = {}
    m = re.search(r"bound ([\d.]+) us \(bandwidth ([\d.]+) us, latency ([\d.]+) us\)", out)
    if m:
        r["bound_bw_us"], r["bound_lat_us"] = float(m.group(2)), float(m.group(3))
    m = re.search(r"RS\+AG-shaped plans only: bound ([\d.]+) us", out)
    if m:
        r["rs_ag_us"] = float(m.group(1))
    m = re.search(r"bound witness: (.*)", out)
    if m:
        r["witness"] = m.group(1).strip()
    m = re.search(r"busiest links:\n\s+(.*?): (\d+) bytes, busy ([\d.]+) us", out)
    if m:
        r["busiest_link"], r["busiest_busy_us"] = m.group(1), float(m.group(3))
    return r


def explain(row):
    """Where a row's time goes, from the simulate figures (computed, never hand-written, so it
    stays true when the file is regenerated)."""
    pred, busy = row["predicted_us"], row.get("busiest_busy_us")
    bw, lat = row.get("bound_bw_us"), row.get("bound_lat_us")
    parts = []
    if bw is not None and lat is not None and lat >= bw:
        parts.append("the latency bound binds")
    if busy is not None and pred > 0:
        share = 100 * busy / pred
        if share >= 90:
            parts.append(f"{row['busiest_link']} busy {share:.0f}% of the time")
        else:
            parts.append(f"no link busy 90% of the time (busiest {row['busiest_link']} {share:.0f}%): "
                         "latency, copies, reductions, pipeline fill")
    rs_ag = row.get("rs_ag_us")
    if rs_ag and row["bound_us"] and rs_ag > row["bound_us"] * 1.001:
        parts.append(f"{100 * (pred - rs_ag) / rs_ag:.1f}% above the RS+AG-shaped bound {rs_ag:.2f} us")
    return "; ".join(parts)


def run_case(bindir, topo, coll, size, tmpdir, timeout):
    row = {"topology": topo.name, "preset": topo.preset, "hosts": topo.hosts, "fabric": topo.fabric,
           "ranks": topo.ranks, "collective": coll, "size": size, "status": "ok", "algorithm": "",
           "knobs": "", "predicted_us": None, "bound_us": None, "gap_pct": None}
    start = time.monotonic()
    if topo.error:
        row["status"] = topo.error
        return row
    plan = os.path.join(tmpdir, f"{topo.preset}.{topo.hosts}.{topo.kind}.{coll}.{size}.json")
    status, out, _ = run([os.path.join(bindir, "coll-plan"), "generate", "--topo", topo.file, "--coll", coll,
                          "--size", size, "--algo", "auto", "-o", plan], timeout)
    row["status"] = status
    if status == "ok":
        with open(plan) as f:
            j = json.load(f)
        row["algorithm"], row["knobs"] = j["algorithm"], knobs(j.get("params", {}))
        row["predicted_us"], row["bound_us"] = j.get("predicted_us"), j.get("bound_us")
        if row["predicted_us"] is not None and row["bound_us"]:
            row["gap_pct"] = 100 * (row["predicted_us"] - row["bound_us"]) / row["bound_us"]
        row.update(parse_generate(out))
        if row["gap_pct"] is not None and row["gap_pct"] > EXPLAIN_ABOVE_PCT:
            left = max(1.0, timeout - (time.monotonic() - start))
            s, sim, _ = run([os.path.join(bindir, "coll-plan"), "simulate", plan, "--topo", topo.file], left)
            if s == "ok":
                row.update(parse_simulate(sim))
            row["explanation"] = explain(row) if s == "ok" else f"simulate: {s}"
        os.remove(plan)
    b = baseline_for(topo.preset, topo.hosts, topo.kind)
    if b and coll == "allreduce" and size == "1G" and topo.hosts > 1:
        row["baseline"] = baseline_text(b)
    row["seconds"] = time.monotonic() - start
    return row


def fmt(x, digits=2):
    return "" if x is None else f"{x:.{digits}f}"


def git_commit(path):
    try:
        head = subprocess.run(["git", "-C", path, "rev-parse", "--short=12", "HEAD"], capture_output=True,
                              text=True, timeout=30)
        if head.returncode != 0:
            return "unknown (not in a git tree)"
        dirty = subprocess.run(["git", "-C", path, "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, timeout=60)
        return head.stdout.strip() + (" (with uncommitted changes)" if dirty.stdout.strip() else "")
    except (OSError, subprocess.TimeoutExpired):
        return "unknown"


def snapshot_build(bindir, tmpdir):
    """Copies coll-topo and coll-plan into tmpdir/bin, so that every case runs the same build even
    when someone rebuilds bindir during a long run; says which build that was."""
    os.makedirs(os.path.join(tmpdir, "bin"))
    mtimes = []
    for tool in ("coll-topo", "coll-plan"):
        src = os.path.join(bindir, tool)
        shutil.copy2(src, os.path.join(tmpdir, "bin", tool))
        mtimes.append(os.stat(src).st_mtime)
    built = datetime.datetime.fromtimestamp(max(mtimes)).strftime("%Y-%m-%d %H:%M")
    return f"built {built}; source tree at commit {git_commit(bindir)}"


def cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "unknown"


NUMERIC = {"hosts": int, "ranks": int, "predicted_us": float, "bound_us": float, "gap_pct": float,
           "runner_up_us": float, "bound_bw_us": float, "bound_lat_us": float, "rs_ag_us": float,
           "busiest_busy_us": float, "seconds": float}


def read_csv(path):
    """Rows of an earlier run, typed as run_case() makes them (empty numbers: absent, or None for
    the three the tables always read)."""
    rows = []
    csv.field_size_limit(1 << 30)  # cells of runs before knobs() dropped long lists
    with open(path, newline="") as f:
        for r in csv.DictReader(f):
            row = {}
            for k, v in r.items():
                if v == "" and k in NUMERIC:
                    if k in ("predicted_us", "bound_us", "gap_pct"):
                        row[k] = None
                    continue
                row[k] = NUMERIC[k](float(v)) if k in NUMERIC else v
            row["reused"] = True
            rows.append(row)
    return rows


def write_csv(path, rows):
    cols = ["topology", "preset", "hosts", "fabric", "ranks", "collective", "size", "status", "algorithm", "knobs",
            "predicted_us", "bound_us", "gap_pct", "baseline", "runner_up", "runner_up_us", "left_out",
            "bound_bw_us", "bound_lat_us", "rs_ag_us", "witness", "busiest_link", "busiest_busy_us", "explanation",
            "seconds"]
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=cols, extrasaction="ignore")
        w.writeheader()
        for r in rows:
            w.writerow({k: (f"{v:.4f}" if isinstance(v, float) else v) for k, v in r.items()})


def cell(text):
    return str(text).replace("|", "\\|")


def gap_cell(r):
    return fmt(r["gap_pct"], 1) if r["status"] == "ok" else r["status"]


def write_markdown(path, rows, topos, args, bindir, build, wall_s):
    L = []
    L.append("# Plan gaps: collkit's best plan against the lower bound (issue #10)")
    L.append("")
    L.append(f"- date: {datetime.datetime.now().strftime('%Y-%m-%d %H:%M')}")
    L.append(f"- machine: {os.cpu_count()} cores (nproc), {cpu_model()}")
    L.append(f"- binaries: `{bindir}` ({build}), copied at the start so a rebuild during the run cannot mix builds")
    here = os.path.dirname(os.path.abspath(__file__))
    L.append(f"- script: `bench/plan_gaps.py` at commit {git_commit(here)}; run as "
             f"`{' '.join(['bench/plan_gaps.py'] + sys.argv[1:])}`")
    reused = sum(1 for r in rows if r.get("reused"))
    L.append(f"- {len(rows) - reused} cases on {len(topos)} topologies in {wall_s:.0f} s with {args.jobs} job(s), "
             f"timeout {args.timeout:g} s per case")
    if reused:
        L.append(f"- {reused} rows (topologies not matching `{args.match}`) taken from the earlier run `{args.reuse}`")
    timed = sorted((r for r in rows if "seconds" in r), key=lambda r: -r["seconds"])[:3]
    if timed:
        L.append("- slowest cases: " + ", ".join(f"{r['topology']} {r['collective']} {r['size']} {r['seconds']:.0f} s"
                                                  for r in timed))
    L.append("- commands per topology and case (the CLI's defaults otherwise):")
    L.append("  - `coll-topo synth --node PRESET --nodes N --fabric F -o T.json` (F = `fat-tree`, its rails "
             "defaulting to the NICs per host, or `torus:dims=AxB`)")
    L.append("  - `coll-plan generate --topo T.json --coll C --size S --algo auto -o plan.json`")
    L.append(f"  - rows over {EXPLAIN_ABOVE_PCT:g}%: `coll-plan simulate plan.json --topo T.json` for the bound's "
             "split, witness and busiest link")
    L.append("")
    L.append("gap % = 100 x (predicted - bound) / bound, against the bound that holds for every plan "
             "(docs/plan.md, Lower bounds). Knobs leave out the ring orders (`order<c>`) and the host shape. "
             f"'issue' = the issue's gap of the best AllReduce plan at 1 GiB, {BASELINE_DATE} (dgx1-v100: the issue "
             "names no host count; mi300x tori: a range); the target is half of it (of the range's lower end).")
    L.append("")

    # Summary first: it is what the issue judges.
    L.append("## Summary: AllReduce 1 GiB on multi-host topologies")
    L.append("")
    L.append("| topology | ranks | best algorithm | knobs | gap % | issue | target (half) | met | worst 1 GiB collective |")
    L.append("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for t in topos:
        if t.hosts < 2 or "1G" not in t.sizes:
            continue
        mine = [r for r in rows if r["topology"] == t.name and r["size"] == "1G"]
        ar = next((r for r in mine if r["collective"] == "allreduce"), None)
        if ar is None:
            continue
        b = baseline_for(t.preset, t.hosts, t.kind)
        target = b[0] / 2 if b else None
        met = ""
        if target is not None:
            met = "yes" if ar["gap_pct"] is not None and ar["gap_pct"] <= target else "no"
        worst = max((r for r in mine if r["gap_pct"] is not None), key=lambda r: r["gap_pct"], default=None)
        worst_cell = f"{worst['collective']} {worst['gap_pct']:.1f}%" if worst else ""
        L.append(f"| {t.name} | {t.ranks or ''} | {ar['algorithm']} | {ar['knobs']} | {gap_cell(ar)} | "
                 f"{baseline_text(b) if b else ''} | {fmt(target, 1)} | {met} | {worst_cell} |")
    L.append("")

    above = [r for r in rows if r["gap_pct"] is not None and r["gap_pct"] > EXPLAIN_ABOVE_PCT]
    failed = [r for r in rows if r["status"] != "ok"]
    L.append(f"## Rows above {EXPLAIN_ABOVE_PCT:g}% ({len(above)} of {len(rows)})")
    L.append("")
    for size in SIZES[::-1]:
        these = [r for r in above if r["size"] == size]
        if not these:
            continue
        L.append(f"### {size} ({len(these)})")
        L.append("")
        L.append("| topology | collective | algorithm | gap % | bound us (bandwidth / latency) | where the time goes | "
                 "runner-up | bound witness |")
        L.append("| --- | --- | --- | --- | --- | --- | --- | --- |")
        for r in sorted(these, key=lambda r: -r["gap_pct"]):
            split = (f"{fmt(r['bound_us'])} ({fmt(r.get('bound_bw_us'))} / {fmt(r.get('bound_lat_us'))})"
                     if "bound_bw_us" in r else fmt(r["bound_us"]))
            runner = f"{r['runner_up']} {r['runner_up_us']:.2f} us" if r.get("runner_up") else ""
            L.append(f"| {r['topology']} | {r['collective']} | {r['algorithm']} | {r['gap_pct']:.1f} | {split} | "
                     f"{cell(r.get('explanation', ''))} | {runner} | {cell(r.get('witness', ''))} |")
        L.append("")
    if failed:
        L.append(f"## Cases without a result ({len(failed)})")
        L.append("")
        for r in failed:
            L.append(f"- {r['topology']} {r['collective']} {r['size']}: {r['status']}")
        L.append("")

    L.append("## All rows")
    for t in topos:
        mine = [r for r in rows if r["topology"] == t.name]
        L.append("")
        L.append(f"### {t.name} ({t.ranks or '?'} ranks)")
        L.append("")
        L.append("| collective | size | bound us | best algorithm | knobs | predicted us | gap % | issue |")
        L.append("| --- | --- | --- | --- | --- | --- | --- | --- |")
        for r in mine:
            L.append(f"| {r['collective']} | {r['size']} | {fmt(r['bound_us'])} | {r['algorithm']} | {r['knobs']} | "
                     f"{fmt(r['predicted_us'])} | {gap_cell(r)} | {r.get('baseline', '')} |")
    L.append("")
    with open(path, "w") as f:
        f.write("\n".join(L))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bin", default="build/bin", help="directory holding coll-topo and coll-plan (default build/bin)")
    ap.add_argument("--out", default="results/plan_gaps.md", help="markdown report; a .csv is written beside it")
    ap.add_argument("--quick", action="store_true", help="1 and 2 hosts, 1 GiB only, no tori or extra rows")
    ap.add_argument("--jobs", type=int, default=1, help="cases run in parallel (default 1)")
    ap.add_argument("--timeout", type=float, default=600, help="seconds per case before it is reported as timeout")
    ap.add_argument("--match", help="run only topologies whose name matches this regular expression")
    ap.add_argument("--reuse", help="with --match: the other topologies' rows from this earlier CSV")
    args = ap.parse_args()
    if args.reuse and not args.match:
        sys.exit("plan_gaps: --reuse needs --match (which topologies to run again)")
    try:
        match = re.compile(args.match) if args.match else None
    except re.error as e:
        sys.exit(f"plan_gaps: --match: {e}")
    old_rows = []
    if args.reuse:
        try:
            old_rows = read_csv(args.reuse)
        except (OSError, KeyError, ValueError) as e:
            sys.exit(f"plan_gaps: --reuse {args.reuse}: {e}")
    if args.jobs < 1:
        sys.exit("plan_gaps: --jobs must be at least 1")
    if args.timeout <= 0:
        sys.exit("plan_gaps: --timeout must be positive")
    bindir = os.path.abspath(args.bin)
    for tool in ("coll-topo", "coll-plan"):
        if not os.access(os.path.join(bindir, tool), os.X_OK):
            sys.exit(f"plan_gaps: {os.path.join(bindir, tool)}: not found or not executable (give --bin)")
    out_md = args.out
    out_csv = os.path.splitext(out_md)[0] + ".csv"
    os.makedirs(os.path.dirname(os.path.abspath(out_md)), exist_ok=True)

    start = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="plan_gaps.") as tmpdir:
        build = snapshot_build(bindir, tmpdir)
        srcdir, bindir = bindir, os.path.join(tmpdir, "bin")
        topos = topologies(list_presets(bindir), args.quick)
        for t in topos:
            if match and not match.search(t.name):
                continue
            t.file = os.path.join(tmpdir, f"{t.preset}.{t.hosts}.{t.kind}.topo.json")
            status, out, err = run([os.path.join(bindir, "coll-topo"), "synth", "--node", t.preset, "--nodes",
                                    str(t.hosts), "--fabric", t.fabric, "-o", t.file], args.timeout)
            if status != "ok":
                t.error = f"synth {status}"
            m = re.search(r"\((\d+) ranks", out + err)
            t.ranks = int(m.group(1)) if m else None
        run_here = [t for t in topos if not match or match.search(t.name)]
        cases = [(t, c, s) for t in run_here for s in t.sizes for c in COLLECTIVES]
        print(f"plan_gaps: {len(cases)} cases on {len(topos)} topologies, {args.jobs} job(s)", file=sys.stderr)
        done, lock = [0], threading.Lock()

        def one(case):
            row = run_case(bindir, *case, tmpdir, args.timeout)
            with lock:
                done[0] += 1
                what = (f"{row['algorithm']} {fmt(row['predicted_us'])} us, gap {fmt(row['gap_pct'], 1)}%"
                        if row["status"] == "ok" else row["status"])
                print(f"[{done[0]}/{len(cases)}] {row['topology']} {row['collective']} {row['size']}: {what} "
                      f"({row.get('seconds', 0):.1f} s)", file=sys.stderr, flush=True)
            return row

        with concurrent.futures.ThreadPoolExecutor(max_workers=args.jobs) as pool:
            fresh = list(pool.map(one, cases))  # map keeps the case order for the tables
    # Every topology's rows in the tables' order: fresh ones where run, else the earlier run's.
    by_key = {(r["topology"], r["collective"], r["size"]): r for r in old_rows}
    by_key.update({(r["topology"], r["collective"], r["size"]): r for r in fresh})
    rows = []
    for t in topos:
        for size in t.sizes:
            for c in COLLECTIVES:
                r = by_key.get((t.name, c, size))
                if r is None:
                    r = {"topology": t.name, "preset": t.preset, "hosts": t.hosts, "fabric": t.fabric, "ranks": t.ranks,
                         "collective": c, "size": size, "status": "not run", "algorithm": "", "knobs": "",
                         "predicted_us": None, "bound_us": None, "gap_pct": None}
                elif t.ranks is None:
                    t.ranks = r.get("ranks")
                rows.append(r)
    wall_s = time.monotonic() - start
    write_csv(out_csv, rows)
    write_markdown(out_md, rows, topos, args, srcdir, build, wall_s)
    print(f"plan_gaps: wrote {out_md} and {out_csv} ({wall_s:.0f} s)", file=sys.stderr)


if __name__ == "__main__":
    main()
