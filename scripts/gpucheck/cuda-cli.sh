#!/usr/bin/env bash
# laya built with -tags cuda, on the CUDA host: `laya predict` and
# `laya serve` (POST /v1/predict) on --backend cuda in fp32 must print what
# --backend cpu prints for the bundled real-en checkpoint and the sample
# request (the answer JSON rounds to 4 decimals; fp32 logits are within 1e-4).
#
#   bash BIN/cuda-cli.sh BIN OUT
set -uo pipefail
bin=$(cd "$1" && pwd)
out=$2
mkdir -p "$out"
model=testdata/oracle/checkpoints/real-en
req=testdata/requests/email.json
"$bin/laya" predict --backend cpu --model "$model" --request "$req" >"$out/predict-cpu.json" 2>&1
LAYA_CUDA=precision=fp32 "$bin/laya" predict --backend cuda --model "$model" --request "$req" >"$out/predict-cuda.json" 2>&1
if cmp -s "$out/predict-cpu.json" "$out/predict-cuda.json"; then echo "predict: cuda = cpu"; else echo "predict: DIFFERENT"; fi
LAYA_CUDA=precision=fp32 "$bin/laya" serve --backend cuda --model "$model" --addr 127.0.0.1:18642 >"$out/serve.log" 2>&1 &
pid=$!
for _ in $(seq 1 100); do
	curl -sf http://127.0.0.1:18642/ready >/dev/null && break
	sleep 0.2
done
for i in 1 2 3; do
	curl -s -X POST --data-binary @"$req" http://127.0.0.1:18642/v1/predict >"$out/serve-cuda-$i.json"
done
kill -TERM "$pid"
wait "$pid"
echo "serve exit $?"
for i in 1 2 3; do
	if python3 -c 'import json,sys; a=json.load(open(sys.argv[1])); b=json.load(open(sys.argv[2])); sys.exit(a!=b)' \
		"$out/predict-cpu.json" "$out/serve-cuda-$i.json"; then echo "serve request $i: cuda = cpu"; else echo "serve request $i: DIFFERENT"; fi
done
