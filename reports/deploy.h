// Deployable output: a resolved deployment (a plan's answer) as the launch commands of the
// serving engines and as Kubernetes manifests.
//
// For each pool (one, or prefill and decode when disaggregated) the same settings in each
// engine's words — parallelism, batch and token limits, chunked prefill, KV-cache dtype,
// memory share, prefix caching, speculative decoding, disaggregation role — for vLLM
// (`vllm serve`), SGLang (`python3 -m sglang.launch_server`) and TensorRT-LLM
// (`trtllm-serve` with an --extra_llm_api_options file), and one Kubernetes Deployment and
// Service per pool (a LeaderWorkerSet when a replica spans several nodes). What an engine
// cannot express, or what the user must supply (quantized checkpoints, the model path when
// the catalog has no Hugging Face repository), is said in `notes`, never guessed silently.
#pragma once

#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/scenario/scenario.h"

namespace fleetsim::reports {

/// One engine's launch of one pool.
struct Launch {
  std::string engine;             ///< "vllm" | "sglang" | "trtllm"
  std::string pool;               ///< "serving", or "prefill" / "decode"
  int replicas = 0;               ///< copies of this command to run
  int gpus = 0;                   ///< GPUs each copy uses (tp · pp · dp_attention)
  std::vector<std::string> argv;  ///< the command, one argument per element
  std::string extra_name;         ///< TensorRT-LLM's --extra_llm_api_options file ("" = none)
  std::string extra_yaml;         ///< and its contents
};

struct Deployable {
  std::vector<Launch> launches;    ///< every engine × pool
  std::string kubernetes;          ///< manifests for the scenario's engine (multi-document YAML)
  std::vector<std::string> notes;  ///< what the user must check or supply
};

/// The launches and manifests of `sc` (a resolved single-pool scenario: a plan's answer at
/// its replica count). `name` prefixes the Kubernetes objects (lower-case, '-'); a pool is
/// named "serving", or "prefill" and "decode", or "small", unless `pool_names` renames it.
Deployable deployable(const scenario::Scenario& sc, const std::string& name,
                      const std::map<std::string, std::string>& pool_names = {});

/// A fleet's (sc.fleet) pools at `replicas` each (full scale, the fleet's pool order; spares
/// included by the caller): every region's pools in one Deployable, launches named
/// "<region>-<pool>" (a region's prefill pool with its model's decode pool as one
/// disaggregated deployment), the Kubernetes objects named `name`-<region>-<pool>, the
/// notes of every pool once.
Deployable fleet_deployable(const scenario::Scenario& sc, const std::vector<int>& replicas,
                            const std::string& name);

/// The same as JSON: "launches" (engine, pool, replicas, gpus, argv, command: the shell
/// line, extra_name, extra_yaml), "kubernetes" and "notes".
nlohmann::json deployable_json(const Deployable& d);

/// `argv` as one shell line, each argument quoted where the shell needs it.
std::string shell_line(const std::vector<std::string>& argv);

/// Writes DIR/deploy/: one script per engine (vllm.sh, sglang.sh, trtllm.sh with
/// trtllm-<pool>.yaml), kubernetes.yaml and README.md (the notes). Returns the files.
std::vector<std::string> write_deployable(const Deployable& d, const std::string& dir);

}  // namespace fleetsim::reports
