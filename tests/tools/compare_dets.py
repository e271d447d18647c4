#!/usr/bin/env python3
"""Detections of one package on two engines, compared one to one (issue 14's bar).

    tests/tools/compare_dets.py [--json OUT] NAME A.json B.json [NAME A.json B.json ...]

A and B are COCO results JSON (yquant eval --dets), the same images on two engines (the CPU
int8 reference, the GPU).  Per image, each of A's detections, best score first, is matched to
an unmatched detection of B of the same class whose four box values are within --px pixels and
whose score is within --score; the rest are counted as differing.  A line per NAME: detections
on each side, the share matched (of the larger count), the largest box and score difference
among the matched, and whether it meets --min-match.  With stats files beside the dets
(A.json -> A.stats.json, written by yquant eval --json) the two mAPs are compared against
--map (points).  Exit 1 when a NAME misses a bar.
"""
import argparse
import json
import os
import sys
from collections import defaultdict


def load(path):
    with open(path) as f:
        rows = json.load(f)
    by_img = defaultdict(list)
    for r in rows:
        by_img[r["image_id"]].append((r["category_id"], r["bbox"], r["score"]))
    for v in by_img.values():
        v.sort(key=lambda d: -d[2])
    return by_img, len(rows)


def compare(a_path, b_path, px, score_tol):
    a, na = load(a_path)
    b, nb = load(b_path)
    matched = 0
    worst_box = worst_score = 0.0
    for img in set(a) | set(b):
        pool = list(b.get(img, []))
        used = [False] * len(pool)
        for cat, box, sc in a.get(img, []):
            best, best_d = -1, None
            for j, (c2, box2, sc2) in enumerate(pool):
                if used[j] or c2 != cat:
                    continue
                d = max(abs(u - v) for u, v in zip(box, box2))
                ds = abs(sc - sc2)
                if d <= px and ds <= score_tol and (best_d is None or (d, ds) < best_d):
                    best, best_d = j, (d, ds)
            if best >= 0:
                used[best] = True
                matched += 1
                worst_box = max(worst_box, best_d[0])
                worst_score = max(worst_score, best_d[1])
    return na, nb, matched, worst_box, worst_score


def stats_of(dets_path):
    p = dets_path[:-5] + ".stats.json" if dets_path.endswith(".json") else dets_path + ".stats.json"
    if not os.path.exists(p):
        return None
    with open(p) as f:
        return json.load(f).get("map")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("triples", nargs="+", help="NAME A.json B.json, repeated")
    ap.add_argument("--px", type=float, default=0.5, help="box tolerance in pixels (0.5)")
    ap.add_argument("--score", type=float, default=1e-3, help="score tolerance (1e-3)")
    ap.add_argument("--min-match", type=float, default=99.5, help="percent of detections matched (99.5)")
    ap.add_argument("--map", type=float, default=0.05, help="largest mAP difference in points (0.05)")
    ap.add_argument("--json", help="write the rows as JSON here")
    a = ap.parse_args()
    if len(a.triples) % 3:
        ap.error("arguments come in threes: NAME A.json B.json")
    rows, bad = [], 0
    print("%-36s %7s %7s %8s %8s %9s %8s %8s %6s  %s" % ("package", "dets A", "dets B", "matched", "box px",
                                                        "score", "mAP A", "mAP B", "diff", "bar"))
    for k in range(0, len(a.triples), 3):
        name, pa, pb = a.triples[k:k + 3]
        na, nb, m, wb, ws = compare(pa, pb, a.px, a.score)
        share = 100.0 * m / max(na, nb, 1)
        ma, mb = stats_of(pa), stats_of(pb)
        dmap = abs(ma - mb) * 100 if ma is not None and mb is not None else None
        ok = share >= a.min_match and (dmap is None or dmap <= a.map)
        bad += not ok
        rows.append(dict(name=name, dets_a=na, dets_b=nb, matched=m, matched_pct=share, max_box_px=wb,
                         max_score=ws, map_a=ma, map_b=mb, map_diff_points=dmap, met=ok))
        fm = lambda v: "%8.2f" % (100 * v) if v is not None else "%8s" % "-"
        print("%-36s %7d %7d %7.2f%% %8.3f %9.2e %s %s %6s  %s" % (
            name, na, nb, share, wb, ws, fm(ma), fm(mb), "%.3f" % dmap if dmap is not None else "-",
            "met" if ok else "NOT met"))
    if a.json:
        with open(a.json, "w") as f:
            json.dump(rows, f, indent=1)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
