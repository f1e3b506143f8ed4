#!/usr/bin/env python3
"""fleetsim from Python: run a scenario with an override, look at its requests, sweep it.

The build makes the module when pybind11-dev and python3-dev are installed
(tools/setup.sh installs them); from the repository root:

    PYTHONPATH=build/python python3 tools/python_example.py

With pandas installed the per-request rows become a DataFrame; without it the standard
library computes the same percentiles.
"""

import statistics
import sys
from pathlib import Path

try:
    import fleetsim
except ImportError as e:
    sys.exit(f"cannot import fleetsim ({e}): build fleetsim, then run with PYTHONPATH=build/python")

SCENARIO = Path(__file__).resolve().parent.parent / "scenarios" / "chat-service.yaml"


def ms(seconds):
    return f"{seconds * 1e3:.1f} ms"


# The scenario as written, on 3 replicas instead of 2: the same as
#   fleetsim run scenarios/chat-service.yaml --set serving.replicas=3
result = fleetsim.run(SCENARIO, overrides={"serving.replicas": 3}, requests=True)
serving = result["scenario"]["serving"]
print(f"{result['scenario']['name']}: {result['scenario']['model']['name']}, "
      f"{serving['replicas']} replicas, policy {serving['policy']}")
print(f"  {result['requests_completed']} of {result['requests_arrived']} requests completed in "
      f"{result['sim_duration_s']:.0f} s simulated ({result['wall_s']:.2f} s wall)")
print(f"  TTFT p50 {ms(result['ttft_p50_s'])}, p99 {ms(result['ttft_p99_s'])}; "
      f"TPOT p99 {ms(result['tpot_p99_s'])}")
print(f"  {result['output_tok_per_s']:.0f} output tokens/s, "
      f"SLO attainment {result['slo_attainment']:.1%}")

# One row per request, as columns. The summary's percentiles come from histograms; these
# are exact over the rows.
requests = result["requests"]
print("\nper-request latency percentiles (completed requests):")
try:
    import pandas as pd
except ImportError:
    pd = None
if pd is not None:
    df = pd.DataFrame(requests)
    done = df[df["status"] == "completed"]
    print(done[["queue_s", "ttft_s", "tpot_s", "e2e_s"]].quantile([0.5, 0.9, 0.99]).to_string())
    per_replica = done["replica"].value_counts().sort_index()
    print("requests per replica: " + ", ".join(f"{r}: {n}" for r, n in per_replica.items()))
else:
    done = [i for i, status in enumerate(requests["status"]) if status == "completed"]
    print(f"  {'':8}{'p50':>12}{'p90':>12}{'p99':>12}")
    for name in ("queue_s", "ttft_s", "tpot_s", "e2e_s"):
        # The 1st to 99th percentiles, interpolated as pandas does.
        q = statistics.quantiles([requests[name][i] for i in done], n=100, method="inclusive")
        print(f"  {name:8}{q[49]:12.4f}{q[89]:12.4f}{q[98]:12.4f}")
    print("  (pip install pandas, or apt-get install python3-pandas, for a DataFrame)")

# The same scenario on 1, 2 and 4 replicas: one row per point, as sweep.csv.
print("\nsweep over serving.replicas:")
for row in fleetsim.sweep(SCENARIO, vary={"serving.replicas": [1, 2, 4]}):
    print(f"  {row['serving.replicas']} replicas: TTFT p99 {ms(row['ttft_p99_s'])}, "
          f"TPOT p99 {ms(row['tpot_p99_s'])}, {row['output_tok_per_s']:.0f} output tokens/s")
