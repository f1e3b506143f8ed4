// Maps the CUDA device name to a GPU id of hw_models/catalog/gpus/.
#pragma once

#include <string>

namespace fleetsim::kernels {

/// "NVIDIA H100 80GB HBM3" -> "h100-sxm", "NVIDIA H200" -> "h200-sxm", ...; "" when the
/// catalog has no entry for that part (H100 NVL, H200 NVL, A100 40GB, ...).
std::string catalog_gpu_id(const std::string& device_name);

}  // namespace fleetsim::kernels
