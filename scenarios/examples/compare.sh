#!/usr/bin/env bash
# Runs the comparison behind each example scenario and prints the tables of
# scenarios/README.md ("Comparisons"). Usage: scenarios/examples/compare.sh [FLEETSIM_BINARY]
# Needs python3 (to read summary.json). Every row is one `fleetsim run` with --set overrides.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
bin="${1:-$here/../../build/fleetsim}"
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT

# run LABEL SCENARIO [--set ...]: one row of metrics (ms, 3 significant digits).
run() {
  local label="$1" scenario="$2"
  shift 2
  "$bin" run "$here/$scenario" --quiet --out "$out/r" "$@" > /dev/null
  python3 - "$label" "$out/r/summary.json" <<'PY'
import json, sys
label, path = sys.argv[1], sys.argv[2]
j = json.load(open(path))
ms = lambda k: f"{1000 * j[k]:.3g}"
hit = f"{100 * j['prefix_hit_rate']:.1f} %" if j.get("prefix_lookup_tokens") else "-"
print(f"| {label} | {ms('ttft_p50_s')} | {ms('ttft_p99_s')} | {ms('tpot_p50_s')} | {ms('tpot_p99_s')} "
      f"| {ms('e2e_p50_s')} | {j['output_tok_per_s']:.0f} | {100 * j['slo_attainment']:.1f} % | {hit} |")
PY
}
header() {
  echo
  echo "### $1"
  echo
  echo "| variant | TTFT p50 (ms) | TTFT p99 (ms) | TPOT p50 (ms) | TPOT p99 (ms) | e2e p50 (ms) | output tok/s | SLO met | prefix hit |"
  echo "|---|---|---|---|---|---|---|---|---|"
}

header "Prefill-first vs chunked prefill (chunked-prefill.yaml, 1 x H100, Llama-3.1-8B)"
for rate in 10 20 30; do
  for c in false true; do
    # Without chunking a whole prompt must fit one iteration: budget = the longest prompt.
    budget=2048
    [ "$c" = false ] && budget=16384
    run "$rate/s, chunked_prefill $c" chunked-prefill.yaml --set "workload.arrival.rate=$rate/s" \
        --set "serving.chunked_prefill=$c" --set "serving.max_batched_tokens=$budget"
  done
done

header "Co-located vs disaggregated on 4 x H100 (colocated.yaml, disaggregated.yaml, 40 req/s)"
run "co-located, 4 replicas" colocated.yaml
run "1 prefill + 3 decode" disaggregated.yaml
run "2 prefill + 2 decode" disaggregated.yaml --set serving.replicas=2 --set serving.disaggregation.prefill_replicas=2

header "Prefix caching on the Mooncake trace (prefix-caching.yaml, 4 x H100)"
run "off, least-outstanding" prefix-caching.yaml --set serving.prefix_caching=false --set serving.router=least-outstanding
run "on, least-outstanding" prefix-caching.yaml --set serving.router=least-outstanding
run "on, prefix-aware router" prefix-caching.yaml
run "on, prefix-aware, 1 TiB host tier per replica" prefix-caching.yaml --set serving.prefix_cache_host_space=1TiB

header "Multi-turn conversations reuse their own context (conversations.yaml, 2 x H100)"
run "prefix caching off" conversations.yaml --set serving.prefix_caching=false --set serving.router=least-outstanding
run "on, least-outstanding" conversations.yaml --set serving.router=least-outstanding
run "on, prefix-aware router" conversations.yaml

header "Priorities and load shedding: chat (70 %, priority 1) and batch (30 %, long prompts) at 30 req/s on 1 x H100 (priorities.yaml)"
sed 's/priority: 1,/priority: 0,/' "$here/priorities.yaml" > "$here/.priorities-flat.yaml"
trap 'rm -rf "$out" "$here/.priorities-flat.yaml"' EXIT
run "same priority (all)" .priorities-flat.yaml
class_rows() {
  python3 - "$out/r/summary.json" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
for name, c in j["classes"].items():
    print(f"| {name} | {c['requests_completed']} | {c['requests_rejected']} | {1000 * c['ttft_p50_s']:.3g} | "
          f"{1000 * c['ttft_p99_s']:.3g} | {1000 * c['tpot_p50_s']:.3g} | {100 * c['slo_attainment']:.1f} % |")
PY
}
echo
echo "| class (same priority) | done | rejected | TTFT p50 (ms) | TTFT p99 (ms) | TPOT p50 (ms) | SLO met |"
echo "|---|---|---|---|---|---|---|"
class_rows
"$bin" run "$here/priorities.yaml" --quiet --out "$out/r" > /dev/null
echo
echo "| class (chat first) | done | rejected | TTFT p50 (ms) | TTFT p99 (ms) | TPOT p50 (ms) | SLO met |"
echo "|---|---|---|---|---|---|---|"
class_rows

header "Multi-LoRA: 200 adapters, Zipf(1) popularity, at 15 req/s on 1 x H100 (multi-lora.yaml)"
for k in 4 16 64; do
  run "$k adapter slots" multi-lora.yaml --set "serving.lora.max_loras=$k"
done

header "Speculative decoding, Llama-3.2-1B drafting k = 4 at acceptance 0.7 (speculative.yaml, 1 x H100)"
for rate in 1 10 25; do
  run "$rate/s, off" speculative.yaml --set "workload.arrival.rate=$rate/s" --set "serving.speculative.k=0"
  run "$rate/s, on" speculative.yaml --set "workload.arrival.rate=$rate/s"
done

header "Cascade 8B -> 70B at several escalation shares (cascade.yaml, 1 + 4 x H100, 5 req/s)"
for e in 0 0.1 0.3 0.5; do
  run "escalation $e" cascade.yaml --set "serving.cascade.escalation=$e"
done
