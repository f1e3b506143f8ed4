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

# netrow LABEL SCENARIO [--set ...]: a row with the network's share (KV transfer, all-to-all).
netrow() {
  local label="$1" scenario="$2"
  shift 2
  FLEETSIM_CACHE_DIR="$out/cache" "$bin" run "$here/$scenario" --quiet --out "$out/r" "$@" > /dev/null
  python3 - "$label" "$out/r/summary.json" <<'PY'
import json, sys
label, path = sys.argv[1], sys.argv[2]
j = json.load(open(path))
ms = lambda k: f"{1000 * j[k]:.3g}"
a2a = (f"{j['alltoall_delayed_iterations']} of {j['alltoall_live_iterations']}, "
       f"mean {1e6 * j['alltoall_delay_mean_s']:.3g} us" if "alltoall_live_iterations" in j else "tables")
print(f"| {label} | {ms('ttft_p50_s')} | {ms('ttft_p99_s')} | {ms('tpot_p99_s')} | {ms('kv_transfer_mean_s')} "
      f"| {a2a} | {j['output_tok_per_s']:.0f} | {100 * j['slo_attainment']:.1f} % |")
PY
}
netheader() {
  echo
  echo "### $1"
  echo
  echo "| variant | TTFT p50 (ms) | TTFT p99 (ms) | TPOT p99 (ms) | KV transfer mean (ms) | all-to-all iterations slowed | output tok/s | SLO met |"
  echo "|---|---|---|---|---|---|---|---|"
}

netheader "Prefill and decode in different regions (cross-region.yaml, 2 + 2 x HGX H100, Llama-3.1-70B, 12 req/s)"
grep -v -e '^  regions:' -e '^  wan:' "$here/cross-region.yaml" > "$here/.cross-region-one.yaml"
trap 'rm -rf "$out" "$here/.priorities-flat.yaml" "$here/.cross-region-one.yaml"' EXIT
netrow "same region, analytic" .cross-region-one.yaml
for bw in 800Gbps 100Gbps; do
  for m in analytic simgrid; do
    netrow "WAN $bw, 5 ms, $m" cross-region.yaml --set "network.wan.bandwidth=$bw" --set "network.model=$m"
  done
done

if "$bin" check "$here/expert-parallel.yaml" > /dev/null 2>&1; then
  netheader "Expert all-to-all across nodes (expert-parallel.yaml, DeepSeek-V3 EP 16, 2 + 2 replicas on 8 HGX H100, 20 req/s, SimGrid)"
  netrow "all-to-all from the tables" expert-parallel.yaml --set network.live_alltoall=false
  netrow "all-to-all live" expert-parallel.yaml
  netrow "4:1 oversubscribed, a leaf per node, tables" expert-parallel.yaml --set network.live_alltoall=false \
      --set network.oversubscription=4 --set network.nodes_per_leaf=1
  netrow "4:1 oversubscribed, a leaf per node, live" expert-parallel.yaml \
      --set network.oversubscription=4 --set network.nodes_per_leaf=1
fi
