#!/usr/bin/env python3
"""The rules of a resume with a changed mixture (docs/checkpoint.md), checked
on the traces of the run before and after the change (tests/scripts/resume_mix.sh).

A document is known by its file's name and its place in the file, so the
same document is recognized across data versions whose file-order indexes
differ. For every source kept across the change:
  - within the epoch the change interrupted, no document is consumed twice
    (before the change or after it);
  - where the run gets to that epoch's end, every document of the new data
    was consumed in it, and those consumed before the change whose file is
    gone are the only others; the next epoch is a whole permutation;
  - a removed file's documents not consumed before the change are dropped, as
    many as the warning says.
An added source starts at cursor 0; a removed one does not appear. From the
change on, each step's quota of each source is within a sample and a half of
global_batch x its new weight. The steps before the change are the
uninterrupted run's.
"""
import argparse
import json
import os
import subprocess
import sys


def dump(tool, kind, path):
    return json.loads(subprocess.run([tool, kind, path], check=True, capture_output=True, text=True).stdout)


def identities(source):
    """index -> (file name, place in the file), for one source of a trace header."""
    out = []
    for f in source["files"]:
        out.extend((os.path.basename(f["path"]), i) for i in range(f["samples"]))
    assert len(out) == source["samples"], (source["name"], len(out), source["samples"])
    return out


def consumed(trace, source, first=0, end=None):
    """(step, cursor, index, bad) of the rows a source's stream consumed in steps [first, end)."""
    return [(r[0], r[3], r[4], r[2]) for r in trace["rows"]
            if r[1] == source and r[5] == r[0] and r[0] >= first and (end is None or r[0] < end)]


def fail(message):
    print("check_changed_mix: " + message)
    sys.exit(1)


def check_kept(name, old, new, old_s, new_s, checkpoint, change_step, warnings):
    before, after = old["sources"][old_s], new["sources"][new_s]
    old_ids, new_ids = identities(before), identities(after)
    n_old = before["samples"]
    cursor = checkpoint["sources"][new_s]["consumed"]
    epoch = cursor // n_old
    previous = {old_ids[i] for (_, c, i, _) in consumed(old, old_s, 0, change_step) if epoch * n_old <= c < cursor}
    eras = checkpoint["sources"][new_s]["eras"]
    tail = eras[-1]["tail"] if len(eras) > 1 else (epoch + 1) * n_old - cursor
    rows = consumed(new, new_s)
    if rows and min(c for (_, c, _, _) in rows) != cursor:
        fail(f"{name}: the first cursor after the change is {min(c for (_, c, _, _) in rows)}, not {cursor}")
    in_tail = [new_ids[i] for (_, c, i, _) in rows if cursor <= c < cursor + tail]
    seen = list(previous) + in_tail
    if len(set(seen)) != len(seen):
        fail(f"{name}: a document came twice in epoch {epoch}")
    gone = previous - set(new_ids)
    if len(in_tail) == tail:  # the epoch ended inside the run: nothing skipped
        if set(seen) != set(new_ids) | gone:
            missing = sorted(set(new_ids) - set(seen))[:5]
            fail(f"{name}: epoch {epoch} missed documents of the new data, e.g. {missing}")
        nxt = [new_ids[i] for (_, c, i, _) in rows if cursor + tail <= c < cursor + tail + len(new_ids)]
        if len(set(nxt)) != len(nxt) or (len(nxt) == len(new_ids) and set(nxt) != set(new_ids)):
            fail(f"{name}: the epoch after the change is not a permutation of the new data")
    removed = {os.path.basename(f["path"]) for f in before["files"]} - {os.path.basename(f["path"]) for f in after["files"]}
    for f in before["files"]:
        base = os.path.basename(f["path"])
        if base not in removed:
            continue
        dropped = f["samples"] - len([d for d in previous if d[0] == base])
        want = f"file {f['path']} removed (or changed): {dropped} of its {f['samples']} documents not yet consumed"
        if want not in warnings:
            fail(f"{name}: the warning does not say '{want}'")
    return len(in_tail), tail


def main():
    p = argparse.ArgumentParser()
    for arg in ("--old-trace", "--reference-trace", "--new-trace", "--checkpoint", "--warnings", "--dump"):
        p.add_argument(arg, required=True)
    p.add_argument("--change-step", type=int, required=True)
    a = p.parse_args()
    old, ref = dump(a.dump, "trace", a.old_trace), dump(a.dump, "trace", a.reference_trace)
    new, checkpoint = dump(a.dump, "trace", a.new_trace), dump(a.dump, "checkpoint", a.checkpoint)
    warnings = open(a.warnings, errors="replace").read()
    k = a.change_step
    if [r for r in old["rows"] if r[0] < k] != [r for r in ref["rows"] if r[0] < k]:
        fail("the steps before the change are not the uninterrupted run's")
    old_names = [s["name"] for s in old["sources"]]
    new_names = [s["name"] for s in new["sources"]]
    report = []
    for new_s, name in enumerate(new_names):
        if name in old_names:
            got, tail = check_kept(name, old, new, old_names.index(name), new_s, checkpoint, k, warnings)
            report.append(f"{name}: {got} of the epoch's {tail} remaining consumed")
        else:
            rows = consumed(new, new_s)
            if not rows or min(c for (_, c, _, _) in rows) != 0:
                fail(f"{name}: an added source does not start at cursor 0")
            report.append(f"{name}: added, from cursor 0")
    batch = new["global_batch"]
    for step in sorted({r[0] for r in new["rows"]}):
        weights = new["weights"][str(step)]
        for s in range(len(new_names)):
            quota = len([r for r in new["rows"] if r[0] == step and r[1] == s and r[5] == step and r[2] == 0])
            if abs(quota - batch * weights[s]) >= 1.5:
                fail(f"step {step}: {new_names[s]} got {quota} samples, its weight asks for {batch * weights[s]:.2f}")
    print("check_changed_mix: " + "; ".join(report))


if __name__ == "__main__":
    main()
