#!/usr/bin/env python3
"""Whether laya serve's answers under load are the answers it gives one
request at a time: a check for passes that run side by side (two
dispatchers) mixing up each other's rows or buffers.

    python3 scripts/gpucheck/serve-answers.py --url http://127.0.0.1:8642 \
        --body testdata/requests/refund.json --variants 8 --clients 64 --seconds 10

From BODY it makes VARIANTS requests whose states differ (a number appended
to the state's first string field), so that a pass answering with another
pass's rows gives another variant's answer; posts each alone for its
reference answer, then CLIENTS clients post random variants for SECONDS and
compare every 200 answer with its variant's reference: the same keys and
strings, numbers within TOL (a reduced precision's batched pass may round
differently from a single request's: the cuda backend's fp16 and fp16x2
agree within 0.005 on calibrated probabilities). Prints one JSON line and
exits 1 on any mismatch or on no answers at all.
"""
import argparse
import copy
import json
import random
import threading
import time
import urllib.error
import urllib.request

ap = argparse.ArgumentParser()
ap.add_argument("--url", required=True)
ap.add_argument("--body", required=True)
ap.add_argument("--variants", type=int, default=8)
ap.add_argument("--clients", type=int, default=64)
ap.add_argument("--seconds", type=float, default=10)
ap.add_argument("--tol", type=float, default=0.01)
args = ap.parse_args()

base = json.load(open(args.body))


def variant(i):
    b = copy.deepcopy(base)
    st = b["state"]
    for k, v in st.items():
        if isinstance(v, str):
            st[k] = v + " (%d)" % i
            break
    else:
        raise SystemExit("the body's state has no string field to vary")
    return json.dumps(b).encode()


bodies = [variant(i) for i in range(args.variants)]


def post(body):
    req = urllib.request.Request(args.url + "/v1/systemone", data=body, headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=60) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, None


def diff(a, b, path=""):
    """The first place a and b differ beyond TOL, or None."""
    if isinstance(a, dict) and isinstance(b, dict):
        if a.keys() != b.keys():
            return "%s: keys %s against %s" % (path, sorted(a), sorted(b))
        for k in a:
            d = diff(a[k], b[k], path + "." + k)
            if d:
                return d
        return None
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            return "%s: %d items against %d" % (path, len(a), len(b))
        for i, (x, y) in enumerate(zip(a, b)):
            d = diff(x, y, "%s[%d]" % (path, i))
            if d:
                return d
        return None
    if isinstance(a, (int, float)) and isinstance(b, (int, float)) and not isinstance(a, bool):
        return None if abs(a - b) <= args.tol else "%s: %r against %r" % (path, a, b)
    return None if a == b else "%s: %r against %r" % (path, a, b)


refs = []
for b in bodies:
    s, ans = post(b)
    if s != 200:
        raise SystemExit("reference request: status %d" % s)
    refs.append(ans)
alike = [(i, j) for i in range(len(refs)) for j in range(i + 1, len(refs)) if diff(refs[i], refs[j]) is None]
if alike:
    raise SystemExit("variants %d and %d answer alike, so a mix-up between them would not show: pick another body or fewer variants" % alike[0])

lock = threading.Lock()
counts = {"answers": 0, "mismatches": 0, "statuses": {}}
first = []
stop = time.time() + args.seconds


def client(seed):
    rng = random.Random(seed)
    while time.time() < stop:
        i = rng.randrange(len(bodies))
        s, ans = post(bodies[i])
        with lock:
            counts["statuses"][s] = counts["statuses"].get(s, 0) + 1
            if s != 200:
                continue
            counts["answers"] += 1
            d = diff(refs[i], ans)
            if d:
                counts["mismatches"] += 1
                if len(first) < 5:
                    first.append("variant %d%s" % (i, d))


threads = [threading.Thread(target=client, args=(c,)) for c in range(args.clients)]
for t in threads:
    t.start()
for t in threads:
    t.join()
print(json.dumps(dict(counts, clients=args.clients, variants=args.variants, tol=args.tol, first=first)))
if counts["mismatches"] or not counts["answers"]:
    raise SystemExit(1)
