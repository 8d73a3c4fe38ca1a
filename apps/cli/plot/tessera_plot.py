#!/usr/bin/python3
"""Plots of a Tessera tuning database, called by `tessera plot DB -o DIR`.

Reads the SQLite file read-only and writes into DIR, each as PNG and SVG:
  roofline_<target>   per chip target: every record's achieved MACs/cycle against its
                      arithmetic intensity (MACs per byte of DRAM, or of MEM on chips without
                      DRAM), with its problem bound (chipsim's problem_bound), under the
                      compute roof (the chip's peak MACs/cycle) and the DRAM bandwidth roof,
                      all taken from chipsim's report as stored with the record;
  tuning_curves       per tuned workload: the best time found against measurements, each
                      candidate's time, and what the cost models predicted for it beforehand;
  heatmap_<target>_<op> per chip target and op with M and N parameters: the fraction of the
                      problem bound (chipsim's problem bound / measured cycles) over M x N,
                      the best over the other parameters;
and report.html, one self-contained page (images inlined) with the plots and the records.
Exit status 1 with a message on stderr for anything it cannot read.
"""
import argparse
import base64
import html
import json
import os
import sqlite3
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

SCHEMA = 3


def fail(message):
    sys.stderr.write(message + "\n")
    sys.exit(1)


def read_records(path):
    if not os.path.exists(path):
        fail(f"tuning database {path} does not exist")
    try:
        db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        version = db.execute("PRAGMA user_version").fetchone()[0]
    except sqlite3.DatabaseError as e:
        fail(f"tuning database {path} is not an SQLite file ({e})")
    if version > SCHEMA:
        fail(f"tuning database {path} has schema {version}, newer than this plot script reads ({SCHEMA})")
    if version < SCHEMA:
        fail(f"tuning database {path} has the older schema {version}; open it writable once "
             f"(e.g. `tessera db gc --keep 1000000`) to migrate it")
    rows = db.execute(
        "SELECT r.id, w.description, COALESCE(w.op, ''), t.name, t.chip, r.cycles, r.seconds, "
        "COALESCE(r.details, '{}'), r.created_at FROM records r JOIN workloads w ON w.key = r.workload_key "
        "JOIN targets t ON t.hash = r.target_hash ORDER BY r.id").fetchall()
    records = []
    for rid, description, op, target, chip, cycles, seconds, details, created in rows:
        words = (op or description).split()
        params = dict(w.split("=", 1) for w in words[1:] if "=" in w)
        records.append({"id": rid, "description": description, "op": words[0] if words else "", "params": params,
                        "target": target, "chip": bool(chip), "cycles": cycles, "seconds": seconds,
                        "details": json.loads(details), "created": created})
    return records


def save(fig, out, name, written):
    for ext in ("png", "svg"):
        fig.savefig(os.path.join(out, f"{name}.{ext}"), dpi=110, bbox_inches="tight")
    plt.close(fig)
    written.append(name)


def safe_name(text):
    return "".join(c if c.isalnum() or c in "-_" else "_" for c in text)


def bound_cycles(r):
    """The problem bound of a chip record (chipsim: the algorithm's MACs at peak and its inputs and
    outputs crossing each level once); records stored before it existed give their program's
    roofline instead."""
    d = r["details"]
    return d.get("problem_bound_cycles") or d.get("roofline_cycles")


def efficiency(r):
    if r["cycles"] and bound_cycles(r):
        return bound_cycles(r) / r["cycles"]
    return None


def traffic(r):
    """Bytes a record moved at the chip's outer memory level: DRAM where the chip has one, else
    its on-chip MEM (streaming chips such as tsp-mini hold their operands in MEM)."""
    d = r["details"]
    if d.get("dram_bytes"):
        return "DRAM", d["dram_bytes"]
    return "MEM", d.get("bytes", {}).get("MEM", 0)


def rooflines(records, out, written):
    for target in sorted({r["target"] for r in records if r["chip"]}):
        rs = [r for r in records if r["target"] == target and r["details"].get("macs") and traffic(r)[1]]
        if not rs:
            continue
        level = traffic(rs[0])[0]
        peak = max(r["details"]["peak_macs_per_cycle"] for r in rs)
        bandwidth = max(r["details"].get("dram_bytes_per_cycle", 0) for r in rs) if level == "DRAM" else 0
        xs = [r["details"]["macs"] / traffic(r)[1] for r in rs]
        ys = [r["details"]["macs"] / r["cycles"] for r in rs]
        bounds = [r["details"]["macs"] / bound_cycles(r) for r in rs if bound_cycles(r)]
        fig, ax = plt.subplots(figsize=(7, 4.5))
        lo, hi = min(xs) / 2, max(xs) * 2
        grid = [lo * (hi / lo) ** (i / 200) for i in range(201)]
        ax.plot(grid, [peak] * len(grid), "k--", label=f"compute roof {peak:g} MACs/cycle")
        if bandwidth:
            ax.plot(grid, [min(peak, bandwidth * x) for x in grid], "k-", label=f"DRAM roof {bandwidth:g} B/cycle")
        ax.scatter(xs, ys, c="tab:blue", s=18, label="tuned kernels (achieved)")
        if len(bounds) == len(xs):
            ax.scatter(xs, bounds, facecolors="none", edgecolors="tab:red", s=24, label="problem bound (chipsim)")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel(f"arithmetic intensity (MACs per {level} byte)")
        ax.set_ylabel("MACs per cycle")
        ax.set_title(f"roofline on {target} ({len(rs)} records)")
        ax.legend(fontsize=8)
        save(fig, out, f"roofline_{safe_name(target)}", written)


def tuning_curves(records, out, written):
    tuned = [r for r in records if r["details"].get("best_so_far")]
    if not tuned:
        return
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for r in tuned[:12]:
        best = [s * 1e3 for s in r["details"]["best_so_far"]]
        ax.plot(range(1, len(best) + 1), best, marker=".", label=f"#{r['id']} {r['description'][:40]}")
        ax.scatter(range(1, len(best) + 1), [s * 1e3 for s in r["details"]["history"]], s=6, alpha=0.4)
        # The cost models' predictions, made before each candidate was measured (0: none).
        for key, marker in (("predicted_learned", "x"), ("predicted_analytic", "+")):
            predicted = r["details"].get(key) or []
            points = [(i + 1, p * 1e3) for i, p in enumerate(predicted) if isinstance(p, (int, float)) and p > 0]
            if points:
                ax.scatter([x for x, _ in points], [y for _, y in points], s=14, marker=marker, alpha=0.6,
                           label=f"#{r['id']} {key.replace('_', ' ')}")
    ax.set_xlabel("measurements")
    ax.set_yscale("log")  # a slow candidate is often 100x the best
    ax.set_ylabel("time (ms): best so far (line), each candidate (dots),\npredicted by the cost models (x learned, + analytic)")
    ax.set_title("tuning curves")
    ax.legend(fontsize=7)
    save(fig, out, "tuning_curves", written)


def heatmaps(records, out, written):
    groups = {}
    for r in records:
        e = efficiency(r)
        if e is None or "M" not in r["params"] or "N" not in r["params"]:
            continue
        key = (r["target"], r["op"])
        m, n = int(r["params"]["M"]), int(r["params"]["N"])
        cell = groups.setdefault(key, {})
        cell[(m, n)] = max(cell.get((m, n), 0.0), e)
    for (target, op), cells in sorted(groups.items()):
        ms = sorted({m for m, _ in cells})
        ns = sorted({n for _, n in cells})
        grid = [[cells.get((m, n), float("nan")) for n in ns] for m in ms]
        fig, ax = plt.subplots(figsize=(1.2 + 0.9 * len(ns), 1.0 + 0.6 * len(ms)))
        im = ax.imshow(grid, cmap="viridis", vmin=0, vmax=1, aspect="auto", origin="lower")
        ax.set_xticks(range(len(ns)), [str(n) for n in ns])
        ax.set_yticks(range(len(ms)), [str(m) for m in ms])
        ax.set_xlabel("N")
        ax.set_ylabel("M")
        for i, row in enumerate(grid):
            for j, v in enumerate(row):
                if v == v:
                    ax.text(j, i, f"{v:.2f}", ha="center", va="center", fontsize=7, color="w" if v < 0.6 else "k")
        fig.colorbar(im, ax=ax, label="fraction of the problem bound")
        ax.set_title(f"{op} on {target} (best over other parameters)")
        save(fig, out, f"heatmap_{safe_name(target)}_{safe_name(op)}", written)


def report(records, out, written, db_path):
    e = html.escape
    parts = ["<!DOCTYPE html><html><head><meta charset='utf-8'><title>Tessera tuning report</title>",
             "<style>body{font-family:sans-serif;margin:2em;background:#fff;color:#222}"
             "table{border-collapse:collapse;font-size:12px}td,th{border:1px solid #ccc;padding:2px 6px}"
             "th{background:#e8eef8}img{max-width:48%;margin:4px;border:1px solid #ddd}</style></head><body>",
             f"<h1>Tuning database {e(db_path)}</h1><p>{len(records)} records</p><div>"]
    for name in written:
        with open(os.path.join(out, f"{name}.png"), "rb") as f:
            data = base64.b64encode(f.read()).decode()
        parts.append(f"<img alt='{e(name)}' src='data:image/png;base64,{data}'>")
    parts.append("</div><h2>Records</h2><table><tr><th>id</th><th>workload</th><th>target</th>"
                 "<th>measured</th><th>fraction of bound</th><th>created</th></tr>")
    for r in records:
        measured = f"{r['cycles']} cycles" if r["cycles"] is not None else f"{r['seconds'] * 1e3:.4f} ms"
        eff = efficiency(r)
        parts.append(f"<tr><td>{r['id']}</td><td>{e(r['description'])}</td><td>{e(r['target'])}</td>"
                     f"<td>{e(measured)}</td><td>{'' if eff is None else f'{eff:.2f}'}</td><td>{e(r['created'])}</td></tr>")
    parts.append("</table></body></html>\n")
    with open(os.path.join(out, "report.html"), "w", encoding="utf-8") as f:
        f.write("".join(parts))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("database")
    parser.add_argument("-o", "--output", required=True)
    args = parser.parse_args()
    records = read_records(args.database)
    try:
        os.makedirs(args.output, exist_ok=True)
    except OSError as e:
        fail(f"cannot create the output directory {args.output}: {e.strerror}")
    if not os.access(args.output, os.W_OK):
        fail(f"cannot write into the output directory {args.output}")
    written = []
    rooflines(records, args.output, written)
    tuning_curves(records, args.output, written)
    heatmaps(records, args.output, written)
    report(records, args.output, written, args.database)
    print(json.dumps({"records": len(records), "plots": written, "report": os.path.join(args.output, "report.html")}))


if __name__ == "__main__":
    main()
