// Simulations that need the SimGrid engine, in a process of their own: SimGrid allows one
// engine, for one fabric, per process, so a batch (a sweep, a plan's replica search,
// replications) whose runs use live transfers runs each in the helper `fleetsim-simgrid
// run`, a fresh program (posix_spawn: nothing of this multi-threaded process is inherited
// but the pipes). It loads the same scenario from what it was loaded from (Scenario::document,
// catalog_dir, calibration_dir) and answers with the result as JSON.
#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <vector>

#include "hw_models/error.h"
#include "sim/metrics/summary_codec.h"
#include "sim/network/table_network.h"
#include "sim/simulation.h"

extern char** environ;

namespace fleetsim {

bool needs_own_engine(const scenario::Scenario& sc) {
  return sc.network_model == "simgrid" && (sc.prefill_pool.has_value() || sc.live_alltoall);
}

namespace {

struct Fd {
  int fd = -1;
  ~Fd() { reset(); }
  void reset() {
    if (fd >= 0) ::close(fd);
    fd = -1;
  }
};

// Close-on-exec on both ends: a helper spawned by another thread must not hold them.
void make_pipe(Fd& r, Fd& w) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0)
    throw std::runtime_error(std::string("pipe: ") + std::strerror(errno));
  r.fd = fds[0];
  w.fd = fds[1];
}

}  // namespace

RunResult run_in_own_process(const scenario::Scenario& sc) {
  if (!needs_own_engine(sc)) return run_one_pool(sc);
  const nlohmann::json request = {{"document", sc.document},
                                  {"file", sc.file},
                                  {"overrides", sc.overrides},
                                  {"seed", sc.seed},
                                  {"catalog", sc.catalog_dir},
                                  {"calibration", sc.calibration_dir},
                                  {"slo_targets", metrics::encode_slo_targets(sc.slo_targets)}};
  const std::string helper = net::simgrid_helper_path();
  Fd in_r, in_w, out_r, out_w;
  make_pipe(in_r, in_w);
  make_pipe(out_r, out_w);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, in_r.fd, 0);  // dup2 clears close-on-exec
  posix_spawn_file_actions_adddup2(&actions, out_w.fd, 1);
  std::string arg0 = helper, arg1 = "run";
  char* argv[] = {arg0.data(), arg1.data(), nullptr};
  pid_t pid = 0;
  const int spawned = ::posix_spawn(&pid, helper.c_str(), &actions, nullptr, argv, environ);
  posix_spawn_file_actions_destroy(&actions);
  if (spawned != 0)
    throw std::runtime_error("cannot run " + helper + ": " + std::strerror(spawned));
  in_r.reset();
  out_w.reset();
  // The helper reads all of its input before it writes: write, close, then read.
  const std::string req = request.dump();
  for (size_t done = 0; done < req.size();) {
    const ssize_t n = ::write(in_w.fd, req.data() + done, req.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;  // the helper died; its status says so below
    done += static_cast<size_t>(n);
  }
  in_w.reset();
  std::string text;
  char buf[1 << 16];
  for (;;) {
    const ssize_t n = ::read(out_r.fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    text.append(buf, static_cast<size_t>(n));
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
  nlohmann::json j;
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
    j = nlohmann::json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object())
    throw std::runtime_error(
        "the simulation of '" + sc.name + "' in " + helper + " " +
        (WIFSIGNALED(status)
             ? "was killed by signal " + std::to_string(WTERMSIG(status))
             : "ended without a result (exit status " +
                   std::to_string(WIFEXITED(status) ? WEXITSTATUS(status) : -1) + ")"));
  if (j.contains("input_error"))
    throw InputError(j["input_error"].get<std::string>(), j["hint"].get<std::string>(),
                     j["file"].get<std::string>(), j["line"].get<int>(),
                     j["field"].get<std::string>());
  if (j.contains("error")) throw std::runtime_error(j["error"].get<std::string>());
  RunResult r;
  r.events = j["events"].get<uint64_t>();
  r.wall_s = j["wall_s"].get<double>();
  r.summary = metrics::decode_summary(j["summary"].dump());
  return r;
}

}  // namespace fleetsim
