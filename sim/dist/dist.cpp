#include "sim/dist/dist.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <sstream>
#include <stdexcept>
#include <thread>

#include <nlohmann/json.hpp>

#include "hw_models/error.h"
#include "hw_models/files.h"

#ifdef FLEETSIM_HAVE_MPI
#include <mpi.h>
#endif

namespace fleetsim::dist {

namespace {

bool g_mpi = false;  // MPI initialised by init()
int g_rank = 0, g_size = 1;

// The items not yet done, handed out in ascending order to local threads and remote ranks.
class Queue {
 public:
  Queue(std::size_t n, const std::map<std::size_t, std::string>& done) {
    for (std::size_t i = 0; i < n; ++i)
      if (!done.count(i)) todo_.push_back(i);
  }
  bool take(std::size_t* i) {
    std::lock_guard<std::mutex> lock(mu_);
    if (next_ >= todo_.size()) return false;
    *i = todo_[next_++];
    return true;
  }
  std::size_t pending() const { return todo_.size(); }

 private:
  std::mutex mu_;
  std::vector<std::size_t> todo_;
  std::size_t next_ = 0;
};

// Results in item order plus the first error by item order.
struct Gather {
  std::mutex mu;
  std::vector<std::string> results;
  std::vector<bool> have;
  std::size_t error_index = SIZE_MAX;
  std::string error;
  std::exception_ptr local_error;
  const std::function<void(std::size_t, const std::string&)>* on_result = nullptr;

  void put(std::size_t i, std::string r) {
    std::lock_guard<std::mutex> lock(mu);
    if (on_result && *on_result) (*on_result)(i, r);
    results[i] = std::move(r);
    have[i] = true;
  }
  void fail(std::size_t i, std::string what, std::exception_ptr e = nullptr) {
    std::lock_guard<std::mutex> lock(mu);
    if (i < error_index) {
      error_index = i;
      error = std::move(what);
      local_error = e;
    }
  }
};

// Local threads working through the queue.
void run_local(Queue& q, Gather& g, int threads, const std::function<std::string(std::size_t)>& fn,
               const std::atomic<bool>* stop_flag, std::vector<std::thread>* pool) {
  auto worker = [&q, &g, &fn, stop_flag] {
    std::size_t i;
    while ((!stop_flag || !stop_flag->load()) && q.take(&i)) {
      try {
        g.put(i, fn(i));
      } catch (const std::exception& e) {
        g.fail(i, e.what(), std::current_exception());
      } catch (...) {
        g.fail(i, "unknown error", std::current_exception());
      }
    }
  };
  for (int t = 0; t < std::max(1, threads); ++t) pool->emplace_back(worker);
}

[[noreturn]] void rethrow(const Gather& g) {
  if (g.local_error) std::rethrow_exception(g.local_error);
  throw std::runtime_error(g.error);
}

#ifdef FLEETSIM_HAVE_MPI
enum Tag : int { kRequest = 1, kItem = 2, kStop = 3, kResult = 4, kError = 5 };

// Waiting without spinning: each MPI_Iprobe drives Open MPI's progress engine, which costs
// tens of microseconds on a virtual machine, so polling every 100 us for seconds took most
// of a core from the simulations (measured: a 2-rank fleet run 1.7x slower than 2 threads).
// A wait polls every 100 us for its first 2 ms (short work items get their replies as fast
// as before), then twice as long after each empty poll up to 5 ms; reset() after a message.
class Idle {
 public:
  void wait() {
    std::this_thread::sleep_for(std::chrono::microseconds(us_));
    if (++polls_ > 20) us_ = std::min(us_ * 2, 5000);
  }
  void reset() {
    us_ = 100;
    polls_ = 0;
  }

 private:
  int us_ = 100, polls_ = 0;
};

// A message of `bytes` from `src` with `tag`, without spinning in MPI_Recv (Open MPI's
// blocking receive busy-waits, which starves the simulations on an oversubscribed node).
std::vector<char> receive(int src, int tag, MPI_Status* st) {
  int flag = 0;
  Idle idle;
  while (!flag) {
    MPI_Iprobe(src, tag, MPI_COMM_WORLD, &flag, st);
    if (!flag) idle.wait();
  }
  int count = 0;
  MPI_Get_count(st, MPI_BYTE, &count);
  std::vector<char> buf(static_cast<std::size_t>(count));
  MPI_Recv(buf.data(), count, MPI_BYTE, st->MPI_SOURCE, st->MPI_TAG, MPI_COMM_WORLD,
           MPI_STATUS_IGNORE);
  return buf;
}

// MPI_Barrier without spinning: Open MPI's blocking barrier busy-waits, so a rank that
// finished early would take a core from one still simulating (a fleet run's partitions are
// of unequal size).
void barrier() {
  MPI_Request req;
  MPI_Ibarrier(MPI_COMM_WORLD, &req);
  int done = 0;
  Idle idle;
  for (;;) {
    MPI_Test(&req, &done, MPI_STATUS_IGNORE);
    if (done) return;
    idle.wait();
  }
}

void send_indexed(int dst, int tag, std::size_t i, const std::string& payload) {
  std::vector<char> buf(8 + payload.size());
  const uint64_t v = i;
  std::memcpy(buf.data(), &v, 8);
  std::memcpy(buf.data() + 8, payload.data(), payload.size());
  MPI_Send(buf.data(), static_cast<int>(buf.size()), MPI_BYTE, dst, tag, MPI_COMM_WORLD);
}

std::size_t index_of(const std::vector<char>& buf) {
  uint64_t v = 0;
  std::memcpy(&v, buf.data(), 8);
  return static_cast<std::size_t>(v);
}

// Test-only: FLEETSIM_TEST_KILL_RANK="R:K" makes rank R kill itself (SIGKILL, no clean-up)
// when it receives its K-th item, standing in for a node that dies mid-search
// (tests/mpi/mpi_test.sh), so the test needs no timing to hit a running rank.
bool test_kill_now(int items_received) {
  static const std::pair<int, int> at = [] {
    const char* v = std::getenv("FLEETSIM_TEST_KILL_RANK");
    int r = -1, k = 0;
    if (v == nullptr || std::sscanf(v, "%d:%d", &r, &k) != 2) return std::pair{-1, 0};
    return std::pair{r, k};
  }();
  return at.first == g_rank && at.second == items_received;
}

std::vector<std::string> map_mpi(
    std::size_t n, int threads, const std::function<std::string(std::size_t)>& fn,
    const std::map<std::size_t, std::string>& done,
    const std::function<void(std::size_t, const std::string&)>& on_result) {
  if (g_rank != 0) {
    // Worker: ask, run, answer, until told to stop. A failed item is reported and ends
    // this rank's work (rank 0 stops handing out new items).
    int received = 0;
    for (;;) {
      MPI_Send(nullptr, 0, MPI_BYTE, 0, kRequest, MPI_COMM_WORLD);
      MPI_Status st;
      int flag = 0;
      Idle idle;
      while (!flag) {
        MPI_Iprobe(0, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, &st);
        if (!flag) idle.wait();
      }
      if (st.MPI_TAG == kStop) {
        MPI_Recv(nullptr, 0, MPI_BYTE, 0, kStop, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        break;
      }
      const std::size_t i = index_of(receive(0, kItem, &st));
      if (test_kill_now(++received)) std::raise(SIGKILL);
      try {
        send_indexed(0, kResult, i, fn(i));
      } catch (const std::exception& e) {
        send_indexed(0, kError, i, e.what());
      }
    }
    barrier();
    return {};
  }
  Queue q(n, done);
  Gather g;
  g.results.assign(n, std::string());
  g.have.assign(n, false);
  for (const auto& [i, r] : done)
    if (i < n) {
      g.results[i] = r;
      g.have[i] = true;
    }
  g.on_result = &on_result;
  std::atomic<bool> stop{false};
  std::vector<std::thread> pool;
  run_local(q, g, threads, fn, &stop, &pool);
  int active = g_size - 1;  // remote ranks not yet told to stop
  Idle idle;
  while (active > 0) {
    MPI_Status st;
    int flag = 0;
    MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, &st);
    if (!flag) {
      idle.wait();
      continue;
    }
    idle.reset();
    const int src = st.MPI_SOURCE;
    if (st.MPI_TAG == kRequest) {
      MPI_Recv(nullptr, 0, MPI_BYTE, src, kRequest, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      std::size_t i;
      bool failed;
      {
        std::lock_guard<std::mutex> lock(g.mu);
        failed = g.error_index != SIZE_MAX;
      }
      if (!failed && q.take(&i)) {
        send_indexed(src, kItem, i, "");
      } else {
        MPI_Send(nullptr, 0, MPI_BYTE, src, kStop, MPI_COMM_WORLD);
        --active;
      }
    } else {
      const std::vector<char> buf = receive(src, st.MPI_TAG, &st);
      const std::size_t i = index_of(buf);
      std::string payload(buf.begin() + 8, buf.end());
      if (st.MPI_TAG == kResult)
        g.put(i, std::move(payload));
      else
        g.fail(i, "rank " + std::to_string(src) + ": " + payload);
    }
  }
  stop = g.error_index != SIZE_MAX;
  for (auto& t : pool) t.join();
  barrier();
  if (g.error_index != SIZE_MAX) rethrow(g);
  return std::move(g.results);
}
#endif

}  // namespace

void init(int* argc, char*** argv) {
#ifdef FLEETSIM_HAVE_MPI
  int provided = 0;
  // Only the main thread calls MPI; other threads run simulations.
  MPI_Init_thread(argc, argv, MPI_THREAD_FUNNELED, &provided);
  g_mpi = true;
  MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &g_size);
#else
  (void)argc;
  (void)argv;
#endif
}

void finalize() {
#ifdef FLEETSIM_HAVE_MPI
  if (g_mpi) MPI_Finalize();
  g_mpi = false;
#endif
}

void abort(int code) {
#ifdef FLEETSIM_HAVE_MPI
  if (g_mpi) MPI_Abort(MPI_COMM_WORLD, code);
#endif
  std::exit(code);
}

int rank() { return g_rank; }
int size() { return g_size; }

bool built_with_mpi() {
#ifdef FLEETSIM_HAVE_MPI
  return true;
#else
  return false;
#endif
}

std::vector<std::string> map(
    std::size_t n, int threads, const std::function<std::string(std::size_t)>& fn,
    const std::map<std::size_t, std::string>& done,
    const std::function<void(std::size_t, const std::string&)>& on_result) {
#ifdef FLEETSIM_HAVE_MPI
  if (g_mpi && g_size > 1) return map_mpi(n, threads, fn, done, on_result);
#endif
  Queue q(n, done);
  Gather g;
  g.results.assign(n, std::string());
  g.have.assign(n, false);
  for (const auto& [i, r] : done)
    if (i < n) g.results[i] = r;
  g.on_result = &on_result;
  std::vector<std::thread> pool;
  run_local(q, g, std::min<int>(threads, static_cast<int>(std::max<std::size_t>(1, q.pending()))),
            fn, nullptr, &pool);
  for (auto& t : pool) t.join();
  if (g.error_index != SIZE_MAX) rethrow(g);
  return std::move(g.results);
}

std::map<std::size_t, std::string> Checkpoint::parse(const std::string& text,
                                                     const std::string& path,
                                                     const std::string& header, std::size_t n,
                                                     const ResultCheck& check) {
  std::map<std::size_t, std::string> out;
  std::size_t pos = 0;
  int lineno = 0;
  while (pos < text.size()) {
    const std::size_t nl = text.find('\n', pos);
    const bool complete = nl != std::string::npos;
    const std::string line = text.substr(pos, complete ? nl - pos : std::string::npos);
    pos = complete ? nl + 1 : text.size();
    ++lineno;
    if (lineno == 1) {
      if (line != header)
        throw InputError("the checkpoint belongs to another search (its first line is '" +
                             files::to_valid_utf8(line.substr(0, 120)) + "')",
                         "resume with the same scenario, options and seed, or drop --resume to "
                         "start over",
                         path, 1);
      continue;
    }
    // The last line cut short by a kill mid-write (no newline yet) is ignored: that item
    // simply runs again. Any other damage is an error naming the line.
    if (!complete) break;
    const auto sp = line.find(' ');
    const bool digits =
        sp != std::string::npos && sp > 0 && sp <= 19 && line.find_first_not_of("0123456789") == sp;
    if (!digits)
      throw InputError("checkpoint line is not '<index> <result>'",
                       "the file was damaged: delete this line (the item runs again) or the "
                       "whole file (the search starts over)",
                       path, lineno);
    const std::size_t index = static_cast<std::size_t>(std::stoull(line.substr(0, sp)));
    if (index >= n)
      throw InputError("checkpoint line names item " + std::to_string(index) +
                           ", but the search has " + std::to_string(n) + " items",
                       "delete this line or the whole file", path, lineno);
    const std::string result = line.substr(sp + 1);
    try {
      if (check)
        check(result);
      else if (!nlohmann::json::accept(result))
        throw std::invalid_argument("not valid JSON");
    } catch (const std::exception& e) {
      throw InputError("the result of item " + std::to_string(index) +
                           " cannot be read: " + files::to_valid_utf8(e.what()),
                       "the file was damaged: delete this line (the item runs again) or the "
                       "whole file (the search starts over)",
                       path, lineno);
    }
    out[index] = result;
  }
  if (lineno == 0)
    throw InputError("the checkpoint is empty (it has no header line)",
                     "delete the file to start over", path);
  return out;
}

std::map<std::size_t, std::string> Checkpoint::load(std::size_t n, const ResultCheck& check) const {
  std::error_code ec;
  if (!std::filesystem::exists(path_, ec)) return {};
  if (!std::filesystem::is_regular_file(path_, ec))
    throw InputError("the checkpoint is not a regular file", "delete it to start over", path_);
  if (std::filesystem::file_size(path_, ec) > (1ull << 30))
    throw InputError("the checkpoint is larger than 1 GiB", "delete it to start over", path_);
  std::ifstream in(path_, std::ios::binary);
  if (!in) throw InputError("cannot read the checkpoint", "check its permissions", path_);
  std::stringstream text;
  text << in.rdbuf();
  return parse(text.str(), path_, header_, n, check);
}

void Checkpoint::open(bool resume) {
  if (resume && std::filesystem::exists(path_)) return;  // keep it; load() checked it
  files::AtomicFile out(path_);
  out << header_ << "\n";
  out.commit();
}

void Checkpoint::append(std::size_t index, const std::string& result) {
  std::ofstream out(path_, std::ios::app);
  out << index << ' ' << result << '\n';
  out.flush();
  if (!out)
    throw InputError("cannot append to the checkpoint", "check the free space of the folder",
                     path_);
}

std::string search_identity(const std::string& command, const std::string& scenario_file,
                            const std::vector<std::string>& args) {
  std::ifstream in(scenario_file);
  std::stringstream text;
  text << in.rdbuf();
  std::string id = command + " " + scenario_file + " scenario-hash " +
                   std::to_string(std::hash<std::string>{}(text.str()));
  // The output folder names where the checkpoint is; threads and progress do not change results.
  for (const auto& a : args)
    if (a != "--resume" && a != "--quiet" && a != "-q") id += " " + a;
  return id;
}

std::vector<std::string> map_checkpointed(std::size_t n, int threads, const std::string& out_dir,
                                          const std::string& identity, bool resume, bool quiet,
                                          const std::function<std::string(std::size_t)>& fn,
                                          const Checkpoint::ResultCheck& check) {
  Checkpoint ck((std::filesystem::path(out_dir) / "checkpoint.txt").string(), identity);
  std::map<std::size_t, std::string> done;
  if (g_rank == 0) {
    if (resume) {
      done = ck.load(n, check);
    } else if (std::filesystem::exists(ck.path())) {
      throw InputError("an unfinished search left its results in the checkpoint",
                       "rerun with --resume to continue it, or delete the file (or pick another "
                       "--out) to start over",
                       ck.path());
    }
    ck.open(resume);
    if (!quiet)
      std::fprintf(
          stderr,
          "  %zu simulations on %d rank%s x %d thread%s%s; checkpoint %s (rerun with --resume "
          "after a failure)\n",
          n, g_size, g_size == 1 ? "" : "s", threads, threads == 1 ? "" : "s",
          done.empty() ? "" : (", " + std::to_string(done.size()) + " already done").c_str(),
          ck.path().c_str());
  }
  std::size_t finished = done.size();
  return map(n, threads, fn, done, [&](std::size_t i, const std::string& r) {
    ck.append(i, r);
    ++finished;
    if (!quiet) std::fprintf(stderr, "  ... %zu of %zu done\n", finished, n);
  });
}

void remove_checkpoint(const std::string& out_dir) {
  if (g_rank != 0) return;
  std::error_code ec;
  std::filesystem::remove(std::filesystem::path(out_dir) / "checkpoint.txt", ec);
}

}  // namespace fleetsim::dist
