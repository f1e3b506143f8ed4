// Tests for sim/validation/fit (`fleetsim calibrate fit`) and the engine fields of
// validation cases: the fit recovers known parameters from synthetic cases generated with
// them, never reads held-out cases, writes its result back into the engine file with
// provenance, and a case without `engine:` gets the engine its text names.
#include "sim/validation/fit.h"

#include <gtest/gtest.h>

#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "hw_models/catalog.h"
#include "hw_models/error.h"
#include "sim/validation/validation.h"

namespace fleetsim::validation {
namespace {

namespace fs = std::filesystem;

// A copy of the shipped catalog with one more engine, "synthetic", whose fitted
// parameters start at `overhead` and `kernel`.
struct Fixture {
  fs::path dir;
  Fixture() {
    dir = fs::temp_directory_path() / ("fleetsim-fit-" + std::to_string(::getpid()));
    fs::remove_all(dir);
    fs::create_directories(dir / "cases");
    fs::copy(fs::path(FLEETSIM_SOURCE_DIR) / "hw_models/catalog", dir / "catalog",
             fs::copy_options::recursive);
  }
  ~Fixture() { fs::remove_all(dir); }
  std::string engine_file() const { return (dir / "catalog/engines/synthetic.yaml").string(); }
  void write_engine(double overhead_s, double kernel, double moe = 1.0,
                    const std::string& fit = "kernel_efficiency, iteration_overhead",
                    const std::string& tail = "", double moe_half_mb = 0) const {
    std::ofstream(engine_file()) << "# test engine\nname: synthetic\noverhead:\n  iteration: "
                                 << overhead_s * 1e6 << "us   # kept comment\n  per_sequence: 0s\n"
                                 << "kernels:\n  efficiency: " << kernel
                                 << "\n  moe_efficiency: " << moe
                                 << "\n  moe_half_expert_mb: " << moe_half_mb << "\n"
                                 << "fit: [" << fit << "]\n"
                                 << "sources: [\"test\"]\n"
                                 << tail;
  }
  // One step case of `model` (Llama-3.1-8B unless given) on an H100 with `measured` as given.
  std::string write_case(const std::string& id, const std::string& mode, int batch, int tokens,
                         double measured, bool heldout, const std::string& source,
                         const std::string& model = "llama-3.1-8b") const {
    const fs::path f = dir / "cases" / (id + ".yaml");
    std::ofstream o(f);
    o << "case: \"" << id << "\"\ncitation: \"synthetic\"\nmetric: "
      << (mode == "decode" ? "decode_tokens_per_s" : "prefill_tokens_per_s")
      << "\nmeasured: " << measured << "\nheldout: " << (heldout ? "true" : "false")
      << "\nengine: synthetic\nsource: " << source << "\nsetup: step\nstep:\n  model: " << model
      << "\n  hardware: {gpu: h100-sxm, tp: " << (model == "llama-3.1-8b" ? 1 : 2) << "}\n"
      << "  mode: " << mode << "\n  batch: " << batch << "\n"
      << (mode == "decode" ? "  context_tokens: " : "  prompt_tokens: ") << tokens << "\n";
    return f.string();
  }
};

// Decode batches from 1 to 512 (overhead-dominated to memory-bound) and prefills (compute-
// bound) pin both parameters: the overhead moves small batches, the kernel efficiency all.
const struct Shape {
  const char* mode;
  int batch, tokens;
} kShapes[] = {{"decode", 1, 512},    {"decode", 4, 1024},  {"decode", 16, 512},
               {"decode", 64, 2048},  {"decode", 256, 512}, {"prefill", 1, 2048},
               {"prefill", 1, 512},   {"prefill", 4, 1024}, {"decode", 8, 4096},
               {"decode", 128, 1024}, {"prefill", 2, 4096}, {"decode", 2, 256},
               {"decode", 32, 2048},  {"prefill", 1, 1024}, {"decode", 512, 256}};

TEST(Fit, RecoversKnownParametersFromSyntheticCases) {
  Fixture fx;
  // Truth: 2 ms per iteration, kernels at 0.8 of the calibrated rates.
  fx.write_engine(2e-3, 0.8);
  std::vector<std::string> files;
  {
    const hw::Catalog truth = hw::Catalog::load((fx.dir / "catalog").string());
    int k = 0;
    for (const Shape& s : kShapes) {
      std::string id = "c";  // built by appending: GCC 12 warns falsely on "c" + string (PR 105651)
      id += std::to_string(k);
      const std::string src = k % 3 == 0 ? "a" : k % 3 == 1 ? "b" : "c";
      const std::string f = fx.write_case(id, s.mode, s.batch, s.tokens, 1.0, false, src);
      // "Measured" = the model's own prediction with the true parameters.
      const double y = run_case(f, truth, nullptr).predicted;
      fx.write_case(id, s.mode, s.batch, s.tokens, y, false, src);
      files.push_back(f);
      ++k;
    }
    // A held-out case whose "measurement" is absurd: if the fit read it, it could not
    // recover the truth.
    files.push_back(fx.write_case("held", "decode", 32, 1024, 1.0, true, "d"));
  }
  // Start from wrong values and fit.
  fx.write_engine(0.3e-3, 1.0);
  const hw::Catalog cat = hw::Catalog::load((fx.dir / "catalog").string());
  FitOptions opt;
  opt.golden_steps = 40;  // enough steps to pin the optimum to ~1e-6 of the bounds
  opt.sweeps = 4;
  const FitResult r = fit_engine(files, cat, nullptr, "synthetic", opt);
  ASSERT_EQ(r.params, (std::vector<std::string>{"kernel_efficiency", "iteration_overhead"}));
  EXPECT_EQ(r.train_cases, 15);
  EXPECT_EQ(r.heldout_cases, 1);
  EXPECT_EQ(r.sources, 3);
  EXPECT_NEAR(r.after[0], 0.8, 0.8 * 1e-3);
  EXPECT_NEAR(r.after[1], 2e-3, 2e-3 * 1e-2);
  EXPECT_LT(r.train_median_after, 1e-3);
  EXPECT_GT(r.train_median_before, 0.05);  // the starting point was visibly wrong
  // Leave-one-source-out: each third of the cases (5), predicted by a fit on the other two
  // thirds (10 cases: both parameters, at 5 cases each), is still (nearly) exact, since
  // every source spans both regimes.
  EXPECT_LT(r.loso_median, 0.02);

  // Written back: values in place, comment kept, provenance appended; the file reloads.
  write_fit(fx.engine_file(), r, "  by: test\n  training_cases: 15\n");
  std::stringstream text;
  text << std::ifstream(fx.engine_file()).rdbuf();
  // The values' comments say they are fitted and from which prior (write_engine(0.3e-3, 1.0):
  // 300 us and 1); what the line said before is kept after the tag.
  EXPECT_NE(text.str().find("us   # fitted (prior 300us): kept comment\n"), std::string::npos);
  EXPECT_NE(text.str().find("   # fitted (prior 1)\n"), std::string::npos);
  EXPECT_NE(text.str().find("fitted:\n  by: test\n"), std::string::npos);
  const hw::EngineSpec e = hw::load_engine_file(fx.engine_file());
  EXPECT_NEAR(e.kernel_efficiency, r.after[0], 1e-3);
  EXPECT_NEAR(e.iteration_overhead_s, r.after[1], 1e-6);
  EXPECT_FALSE(e.fitted.empty());
  // A second write replaces the block instead of adding another.
  write_fit(fx.engine_file(), r, "  by: test again\n");
  std::stringstream again;
  again << std::ifstream(fx.engine_file()).rdbuf();
  EXPECT_EQ(again.str().find("by: test\n"), std::string::npos);
  EXPECT_NE(again.str().find("by: test again"), std::string::npos);
  // ... and the tag is replaced, not stacked.
  EXPECT_NE(again.str().find("us   # fitted (prior 300us): kept comment\n"), std::string::npos);
  EXPECT_EQ(again.str().find("fitted (prior 300us): fitted"), std::string::npos);
}

// Fits the fixture's engine on the first `n` shapes, each "measured" at 100 tokens/s from one
// source (no leave-one-source-out).
FitResult fit_constant_cases(const Fixture& fx, int n) {
  std::vector<std::string> files;
  for (int k = 0; k < n; ++k) {
    std::string id = "c";
    id += std::to_string(k);
    files.push_back(
        fx.write_case(id, kShapes[k].mode, kShapes[k].batch, kShapes[k].tokens, 100.0, false, "a"));
  }
  const hw::Catalog cat = hw::Catalog::load((fx.dir / "catalog").string());
  FitOptions opt;
  opt.loso = false;
  return fit_engine(files, cat, nullptr, "synthetic", opt);
}

TEST(Fit, RecoversTheMoeEfficiencyAndTheExpertSizeAtHalfRate) {
  // Truth: routed experts at moe_efficiency 0.7 of the tables' rate, times w / (w + 20 MB).
  // On 2 GPUs (tensor-parallel experts) Qwen3-30B-A3B's BF16 expert is 3 · 2048 · 384 · 2 B
  // = 4.72 MB a GPU: 0.7 · 4.72 / 24.72 = 0.134 of the rate; Mixtral-8x7B's 3 · 4096 · 7168
  // · 2 B = 176 MB: 0.7 · 176 / 196 = 0.63. One model alone cannot tell the two parameters
  // apart (a product); the two sizes pin both. 10 MoE cases fit the 2 MoE parameters (5
  // cases each); the dense kernel efficiency is not listed.
  Fixture fx;
  fx.write_engine(0, 1.0, 0.7, "moe_efficiency, moe_half_expert_mb", "", 20.0);
  std::vector<std::string> files;
  {
    const hw::Catalog truth = hw::Catalog::load((fx.dir / "catalog").string());
    const Shape shapes[] = {{"decode", 64, 512},
                            {"decode", 256, 1024},
                            {"prefill", 1, 2048},
                            {"decode", 16, 2048},
                            {"prefill", 2, 1024}};
    int k = 0;
    for (const char* model : {"qwen3-30b-a3b", "mixtral-8x7b"})
      for (const Shape& s : shapes) {
        std::string id = "m";
        id += std::to_string(k);
        const std::string src = k % 2 == 0 ? "a" : "b";
        const std::string f = fx.write_case(id, s.mode, s.batch, s.tokens, 1.0, false, src, model);
        const double y = run_case(f, truth, nullptr).predicted;
        fx.write_case(id, s.mode, s.batch, s.tokens, y, false, src, model);
        files.push_back(f);
        ++k;
      }
  }
  fx.write_engine(0, 1.0, 1.0, "moe_efficiency, moe_half_expert_mb", "", 4.0);
  const hw::Catalog cat = hw::Catalog::load((fx.dir / "catalog").string());
  FitOptions opt;
  opt.golden_steps = 40;
  opt.sweeps = 6;
  opt.loso = false;
  const FitResult r = fit_engine(files, cat, nullptr, "synthetic", opt);
  ASSERT_EQ(r.params, (std::vector<std::string>{"moe_efficiency", "moe_half_expert_mb"}));
  EXPECT_NEAR(r.after[0], 0.7, 0.7 * 1e-2);
  EXPECT_NEAR(r.after[1], 20.0, 20.0 * 2e-2);
  EXPECT_LT(r.train_median_after, 1e-2);
  EXPECT_GT(r.train_median_before, 0.1);  // the start (1.0, 4 MB) was visibly wrong
}

TEST(Fit, FewCasesFitFewerParameters) {
  // kCasesPerParameter = 5: 7 training cases fit only the first parameter of the list.
  Fixture fx;
  fx.write_engine(1e-3, 0.9);
  const FitResult r = fit_constant_cases(fx, 7);
  EXPECT_EQ(r.params, (std::vector<std::string>{"kernel_efficiency"}));
}

TEST(Fit, ParameterNoLongerFittedReturnsToItsPrior) {
  // An earlier fit moved iteration_overhead from its prior 1 ms (fitted.before) to 3 ms; the
  // list now fits kernel_efficiency only. The result must put iteration_overhead back at
  // 1 ms, so that the file written is the engine the fit evaluated, not a mix of two fits.
  Fixture fx;
  fx.write_engine(3e-3, 0.9, 1.0, "kernel_efficiency",
                  "fitted:\n  by: test\n  before:\n    iteration_overhead: 0.001\n");
  const FitResult r = fit_constant_cases(fx, 6);
  ASSERT_EQ(r.params, (std::vector<std::string>{"kernel_efficiency", "iteration_overhead"}));
  EXPECT_DOUBLE_EQ(r.after[1], 1e-3);
  write_fit(fx.engine_file(), r, "  by: test\n");
  EXPECT_NEAR(hw::load_engine_file(fx.engine_file()).iteration_overhead_s, 1e-3, 1e-9);
  // Its line says so: the value is the prior again, not a fitted one.
  std::stringstream text;
  text << std::ifstream(fx.engine_file()).rdbuf();
  EXPECT_NE(text.str().find("iteration: 1000us   # prior: kept comment\n"), std::string::npos);
}

TEST(Fit, EngineWithoutTrainingCasesIsAnError) {
  Fixture fx;
  fx.write_engine(1e-3, 0.9);
  const std::string f = fx.write_case("h", "decode", 1, 100, 100.0, true, "a");
  const hw::Catalog cat = hw::Catalog::load((fx.dir / "catalog").string());
  try {
    fit_engine({f}, cat, nullptr, "synthetic", FitOptions{});
    FAIL() << "expected an error";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("no training cases"), std::string::npos);
  }
}

TEST(ValidationCase, EngineInferredFromTheTextWhenNotGiven) {
  Fixture fx;
  const hw::Catalog cat = hw::Catalog::load((fx.dir / "catalog").string());
  const struct {
    const char* system;
    const char* engine;
  } rows[] = {{"TensorRT-LLM v1.0 (PyTorch backend), trtllm-bench", "trtllm-1"},
              {"TensorRT-LLM 0.17.0, trtllm-bench", "trtllm-0"},
              {"NVIDIA NIM 1.8.0 on 2 x H100", "trtllm-0"},
              {"vLLM 0.6.3, benchmark_serving", "vllm-v0"},
              {"vLLM 0.9.1", "vllm-v1"},
              {"SGLang 0.4.6", "sglang"},
              {"llama.cpp llama-bench, CUDA", "llamacpp"},
              {"some engine", hw::kDefaultEngine}};
  int k = 0;
  for (const auto& row : rows) {
    std::string name = "i";
    name += std::to_string(k++);
    const fs::path f = fx.dir / "cases" / (name + ".yaml");
    std::ofstream(f)
        << "case: \"x\"\ncitation: \"y\"\nsystem: \"" << row.system
        << "\"\nmetric: tpot\nmeasured: 0.01\nsetup: step\nstep:\n  model: llama-3.1-8b\n"
           "  hardware: {gpu: h100-sxm}\n  mode: decode\n  batch: 1\n  context_tokens: 100\n";
    EXPECT_EQ(run_case(f.string(), cat, nullptr).engine, row.engine) << row.system;
  }
}

TEST(ValidationCase, AmdGpuRunsTheRocmBuildsProfile) {
  Fixture fx;
  const hw::Catalog cat = hw::Catalog::load((fx.dir / "catalog").string());
  const fs::path f = fx.dir / "cases" / "amd.yaml";
  std::ofstream(f)
      << "case: \"x\"\ncitation: \"y\"\nmetric: tpot\nmeasured: 0.01\nengine: vllm-v1\n"
         "setup: step\nstep:\n  model: llama-3.1-8b\n  hardware: {gpu: mi300x}\n"
         "  mode: decode\n  batch: 1\n  context_tokens: 100\n";
  EXPECT_EQ(run_case(f.string(), cat, nullptr).engine, "vllm-v1-rocm");
}

TEST(ValidationCase, AppleGpuRunsTheMetalBackendsProfile) {
  // llamacpp.yaml names metal_variant: llamacpp-metal; an M2 Ultra case runs as that profile,
  // an H100 case as llamacpp itself.
  Fixture fx;
  const hw::Catalog cat = hw::Catalog::load((fx.dir / "catalog").string());
  for (const auto& [gpu, engine] :
       {std::pair<std::string, std::string>{"m2-ultra", "llamacpp-metal"},
        {"h100-sxm", "llamacpp"}}) {
    const fs::path f = fx.dir / "cases" / (gpu + ".yaml");
    std::ofstream(f) << "case: \"x\"\ncitation: \"y\"\nmetric: tpot\nmeasured: 0.01\n"
                        "engine: llamacpp\nsetup: step\nstep:\n  model: llama-3.1-8b\n"
                        "  hardware: {gpu: "
                     << gpu << "}\n  mode: decode\n  batch: 1\n  context_tokens: 100\n";
    EXPECT_EQ(run_case(f.string(), cat, nullptr).engine, engine) << gpu;
  }
}

// SGLang runs a prefill batch by itself whenever it can form one, decodes waiting
// (python/sglang/srt/managers/scheduler.py get_next_batch_to_run: "Run prefill first if
// possible"; mixed prefill+decode batches only with --enable-mixed-chunk, off by default).
// A suite case of an SGLang measurement that runs fleetsim's vllm policy must therefore not
// turn on chunked (mixed, stall-free) batching, which would hide the prefill stalls that make
// SGLang's TTFT under load.
TEST(ValidationSuite, SglangCasesScheduleTheirPromptsFirst) {
  const fs::path dir = fs::path(FLEETSIM_SOURCE_DIR) / "scenarios" / "validation";
  int sglang_cases = 0;
  for (const auto& f : case_files(dir.string())) {
    std::ifstream in(f);
    std::stringstream text;
    text << in.rdbuf();
    const std::string s = text.str();
    if (s.find("\nengine: sglang\n") == std::string::npos) continue;
    ++sglang_cases;
    if (s.find("policy: vllm") == std::string::npos) continue;
    EXPECT_EQ(s.find("chunked_prefill: true"), std::string::npos) << f;
  }
  // The suite holds SGLang cases (16 engine: sglang lines at this commit), so the loop
  // above checked something.
  EXPECT_GE(sglang_cases, 10);
}

TEST(FitObjective, SymmetricInLogSpace) {
  // |ln 2| for a 2x over-prediction and |ln 1/2| for a 2x under-prediction: mean ln 2.
  Case a, b;
  a.measured = 1;
  a.predicted = 2;
  b.measured = 2;
  b.predicted = 1;
  EXPECT_NEAR(fit_objective({a, b}), std::log(2.0), 1e-15);
}

}  // namespace
}  // namespace fleetsim::validation
