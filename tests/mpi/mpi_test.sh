#!/usr/bin/env bash
# MPI tests of `fleetsim sweep` and `fleetsim plan` (issue 9) and `fleetsim run` (issue 21),
# run by CTest when fleetsim is built with MPI:  mpi_test.sh FLEETSIM_BIN MPIRUN SOURCE_DIR
#  1. a sweep on 3 ranks writes the single-process sweep.csv byte for byte;
#  2. a plan on 3 ranks writes the single-process plan.csv (every configuration, the choice);
#  3. a fleet `run` on 2 and 3 ranks (its partitions on the ranks) writes the single-process
#     outputs;
#  4. a worker killed mid-sweep (it kills itself at a set item: no timing) stops the job;
#     --resume finishes it from the checkpoint with the single-process result, and a resume
#     of another search is refused.
set -euo pipefail
bin="$1"
mpirun="$2"
cd "$3"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
mpi=("$mpirun" --oversubscribe -n 3)
[ "$(id -u)" -eq 0 ] && mpi=("$mpirun" --oversubscribe --allow-run-as-root -n 3)
fail() { echo "FAIL: $*" >&2; exit 1; }

echo "== 1. sweep: 3 ranks = 1 process"
sweep=(sweep scenarios/chat-service.yaml --vary serving.replicas=1,2 --vary workload.arrival.rate=10/s,20/s
       --seeds 3 --quiet --threads 1)
"$bin" "${sweep[@]}" --out "$tmp/single" > /dev/null
"${mpi[@]}" "$bin" "${sweep[@]}" --out "$tmp/mpi" > /dev/null
cmp "$tmp/single/sweep.csv" "$tmp/mpi/sweep.csv" || fail "sweep.csv differs between 1 process and 3 ranks"
[ "$(wc -l < "$tmp/single/sweep.csv")" -eq 13 ] || fail "expected 12 rows (4 points x 3 seeds) + header"

echo "== 2. plan: 3 ranks = 1 process"
plan=(plan scenarios/plan-llama70b-chat.yaml --set workload.duration=5min --set plan.simulate=6 --quiet --threads 1)
"$bin" "${plan[@]}" --out "$tmp/plan1" > /dev/null
"${mpi[@]}" "$bin" "${plan[@]}" --out "$tmp/plan3" > /dev/null
cmp "$tmp/plan1/plan.csv" "$tmp/plan3/plan.csv" || fail "plan.csv differs between 1 process and 3 ranks"

echo "== 3. run: a fleet's partitions on 2 and 3 ranks = 1 process"
# The sampled default day has two partitions (the GPT-4-class model and gpt-oss-120b): on 2
# ranks each runs on its own rank, on 3 one rank has nothing to do. Every output but the
# wall time and rank 0's memory must be the single process's, byte for byte.
run=(run scenarios/default.yaml --set users.sample=0.0005 --set users.duration=2h --quiet --threads 1)
"$bin" "${run[@]}" --out "$tmp/run1" > "$tmp/run1.txt"
for n in 2 3; do
  launch=("$mpirun" --oversubscribe -n "$n")
  [ "$(id -u)" -eq 0 ] && launch=("$mpirun" --oversubscribe --allow-run-as-root -n "$n")
  "${launch[@]}" "$bin" "${run[@]}" --out "$tmp/run$n" > "$tmp/run$n.txt"
  for f in regions.csv pools.csv datacenters.csv over_time.csv; do
    cmp "$tmp/run1/$f" "$tmp/run$n/$f" || fail "$f differs between 1 process and $n ranks"
  done
  python3 - "$tmp/run1/summary.json" "$tmp/run$n/summary.json" "$n" <<'PY' || fail "summary.json differs between 1 process and $n ranks"
import json, sys
a, b = (json.load(open(f)) for f in sys.argv[1:3])
assert a.pop("mpi_ranks") == 1 and b.pop("mpi_ranks") == int(sys.argv[3]), "not run on the ranks"
for j in (a, b):
    j.pop("wall_s")
    j.pop("peak_rss_bytes")
if a != b:
    diff = [k for k in a if a.get(k) != b.get(k)]
    sys.exit(f"differs in {diff}")
PY
  # The terminal report too, but for its wall time, memory and output folder.
  diff <(grep -v "wall\|wrote" "$tmp/run1.txt") <(grep -v "wall\|wrote" "$tmp/run$n.txt") \
    || fail "the report differs between 1 process and $n ranks"
  grep -q "calls on $n MPI ranks" "$tmp/run$n.txt" || fail "the report does not say it ran on $n ranks"
done

echo "== 4. a killed worker, then --resume"
# 24 items of ~0.3 s each. Rank 2 kills itself (SIGKILL) when it receives its second item
# (FLEETSIM_TEST_KILL_RANK, a test-only switch): by then it has finished one item, and the
# others cannot have finished the other 23, so the kill always lands mid-sweep.
long=(sweep scenarios/chat-service.yaml --set workload.requests=200000 --vary serving.replicas=1,2,3,4
      --threads 1)
"$bin" "${long[@]}" --seeds 6 --quiet --out "$tmp/long1" > /dev/null
if FLEETSIM_TEST_KILL_RANK=2:2 "${mpi[@]}" -x FLEETSIM_TEST_KILL_RANK "$bin" "${long[@]}" \
  --seeds 6 --quiet --out "$tmp/kill" > /dev/null 2>&1; then
  fail "the job went on after a rank was killed (expected it to stop)"
fi
[ ! -f "$tmp/kill/sweep.csv" ] || fail "a stopped job wrote sweep.csv"
done_before=$(( $(wc -l < "$tmp/kill/checkpoint.txt") - 1 ))
echo "   rank 2 was killed; the checkpoint holds $done_before of 24 results"
[ "$done_before" -lt 24 ] || fail "every item finished before the kill: nothing left to resume"
"${mpi[@]}" "$bin" "${long[@]}" --seeds 6 --resume --out "$tmp/kill" > /dev/null 2> "$tmp/resume.err"
grep -q "already done" "$tmp/resume.err" || fail "the resumed run did not reuse the checkpoint: $(cat "$tmp/resume.err")"
[ ! -f "$tmp/kill/checkpoint.txt" ] || fail "a finished search left its checkpoint behind"
cmp "$tmp/long1/sweep.csv" "$tmp/kill/sweep.csv" || fail "the resumed sweep differs from the single-process one"
# A checkpoint is never overwritten unasked, and another search cannot resume from it.
printf 'sweep other-search\n' > "$tmp/kill/checkpoint.txt"
if "$bin" "${long[@]}" --seeds 5 --quiet --out "$tmp/kill" > /dev/null 2> "$tmp/fresh.err"; then
  fail "a new search overwrote an unfinished checkpoint"
fi
grep -q "unfinished search" "$tmp/fresh.err" || fail "unexpected error: $(cat "$tmp/fresh.err")"
if "$bin" "${long[@]}" --seeds 5 --resume --quiet --out "$tmp/kill" > /dev/null 2> "$tmp/other.err"; then
  fail "a resume of another search was accepted"
fi
grep -q "checkpoint belongs to another search" "$tmp/other.err" || fail "unexpected error: $(cat "$tmp/other.err")"
echo "PASS"
