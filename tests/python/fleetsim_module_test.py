"""Tests of the Python module fleetsim (python/fleetsim_module.cpp).

CTest runs this file with PYTHONPATH=<build>/python and FLEETSIM_BIN=<build>/fleetsim (the
command-line tool, to compare against); by hand:
    PYTHONPATH=build/python FLEETSIM_BIN=build/fleetsim python3 tests/python/fleetsim_module_test.py
Standard library only.
"""

import csv
import json
import math
import os
import re
import subprocess
import tempfile
import threading
import time
import unittest
import _thread
from pathlib import Path

import fleetsim

ROOT = Path(__file__).resolve().parents[2]
CHAT = ROOT / "scenarios" / "chat-service.yaml"
PLAN = ROOT / "scenarios" / "plan-llama70b-chat.yaml"
PRIORITIES = ROOT / "scenarios" / "examples" / "priorities.yaml"
FLEET = ROOT / "scenarios" / "local-vs-datacenter.yaml"
FLEET_PLAN = ROOT / "scenarios" / "examples" / "fleet-plan.yaml"
FLEETSIM_BIN = os.environ.get("FLEETSIM_BIN")

# The figures of summary.json that depend on the machine rather than the scenario: the wall
# time, and a fleet run's peak memory (the process's).
WALL_CLOCK = ("wall_s", "peak_rss_bytes")


def workload_requests(path):
    """workload.requests as the scenario file writes it."""
    match = re.search(r"^workload:\n(?:[ #].*\n)*?  requests: (\d+)$", path.read_text(), re.M)
    assert match, f"no workload.requests in {path}"
    return int(match.group(1))


def without_wall_clock(summary):
    return {k: v for k, v in summary.items() if k not in WALL_CLOCK}


def run_cli(*args):
    return subprocess.run([FLEETSIM_BIN, *map(str, args)], capture_output=True, text=True,
                          cwd=ROOT, check=False)


class RunTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.n = workload_requests(CHAT)
        cls.summary = fleetsim.run(str(CHAT), requests=True)
        cls.req = cls.summary["requests"]

    def test_every_request_of_the_scenario_completes(self):
        # chat-service.yaml generates workload.requests (6,000) Poisson arrivals at 20/s for
        # 2 H100 replicas of Llama-3.1-8B: no queue limit and every prompt (at most 14,050
        # tokens) fits the model and the KV cache, so all arrive and complete.
        self.assertEqual(self.n, 6000)
        self.assertEqual(self.summary["requests_arrived"], self.n)
        self.assertEqual(self.summary["requests_completed"], self.n)
        self.assertEqual(self.summary["requests_rejected"], 0)
        self.assertEqual(self.summary["seed"], 1)
        self.assertEqual(self.summary["scenario"]["name"], "chat-service")

    def test_request_columns_are_one_row_per_request(self):
        req = self.req
        self.assertEqual(
            list(req),
            ["id", "class", "replica", "arrival_s", "prompt_tokens", "output_tokens", "queue_s",
             "ttft_s", "tpot_s", "e2e_s", "preemptions", "status"])
        for name, column in req.items():
            self.assertEqual(len(column), self.n, name)
        self.assertEqual(sorted(req["id"]), list(range(self.n)))
        self.assertEqual(set(req["status"]), {"completed"})
        self.assertEqual(set(req["class"]), {None})  # the scenario has no request classes
        self.assertEqual(set(req["replica"]), {0, 1})  # serving.replicas: 2
        for q, ttft, e2e in zip(req["queue_s"], req["ttft_s"], req["e2e_s"]):
            # Queueing ends when the prefill starts, the first token comes out of it, the
            # last token at the end.
            self.assertLessEqual(0, q)
            self.assertLessEqual(q, ttft)
            self.assertLessEqual(ttft, e2e)
        # TPOT: (end-to-end − TTFT) ÷ (output tokens − 1), 0 for a single output token.
        for ttft, tpot, e2e, out in zip(req["ttft_s"], req["tpot_s"], req["e2e_s"],
                                        req["output_tokens"]):
            self.assertAlmostEqual(tpot, (e2e - ttft) / (out - 1) if out > 1 else 0.0, delta=1e-9)
        # The summary's token counts are the sums over completed requests, and its mean
        # latencies the means of the rows (the scenario has no warm-up requests).
        self.assertEqual(sum(req["output_tokens"]), self.summary["output_tokens"])
        self.assertEqual(sum(req["prompt_tokens"]), self.summary["input_tokens"])
        self.assertAlmostEqual(sum(req["e2e_s"]) / self.n, self.summary["e2e_mean_s"], delta=1e-9)
        self.assertAlmostEqual(sum(req["ttft_s"]) / self.n, self.summary["ttft_mean_s"], delta=1e-9)

    def test_rows_of_rejected_requests_and_of_classes(self):
        # priorities.yaml: 4,000 requests at 30/s on one replica with max_queue 64, 70 %
        # chat (priority 1) and 30 % batch (priority 0, 3,000-token prompts). The queue
        # fills with batch requests, which the chat requests overtake; the requests that
        # find it full are rejected. Every request has a row, and the rows add up to the
        # summary's counts, overall and per class.
        s = fleetsim.run(PRIORITIES, requests=True)
        req = s["requests"]
        n = workload_requests(PRIORITIES)
        self.assertEqual(len(req["id"]), n)
        self.assertEqual(s["requests_arrived"], n)
        self.assertGreater(s["requests_rejected"], 0)
        completed = [i for i in range(n) if req["status"][i] == "completed"]
        rejected = [i for i in range(n) if req["status"][i] != "completed"]
        self.assertEqual(len(completed), s["requests_completed"])
        self.assertEqual(len(rejected), s["requests_rejected"])
        self.assertEqual(len(rejected), s["requests_rejected_queue_full"])
        for i in rejected:
            self.assertEqual(req["status"][i], "rejected_queue_full")
            self.assertTrue(math.isnan(req["ttft_s"][i]) and math.isnan(req["e2e_s"][i]))
        self.assertEqual(sum(req["output_tokens"][i] for i in completed), s["output_tokens"])
        for name, c in s["classes"].items():
            rows = [i for i in range(n) if req["class"][i] == name]
            self.assertEqual(sum(req["status"][i] == "completed" for i in rows),
                             c["requests_completed"], name)
            self.assertEqual(sum(req["status"][i] != "completed" for i in rows),
                             c["requests_rejected"], name)
        self.assertEqual(set(req["class"]), {"chat", "batch"})

    @unittest.skipUnless(FLEETSIM_BIN, "FLEETSIM_BIN is not set (run through ctest)")
    def test_summary_and_rows_are_those_the_command_line_writes(self):
        with tempfile.TemporaryDirectory() as tmp:
            csv_path = Path(tmp) / "requests.csv"
            r = run_cli("run", CHAT, "--out", tmp, "--quiet", "--requests-csv", csv_path)
            self.assertEqual(r.returncode, 0, r.stderr)
            with open(Path(tmp) / "summary.json", encoding="utf-8") as f:
                cli = json.load(f)
            with open(csv_path, newline="", encoding="utf-8") as f:
                rows = list(csv.DictReader(f))
        mine = dict(self.summary)
        del mine["requests"]
        self.assertEqual(without_wall_clock(mine), without_wall_clock(cli))
        # The same rows in the same order; the CSV writes 9 significant digits.
        self.assertEqual(len(rows), self.n)
        for i, row in enumerate(rows):
            for name in ("id", "replica", "prompt_tokens", "output_tokens", "preemptions"):
                self.assertEqual(int(row[name]), self.req[name][i], (i, name))
            for name in ("arrival_s", "queue_s", "ttft_s", "tpot_s", "e2e_s"):
                self.assertEqual(float(row[name]), float(f"{self.req[name][i]:.9g}"), (i, name))
            self.assertEqual(row["status"], self.req["status"][i])

    @unittest.skipUnless(FLEETSIM_BIN, "FLEETSIM_BIN is not set (run through ctest)")
    def test_a_fleet_run_gives_the_command_lines_summary(self):
        # local-vs-datacenter.yaml is a fleet (users: and fleet:), here with 800 weekly users
        # instead of 8,001 to keep it short. The fleet's summary.json, answer included, and
        # one row per call.
        small = {"users.weekly_active": 800}
        s = fleetsim.run(FLEET, small, requests=True, threads=2)
        with tempfile.TemporaryDirectory() as tmp:
            r = run_cli("run", FLEET, "--set", "users.weekly_active=800", "--out", tmp, "--quiet")
            self.assertEqual(r.returncode, 0, r.stderr)
            with open(Path(tmp) / "summary.json", encoding="utf-8") as f:
                cli = json.load(f)
        rows = s.pop("requests")
        self.assertIn("answer", s)
        self.assertEqual(without_wall_clock(s), without_wall_clock(cli))
        self.assertEqual(len(rows["id"]), s["requests_arrived"])
        self.assertEqual(rows["status"].count("completed"), s["requests_completed"])
        self.assertEqual(set(rows["class"]), set(s["classes"]))

    def test_overrides_apply_as_set(self):
        # 1,000 requests at 20/s on 1 and on 4 replicas: the override shows in the resolved
        # scenario, the requests spread over replicas 0-3, and 4 replicas, each with a quarter
        # of the load, queue less and answer sooner than one.
        results = {}
        for replicas in (1, 4):
            s = fleetsim.run(CHAT, {"serving.replicas": replicas, "workload.requests": 1000},
                             requests=True)
            self.assertEqual(s["scenario"]["serving"]["replicas"], replicas)
            self.assertEqual(s["scenario"]["overrides"],
                             [f"serving.replicas={replicas}", "workload.requests=1000"])
            self.assertEqual(s["requests_completed"], 1000)
            self.assertEqual(set(s["requests"]["replica"]), set(range(replicas)))
            results[replicas] = s
        self.assertGreater(results[1]["ttft_p99_s"], results[4]["ttft_p99_s"])
        self.assertGreater(results[1]["queue_mean_s"], results[4]["queue_mean_s"])

    def test_override_values_are_written_as_on_the_command_line(self):
        # Booleans as true/false, strings as they are. 1,000 Poisson arrivals at 10/s span
        # 100 s on average (standard deviation √1000 / 10 ≈ 3.2 s); the run ends when the
        # last request is done, a few seconds later.
        s = fleetsim.run(CHAT, {"serving.chunked_prefill": False, "workload.requests": 1000,
                                "workload.arrival.rate": "10/s"})
        self.assertEqual(s["scenario"]["overrides"],
                         ["serving.chunked_prefill=false", "workload.requests=1000",
                          "workload.arrival.rate=10/s"])
        self.assertIs(s["scenario"]["serving"]["chunked_prefill"], False)
        self.assertGreater(s["sim_duration_s"], 85)
        self.assertLess(s["sim_duration_s"], 125)

    def test_the_seed_replaces_the_scenarios_and_reproduces_the_run(self):
        small = {"workload.requests": 500}
        a = fleetsim.run(CHAT, small, seed=7, requests=True)
        b = fleetsim.run(CHAT, small, seed=7, requests=True)
        c = fleetsim.run(CHAT, small, seed=8, requests=True)
        self.assertEqual(a["seed"], 7)
        self.assertEqual(c["seed"], 8)
        self.assertEqual(without_wall_clock(a), without_wall_clock(b))
        # Another seed draws other arrival times and lengths.
        self.assertNotEqual(a["requests"]["arrival_s"], c["requests"]["arrival_s"])
        self.assertNotEqual(a["output_tokens"], c["output_tokens"])

    def test_replications_add_the_command_lines_section(self):
        s = fleetsim.run(CHAT, {"workload.requests": 300}, replications=3, threads=2)
        self.assertEqual(s["replications"]["seeds"], [1, 2, 3])
        self.assertIn("ttft_p99_s", s["replications"]["metrics"])

    def test_an_unknown_key_is_a_value_error_with_the_command_lines_hint(self):
        with self.assertRaises(ValueError) as ctx:
            fleetsim.run(CHAT, {"serving.replicaz": 2})
        e = ctx.exception
        self.assertIsInstance(e, fleetsim.InputError)
        self.assertIn("unknown key 'serving.replicaz' (did you mean 'serving.replicas'?)", str(e))
        self.assertEqual(e.file, "--set serving.replicaz")
        self.assertIn("serving.replicas: integer", e.hint)
        if FLEETSIM_BIN:
            r = run_cli("check", CHAT, "--set", "serving.replicaz=2")
            self.assertEqual(r.returncode, 1)
            self.assertEqual(r.stderr, f"error: {e}\n")

    def test_a_bad_value_is_a_value_error_naming_the_field(self):
        with self.assertRaises(ValueError) as ctx:
            fleetsim.run(CHAT, {"serving.replicas": 0})
        self.assertIn("must be in [1, 1000000], got 0", str(ctx.exception))
        self.assertEqual(ctx.exception.field, "serving.replicas")

    def test_a_missing_file_is_a_value_error_naming_it(self):
        missing = str(ROOT / "scenarios" / "no-such-scenario.yaml")
        with self.assertRaises(ValueError) as ctx:
            fleetsim.run(missing)
        self.assertIn(missing, str(ctx.exception))
        self.assertIn("cannot open", str(ctx.exception))
        self.assertEqual(ctx.exception.file, missing)

    def test_ctrl_c_stops_a_run(self):
        # 50 million requests would take over a minute here (2 million take 3 s); a Ctrl-C
        # (interrupt_main, as the terminal's SIGINT) stops the run at its first progress
        # report, 2 s in.
        timer = threading.Timer(0.2, _thread.interrupt_main)
        started = time.monotonic()
        timer.start()
        try:
            with self.assertRaises(KeyboardInterrupt):
                fleetsim.run(CHAT, {"workload.requests": 50_000_000, "serving.replicas": 64,
                                    "workload.arrival.rate": "1000/s"})
        finally:
            timer.cancel()
        self.assertLess(time.monotonic() - started, 10)
        # The module runs again afterwards.
        self.assertEqual(fleetsim.run(CHAT, {"workload.requests": 10})["requests_completed"], 10)

    def test_arguments_of_the_wrong_type(self):
        with self.assertRaises(TypeError):
            fleetsim.run(CHAT, [("serving.replicas", 2)])
        with self.assertRaises(TypeError):
            fleetsim.run(CHAT, {"serving.replicas": object()})
        with self.assertRaises(TypeError):
            fleetsim.run(CHAT, seed="1")
        with self.assertRaises(ValueError):
            fleetsim.run(CHAT, seed=-1)
        with self.assertRaises(ValueError):
            fleetsim.run(CHAT, seed=2**64)
        with self.assertRaises(ValueError):
            fleetsim.run(CHAT, threads=0)


class SweepTest(unittest.TestCase):
    SMALL = {"workload.requests": 500}

    def test_one_row_per_point_with_its_value_and_the_runs_metrics(self):
        rows = fleetsim.sweep(CHAT, vary={"serving.replicas": [1, 2]}, overrides=self.SMALL)
        self.assertEqual(len(rows), 2)
        self.assertEqual([r["serving.replicas"] for r in rows], [1, 2])
        self.assertEqual([r["seed"] for r in rows], [1, 1])
        for row in rows:
            self.assertEqual(row["requests_completed"], 500)
            # A sweep point is the run with the point's override: the same figures.
            s = fleetsim.run(CHAT, {**self.SMALL, "serving.replicas": row["serving.replicas"]})
            for name in ("ttft_p99_s", "tpot_p99_s", "e2e_p50_s", "output_tok_per_s",
                         "slo_attainment"):
                self.assertEqual(row[name], s[name], name)

    def test_seeds_and_threads(self):
        # 2 rates × 2 seeds = 4 rows, points in order and each point's seeds in order; the
        # rows do not depend on the thread count.
        vary = {"workload.arrival.rate": ["10/s", "20/s"]}
        rows = fleetsim.sweep(CHAT, vary=vary, seeds=2, overrides=self.SMALL, threads=2)
        self.assertEqual([(r["workload.arrival.rate"], r["seed"]) for r in rows],
                         [("10/s", 1), ("10/s", 2), ("20/s", 1), ("20/s", 2)])
        self.assertEqual(rows, fleetsim.sweep(CHAT, vary=vary, seeds=2, overrides=self.SMALL))

    def test_ctrl_c_stops_a_sweep(self):
        # 1,000 runs of 6,000 requests, about 0.1 s each: Ctrl-C 0.2 s in stops the sweep
        # before its next run.
        timer = threading.Timer(0.2, _thread.interrupt_main)
        started = time.monotonic()
        timer.start()
        try:
            with self.assertRaises(KeyboardInterrupt):
                fleetsim.sweep(CHAT, seeds=1000, threads=2)
        finally:
            timer.cancel()
        self.assertLess(time.monotonic() - started, 5)

    def test_nothing_to_sweep(self):
        with self.assertRaises(ValueError) as ctx:
            fleetsim.sweep(CHAT)
        self.assertIn("nothing to sweep", str(ctx.exception))
        with self.assertRaises(TypeError):
            fleetsim.sweep(CHAT, vary={"serving.replicas": 2})
        with self.assertRaises(ValueError):
            fleetsim.sweep(CHAT, vary={"serving.replicas": [1]}, seeds=0)


class PlanTest(unittest.TestCase):
    def test_plan_returns_the_answer_and_a_row_per_configuration(self):
        # 2 GPUs × 2 TP × 1 PP × 2 weight formats × 2 KV formats × 1 policy × 1 batch limit =
        # 16 configurations; MI300X is given no price (every catalog part has one, so the
        # plan's price table sets it to 0), so its 8 are invalid.
        p = fleetsim.plan(PLAN, {
            "workload.duration": "5min", "plan.gpu": ["h100-sxm", "mi300x"],
            "plan.usd_per_gpu_hour": {"mi300x": 0}, "plan.tp": [4, 8],
            "plan.pp": [1], "plan.policy": ["sarathi"], "plan.max_num_seqs": [256],
            "plan.simulate": 2})
        rows = p["candidates"]
        self.assertEqual(p["configurations"], 16)
        self.assertEqual(len(rows), 16)
        self.assertEqual([r["index"] for r in rows], list(range(16)))
        self.assertEqual(p["counts"]["invalid"], 8)
        for r in rows:
            if r["hardware.gpu"] == "mi300x":
                self.assertEqual(r["status"], "invalid")
                self.assertIn("no price for mi300x", r["reason"])
        statuses = {}
        for r in rows:
            statuses[r["status"]] = statuses.get(r["status"], 0) + 1
        self.assertEqual(statuses, p["counts"])
        # The chosen configuration's row has its simulated outcome; its vLLM command the TP.
        chosen = p["chosen"]
        row = rows[chosen["index"]]
        self.assertEqual(row["status"], "feasible")
        self.assertEqual(row["label"], chosen["label"])
        self.assertEqual(row["gpus"], chosen["gpus"])
        self.assertIn(row["hardware.tp"], (4, 8))
        vllm = [l for l in p["deploy"]["launches"] if l["engine"] == "vllm"]
        self.assertEqual(len(vllm), 1)
        self.assertIn(f"--tensor-parallel-size {row['hardware.tp']}", vllm[0]["command"])
        self.assertEqual(vllm[0]["replicas"], chosen["replicas"])
        # Configurations not simulated have no outcome (an empty cell in plan.csv).
        for r in rows:
            if r["status"] in ("invalid", "pruned", "infeasible"):
                self.assertIsNone(r["replicas"])
                self.assertTrue(math.isfinite(r["usd_per_gpu_hour"]))

    def test_a_fleet_plan_returns_its_document_and_a_row_per_configuration(self):
        # scenarios/examples/fleet-plan.yaml at 5 % of its users: 5 options × 2 values of
        # serving.max_num_seqs = 10 configurations, ranked by $ a day.
        p = fleetsim.plan(FLEET_PLAN, {"users.sample": 0.05})
        rows = p["candidates"]
        self.assertEqual(len(rows), 10)
        self.assertEqual(len(p["configurations"]), 10)
        self.assertEqual({r["serving.max_num_seqs"] for r in rows}, {64, 256})
        chosen = rows[p["chosen"]]
        self.assertTrue(chosen["met"])
        self.assertEqual(chosen["usd_per_day"],
                         min(r["usd_per_day"] for r in rows if r["met"]))
        self.assertEqual([rows[i]["label"] for i in p["ranking"]][0], chosen["label"])


class ListKeysTest(unittest.TestCase):
    def test_keys_of_the_schema(self):
        keys = {k["path"]: k for k in fleetsim.list_keys()}
        self.assertEqual(keys["serving.replicas"]["type"], "integer")
        self.assertEqual(keys["serving.replicas"]["default"], "1")
        self.assertTrue(keys["model"]["required"])
        serving = fleetsim.list_keys("serving")
        self.assertTrue(serving)
        self.assertTrue(all(k["path"].startswith("serving") for k in serving))
        with self.assertRaises(ValueError) as ctx:
            fleetsim.list_keys("servin")
        self.assertIn("did you mean 'serving'", str(ctx.exception))


if __name__ == "__main__":
    unittest.main(verbosity=2)
