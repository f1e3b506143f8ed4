// Tests for sim/workload/trace: the real traces in scenarios/data/traces,
// the excerpts in tests/data, time parsing across midnight and leap days, sorting, and
// malformed input reported with its file and 1-based line.
#include "sim/workload/trace.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "hw_models/error.h"

namespace fleetsim::workload {
namespace {

namespace fs = std::filesystem;

const std::string kTraces = std::string(FLEETSIM_SOURCE_DIR) + "/scenarios/data/traces/";
const std::string kData = std::string(FLEETSIM_SOURCE_DIR) + "/tests/data/";

// A file in a per-process temp folder, removed at the end of the test.
class TempFile {
 public:
  TempFile(const std::string& name, const std::string& text) {
    const fs::path dir =
        fs::temp_directory_path() / ("fleetsim_trace_test_" + std::to_string(getpid()));
    fs::create_directories(dir);
    path_ = (dir / name).string();
    std::ofstream(path_, std::ios::binary) << text;
  }
  ~TempFile() { fs::remove(path_); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

InputError load_error(const std::string& path, const std::string& format = "auto") {
  try {
    load_trace(path, format);
  } catch (const InputError& e) {
    return e;
  }
  ADD_FAILURE() << "no InputError for " << path;
  return InputError("none");
}

const std::string kHeader = "TIMESTAMP,ContextTokens,GeneratedTokens\n";

// ---- real traces ----------------------------------------------------------------------

TEST(TraceReal, AzureConversation) {
  const Trace t = load_trace(kTraces + "azure_llm_2023_conv.csv");
  EXPECT_EQ(t.format, "azure");
  // 19,367 lines (wc -l says 19,366: no newline after the last row) = header + 19,366 rows.
  ASSERT_EQ(t.records.size(), 19366u);
  // Row 1: "2023-11-16 18:15:46.6805900,374,44".
  EXPECT_EQ(t.records[0].time_s, 0.0);
  EXPECT_EQ(t.records[0].input_tokens, 374);
  EXPECT_EQ(t.records[0].output_tokens, 44);
  // Row 2: "18:15:50.9951690,396,109" → 50.9951690 - 46.6805900 = 4.3145790 s.
  EXPECT_NEAR(t.records[1].time_s, 4.3145790, 1e-9);
  EXPECT_EQ(t.records[1].input_tokens, 396);
  EXPECT_EQ(t.records[1].output_tokens, 109);
  // Last row: "2023-11-16 19:14:08.4025270,197,183" → 58 min 21.7219370 s = 3501.7219370 s.
  EXPECT_NEAR(t.records.back().time_s, 3501.7219370, 1e-9);
  EXPECT_EQ(t.records.back().input_tokens, 197);
  EXPECT_EQ(t.records.back().output_tokens, 183);
  EXPECT_TRUE(t.hashes.empty());
  EXPECT_EQ(t.block_tokens, 0);
}

TEST(TraceReal, AzureCode) {
  const Trace t = load_trace(kTraces + "azure_llm_2023_code.csv");
  ASSERT_EQ(t.records.size(), 8819u);  // 8,820 lines = header + 8,819 rows
  // Row 1: "2023-11-16 18:17:03.9799600,4808,10".
  EXPECT_EQ(t.records[0].input_tokens, 4808);
  EXPECT_EQ(t.records[0].output_tokens, 10);
  // Last: "2023-11-16 19:14:19.9280160,549,173" → 57 min 15.9480560 s = 3435.9480560 s.
  EXPECT_NEAR(t.records.back().time_s, 3435.9480560, 1e-9);
  EXPECT_EQ(t.records.back().input_tokens, 549);
  EXPECT_EQ(t.records.back().output_tokens, 173);
}

TEST(TraceReal, MooncakeConversation) {
  const Trace t = load_trace(kTraces + "mooncake_conversation.jsonl");
  EXPECT_EQ(t.format, "mooncake");
  EXPECT_EQ(t.block_tokens, 512);
  ASSERT_EQ(t.records.size(), 12031u);  // 12,031 lines, one object each
  // Line 1: {"timestamp": 0, "input_length": 6758, "output_length": 500, "hash_ids": [0..13]}.
  const TraceRecord& r0 = t.records[0];
  EXPECT_EQ(r0.time_s, 0.0);
  EXPECT_EQ(r0.input_tokens, 6758);
  EXPECT_EQ(r0.output_tokens, 500);
  ASSERT_EQ(r0.hash_count, 14u);
  for (uint32_t i = 0; i < 14; ++i) EXPECT_EQ(t.hashes[r0.hash_begin + i], i);
  // Line 2: 7322 in, 490 out, hash_ids [0, 14, 15, ..., 27] (shares block 0 with line 1).
  const TraceRecord& r1 = t.records[1];
  EXPECT_EQ(r1.input_tokens, 7322);
  EXPECT_EQ(r1.output_tokens, 490);
  ASSERT_EQ(r1.hash_count, 15u);
  EXPECT_EQ(t.hashes[r1.hash_begin], 0u);
  for (uint32_t i = 1; i < 15; ++i) EXPECT_EQ(t.hashes[r1.hash_begin + i], 13u + i);
  // Last line's timestamp is 3536999 ms.
  EXPECT_NEAR(t.records.back().time_s, 3536.999, 1e-9);
  // In this trace every request has ceil(input_length / 512) block hashes (checked with a
  // Python one-liner over the file), and the ranges tile the hash array.
  size_t total = 0;
  for (const auto& r : t.records) {
    ASSERT_EQ(r.hash_count, static_cast<uint32_t>((r.input_tokens + 511) / 512));
    total += r.hash_count;
  }
  EXPECT_EQ(total, t.hashes.size());
}

// ---- excerpts in tests/data -----------------------------------------------------------

TEST(TraceExcerpt, AzureHeads) {
  const Trace conv = load_trace(kData + "azure_conv_head.csv");
  ASSERT_EQ(conv.records.size(), 199u);  // 200 lines with the header
  EXPECT_EQ(conv.records[0].input_tokens, 374);
  // Line 200: "2023-11-16 18:16:47.8258560,1027,388" → 61.1452660 s after 18:15:46.6805900.
  EXPECT_NEAR(conv.records.back().time_s, 61.1452660, 1e-9);
  EXPECT_EQ(conv.records.back().input_tokens, 1027);
  EXPECT_EQ(conv.records.back().output_tokens, 388);
  const Trace code = load_trace(kData + "azure_code_head.csv");
  ASSERT_EQ(code.records.size(), 199u);
  // Line 3: "18:17:04.0319600,3180,8" → 0.0520000 s after line 2's 18:17:03.9799600.
  EXPECT_NEAR(code.records[1].time_s, 0.052, 1e-9);
  EXPECT_EQ(code.records[1].input_tokens, 3180);
}

TEST(TraceExcerpt, MooncakeHead) {
  const Trace t = load_trace(kData + "mooncake_head.jsonl");
  ASSERT_EQ(t.records.size(), 200u);
  EXPECT_EQ(t.records[0].input_tokens, 6758);
  EXPECT_NEAR(t.records.back().time_s, 72.0, 1e-12);  // line 200: "timestamp": 72000 (ms)
  EXPECT_EQ(t.records.back().input_tokens, 19978);
  EXPECT_EQ(t.records.back().output_tokens, 448);
}

// ---- parsing details ------------------------------------------------------------------

TEST(TraceParse, AzureTimesAcrossMidnightAndLeapDay) {
  TempFile f("midnight.csv", kHeader +
                                 "2023-12-31 23:59:59.5000000,10,1\n"
                                 "2024-01-01 00:00:00.2500000,20,2\n"
                                 "2024-02-28 23:59:59.5,30,3\n"
                                 "2024-03-01 00:00:00,40,4\n");
  const Trace t = load_trace(f.path());
  ASSERT_EQ(t.records.size(), 4u);
  EXPECT_NEAR(t.records[1].time_s, 0.75, 1e-12);  // 0.5 s to midnight + 0.25 s
  // 2023-12-31 23:59:59.5 → 2024-02-28 23:59:59.5 is 31 (Jan) + 28 (Feb 1..28) = 59 days.
  EXPECT_NEAR(t.records[2].time_s, 59 * 86400.0, 1e-9);
  // Then to 2024-03-01 00:00:00: 0.5 s + all of Feb 29 (2024 is a leap year) = 86400.5 s.
  EXPECT_NEAR(t.records[3].time_s, 59 * 86400.0 + 86400.5, 1e-9);
}

TEST(TraceParse, SortsStablyAndMeasuresFromTheEarliest) {
  TempFile f("unsorted.csv", kHeader +
                                 "2023-11-16 10:00:02.0,1,1\n"
                                 "2023-11-16 10:00:01.0,2,2\n"
                                 "2023-11-16 10:00:01.0,3,3\n");
  const Trace t = load_trace(f.path());
  ASSERT_EQ(t.records.size(), 3u);
  // Times 2, 1, 1 s → sorted 1, 1, 2 with ties in file order (2 then 3), origin at 1 s.
  EXPECT_EQ(t.records[0].input_tokens, 2);
  EXPECT_EQ(t.records[1].input_tokens, 3);
  EXPECT_EQ(t.records[2].input_tokens, 1);
  EXPECT_EQ(t.records[0].time_s, 0.0);
  EXPECT_NEAR(t.records[2].time_s, 1.0, 1e-12);
}

TEST(TraceParse, CrlfBlankLinesAndFormatOverride) {
  TempFile f("crlf.txt", std::string("TIMESTAMP,ContextTokens,GeneratedTokens\r\n") +
                             "2023-11-16 10:00:00.0,5,6\r\n\r\n"
                             "2023-11-16 10:00:00.5,7,8\r\n\n");
  EXPECT_NE(load_error(f.path()).message().find("extension"), std::string::npos);  // .txt
  const Trace t = load_trace(f.path(), "azure");
  ASSERT_EQ(t.records.size(), 2u);
  EXPECT_EQ(t.records[1].output_tokens, 8);
  EXPECT_NEAR(t.records[1].time_s, 0.5, 1e-12);
  EXPECT_NE(load_error(f.path(), "azur").message().find("did you mean 'azure'"), std::string::npos);
}

TEST(TraceParse, MooncakeTiesKeepFileOrderAndHashes) {
  TempFile f(
      "ties.jsonl",
      "{\"timestamp\": 3000, \"input_length\": 600, \"output_length\": 1, \"hash_ids\": [7, 8]}\n"
      "{\"timestamp\": 1000, \"input_length\": 10, \"output_length\": 2, \"hash_ids\": [9]}\n"
      "{\"timestamp\": 1000, \"input_length\": 20, \"output_length\": 3, \"hash_ids\": []}\n");
  const Trace t = load_trace(f.path());
  ASSERT_EQ(t.records.size(), 3u);
  // Sorted: the two 1000 ms rows in file order, then the 3000 ms row 2 s later.
  EXPECT_EQ(t.records[0].output_tokens, 2);
  EXPECT_EQ(t.records[1].output_tokens, 3);
  EXPECT_EQ(t.records[1].hash_count, 0u);
  EXPECT_NEAR(t.records[2].time_s, 2.0, 1e-12);
  // The hash range still points at the moved record's own ids.
  ASSERT_EQ(t.records[2].hash_count, 2u);
  EXPECT_EQ(t.hashes[t.records[2].hash_begin], 7u);
  EXPECT_EQ(t.hashes[t.records[2].hash_begin + 1], 8u);
  EXPECT_EQ(t.hashes[t.records[0].hash_begin], 9u);
}

// ---- errors ---------------------------------------------------------------------------

struct BadCase {
  const char* name;
  std::string text;
  int line;              // expected 1-based line
  const char* field;     // expected field ("" for none)
  const char* fragment;  // part of the message
};

TEST(TraceErrors, AzureMalformedLinesReportTheirLine) {
  const std::string ok = "2023-11-16 18:15:46.6805900,374,44\n";
  const BadCase cases[] = {
      {"cols.csv", kHeader + ok + "2023-11-16 18:15:47.0,12\n", 3, "", "expected 3 columns"},
      {"cols4.csv", kHeader + ok + ok + "2023-11-16 18:15:47.0,1,2,3\n", 4, "", "got 4"},
      {"nan.csv", kHeader + ok + "2023-11-16 18:15:47.0,abc,5\n", 3, "ContextTokens",
       "not an integer"},
      {"frac.csv", kHeader + ok + "2023-11-16 18:15:47.0,5,2.5\n", 3, "GeneratedTokens",
       "not an integer"},
      {"month.csv", kHeader + ok + "2023-13-16 18:15:47.0,5,5\n", 3, "TIMESTAMP", "bad timestamp"},
      {"feb30.csv", kHeader + ok + "2023-02-29 18:15:47.0,5,5\n", 3, "TIMESTAMP", "bad timestamp"},
      {"time.csv", kHeader + "18:15:47,5,5\n", 2, "TIMESTAMP", "bad timestamp"},
      {"zero.csv", kHeader + ok + ok + "2023-11-16 18:15:47.0,5,0\n", 4, "GeneratedTokens",
       ">= 1, got 0"},
      {"neg.csv", kHeader + "2023-11-16 18:15:47.0,-3,5\n", 2, "ContextTokens", ">= 1, got -3"},
      {"header.csv", "time,prompt,output\n" + ok, 1, "", "expected the header"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    TempFile f(c.name, c.text);
    const InputError e = load_error(f.path());
    EXPECT_EQ(e.file(), f.path());
    EXPECT_EQ(e.line(), c.line);
    EXPECT_EQ(e.field(), c.field);
    EXPECT_NE(e.message().find(c.fragment), std::string::npos) << e.what();
  }
}

TEST(TraceErrors, MooncakeMalformedLinesReportTheirLine) {
  const std::string ok =
      "{\"timestamp\": 0, \"input_length\": 5, \"output_length\": 5, \"hash_ids\": [1]}\n";
  const BadCase cases[] = {
      {"json.jsonl", ok + "{\"timestamp\": 0, \"input_length\": 5,\n", 2, "", "invalid JSON"},
      {"notobj.jsonl", ok + ok + "[1, 2]\n", 3, "", "expected a JSON object"},
      {"nokey.jsonl", ok + "{\"timestamp\": 0, \"input_length\": 5, \"hash_ids\": []}\n", 2,
       "output_length", "missing key"},
      {"nohash.jsonl", "{\"timestamp\": 0, \"input_length\": 5, \"output_length\": 5}\n", 1,
       "hash_ids", "missing key"},
      {"float.jsonl",
       ok + "{\"timestamp\": 0, \"input_length\": 5.5, \"output_length\": 5, \"hash_ids\": []}\n",
       2, "input_length", "integer"},
      {"zero.jsonl",
       ok + "{\"timestamp\": 0, \"input_length\": 5, \"output_length\": 0, \"hash_ids\": []}\n", 2,
       "output_length", ">= 1, got 0"},
      {"negts.jsonl",
       ok + "{\"timestamp\": -1, \"input_length\": 5, \"output_length\": 5, \"hash_ids\": []}\n", 2,
       "timestamp", "milliseconds"},
      {"strts.jsonl",
       ok + "{\"timestamp\": \"0\", \"input_length\": 5, \"output_length\": 5, \"hash_ids\": []}\n",
       2, "timestamp", "milliseconds"},
      {"neghash.jsonl",
       ok +
           "{\"timestamp\": 0, \"input_length\": 5, \"output_length\": 5, \"hash_ids\": [1, -2]}\n",
       2, "hash_ids", "non-negative"},
      {"hashobj.jsonl",
       ok + "{\"timestamp\": 0, \"input_length\": 5, \"output_length\": 5, \"hash_ids\": 3}\n", 2,
       "hash_ids", "list"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    TempFile f(c.name, c.text);
    const InputError e = load_error(f.path());
    EXPECT_EQ(e.file(), f.path());
    EXPECT_EQ(e.line(), c.line);
    EXPECT_EQ(e.field(), c.field);
    EXPECT_NE(e.message().find(c.fragment), std::string::npos) << e.what();
  }
}

TEST(TraceErrors, MissingEmptyAndUnknown) {
  const std::string missing = kData + "no_such_trace.csv";
  InputError e = load_error(missing);
  EXPECT_EQ(e.file(), missing);
  EXPECT_NE(e.message().find("cannot open"), std::string::npos);
  e = load_error(kData);  // a folder is not a trace
  EXPECT_NE(e.message().find("cannot open"), std::string::npos);

  TempFile header_only("empty.csv", kHeader);
  e = load_error(header_only.path());
  EXPECT_NE(e.message().find("no records"), std::string::npos);
  TempFile blank("empty.jsonl", "\n\n");
  e = load_error(blank.path());
  EXPECT_NE(e.message().find("no records"), std::string::npos);
  TempFile nothing("nothing.csv", "");
  e = load_error(nothing.path());
  EXPECT_NE(e.message().find("no records"), std::string::npos);
}

TEST(TraceResolvePath, RelativeToBaseUnlessAbsolute) {
  EXPECT_EQ(resolve_path("/a/b", "../c.csv"), "/a/c.csv");
  EXPECT_EQ(resolve_path("/a/b", "/x/y.csv"), "/x/y.csv");
  EXPECT_EQ(resolve_path("", "t.csv"), "t.csv");
}

}  // namespace
}  // namespace fleetsim::workload
