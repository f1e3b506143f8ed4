// A catalog model from a Hugging Face `config.json` (`fleetsim import-model`).
//
// Reads the transformer's shape from the config's keys, as the model families spell them:
// dense Llama/Mistral/Qwen-style decoders (GQA, optional sliding window), MoE with the
// Mixtral (num_local_experts), Qwen-MoE (num_experts, moe_intermediate_size,
// shared_expert_intermediate_size, decoder_sparse_step, mlp_only_layers), DeepSeek/Kimi
// (n_routed_experts, n_shared_experts, first_k_dense_replace, MLA ranks) and Llama 4
// (interleave_moe_layer_step, intermediate_size_mlp, one shared expert) spellings, gpt-oss
// (layer_types of sliding and full attention). A multimodal config's `text_config` is the
// decoder. Every field of the catalog file it writes names the key it came from; what the
// config does not say and the importer assumes is marked ASSUMPTION in the file.
#pragma once

#include <string>
#include <vector>

#include "hw_models/catalog.h"

namespace fleetsim::hw {

struct HfImportOptions {
  std::string id;               ///< catalog id (file stem); required
  std::string name;             ///< display name ("" = the config's _name_or_path, or the id)
  std::string source;           ///< citation of the config ("" = the file name)
  double published_params = 0;  ///< the model card's total (0 = write the derived count)
  double published_active = 0;  ///< and active count of an MoE model (0 = derived)
  std::string hf_repo;          ///< the repository serving engines load ("" = not written)
};

struct HfImport {
  ModelSpec model;                   ///< the shape read (published_* as written)
  std::string yaml;                  ///< the catalog file
  std::vector<std::string> assumed;  ///< what the config did not say (also in the file)
};

/// Reads `json_text` (the contents of `file`, named in errors). InputError for invalid JSON
/// (with its line), a missing or non-integer shape key (naming the key and the spellings
/// looked for), or a shape the catalog cannot express.
HfImport import_hf_config(const std::string& json_text, const std::string& file,
                          const HfImportOptions& options);

}  // namespace fleetsim::hw
