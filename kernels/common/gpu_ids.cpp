#include "kernels/common/gpu_ids.h"

#include <algorithm>
#include <cctype>

namespace fleetsim::kernels {
namespace {

bool has(const std::string& s, const char* word) { return s.find(word) != std::string::npos; }

}  // namespace

std::string catalog_gpu_id(const std::string& device_name) {
  std::string s = device_name;
  std::transform(s.begin(), s.end(), s.begin(),
                 [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
  // Names as cudaGetDeviceProperties / nvidia-smi report them, e.g. "NVIDIA H100 80GB HBM3"
  // (SXM5), "NVIDIA H100 PCIe", "NVIDIA H100 NVL", "NVIDIA H200", "NVIDIA H200 NVL",
  // "NVIDIA H800", "NVIDIA A100-SXM4-80GB", "NVIDIA B200", "NVIDIA GB200",
  // "NVIDIA L40S", "NVIDIA GeForce RTX 4090".
  if (has(s, "GB200")) return "gb200";
  if (has(s, "B200")) return "b200";
  if (has(s, "H200")) return has(s, "NVL") ? "" : "h200-sxm";
  if (has(s, "H100")) {
    if (has(s, "NVL")) return "";
    return has(s, "PCIE") ? "h100-pcie" : "h100-sxm";
  }
  if (has(s, "H800")) return has(s, "PCIE") ? "" : "h800-sxm";
  if (has(s, "A100")) return (has(s, "SXM") && has(s, "80GB")) ? "a100-80gb-sxm" : "";
  if (has(s, "L40S")) return "l40s";
  if (has(s, "RTX 4090")) return "rtx-4090";
  if (has(s, "RTX 5090")) return "rtx-5090";
  return "";
}

}  // namespace fleetsim::kernels
