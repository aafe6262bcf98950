#!/usr/bin/env python3
"""Tables, CSVs and gnuplot figures for scripts/reproduce.sh, one subcommand per section.

Each subcommand reads what the section's commands wrote into a scratch directory (WORK) and writes
into the output directory (OUT): a markdown table headed with the machine, date, commit and the exact
commands, a CSV beside it with the same rows, a figure drawn by gnuplot, and a fragment
(OUT/.reproduce/N.md) that `readme` joins into OUT/README.md. Python's standard library only.
"""
import argparse
import csv
import datetime
import glob
import json
import os
import platform
import re
import statistics
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# A CSV cell may hold a long list (a plan's parameters); Python's default cap is 128 KiB.
csv.field_size_limit(1 << 30)
COLLECTIVES = ["allreduce", "reducescatter", "allgather", "alltoall", "broadcast", "reduce"]


def die(msg):
    sys.exit(f"reproduce_report: {msg}")


def commit():
    try:
        head = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short=12", "HEAD"], capture_output=True, text=True)
        if head.returncode != 0:
            return "unknown (not a git checkout)"
        # results/ left out: a run into it rewrites tracked files there before its last table.
        dirty = subprocess.run(["git", "-C", ROOT, "status", "--porcelain", "--untracked-files=no", "--", ".",
                                ":(exclude)results"], capture_output=True, text=True)
        return head.stdout.strip() + (" with uncommitted changes" if dirty.stdout.strip() else "")
    except OSError:
        return "unknown"


def cpu_model():
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.machine()


def machine():
    load = " ".join(f"{x:.1f}" for x in os.getloadavg())
    return (f"{platform.node()}: {os.cpu_count()} cores ({cpu_model()}), Linux {platform.release()}, "
            f"load average {load} when the table was written (other work on the cores skews the measured sections)")


def now():
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")


def header(title, cmds_file, extra=()):
    """The block every table starts with: what ran, where, when, at which commit."""
    lines = [f"# {title}", "", f"- machine: {machine()}", f"- date: {now()}", f"- commit: {commit()}"]
    lines += [f"- {e}" for e in extra]
    lines += ["- commands (WORK is a scratch directory; `scripts/reproduce.sh` ran them in this order):", "", "```"]
    lines += [l.rstrip("\n") for l in open(cmds_file)] if cmds_file and os.path.exists(cmds_file) else []
    lines += ["```", ""]
    return lines


def md_cell(v):
    return str(v).replace("|", "\\|").replace("\n", " ")


def md_table(cols, rows):
    out = ["| " + " | ".join(cols) + " |", "|" + " --- |" * len(cols)]
    out += ["| " + " | ".join(md_cell(c) for c in r) + " |" for r in rows]
    return out


def write_csv(path, cols, rows):
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(cols)
        w.writerows(rows)


def write_table(out, base, title, cmds, cols, rows, intro=(), extra=(), after=()):
    """OUT/base.md (header, intro, the table, after) and OUT/base.csv (the same rows)."""
    lines = header(title, cmds, extra) + list(intro) + ([""] if intro else []) + md_table(cols, rows) + [""] + list(after)
    with open(os.path.join(out, base + ".md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    write_csv(os.path.join(out, base + ".csv"), cols, rows)


def md_tables(path):
    """Every markdown table in a file: [(heading above it, columns, rows)]."""
    tables, heading, cur = [], "", None
    for line in open(path):
        s = line.strip()
        if s.startswith("#"):
            heading = s.lstrip("#").strip()
        if s.startswith("|") and s.endswith("|"):
            cells = [c.strip().replace("\\|", "|") for c in re.split(r"(?<!\\)\|", s[1:-1])]
            if cur is None:
                cur = (heading, cells, [])
                tables.append(cur)
            elif not all(re.fullmatch(r":?-+:?", c) for c in cells):
                cur[2].append(cells)
        else:
            cur = None
    return tables


def tables_to_csv(out, base):
    """A bench script's report OUT/base.md with several tables: OUT/base_<i>.csv for its i-th (from 1),
    and the names written."""
    names = []
    for i, (_, cols, rows) in enumerate(md_tables(os.path.join(out, base + ".md")), 1):
        names.append(f"{base}_{i}.csv")
        write_csv(os.path.join(out, names[-1]), cols, rows)
    return names


def gnuplot(out, name, script):
    """Draws OUT/name.png from a gnuplot script (kept beside it as name.gp, so the figure can be
    redrawn or restyled by hand)."""
    gp = os.path.join(out, name + ".gp")
    stamp = f"collkit {commit().split()[0]}, {now()}, {platform.node()}"
    text = (f"set terminal pngcairo size 1100,700 font 'sans,10' noenhanced\nset output '{name}.png'\n"
            f"set label 99 '{stamp}' at screen 0.99, screen 0.01 right font 'sans,7' textcolor rgb 'gray40'\n" + script)
    with open(gp, "w") as f:
        f.write(text)
    p = subprocess.run(["gnuplot", name + ".gp"], cwd=out, capture_output=True, text=True)
    if p.returncode != 0:
        die(f"gnuplot {gp}: {p.stderr.strip().splitlines()[-1] if p.stderr.strip() else 'exit %d' % p.returncode}")


def fragment(out, n, title, paragraph, body):
    d = os.path.join(out, ".reproduce")
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, f"{n}.md"), "w") as f:
        f.write("\n".join([f"## {n}. {title}", "", paragraph, ""] + list(body) + [""]) + "\n")


def size_bytes(s):
    m = re.fullmatch(r"(\d+)([KMG]?)", s)
    return int(m.group(1)) * {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30}[m.group(2)]


def size_text(b):
    for suf, f in (("G", 1 << 30), ("M", 1 << 20), ("K", 1 << 10)):
        if b >= f and b % f == 0:
            return f"{b // f}{suf}"
    return str(b)


def busbw_factor(coll, n):
    """nccl-tests' bus bandwidth factors (its doc/PERFORMANCE.md), as docs/run.md uses them."""
    if n <= 1:
        return 1.0
    if coll == "allreduce":
        return 2 * (n - 1) / n
    if coll in ("allgather", "reducescatter", "alltoall"):
        return (n - 1) / n
    return 1.0


# ---------------------------------------------------------------- 1. algorithm x topology x size
def cmd_gaps(a):
    # "not run": topologies a --match left out (the quick run's subset)
    rows = [r for r in csv.DictReader(open(os.path.join(a.out, "plan_gaps.csv"))) if r["status"] != "not run"]
    cases = []  # (collective, size) columns in the order of the sweep
    for r in rows:
        k = (r["collective"], r["size"])
        if k not in cases:
            cases.append(k)
    cases.sort(key=lambda k: (size_bytes(k[1]), COLLECTIVES.index(k[0])))
    topos = list(dict.fromkeys(r["topology"] for r in rows))
    by = {(r["topology"], r["collective"], r["size"]): r for r in rows}
    cols = ["topology", "ranks", "collective", "size", "algorithm", "predicted us", "bound us",
            "predicted busbw GB/s", "bound busbw GB/s", "gap %", "status"]
    out_rows, done, gaps = [], 0, []
    for t in topos:
        for c, s in cases:
            r = by.get((t, c, s))
            if r is None:
                continue
            n = int(r["ranks"]) if r["ranks"] else 0
            b = size_bytes(s)
            pred = float(r["predicted_us"]) if r["predicted_us"] else None
            bound = float(r["bound_us"]) if r["bound_us"] else None
            bw = lambda us: f"{b / (us * 1e3) * busbw_factor(c, n):.2f}" if us else ""
            gap = f"{float(r['gap_pct']):.1f}" if r["gap_pct"] else ""
            if gap:
                done += 1
                gaps.append(float(r["gap_pct"]))
            out_rows.append([t, n, c, s, r["algorithm"], f"{pred:.2f}" if pred else "", f"{bound:.2f}" if bound else "",
                             bw(pred), bw(bound), gap, r["status"]])
    med = statistics.median(gaps) if gaps else float("nan")
    write_table(a.out, "gaps_busbw", "Predicted bus bandwidth and gap to the bound, per topology, collective and size",
                a.cmds, cols, out_rows,
                intro=["`coll-plan generate --algo auto`'s plan per case (bench/plan_gaps.py; the full report with "
                       "its explanations is [plan_gaps.md](plan_gaps.md)). busbw = bytes / time x nccl-tests' bus "
                       "factor (AllReduce 2(n-1)/n; ReduceScatter, AllGather, AlltoAll (n-1)/n; Broadcast, Reduce 1); "
                       "the bound's busbw is the same of the lower bound's time, so gap % = 100 x (bound busbw / "
                       "predicted busbw - 1)."])
    # The heat map: one row per topology, one column per (collective, size); the colour is the gap,
    # capped at 200% so that a few outliers do not wash the rest out.
    dat = os.path.join(a.out, "gaps_heatmap.dat")
    with open(dat, "w") as f:
        f.write("topology " + " ".join(f"{c}@{s}" for c, s in cases) + "\n")
        for t in topos:
            vals = []
            for c, s in cases:
                r = by.get((t, c, s))
                vals.append(f"{min(float(r['gap_pct']), 200):.2f}" if r and r["gap_pct"] else "NaN")
            f.write('"' + t + '" ' + " ".join(vals) + "\n")
    h = max(500, 60 + 18 * len(topos))
    gnuplot(a.out, "gaps_heatmap", f"""set terminal pngcairo size 1200,{h} font 'sans,9' noenhanced
set output 'gaps_heatmap.png'
set termoption noenhanced
set title "Gap of collkit's best plan (auto) to the lower bound, % (colour capped at 200)"
set cbrange [0:200]
set palette defined (0 '#1a9850', 25 '#fee08b', 100 '#f46d43', 200 '#a50026')
set xtics rotate by 45 right
set ytics nomirror
set yrange [] reverse
set datafile missing 'NaN'
set lmargin 30
set bmargin 9
unset key
plot 'gaps_heatmap.dat' matrix rowheaders columnheaders with image pixels, \\
     '' matrix rowheaders columnheaders using 1:2:($3 >= 200 ? '>200' : sprintf('%.0f', $3)) with labels font 'sans,6'
""")
    fragment(a.out, 1, "Algorithm x topology x size: predicted busbw and gap to the bound",
             "For every node preset at 1, 2 and 16 hosts on the default fat-tree, and on tori, each collective at "
             "1 MiB, 64 MiB and 1 GiB (the quick run: dgx-h100, mi300x and pcie-8gpu at 1 and 2 hosts, 1 GiB): the plan `coll-plan generate --algo "
             "auto` picks, its simulated time as bus bandwidth, and its gap to the lower bound that holds for every "
             "plan. The heat map shows where collkit's algorithms leave bandwidth unused; plan_gaps.md explains the "
             "rows above 25% (the bound's split, witness and busiest link).",
             [f"{done} cases with a plan; median gap {med:.1f}%, {sum(1 for g in gaps if g <= 25)} within 25% of the bound.",
              "", "![gap heat map](gaps_heatmap.png)", "",
              "Tables: [gaps_busbw.md](gaps_busbw.md) ([csv](gaps_busbw.csv)); the full report "
              "[plan_gaps.md](plan_gaps.md) ([csv](plan_gaps.csv))."])


# ---------------------------------------------------------------- 2. synthesis
PUBLISHED_NOTE = ("ForestColl's paper gives no synthesis time in its abstract and its evaluation text is not held "
                  "here, so it has no point; TACOS's are the abstracts' own figures (their topologies, not ours).")


def published_synthesis_times():
    """The published synthesis times the plot puts beside collkit's: bench/published/synthesis_times.csv."""
    path = os.path.join(ROOT, "bench", "published", "synthesis_times.csv")
    with open(path, newline="") as f:
        rows = list(csv.reader(f))
    if not rows or rows[0] != ["system", "ranks", "seconds", "what", "source"]:
        die(f"{path}: expected the columns system,ranks,seconds,what,source")
    for r in rows[1:]:
        if len(r) != 5 or not r[1].isdigit() or not re.fullmatch(r"[\d.]+", r[2]):
            die(f"{path}: a row is not system,ranks,seconds,what,source: {','.join(r)}")
    return rows[0], rows[1:]


def cmd_synth(a):
    names = {0: "synth_vs_bound", 1: "synth_forestcoll", 2: "synth_mi250", 3: "synth_tori"}
    tables = md_tables(os.path.join(a.out, "synth.md"))
    if len(tables) != 4:
        die(f"synth.md: expected 4 tables, found {len(tables)}")
    for i, (_, cols, rows) in enumerate(tables):
        write_csv(os.path.join(a.out, names[i] + ".csv"), cols, rows)
    # Synthesis time against ranks: WORK/synth_scale.tsv lines "coll ranks seconds maxrss_kb status".
    pts = [l.rstrip("\n").split("\t") for l in open(os.path.join(a.work, "synth_scale.tsv")) if l.strip()]
    cols = ["collective", "ranks", "synthesis s (coll-plan generate --algo synth)", "max RSS MB", "status"]
    rows = [[c, int(n), f"{float(s):.2f}", f"{int(m) / 1024:.0f}" if st == "ok" else "", st] for c, n, s, m, st in pts]
    pub_cols, pub_rows = published_synthesis_times()
    write_table(a.out, "synth_time", "Synthesis time against ranks (dgx-h100, 1 GiB)", a.cmds, cols, rows,
                intro=["Wall time and peak memory of `coll-plan generate --algo synth` (tree packing or the AlltoAll "
                       "LP, and the simulations it chooses with) on `coll-topo synth --node dgx-h100 --nodes N`, "
                       "measured by `/usr/bin/time`. Published synthesis times (bench/published/synthesis_times.csv, "
                       "each with its source) are drawn beside them as points; they are other machines, topologies "
                       "and collectives, so they place collkit on the same axes, not in a race."],
                after=["Published synthesis times (bench/published/synthesis_times.csv):", ""]
                + md_table(pub_cols, pub_rows) + ["", PUBLISHED_NOTE])
    dat = os.path.join(a.out, "synth_time.dat")
    colls = list(dict.fromkeys(r[0] for r in rows))
    with open(dat, "w") as f:
        for c in colls:
            f.write(f'"{c}"\n')
            for r in rows:
                if r[0] == c and r[4] == "ok":
                    f.write(f"{r[1]} {r[2]}\n")
            f.write("\n\n")
        for system in dict.fromkeys(r[0] for r in pub_rows):
            f.write(f'"published: {system}"\n')
            for r in pub_rows:
                if r[0] == system:
                    f.write(f"{r[1]} {r[2]}\n")
            f.write("\n\n")
    series = len(colls) + len(dict.fromkeys(r[0] for r in pub_rows))
    gnuplot(a.out, "synth_time", """set title 'Synthesis time of coll-plan generate --algo synth (dgx-h100 x N, 1 GiB)'
set logscale xy
set xlabel 'ranks'
set ylabel 'seconds'
set grid
set key top left
plot for [i=0:%d] 'synth_time.dat' index i using 1:2 with linespoints lw 2 title columnheader(1), \\
     for [i=%d:%d] 'synth_time.dat' index i using 1:2 with points pt 7 ps 1.5 title columnheader(1)
""" % (len(colls) - 1, len(colls), series - 1))
    main = tables[0][2]
    ratios = [float(r[3]) for r in main if re.fullmatch(r"[\d.]+", r[3])]
    fc, mi = tables[1][2], tables[2][2]
    fragment(a.out, 2, "Synthesis: collkit synth against the bound, ForestColl and TACOS",
             "`coll-plan generate --algo synth` (bench/synth.sh) on every GPU preset at 1, 2, 4 and 16 hosts, against the lower "
             "bound and the best classic algorithm; on ForestColl's A100 and MI250 topologies against the optimum its "
             "method targets; on TACOS's tori against the fraction of the ideal TACOS reports. Then how synthesis time "
             "grows with ranks (log-log).",
             [f"Over {len(ratios)} synthesised rows, synth / bound: median {statistics.median(ratios):.3f}, worst "
              f"{max(ratios):.3f}." if ratios else "No synthesised rows.",
              "ForestColl A100: " + "; ".join(f"{r[0]} {r[5]} of the optimum" for r in fc) + ".",
              "ForestColl MI250: " + "; ".join(f"{r[0]} {r[4]} of the optimum" for r in mi) + ".",
              "Published synthesis times beside ours: " + "; ".join(f"{r[0]} {r[1]} ranks {r[2]} s" for r in pub_rows)
              + ". " + PUBLISHED_NOTE,
              "Synthesis time against ranks: up to " + str(max([r[1] for r in rows if r[4] == "ok"], default=0)) + " ranks; "
              + (f"larger clusters refused ({next(r[4] for r in rows if r[4] != 'ok')})" if any(r[4] != "ok" for r in rows)
                 else "every size of the sweep synthesised") + ".",
              "", "![synthesis time](synth_time.png)", "",
              "Tables: [synth.md](synth.md) ([vs bound csv](synth_vs_bound.csv), [ForestColl csv](synth_forestcoll.csv), "
              "[MI250 csv](synth_mi250.csv), [tori csv](synth_tori.csv)); [synth_time.md](synth_time.md) "
              "([csv](synth_time.csv))."])


# ---------------------------------------------------------------- 3. execution vs Open MPI
def cmd_mpi(a):
    rows = list(csv.DictReader(open(os.path.join(a.work, "coll_run_mpi.csv"))))
    cols = ["collective", "bytes", "size", "best plan", "plan us", "native us", "ratio (median)", "best-of ratio",
            "wrong elements (all runs)", "repeats"]
    out = [[r["collective"], r["bytes"], size_text(int(r["bytes"])), r["algorithm"], r["plan_us"], r["native_us"],
            r["ratio"], r["best_of"], r["wrong"], r["repeats"]] for r in rows]
    write_table(a.out, "coll_run_mpi", "coll-run's best plan against Open MPI's collectives, per size", a.cmds, cols, out,
                intro=["bench/coll_run_mpi.sh under `mpirun --oversubscribe -np 4` on this machine: every applicable "
                       "plan, and per size the one with the lowest median paired ratio (plan time / Open MPI's "
                       "non-blocking collective, timed in the same table). Wrong elements: every element of every "
                       "run checked (must be 0). The script's own report is [coll_run_mpi.txt](coll_run_mpi.txt)."])
    colls = list(dict.fromkeys(r["collective"] for r in rows))
    with open(os.path.join(a.out, "coll_run_mpi.dat"), "w") as f:
        for c in colls:
            wrong = next(r["wrong"] for r in rows if r["collective"] == c)
            f.write(f'"{c} (#wrong {wrong})"\n')
            for r in rows:
                if r["collective"] == c:
                    f.write(f"{r['bytes']} {r['ratio']}\n")
            f.write("\n\n")
    gnuplot(a.out, "coll_run_mpi", """set title "coll-run's best plan / Open MPI's collective (time ratio, mpirun -np 4; below 1: collkit faster)"
set logscale x 2
set format x '%%.0b%%B'
set xlabel 'message size (bytes)'
set ylabel 'time ratio'
set grid
set yrange [0:*]
set arrow from graph 0, first 1 to graph 1, first 1 nohead dt 2 lc rgb 'black'
plot for [i=0:%d] 'coll_run_mpi.dat' index i using 1:2 with linespoints lw 2 title columnheader(1)
""" % (len(colls) - 1))
    wrong = sum(int(next(r["wrong"] for r in rows if r["collective"] == c)) for c in colls)  # a collective's total on each row
    big = [float(r["ratio"]) for r in rows if int(r["bytes"]) >= 4 << 20]
    fragment(a.out, 3, "Execution: coll-run's best plan against Open MPI",
             "AllReduce, AllGather and ReduceScatter run by coll-run's mpi backend under `mpirun -np 4` on one host, "
             "every plan checked element by element, against Open MPI's own collective timed in the same table. "
             "The ratio plot shows, per size, the best plan's time over Open MPI's (below 1: collkit faster).",
             [f"Wrong elements over every run: {wrong}. "
              + (f"From 4 MiB up, median ratio {statistics.median(big):.3f} (worst {max(big):.3f})." if big else ""),
              "", "![ratio to Open MPI](coll_run_mpi.png)", "",
              "Tables: [coll_run_mpi.md](coll_run_mpi.md) ([csv](coll_run_mpi.csv)); the script's report "
              "[coll_run_mpi.txt](coll_run_mpi.txt)."])


# ---------------------------------------------------------------- 4. fidelity
def cmd_fidelity(a):
    summary_csvs = tables_to_csv(a.out, "fidelity")
    rows = list(csv.DictReader(open(os.path.join(a.work, "fidelity_rows.csv"))))
    cols = ["collective", "algorithm", "size", "measured us", "predicted us (before)", "error % (before)",
            "predicted us (after)", "error % (after)"]
    out = [[r["collective"], r["algorithm"], r["size"], r["measured_us"], r["predicted_before_us"], r["error_before_pct"],
            r["predicted_after_us"], r["error_after_pct"]] for r in rows]
    eb = [abs(float(r["error_before_pct"])) for r in rows]
    ea = [abs(float(r["error_after_pct"])) for r in rows]
    mb, ma = statistics.median(eb), statistics.median(ea)
    write_table(a.out, "fidelity_rows", "Simulator fidelity: every row predicted against measured", a.cmds, cols, out,
                intro=[f"{len(rows)} rows; median |error| {mb:.1f}% before calibration, {ma:.1f}% after. Summary by "
                       "collective and algorithm: [fidelity.md](fidelity.md) (bench/fidelity.sh)."])
    with open(os.path.join(a.out, "fidelity.dat"), "w") as f:
        for label, key in ((f"before calibration (median |error| {mb:.1f}%)", "predicted_before_us"),
                           (f"after coll-run calibrate (median |error| {ma:.1f}%)", "predicted_after_us")):
            f.write(f'"{label}"\n')
            for r in rows:
                f.write(f"{r['measured_us']} {r[key]}\n")
            f.write("\n\n")
    gnuplot(a.out, "fidelity", """set title 'Predicted against measured time, mpirun -np 4 on this host'
set logscale xy
set xlabel 'measured us'
set ylabel 'predicted us'
set grid
set key top left
set size square
plot 'fidelity.dat' index 0 using 1:2 with points pt 7 ps 0.8 title columnheader(1), \\
     '' index 1 using 1:2 with points pt 5 ps 0.8 title columnheader(1), \\
     x with lines dt 2 lc rgb 'black' title 'predicted = measured'
""")
    fragment(a.out, 4, "Fidelity: the simulator against measurement, before and after calibration",
             "coll-run's measured times on this host (no `--topo`: the discovered topology) against the simulator's "
             "predictions of the same plans, first on the discovered topology, then on the one `coll-run calibrate` "
             "fits. Points on the diagonal are exact predictions.",
             [f"{len(rows)} rows: median |error| {mb:.1f}% before calibration, {ma:.1f}% after (worst {max(eb):.1f}% "
              f"and {max(ea):.1f}%).", "", "![fidelity scatter](fidelity.png)", "",
              "Tables: [fidelity.md](fidelity.md) (per collective and algorithm, bench/fidelity.sh; "
              + ", ".join(f"[{c}]({c})" for c in summary_csvs) + "); "
              "[fidelity_rows.md](fidelity_rows.md) ([csv](fidelity_rows.csv))."])


# ---------------------------------------------------------------- 5. adaptation
def parse_adapt(path):
    """[(fault, size, healthy, degraded, adapted, recovered, detected at, recovered at, adapted plan)] from adapt.md's
    blocks (coll-run adapt's rows: size, the three times, recovered, the iterations, #wrong, the plan)."""
    rows, fault = [], ""
    for line in open(path):
        s = line.strip()
        if s.startswith("## --inject "):
            fault = s[len("## --inject "):]
        elif fault and s and not s.startswith("#") and not s.startswith("`"):
            f = s.split()
            if len(f) >= 9 and re.fullmatch(r"\d+[KMG]?", f[0]):
                recovered, rest = (" ".join(f[4:6]), f[6:]) if f[4] == "(no" else (f[4], f[5:])
                rows.append([fault, f[0], f[1], f[2], f[3], recovered, rest[0], rest[1], " ".join(rest[3:])])
    return rows


def cmd_adapt(a):
    rows = parse_adapt(os.path.join(a.out, "adapt.md"))
    if not rows:
        die("adapt.md: no healthy/degraded/adapted rows")
    cols = ["fault injected", "size", "healthy us", "degraded us", "adapted us", "recovered", "detected at iteration",
            "recovered at iteration", "adapted plan"]
    write_table(a.out, "adapt_times", "Adaptation: ring AllReduce healthy, degraded and adapted", a.cmds, cols, rows,
                intro=["`coll-run adapt` under `mpirun -np 4` (bench/adapt.sh; its full report with the probe's "
                       "detection runs is [adapt.md](adapt.md)). recovered = (degraded - adapted) / "
                       "(degraded - healthy); detected at: the iteration of the degraded ring after which the slow "
                       "pairs were named; recovered at: the first iteration run with the adapted plan."])
    labels = []
    with open(os.path.join(a.out, "adapt_times.dat"), "w") as f:
        for r in rows:
            label = f"{r[0].replace('slow-link=', 'link ').replace('slow-rank=', 'rank ')} {r[1]}"
            labels.append(label)
            f.write(f'"{label}" {r[2]} {r[3]} {r[4]}\n')
    gnuplot(a.out, "adapt_times", """set title 'Ring AllReduce under injected faults: healthy, degraded, adapted (mpirun -np 4)'
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.8 border -1
set logscale y
set ylabel 'time us (log)'
set xtics rotate by 30 right
set bmargin 8
set grid y
plot 'adapt_times.dat' using 2:xtic(1) title 'healthy', '' using 3 title 'degraded', '' using 4 title 'adapted'
""")
    body = ["Iterations to detect and to recover: the columns `detected at iteration` and `recovered at iteration` "
            "of the table: `coll-run adapt` times every send of the running ring per peer, names the slow pairs once "
            "two iterations agree and runs the adapted plan from the next iteration.",
            "", "![healthy, degraded, adapted](adapt_times.png)", "",
            "Tables: [adapt_times.md](adapt_times.md) ([csv](adapt_times.csv)); bench/adapt.sh's report [adapt.md](adapt.md)."]
    tb = os.path.join(a.out, "testbed_adapt.md")
    if a.testbed == "ran":
        tables_to_csv(a.out, "testbed_adapt")
        body.append("Across hosts (network namespaces, a tc-slowed link, nothing injected): "
                    "[testbed_adapt.md](testbed_adapt.md) (bench/testbed_adapt.sh).")
    else:
        body.append(f"Across hosts (bench/testbed_adapt.sh): {a.testbed}.")
    fragment(a.out, 5, "Adaptation: healthy, degraded, adapted",
             "`coll-run adapt` with slow links and a slow rank injected: the ring AllReduce's time on a healthy "
             "machine, with the fault, and re-planned from what the ring's own iterations showed: a slow link is routed "
             "around by a ring order; a slow rank, which every ring passes through, by the straggler-aware AllReduce.", body)


# ---------------------------------------------------------------- 6. overlap
def cmd_overlap(a):
    # Lines "label<TAB>file.json<TAB>predicted|measured": coll-overlap --json, or coll-overlap run's.
    cases = [l.rstrip("\n").split("\t") for l in open(os.path.join(a.work, "overlap_cases.tsv")) if l.strip()]
    cols = ["layout", "source", "strategy", "compute ms", "contention slowdown ms", "exposed comm ms", "pipeline bubble ms",
            "step ms", "comm ms", "overlap ratio"]
    rows, dat = [], []
    for label, path, source in cases:
        j = json.load(open(path))
        # coll-overlap run's JSON holds the model's prediction for the scaled layout ("strategies")
        # and what ran ("measured": the same fields per strategy, measured).
        key = "measured" if source == "measured" else "strategies"
        if source == "measured":
            label += " (measured)"
        if not isinstance(j.get(key), list):
            die(f"{path}: no '{key}' list")
        for s in j[key]:
            missing = [k for k in ("name", "compute_us", "compute_under_overlap_us", "exposed_comm_us", "step_us",
                                   "comm_us", "overlap_ratio") if k not in s]
            if missing:
                die(f"{path}: a strategy without {', '.join(missing)}")
            comp = s["compute_us"] / 1e3
            slow = (s["compute_under_overlap_us"] - s["compute_us"]) / 1e3
            exp = s["exposed_comm_us"] / 1e3
            bub = s.get("bubble_us", 0.0) / 1e3
            rows.append([label, source, s["name"], f"{comp:.2f}", f"{slow:.2f}", f"{exp:.2f}", f"{bub:.2f}",
                         f"{s['step_us'] / 1e3:.2f}", f"{s['comm_us'] / 1e3:.2f}", f"{abs(s['overlap_ratio']) if abs(s['overlap_ratio']) < 5e-4 else s['overlap_ratio']:.3f}"])
            dat.append((label, s["name"], comp, slow, exp, bub))
    write_table(a.out, "overlap_predicted", "Overlap: step-time breakdown per strategy", a.cmds, cols, rows,
                intro=["`coll-overlap --json` per layout (docs/overlap.md): the step is compute + the slowdown of compute "
                       "running beside communication (contention) + the communication the compute stream waits for "
                       "(exposed) + the pipeline bubble."])
    labels = list(dict.fromkeys(d[0] for d in dat))
    with open(os.path.join(a.out, "overlap_predicted.dat"), "w") as f:
        for lab in labels:
            f.write(f'"{lab}"\n')  # skipped by the plot's "every ::1"
            for d in dat:
                if d[0] == lab:
                    f.write(f'"{d[1]}" {d[2]:.4f} {d[3]:.4f} {d[4]:.4f} {d[5]:.4f}\n')
            f.write("\n\n")
    plots = []
    for i, lab in enumerate(labels):
        plots.append(f"""set title "{lab}"
plot 'overlap_predicted.dat' index {i} every ::1 using 2:xtic(1) title 'compute', '' index {i} every ::1 using 3 title 'contention slowdown', \\
     '' index {i} every ::1 using 4 title 'exposed communication', '' index {i} every ::1 using 5 title 'pipeline bubble'""")
    gnuplot(a.out, "overlap_predicted", f"""set terminal pngcairo size 1100,{420 * len(labels)} font 'sans,10' noenhanced
set output 'overlap_predicted.png'
set style data histograms
set style histogram rowstacked
set style fill solid 0.85 border -1
set boxwidth 0.6
set ylabel 'predicted step time, ms'
set grid y
set key outside right
set yrange [0:*]
set multiplot layout {len(labels)},1
""" + "\n".join(plots) + "\nunset multiplot\n")
    body = [f"{len(labels)} layouts, {len(rows)} strategy rows.", "",
            "![step-time breakdown](overlap_predicted.png)", "",
            "Tables: [overlap_predicted.md](overlap_predicted.md) ([csv](overlap_predicted.csv))."]
    if a.measured:
        body.append(f"Measured: {a.measured}")
    comp = os.path.join(a.out, "overlap_published.md")
    if os.path.exists(comp):
        body.append("Published systems (Flux, Async-TP, Domino, Comet; scripts/overlap-compare.sh): "
                    "[overlap_published.md](overlap_published.md) ([csv](overlap_published.csv)); the published "
                    "figures and why they differ are in docs/overlap.md.")
    fragment(a.out, 6, "Overlap: step-time breakdown per strategy",
             "Where a training step's time goes under each overlap strategy coll-overlap models (none, dp-bucket, "
             "fsdp-prefetch, tp-decompose, moe-pipeline, auto), predicted with coll-plan's simulator for the "
             "collectives; beside it, the measured breakdown of a scaled layout's strategies run for real "
             "under mpirun (`coll-overlap run`: OpenBLAS GEMMs and the collectives on a communication thread).", body)


def cmd_overlap_published(a):
    """scripts/overlap-compare.sh's lines 'LABEL   1.234x' into a table."""
    rows = []
    for line in open(os.path.join(a.work, "overlap_compare.txt")):
        m = re.match(r"(.*\S)\s+([\d.]+)x\s*$", line)
        if m:
            rows.append([m.group(1), m.group(2)])
    if not rows:
        die("overlap_compare.txt: no 'LABEL 1.23x' lines")
    write_table(a.out, "overlap_published", "Overlap: collkit's predicted speedups on the published systems' layouts",
                a.cmds, ["published layout (and baseline)", "predicted speedup"], rows,
                intro=["scripts/overlap-compare.sh: each layout Flux, PyTorch Async-TP, Domino and Comet published, on "
                       "collkit's presets; the speedup of the matching strategy over the baseline that system was "
                       "compared against. The published figures and the reasons for the differences: docs/overlap.md."])


# ---------------------------------------------------------------- 7. scale
def cmd_scale(a):
    pts = [l.rstrip("\n").split("\t") for l in open(os.path.join(a.work, "scale.tsv")) if l.strip()]
    # lines: ranks step algo seconds maxrss_kb status
    cols = ["ranks", "algorithm", "step", "wall s", "max RSS MB", "status"]
    rows = [[int(n), al, st, f"{float(s):.2f}", f"{int(m) / 1024:.0f}", stat] for n, st, al, s, m, stat in pts]
    write_table(a.out, "scale", "Scale: plan, verify and simulate time and memory against ranks", a.cmds, cols, rows,
                intro=["Each step a separate process of the command-line tools, measured by `/usr/bin/time -f '%e "
                       "%M'` (wall seconds, peak resident set); the topology is `coll-topo synth --node dgx-h100 "
                       "--nodes N` (8 GPUs a host, the default rail-optimised fat-tree), AllReduce of 1 GiB."])
    steps = list(dict.fromkeys(r[2] for r in rows))
    with open(os.path.join(a.out, "scale.dat"), "w") as f:
        for st in steps:
            f.write(f'"{st}"\n')
            for r in rows:
                if r[2] == st and r[5] == "ok":
                    f.write(f"{r[0]} {r[3]} {r[4]}\n")
            f.write("\n\n")
    n = len(steps) - 1
    gnuplot(a.out, "scale", f"""set terminal pngcairo size 1100,900 font 'sans,10' noenhanced
set output 'scale.png'
set multiplot layout 2,1
set logscale xy
set xlabel 'ranks (dgx-h100 x N)'
set grid
set key top left
set title 'Wall time per step (one process each, 1 GiB AllReduce)'
set ylabel 'seconds'
plot for [i=0:{n}] 'scale.dat' index i using 1:2 with linespoints lw 2 title columnheader(1)
set title 'Peak memory (max RSS)'
set ylabel 'MB'
plot for [i=0:{n}] 'scale.dat' index i using 1:3 with linespoints lw 2 title columnheader(1)
unset multiplot
""")
    top = max(r[0] for r in rows)
    at_top = [r for r in rows if r[0] == top]
    fragment(a.out, 7, "Scale: plan, verify and simulate against ranks",
             "How the planner, the symbolic verifier and the simulator grow with the cluster: each step run as a user "
             "runs it (one `coll-plan` process), its wall time and peak memory, from one host to the largest "
             "cluster of the run.",
             [f"At {top} ranks: " + "; ".join(f"{r[2]} ({r[1]}) {r[3]} s, {r[4]} MB" + ("" if r[5] == "ok" else f" ({r[5]})")
                                              for r in at_top) + ".",
              "", "![scale](scale.png)", "", "Tables: [scale.md](scale.md) ([csv](scale.csv))."])


# ---------------------------------------------------------------- README
def cmd_readme(a):
    d = os.path.join(a.out, ".reproduce")
    lines = ["# Evaluation tables and figures", "",
             f"Regenerated by `{a.invocation}` (scripts/reproduce.sh) on {machine()}, {now()}, commit {commit()}, "
             f"in {a.seconds} s. Each table's file is headed with the exact commands that made it; each table has a "
             "CSV beside it, each figure its gnuplot script (`.gp`, with its `.dat`).", ""]
    if a.quick:
        lines += ["**This is a `--quick` run** (smaller sweeps, fewer repeats): for checking that the pipeline works, "
                  "not for quoting.", ""]
    for n in range(1, 8):
        p = os.path.join(d, f"{n}.md")
        if os.path.exists(p):
            lines += [l.rstrip("\n") for l in open(p)]
        else:
            lines += [f"## {n}.", "", "(this section did not run: see the run's stderr)", ""]
    if os.path.exists(os.path.join(a.out, "recorded.md")):
        lines += ["## Other recorded results", "",
                  "Benchmark logs that scripts/reproduce.sh does not regenerate (Google Benchmark runs, the GPU check, "
                  "the multi-host sweep, autotune, the shell) and the analysis of plan_gaps.md: "
                  "[recorded.md](recorded.md).", ""]
    with open(os.path.join(a.out, "README.md"), "w") as f:
        f.write("\n".join(lines))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("section", choices=["gaps", "synth", "mpi", "fidelity", "adapt", "overlap", "overlap-published",
                                        "scale", "readme", "note"])
    ap.add_argument("--out", required=True)
    ap.add_argument("--work", default="")
    ap.add_argument("--cmds", default="")
    ap.add_argument("--testbed", default="not run")
    ap.add_argument("--measured", default="")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--seconds", default="?")
    ap.add_argument("--invocation", default="scripts/reproduce.sh")
    ap.add_argument("--n", type=int, default=0, help="note: the section number")
    ap.add_argument("--title", default="", help="note: the section title")
    ap.add_argument("--text", default="", help="note: the one line saying why the section did not run")
    a = ap.parse_args()
    if a.section == "note":
        fragment(a.out, a.n, a.title, a.text, [])
        return
    globals()["cmd_" + a.section.replace("-", "_")](a)


if __name__ == "__main__":
    main()
