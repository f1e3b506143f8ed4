// fleetsim_kernel_bench: times the kernels of kernels/cuda on the GPU it finds and writes
// calibration CSVs (hw_models/calibration/README.md) plus a summary. Google Benchmark with
// manual timing by CUDA events; every shape is validated against the CPU reference first.
//
// Own flags (the rest go to Google Benchmark, e.g. --benchmark_filter=gemm/cublaslt):
//   --out=DIR          output folder (default kernel-results)
//   --gpu-id=ID        catalog GPU id, when the device name does not map to one
//   --driver=VERSION   NVIDIA driver version for the provenance (run_calibration.sh passes it)
//   --sha=GIT_SHA      source revision for the provenance
//   --catalog=DIR      model/GPU catalog (default: hw_models/catalog or $FLEETSIM_CATALOG)
//   --sections=LIST    any of gemm,attention,moe (default all)
//   --quick            a few shapes and 3 runs each
//   --smoke            tiny synthetic shapes (checks the harness; used with the emulator)
// Exit codes: 0 all validated, 1 a validation or CUDA failure, 2 no GPU, 3 bad arguments.
#include <cstring>
#include <iostream>

#include "hw_models/catalog.h"
#include "kernels/bench/bench_common.h"

using namespace fleetsim::kernels;
using namespace fleetsim::kernels::bench;

namespace {

bool take(const char* arg, const char* flag, std::string* value) {
  const std::size_t n = std::strlen(flag);
  if (std::strncmp(arg, flag, n) != 0 || arg[n] != '=') return false;
  *value = arg + n + 1;
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  Context& c = ctx();
  std::vector<char*> rest = {argv[0]};
  for (int i = 1; i < argc; ++i) {
    const char* a = argv[i];
    if (take(a, "--out", &c.opt.out_dir) || take(a, "--gpu-id", &c.opt.gpu_id) ||
        take(a, "--driver", &c.opt.driver) || take(a, "--sha", &c.opt.source_sha) ||
        take(a, "--catalog", &c.opt.catalog_dir) || take(a, "--sections", &c.opt.sections))
      continue;
    if (std::strcmp(a, "--quick") == 0) {
      c.opt.quick = true;
      continue;
    }
    if (std::strcmp(a, "--smoke") == 0) {
      c.opt.smoke = true;
      continue;
    }
    if (std::strcmp(a, "--help") == 0 || std::strcmp(a, "-h") == 0) {
      std::cout
          << "usage: fleetsim_kernel_bench [--out=DIR] [--gpu-id=ID] [--driver=VER] [--sha=SHA]\n"
             "       [--catalog=DIR] [--sections=gemm,attention,moe] [--quick] [google benchmark "
             "flags]\n";
      return 0;
    }
    rest.push_back(argv[i]);
  }

  c.dev = detect_device();
  if (!c.dev.present) {
    std::cerr << "fleetsim_kernel_bench: no CUDA GPU available (" << c.dev.reason
              << "); nothing measured. The kernels' GPU check is still open on this machine.\n";
    return 2;
  }
  if (c.opt.catalog_dir.empty()) c.opt.catalog_dir = fleetsim::hw::Catalog::default_dir();
  const std::string id = c.opt.gpu_id.empty() ? c.dev.catalog_id : c.opt.gpu_id;
  try {
    const auto cat = fleetsim::hw::Catalog::load(c.opt.catalog_dir);
    if (!id.empty()) c.gpu = cat.gpu(id);
  } catch (const std::exception& e) {
    std::cerr << "fleetsim_kernel_bench: catalog: " << e.what() << "\n";
    return 3;
  }
  std::cerr << "device: " << c.dev.name << " (cc " << c.dev.cc_major << "." << c.dev.cc_minor
            << ", " << c.dev.sm_count << " SMs, L2 " << (c.dev.l2_bytes >> 20) << " MiB, "
            << (c.dev.mem_bytes >> 20) << " MiB), catalog id: " << (c.gpu ? c.gpu->id : "none")
            << "\n";
  if (!c.gpu)
    std::cerr << "warning: '" << c.dev.name
              << "' is not mapped to a catalog GPU; fractions of peak and the "
              << "calibration CSVs are left out (pass --gpu-id=ID)\n";

  std::string err;
  c.lt = cublaslt_create(&err);
  if (c.lt == nullptr) {
    std::cerr << "fleetsim_kernel_bench: " << err << "\n";
    return 1;
  }
  c.timer = std::make_unique<Timer>(c.dev);
  try {
    if (c.opt.has_section("gemm")) register_gemm();
    if (c.opt.has_section("attention")) register_attention();
    if (c.opt.has_section("moe")) register_moe();
  } catch (const std::exception& e) {
    std::cerr << "fleetsim_kernel_bench: " << e.what() << "\n";
    return 3;
  }

  int bargc = static_cast<int>(rest.size());
  benchmark::Initialize(&bargc, rest.data());
  if (benchmark::ReportUnrecognizedArguments(bargc, rest.data())) return 3;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  release_caches();

  int rc = 0;
  try {
    const std::string summary = write_outputs();
    std::cout << "\n" << summary.substr(0, summary.find("\n| section |")) << "\n";
    std::cout << "full table: " << c.opt.out_dir << "/summary.md; all numbers: " << c.opt.out_dir
              << "/results.csv\n";
  } catch (const std::exception& e) {
    std::cerr << "fleetsim_kernel_bench: writing outputs: " << e.what() << "\n";
    rc = 1;
  }
  c.timer.reset();
  cublaslt_destroy(c.lt);
  if (!c.failures.empty()) {
    std::cerr << c.failures.size() << " failure(s):\n";
    for (const auto& f : c.failures) std::cerr << "  " << f << "\n";
    rc = 1;
  }
  return rc;
}
