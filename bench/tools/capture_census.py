#!/usr/bin/env python3
"""Captures every problem of the given categories as an operator graph (src/oracle/capture.py, one
process per problem, one at a time) and reports per problem: captured or not, why, node count and
op histogram; then the failure classes and the union of ops over the captured problems.

    python3 bench/tools/capture_census.py [--root ../shared/problems/sol-execbench] [--cats L1,L2,Quant]
        [--out capture-census] [--only NAME_SUBSTRING] [--redo | --redo-failed] [--shard K/N] [--timeout 600] [--ops-json PATH]

Results go to OUT/census.json (kept between runs: a problem already there is not captured again
unless --redo or --only names it) and the graphs to OUT/<category>/<problem>/.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import signal
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
CAPTURE = os.path.join(HERE, "..", "..", "src", "oracle", "capture.py")
# capture.py reads the problem as the C++ problem layer resolves it: `kernelarc problems --oracle-spec`.
KERNELARC = os.environ.get("KERNELARC_BIN", os.path.join(HERE, "..", "..", "build", "src", "kernelarc"))


def spec_file(pdir, out):
    """The problem's oracle spec, written to OUT/../<name>.spec.json by the kernelarc binary."""
    os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
    path = os.path.abspath(out).rstrip("/") + ".spec.json"
    r = subprocess.run([KERNELARC, "problems", pdir, "--oracle-spec"], capture_output=True, text=True)
    if r.returncode != 0:
        raise ValueError(f"kernelarc problems --oracle-spec: {r.stderr.strip()[-300:]}")
    with open(path, "w", encoding="utf-8") as f:
        f.write(r.stdout)
    return path


class _Timeout(Exception):
    pass


def _on_alarm(signum, frame):
    raise _Timeout()


def capture_inproc(pdir, out, timeout):
    """capture.py's result in this process (torch imported once: ~10 s saved a problem); SIGALRM
    stops a capture that runs past the timeout."""
    import capture
    t0 = time.time()
    signal.signal(signal.SIGALRM, _on_alarm)
    signal.alarm(timeout)
    try:
        _, res = capture.result_of(spec_file(pdir, out), out)
    except _Timeout:
        res = {"captured": False, "reason": f"timeout: capture ran past {timeout} s", "op": None, "source": None}
    except Exception as e:  # noqa: BLE001
        res = {"captured": False, "reason": f"usage: {e}", "op": None, "source": None}
    finally:
        signal.alarm(0)
    res["wall_s"] = round(time.time() - t0, 1)
    return res


def capture_one(pdir, out, timeout):
    t0 = time.time()
    try:
        spec = spec_file(pdir, out)
        r = subprocess.run([sys.executable, CAPTURE, "--spec", spec, "-o", out], capture_output=True, text=True,
                           timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"captured": False, "reason": f"timeout: capture ran past {timeout} s", "op": None, "source": None,
                "wall_s": round(time.time() - t0, 1)}
    except ValueError as e:
        return {"captured": False, "reason": f"usage: {e}", "op": None, "source": None, "wall_s": 0}
    line = next((ln for ln in reversed(r.stdout.splitlines()) if ln.startswith("{")), None)
    res = json.loads(line) if line else {"captured": False, "op": None, "source": None,
                                         "reason": f"no result line (exit {r.returncode}): {r.stderr[-300:]}"}
    res["wall_s"] = round(time.time() - t0, 1)
    if r.returncode not in (0, 3):
        res.setdefault("exit", r.returncode)
    return res


def failure_class(res):
    reason = res.get("reason", "")
    head = reason.split(":")[0]
    return f"{head} [{res.get('op')}]" if res.get("op") else head


def summarise(results, names):
    done = [results[n] for n in names if n in results]
    ok = [r for r in done if r.get("captured")]
    classes, ops = {}, {}
    for n in names:
        r = results.get(n)
        if r is None:
            continue
        if not r.get("captured"):
            classes.setdefault(failure_class(r), []).append(n)
        else:
            for op, c in r.get("ops", {}).items():
                e = ops.setdefault(op, {"problems": 0, "nodes": 0})
                e["problems"] += 1
                e["nodes"] += c
    return ok, done, classes, dict(sorted(ops.items(), key=lambda kv: (-kv[1]["problems"], kv[0])))


def write_doc_table(doc, ops, ok, done):
    """Replaces the op table between the markers of docs/graph-format.md."""
    text = open(doc).read()
    begin, end = "<!-- ops:begin -->", "<!-- ops:end -->"
    rows = [f"{len(ok)} of {len(done)} problems captured; {len(ops)} ops.", "",
            "| op | problems | nodes |", "|---|---:|---:|"]
    rows += [f"| `{op}` | {e['problems']} | {e['nodes']} |" for op, e in ops.items()]
    head, rest = text.split(begin, 1)
    tail = rest.split(end, 1)[1]
    with open(doc, "w") as f:
        f.write(head + begin + "\n" + "\n".join(rows) + "\n" + end + tail)


def write_union(results, names, a):
    """The op union so far to OUT/ops.json (and --ops-json): readers see it grow during a run."""
    merged = {}
    for f in sorted(glob.glob(os.path.join(a.out, "census*.json"))):  # other shards' progress too
        try:
            merged.update(json.load(open(f)))
        except ValueError:
            pass
    merged.update(results)
    results = merged
    ok, done, classes, ops = summarise(results, names)
    union = {"captured": len(ok), "problems": len(done), "ops": ops,
             "failures": {cls: probs for cls, probs in classes.items()}}
    for target in filter(None, [os.path.join(a.out, "ops.json"), a.ops_json]):
        with open(target + ".tmp", "w") as f:
            json.dump(union, f, indent=1)
        os.replace(target + ".tmp", target)
    return ok, done, classes, ops


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--root", default=os.path.join(HERE, "..", "..", "..", "shared", "problems", "sol-execbench"))
    p.add_argument("--cats", default="L1,L2,Quant")
    p.add_argument("--out", default="capture-census")
    p.add_argument("--only", help="capture only problems whose name contains this")
    p.add_argument("--redo", action="store_true", help="capture again problems already in census.json")
    p.add_argument("--redo-failed", action="store_true", help="capture again the problems census.json has as failed")
    p.add_argument("--timeout", type=int, default=600)
    p.add_argument("--ops-json", help="also write the op union to this file")
    p.add_argument("--shard", help="K/N: capture only the problems at positions K mod N (results in census.K.json)")
    p.add_argument("--doc", help="rewrite the op table of this docs/graph-format.md at the end")
    p.add_argument("--subprocess", action="store_true", help="one Python process per problem (slower, isolated)")
    a = p.parse_args()
    if not a.subprocess:
        sys.path.insert(0, os.path.dirname(CAPTURE))
        import capture
        capture._quiet_imports()
    os.makedirs(a.out, exist_ok=True)
    shard, shards = (int(x) for x in a.shard.split("/")) if a.shard else (0, 1)
    path = os.path.join(a.out, f"census.{shard}.json" if a.shard else "census.json")
    results = {}
    for f in sorted(glob.glob(os.path.join(a.out, "census*.json"))):  # every shard's results
        results.update(json.load(open(f)))
    mine = json.load(open(path)) if os.path.exists(path) else {}
    names = []
    for cat in a.cats.split(","):
        for prob in sorted(os.listdir(os.path.join(a.root, cat))):
            names.append(f"{cat}/{prob}")
    for k, name in enumerate(names):
        if (a.only and a.only not in name) or k % shards != shard:
            continue
        redo = a.redo or a.only or (a.redo_failed and not results.get(name, {}).get("captured"))
        if name in results and not redo:
            continue
        run = capture_one if a.subprocess else capture_inproc
        res = run(os.path.join(a.root, name), os.path.join(a.out, name), a.timeout)
        results[name] = mine[name] = res
        with open(path + ".tmp", "w") as f:
            json.dump(mine, f, indent=1)
        os.replace(path + ".tmp", path)
        write_union(results, names, a)
        if res.get("captured"):
            top = ", ".join(f"{k.split('.')[1]}x{v}" for k, v in sorted(res["ops"].items(), key=lambda kv: -kv[1])[:6])
            print(f"OK   {name:70s} {res['nodes']:5d} nodes {res['wall_s']:6.1f}s  {top}", flush=True)
        else:
            print(f"FAIL {name:70s} {res.get('reason', '')[:150]} | {res.get('op')} | {res.get('source')}", flush=True)
    ok, done, classes, ops = write_union(results, names, a)
    print(f"\ncaptured {len(ok)} of {len(done)} ({len(names)} problems)")
    for cls, probs in sorted(classes.items(), key=lambda kv: -len(kv[1])):
        print(f"  {len(probs):3d}  {cls}: {', '.join(x.split('/')[-1][:30] for x in probs[:6])}")
    if a.doc:
        write_doc_table(a.doc, ops, ok, done)
    print(f"\n{len(ops)} ops over the captured problems (problems using each, nodes):")
    for op, e in ops.items():
        print(f"  {e['problems']:4d} {e['nodes']:6d}  {op}")


if __name__ == "__main__":
    main()
