// Validation cases from a serving benchmark's saved result: the JSON that vLLM's
// `vllm bench serve --save-result` (benchmarks/benchmark_serving.py before 0.10) and
// SGLang's `python -m sglang.bench_serving --output-file` write. Each measured figure the
// file holds (total or output token throughput, mean TTFT, mean TPOT) becomes one case file
// (scenarios/validation/README.md) that simulates the same benchmark: the same number of
// requests, their mean prompt and output lengths, and the client's concurrency or request
// rate. `fleetsim validate DIR` then compares fleetsim with the user's own measurements, and
// `calibrate fit --dir DIR` can fit an engine profile on them.
//
// The file does not say which GPU, parallelism or model entry of the catalog ran, so the
// caller names them. Left out (each case file says so): the length distributions (their
// means only), vLLM's burstiness other than 1 (Poisson), and server flags the file does not
// record (the engine's usual scheduler settings are written, to be edited).
#pragma once

#include <string>
#include <vector>

#include "hw_models/catalog.h"

namespace fleetsim::validation {

struct BenchImportOptions {
  std::string model, gpu;  ///< catalog ids (required)
  int tp = 1;
  int replicas = 1;
  std::string weights;  ///< scenario precision.weights (e.g. fp8, fp4); empty: the model's default
  std::string engine;   ///< catalog engine id; empty: from the file's backend (vllm-v1, sglang)
  std::string source;   ///< leave-one-source-out group; empty: the file's stem
  bool heldout = false;
};

struct ImportedCase {
  std::string name;  ///< file name: <stem>-<metric>.yaml
  std::string text;  ///< the case file
};

/// Reads `json_file` and returns its cases (at least one). InputError naming the file and
/// field on anything missing or malformed, or when `opt` names no known model/GPU/engine.
std::vector<ImportedCase> import_serving_bench(const std::string& json_file,
                                               const BenchImportOptions& opt,
                                               const hw::Catalog& catalog);

}  // namespace fleetsim::validation
