#!/usr/bin/env python3
"""Sums ncu kernel times of one laya-bench request by kernel.

    LAYA_CUDA=graphs=off,precision=P ncu --metrics gpu__time_duration.sum --clock-control none \
        --cache-control none --csv --print-units base laya-bench --backend cuda --synthetic LANG \
        --questions Q --warmup 1 --runs 1 --batch-size 64 > ncu-NAME.csv
    python3 scripts/gpucheck/ncu-sums.py ncu-*.csv > kernel-sums.csv

Only the timed request counts: the kernels after the warm-up's last pack_out
up to the request's own. cuBLAS's kernels (GEMMs, GEMVs, split-K reductions)
are summed together (kernelclass.py, as kernel-gaps.py does). Rows: run (the file's NAME), kernel, launches, total µs, µs each;
a TOTAL row a run.
"""
import collections
import csv
import sys

from kernelclass import kernel_class

out=[]
for path in sys.argv[1:]:
    name=path.split('ncu-')[-1].rsplit('.csv',1)[0]
    rows=[]
    with open(path) as f:
        lines=[l for l in f if l.startswith('"')]
    r=csv.DictReader(lines)
    for row in r:
        if row.get('Metric Name')!='gpu__time_duration.sum': continue
        rows.append((row['ID'],row['Kernel Name'],float(row['Metric Value'].replace(',',''))))
    # dedupe by ID
    seen={}
    for i,k,v in rows: seen[int(i)]=(k,v)
    ks=[seen[i] for i in sorted(seen)]
    packs=[j for j,(k,v) in enumerate(ks) if k.startswith('pack_out')]
    if len(packs)>=2: ks=ks[packs[-2]+1:packs[-1]+1]
    agg=collections.OrderedDict()
    for k,v in ks:
        kk=kernel_class(k)
        a=agg.setdefault(kk,[0,0.0]); a[0]+=1; a[1]+=v/1000
    tot=sum(a[1] for a in agg.values())
    for kk,(n,us) in sorted(agg.items(),key=lambda x:-x[1][1]):
        out.append(f'{name},{kk},{n},{us:.1f},{us/n:.2f}')
    out.append(f'{name},TOTAL,{sum(a[0] for a in agg.values())},{tot:.1f},')
print('run,kernel,launches,total µs,µs each'); print('\n'.join(out))
