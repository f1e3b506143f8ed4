#include "reports/deploy.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "hw_models/files.h"
#include "reports/format.h"

namespace fleetsim::reports {

namespace deploy_impl {

// One pool of the deployment, as the engines see it.
struct PoolView {
  std::string name;  // "serving" | "prefill" | "decode" | "small", unless renamed
  std::string role;  // the same, never renamed: what the pool does
  int replicas = 0;
  const hw::ModelSpec* model = nullptr;
  const hw::GpuSpec* gpu = nullptr;
  int gpus_per_node = 8;
  hw::Parallelism par;
  const serving::ServingConfig* cfg = nullptr;
  bool speculative = false;
};

std::string model_path(const hw::ModelSpec& m) {
  return m.hf_repo.empty() ? "${MODEL_PATH:?the weights of " + m.id + "}" : m.hf_repo;
}

std::string engine_family(const std::string& engine_id) {
  if (engine_id.rfind("sglang", 0) == 0) return "sglang";
  if (engine_id.rfind("trtllm", 0) == 0) return "trtllm";
  return "vllm";
}

std::vector<PoolView> pools_of(const scenario::Scenario& sc) {
  std::vector<PoolView> out;
  auto add = [&](const std::string& name, int replicas, const hw::ModelSpec& m,
                 const hw::GpuSpec& g, const std::optional<hw::NodeSpec>& node,
                 const hw::Parallelism& par, const serving::ServingConfig& cfg, bool spec) {
    PoolView p;
    p.name = name;
    p.role = name;
    p.replicas = replicas;
    p.model = &m;
    p.gpu = &g;
    p.gpus_per_node = node ? node->gpus_per_node : std::max(1, par.gpus());
    p.par = par;
    p.cfg = &cfg;
    p.speculative = spec;
    out.push_back(p);
  };
  if (sc.prefill_pool)
    add("prefill", sc.prefill_pool->replicas, sc.prefill_pool->model, sc.prefill_pool->gpu,
        sc.prefill_pool->node, sc.prefill_pool->par, sc.prefill_pool->vllm, false);
  if (sc.small_pool)
    add("small", sc.small_pool->replicas, sc.small_pool->model, sc.small_pool->gpu,
        sc.small_pool->node, sc.small_pool->par, sc.small_pool->vllm, false);
  add(sc.prefill_pool ? "decode" : "serving", sc.replicas, sc.model, sc.gpu, sc.node, sc.par,
      sc.vllm, sc.spec.has_value());
  return out;
}

std::vector<std::string> vllm_argv(const scenario::Scenario& sc, const PoolView& p) {
  const serving::ServingConfig& c = *p.cfg;
  std::vector<std::string> a = {"vllm", "serve", model_path(*p.model)};
  auto opt = [&](const std::string& k, const std::string& v) {
    a.push_back(k);
    a.push_back(v);
  };
  opt("--tensor-parallel-size", std::to_string(p.par.tp));
  if (p.par.pp > 1) opt("--pipeline-parallel-size", std::to_string(p.par.pp));
  if (p.par.dp_attention > 1) opt("--data-parallel-size", std::to_string(p.par.dp_attention));
  if (p.par.expert_parallel) a.push_back("--enable-expert-parallel");
  opt("--max-num-seqs", std::to_string(c.max_num_seqs));
  opt("--max-num-batched-tokens", std::to_string(c.max_batched_tokens));
  if (c.max_context_tokens > 0) opt("--max-model-len", std::to_string(c.max_context_tokens));
  opt("--gpu-memory-utilization", general(sc.gpu_memory_utilization, 3));
  if (sc.engine.id == "vllm-v0" || sc.engine.id == "vllm-v0-rocm") {
    if (c.chunked_prefill) a.push_back("--enable-chunked-prefill");
    if (c.prefix_caching) a.push_back("--enable-prefix-caching");
  } else if (!c.prefix_caching) {
    a.push_back("--no-enable-prefix-caching");
  }
  if (sc.kv_dtype == "fp8") opt("--kv-cache-dtype", "fp8");
  if (sc.weights_dtype == "fp8") opt("--quantization", "fp8");
  if (p.speculative && sc.spec)
    opt("--speculative-config",
        std::string("{\"method\": \"") +
            (sc.draft_model == "mtp" ? "deepseek_mtp\""
                                     : "draft_model\", \"model\": \"" + sc.draft_model + "\"") +
            ", \"num_speculative_tokens\": " + std::to_string(sc.spec->k) + "}");
  if (p.role == "prefill" || p.role == "decode")
    opt("--kv-transfer-config", "{\"kv_connector\": \"NixlConnector\", \"kv_role\": \"kv_both\"}");
  return a;
}

std::vector<std::string> sglang_argv(const scenario::Scenario& sc, const PoolView& p) {
  const serving::ServingConfig& c = *p.cfg;
  std::vector<std::string> a = {"python3", "-m", "sglang.launch_server", "--model-path",
                                model_path(*p.model)};
  auto opt = [&](const std::string& k, const std::string& v) {
    a.push_back(k);
    a.push_back(v);
  };
  opt("--tp-size", std::to_string(p.par.tp * p.par.dp_attention));
  if (p.par.pp > 1) opt("--pp-size", std::to_string(p.par.pp));
  if (p.par.dp_attention > 1) {
    opt("--dp-size", std::to_string(p.par.dp_attention));
    a.push_back("--enable-dp-attention");
  }
  if (p.par.expert_parallel) opt("--ep-size", std::to_string(p.par.tp * p.par.dp_attention));
  opt("--max-running-requests", std::to_string(c.max_num_seqs));
  opt("--chunked-prefill-size", c.chunked_prefill ? std::to_string(c.max_batched_tokens) : "-1");
  opt("--max-prefill-tokens", std::to_string(c.max_batched_tokens));
  if (c.max_context_tokens > 0) opt("--context-length", std::to_string(c.max_context_tokens));
  opt("--mem-fraction-static", general(sc.gpu_memory_utilization, 3));
  if (!c.prefix_caching) a.push_back("--disable-radix-cache");
  if (sc.kv_dtype == "fp8") opt("--kv-cache-dtype", "fp8_e4m3");
  if (sc.weights_dtype == "fp8") opt("--quantization", "fp8");
  if (p.speculative && sc.spec) {
    opt("--speculative-algorithm", sc.draft_model == "mtp" ? "NEXTN" : "STANDALONE");
    if (sc.draft_model != "mtp") opt("--speculative-draft-model-path", sc.draft_model);
    opt("--speculative-num-steps", std::to_string(sc.spec->k));
    opt("--speculative-num-draft-tokens", std::to_string(sc.spec->k + 1));
  }
  if (p.role == "prefill" || p.role == "decode") opt("--disaggregation-mode", p.role);
  return a;
}

std::vector<std::string> trtllm_argv(const PoolView& p, const std::string& extra) {
  const serving::ServingConfig& c = *p.cfg;
  std::vector<std::string> a = {"trtllm-serve", model_path(*p.model)};
  auto opt = [&](const std::string& k, const std::string& v) {
    a.push_back(k);
    a.push_back(v);
  };
  opt("--tp_size", std::to_string(p.par.tp * p.par.dp_attention));
  if (p.par.pp > 1) opt("--pp_size", std::to_string(p.par.pp));
  if (p.par.expert_parallel) opt("--ep_size", std::to_string(p.par.tp * p.par.dp_attention));
  opt("--max_batch_size", std::to_string(c.max_num_seqs));
  opt("--max_num_tokens", std::to_string(c.max_batched_tokens));
  if (c.max_context_tokens > 0) opt("--max_seq_len", std::to_string(c.max_context_tokens));
  opt("--extra_llm_api_options", extra);
  return a;
}

std::string trtllm_extra(const scenario::Scenario& sc, const PoolView& p) {
  const serving::ServingConfig& c = *p.cfg;
  std::ostringstream y;
  y << "# TensorRT-LLM LLM API options for the " << p.name << " pool (trtllm-serve "
    << "--extra_llm_api_options)\n"
    << "enable_chunked_prefill: " << (c.chunked_prefill ? "true" : "false") << "\n"
    << "enable_attention_dp: " << (p.par.dp_attention > 1 ? "true" : "false") << "\n"
    << "kv_cache_config:\n"
    << "  enable_block_reuse: " << (c.prefix_caching ? "true" : "false") << "\n"
    << "  free_gpu_memory_fraction: " << general(sc.gpu_memory_utilization, 3) << "\n";
  if (sc.kv_dtype == "fp8") y << "  dtype: fp8\n";
  if (p.speculative && sc.spec && sc.draft_model == "mtp")
    y << "speculative_config:\n  decoding_type: MTP\n  num_nextn_predict_layers: " << sc.spec->k
      << "\n";
  return y.str();
}

std::string k8s_name(const std::string& s) {
  std::string out;
  for (const char ch : s) {
    const char c = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    out += (std::isalnum(static_cast<unsigned char>(c)) != 0) ? c : '-';
  }
  while (!out.empty() && out.back() == '-') out.pop_back();
  return out.empty() ? "fleetsim" : out.substr(0, 50);
}

// A YAML flow sequence of v[from..]: a JSON array of strings is one, with JSON's escapes.
std::string yaml_list(const std::vector<std::string>& v, size_t from) {
  return nlohmann::json(std::vector<std::string>(v.begin() + static_cast<long>(from), v.end()))
      .dump();
}

std::string image_of(const std::string& engine, bool amd) {
  if (engine == "sglang") return amd ? "lmsysorg/sglang:latest-rocm" : "lmsysorg/sglang:latest";
  if (engine == "trtllm") return "nvcr.io/nvidia/tensorrt-llm/release:latest";
  return amd ? "rocm/vllm:latest" : "vllm/vllm-openai:latest";
}

std::string manifests(const std::vector<Launch>& launches, const std::vector<PoolView>& pools,
                      const std::string& engine, const std::string& name,
                      std::vector<std::string>* notes) {
  std::ostringstream y;
  for (const Launch& l : launches) {
    if (l.engine != engine) continue;
    const PoolView& p = *std::find_if(pools.begin(), pools.end(),
                                      [&](const PoolView& v) { return v.name == l.pool; });
    const bool amd = p.gpu->vendor == "AMD";
    const std::string obj = k8s_name(name + "-" + l.pool);
    const int nodes = (l.gpus + p.gpus_per_node - 1) / p.gpus_per_node;
    const int gpus_here = std::min(l.gpus, p.gpus_per_node);
    const std::string gpu_key = amd ? "amd.com/gpu" : "nvidia.com/gpu";
    // The container: the command's first word runs, the rest are its arguments.
    std::ostringstream ctr;
    ctr << "      - name: " << l.engine << "\n"
        << "        image: " << image_of(l.engine, amd) << "\n"
        << "        command: " << yaml_list({l.argv.front()}, 0) << "\n"
        << "        args: " << yaml_list(l.argv, 1) << "\n"
        << "        ports: [{containerPort: 8000}]\n"
        << "        resources:\n          limits: {" << gpu_key << ": " << gpus_here << "}\n";
    if (!l.extra_name.empty())
      notes->push_back("kubernetes: mount " + l.extra_name + " (a ConfigMap) where the " + l.pool +
                       " pool's --extra_llm_api_options finds it");
    y << "---\n";
    if (nodes > 1) {
      // A replica spans several nodes: one group of `nodes` pods per replica.
      y << "apiVersion: leaderworkerset.x-k8s.io/v1\nkind: LeaderWorkerSet\n"
        << "metadata: {name: " << obj << "}\n"
        << "spec:\n  replicas: " << l.replicas << "\n  leaderWorkerTemplate:\n"
        << "    size: " << nodes << "\n    workerTemplate:\n      metadata:\n"
        << "        labels: {app: " << obj << "}\n      spec:\n        containers:\n";
      std::istringstream in(ctr.str());
      for (std::string line; std::getline(in, line);) y << "    " << line << "\n";
      notes->push_back("the " + l.pool + " pool's replicas span " + std::to_string(nodes) +
                       " nodes each (" + std::to_string(l.gpus) +
                       " GPUs): a LeaderWorkerSet (sigs.k8s.io/lws) groups them; the engine's "
                       "multi-node launch (Ray for vLLM, --nnodes/--node-rank for SGLang, "
                       "mpirun for TensorRT-LLM) must be added to its command");
    } else {
      y << "apiVersion: apps/v1\nkind: Deployment\n"
        << "metadata: {name: " << obj << "}\n"
        << "spec:\n  replicas: " << l.replicas << "\n"
        << "  selector: {matchLabels: {app: " << obj << "}}\n"
        << "  template:\n    metadata: {labels: {app: " << obj << "}}\n"
        << "    spec:\n      containers:\n"
        << ctr.str();
    }
    y << "---\napiVersion: v1\nkind: Service\n"
      << "metadata: {name: " << obj << "}\n"
      << "spec:\n  selector: {app: " << obj << "}\n  ports: [{port: 8000, targetPort: 8000}]\n";
  }
  return y.str();
}

}  // namespace deploy_impl

Deployable deployable(const scenario::Scenario& sc, const std::string& name,
                      const std::map<std::string, std::string>& pool_names) {
  using namespace deploy_impl;
  Deployable d;
  std::vector<PoolView> pools = pools_of(sc);
  for (PoolView& p : pools) {
    const auto it = pool_names.find(p.name);
    if (it != pool_names.end()) p.name = it->second;
  }
  for (const PoolView& p : pools) {
    const int gpus = p.par.gpus();
    d.launches.push_back({"vllm", p.name, p.replicas, gpus, vllm_argv(sc, p), "", ""});
    d.launches.push_back({"sglang", p.name, p.replicas, gpus, sglang_argv(sc, p), "", ""});
    const std::string extra = "trtllm-" + p.name + ".yaml";
    d.launches.push_back(
        {"trtllm", p.name, p.replicas, gpus, trtllm_argv(p, extra), extra, trtllm_extra(sc, p)});
    if (p.model->hf_repo.empty())
      d.notes.push_back("the catalog names no Hugging Face repository for " + p.model->id +
                        ": set MODEL_PATH to its weights");
  }
  const std::string engine = engine_family(sc.engine.id);
  if (sc.engine.id.rfind("llamacpp", 0) == 0)
    d.notes.push_back(
        "the scenario's engine is llama.cpp, which serves one sequence at a time; "
        "the manifests use vLLM");
  d.kubernetes = manifests(d.launches, pools, engine, name, &d.notes);
  // What the engines need besides these flags.
  const std::string& w = sc.weights_dtype;
  if (w == "fp8")
    d.notes.push_back(
        "weights fp8: vLLM and SGLang quantize a BF16 checkpoint on load "
        "(--quantization fp8; drop it for an FP8 checkpoint); TensorRT-LLM needs an "
        "FP8 checkpoint (TensorRT Model Optimizer)");
  else if (w != "bf16" && w != "fp16")
    d.notes.push_back("weights " + w + ": point the model path at a checkpoint quantized to " + w +
                      " (the engines read its quantization from its config)");
  if (sc.vllm_family() && !sc.vllm.chunked_prefill && engine == "vllm" &&
      sc.engine.id.rfind("vllm-v1", 0) == 0)
    d.notes.push_back(
        "prefill-first scheduling: vLLM's V1 engine always chunks prefills; the "
        "closest it gets is a --max-num-batched-tokens of at least the longest "
        "prompt, which the command sets from the plan's budget");
  if (sc.prefill_pool)
    d.notes.push_back(
        "disaggregated: the prefill and decode pools exchange KV caches (vLLM's "
        "NixlConnector, SGLang's --disaggregation-mode); a router in front "
        "(vLLM's or SGLang's disaggregation proxy) sends each request to both");
  if (sc.small_pool)
    d.notes.push_back("cascade: the small pool serves " + sc.small_pool->model.id +
                      "; the escalation rule (share " + general(sc.escalation, 3) +
                      ") lives in the application's router, not in the engines");
  if (sc.lora_rank > 0)
    d.notes.push_back(
        "multi-LoRA: add the engines' LoRA flags (vLLM --enable-lora "
        "--max-lora-rank " +
        std::to_string(sc.lora_rank) + ") with your adapters");
  if (sc.response_cache)
    d.notes.push_back("response cache: in front of the engines (an API gateway), not a flag");
  return d;
}

nlohmann::json deployable_json(const Deployable& d) {
  nlohmann::json j;
  j["launches"] = nlohmann::json::array();
  for (const auto& l : d.launches)
    j["launches"].push_back({{"engine", l.engine},
                             {"pool", l.pool},
                             {"replicas", l.replicas},
                             {"gpus", l.gpus},
                             {"argv", l.argv},
                             {"command", shell_line(l.argv)},
                             {"extra_name", l.extra_name},
                             {"extra_yaml", l.extra_yaml}});
  j["kubernetes"] = d.kubernetes;
  j["notes"] = d.notes;
  return j;
}

std::string shell_line(const std::vector<std::string>& argv) {
  std::string s;
  for (const auto& a : argv) {
    const bool plain = !a.empty() && a.find_first_not_of(
                                         "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                         "0123456789-_./:=,") == std::string::npos;
    // ${MODEL_PATH:?...} must expand: double quotes; everything else single quotes.
    std::string q;
    if (plain) {
      q = a;
    } else if (a.rfind("${", 0) == 0) {
      q = "\"" + a + "\"";
    } else {
      q = "'";
      for (const char c : a) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
      q += "'";
    }
    s += (s.empty() ? "" : " ") + q;
  }
  return s;
}

Deployable fleet_deployable(const scenario::Scenario& sc, const std::vector<int>& replicas,
                            const std::string& name) {
  Deployable out;
  if (!sc.fleet) return deployable(sc, name);
  const fleet::FleetSpec& f = *sc.fleet;
  // A pool's settings in the base scenario's place (what deployable reads of it).
  auto put = [](scenario::Scenario& s, const scenario::Pool& p, int n) {
    s.model = p.model;
    s.gpu = p.gpu;
    s.node = p.node;
    s.par = p.par;
    s.dep = p.dep;
    s.memory = p.memory;
    s.vllm = p.vllm;
    s.spec = p.spec;
    s.lora_rank = p.lora_rank;
    s.weights_dtype = p.weights_dtype;
    s.kv_dtype = p.kv_dtype;
    s.replicas = n;
  };
  const auto slug = deploy_impl::k8s_name;  // "us/short" → "us-short"
  using Role = serving::EngineConfig::Role;
  size_t j = 0;
  std::vector<size_t> first(f.regions.size());
  for (size_t r = 0; r < f.regions.size(); ++r) {
    first[r] = j;
    j += f.regions[r].pools.size();
  }
  for (size_t r = 0; r < f.regions.size(); ++r) {
    const auto& pools = f.regions[r].pools;
    for (size_t k = 0; k < pools.size(); ++k) {
      const fleet::FleetPool& fp = pools[k];
      if (fp.pool.vllm.role == Role::kDecode) continue;  // with its prefill pool below
      scenario::Scenario s = sc;
      s.fleet.reset();
      s.prefill_pool.reset();
      s.small_pool.reset();
      const int n = replicas[first[r] + k];
      // pool name after its region: "us/main" → "us-main"
      std::map<std::string, std::string> renamed;
      if (fp.pool.vllm.role == Role::kPrefill) {
        size_t d = pools.size();
        for (size_t x = 0; x < pools.size(); ++x)
          if (pools[x].pool.vllm.role == Role::kDecode &&
              pools[x].pool.model.id == fp.pool.model.id)
            d = x;
        if (d == pools.size()) continue;  // checked when loaded: cannot happen
        put(s, pools[d].pool, replicas[first[r] + d]);
        s.prefill_pool = fp.pool;
        s.prefill_pool->replicas = n;
        renamed["prefill"] = slug(fp.name);
        renamed["decode"] = slug(pools[d].name);
      } else {
        put(s, fp.pool, n);
        renamed["serving"] = slug(fp.name);
      }
      Deployable d = deployable(s, name, renamed);
      for (Launch& l : d.launches) out.launches.push_back(std::move(l));
      out.kubernetes += d.kubernetes.rfind("---", 0) == 0 || out.kubernetes.empty()
                            ? d.kubernetes
                            : "---\n" + d.kubernetes;
      for (auto& note : d.notes)
        if (std::find(out.notes.begin(), out.notes.end(), note) == out.notes.end())
          out.notes.push_back(std::move(note));
    }
  }
  // The engines and manifests serve each pool behind its own Service; which calls go to
  // which pool is the gateway's job, so the split is said.
  if (f.split != fleet::FleetSpec::Split::kNone) {
    std::string rule;
    for (size_t side = 0; side < f.side_names.size(); ++side) {
      std::string pools_of_side;
      for (const auto& region : f.regions)
        for (const auto& fp : region.pools)
          if (fp.side == static_cast<int>(side))
            pools_of_side += (pools_of_side.empty() ? "" : ", ") + slug(fp.name);
      if (pools_of_side.empty()) continue;
      std::string what = f.side_names[side];
      if (f.split == fleet::FleetSpec::Split::kLength) {
        const int64_t lo = side == 0                                 ? 0
                           : f.medium_prompt_tokens > 0 && side == 1 ? f.medium_prompt_tokens
                                                                     : f.long_prompt_tokens;
        const int64_t hi = side + 1 == f.side_names.size()
                               ? -1
                               : (f.medium_prompt_tokens > 0 && side == 0 ? f.medium_prompt_tokens
                                                                          : f.long_prompt_tokens);
        what = "prompts of " +
               (lo > 0 ? "at least " + std::to_string(lo) + (hi > 0 ? " and " : "") : "") +
               (hi > 0 ? "fewer than " + std::to_string(hi) : "") + " tokens";
      } else {
        what = side == 0 ? "the classes no pool names" : "the session classes " + what;
      }
      rule += (rule.empty() ? "" : "; ") + what + " to " + pools_of_side;
    }
    out.notes.push_back(
        "route calls as the plan split them (the gateway's job; each pool has its "
        "own Service): " +
        rule +
        (f.split == fleet::FleetSpec::Split::kLength
             ? " (a prompt counts its system prompt and conversation so far)"
             : ""));
  }
  return out;
}

std::vector<std::string> write_deployable(const Deployable& d, const std::string& dir) {
  namespace fs = std::filesystem;
  const fs::path out = fs::path(dir) / "deploy";
  fs::create_directories(out);
  std::vector<std::string> written;
  for (const char* engine : {"vllm", "sglang", "trtllm"}) {
    // `sh <engine>.sh POOL` starts one replica of POOL on this server.
    std::ostringstream sh, usage;
    sh << "#!/bin/sh\n# " << engine << " launch commands of the plan's answer, one per pool: run "
       << "`sh " << engine << ".sh POOL` on each server of that pool\n# (or let kubernetes.yaml "
       << "do it). Written by fleetsim plan.\nset -eu\ncase \"${1:-}\" in\n";
    for (const Launch& l : d.launches) {
      if (l.engine != engine) continue;
      sh << "  " << l.pool << ")  # " << l.replicas << " replica" << (l.replicas == 1 ? "" : "s")
         << " of " << l.gpus << " GPU" << (l.gpus == 1 ? "" : "s") << "\n    exec "
         << shell_line(l.argv) << " ;;\n";
      usage << (usage.tellp() > 0 ? "|" : "") << l.pool;
    }
    sh << "  *) echo \"usage: sh " << engine << ".sh " << usage.str()
       << "\" >&2; exit 2 ;;\nesac\n";
    const std::string p = (out / (std::string(engine) + ".sh")).string();
    files::write_file_atomically(p, sh.str());
    written.push_back(p);
  }
  for (const Launch& l : d.launches)
    if (!l.extra_name.empty()) {
      const std::string p = (out / l.extra_name).string();
      files::write_file_atomically(p, l.extra_yaml);
      written.push_back(p);
    }
  const std::string k8s = (out / "kubernetes.yaml").string();
  files::write_file_atomically(k8s, d.kubernetes);
  written.push_back(k8s);
  std::ostringstream md;
  md << "# Deploying the plan's answer\n\nLaunch commands per engine (`vllm.sh`, `sglang.sh`, "
        "`trtllm.sh`) and Kubernetes manifests (`kubernetes.yaml`) for the configuration the "
        "plan chose. Check before use:\n\n";
  for (const auto& n : d.notes) md << "- " << n << "\n";
  const std::string readme = (out / "README.md").string();
  files::write_file_atomically(readme, md.str());
  written.push_back(readme);
  return written;
}

}  // namespace fleetsim::reports
