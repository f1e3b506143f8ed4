// Real request traces: Azure LLM inference 2023 (CSV) and Mooncake (JSONL with prefix-block
// hashes). See scenarios/data/traces/README.md for the formats and licenses.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace fleetsim::workload {

struct TraceRecord {
  double time_s = 0;  ///< seconds since the first record of the trace
  int32_t input_tokens = 0;
  int32_t output_tokens = 0;
  uint32_t hash_begin = 0;  ///< into Trace::hashes
  uint32_t hash_count = 0;
};

struct Trace {
  std::string file;
  std::string format;                ///< "azure" or "mooncake"
  std::vector<TraceRecord> records;  ///< sorted by time_s (stable for ties)
  std::vector<uint64_t> hashes;      ///< all records' 512-token block hashes, concatenated
  int block_tokens = 0;              ///< tokens per hash block (512 for Mooncake, 0 if none)
};

/// Azure: header "TIMESTAMP,ContextTokens,GeneratedTokens", timestamps like
/// "2023-11-16 18:15:46.6805900" (converted to seconds relative to the first row).
Trace load_azure_csv(const std::string& path);
/// Mooncake: one JSON object per line with timestamp (ms), input_length, output_length,
/// hash_ids.
Trace load_mooncake_jsonl(const std::string& path);
/// format: "azure", "mooncake" or "auto" (by extension: .csv → azure, .jsonl → mooncake).
/// Errors (missing file, malformed line with its 1-based line number, empty trace,
/// non-positive token counts) are InputErrors naming the file and line. The shipped real
/// traces have no zero-token rows, so a token count < 1 is rejected, not clamped.
/// Blank lines are skipped.
Trace load_trace(const std::string& path, const std::string& format = "auto");

/// `path` if absolute (or base_dir is empty), else base_dir/path: how scenario files name
/// traces relative to their own folder.
std::string resolve_path(const std::string& base_dir, const std::string& path);

}  // namespace fleetsim::workload
