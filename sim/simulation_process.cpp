// Simulations that need the SimGrid engine, in a process of their own: SimGrid allows one
// engine per process, for one fabric, so a batch (a sweep, a plan's replica search,
// replications) whose runs use live transfers forks a child per run. The child runs the
// simulation and writes its result to a pipe as JSON; nothing else of it returns.
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>

#include "hw_models/error.h"
#include "sim/metrics/summary_codec.h"
#include "sim/simulation.h"

namespace fleetsim {

bool needs_own_engine(const scenario::Scenario& sc) {
  return sc.network_model == "simgrid" && (sc.prefill_pool.has_value() || sc.live_alltoall);
}

namespace {

void write_all(int fd, const std::string& s) {
  size_t done = 0;
  while (done < s.size()) {
    const ssize_t n = ::write(fd, s.data() + done, s.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;  // the parent is gone: nothing to report to
    done += static_cast<size_t>(n);
  }
}

[[noreturn]] void child(int fd, const scenario::Scenario& sc) {
  nlohmann::json out;
  try {
    Simulation sim(sc, {});
    const RunResult r = sim.run();
    out["events"] = r.events;
    out["wall_s"] = r.wall_s;
    out["summary"] = nlohmann::json::parse(metrics::encode_summary(r.summary));
  } catch (const InputError& e) {
    out = {{"input_error", e.message()}, {"hint", e.hint()}, {"file", e.file()},
           {"line", e.line()}, {"field", e.field()}};
  } catch (const std::exception& e) {
    out = {{"error", e.what()}};
  }
  write_all(fd, out.dump());
  ::close(fd);
  ::_exit(0);  // no atexit handlers, destructors or sanitizer reports of the parent's state
}

}  // namespace

RunResult run_in_own_process(const scenario::Scenario& sc) {
  if (!needs_own_engine(sc)) {
    Simulation sim(sc, {});
    return sim.run();
  }
  int fds[2];
  if (::pipe(fds) != 0) throw std::runtime_error(std::string("pipe: ") + std::strerror(errno));
  const pid_t pid = ::fork();
  if (pid < 0) {
    ::close(fds[0]);
    ::close(fds[1]);
    throw std::runtime_error(std::string("fork for a SimGrid simulation: ") + std::strerror(errno));
  }
  if (pid == 0) {
    ::close(fds[0]);
    child(fds[1], sc);
  }
  ::close(fds[1]);
  std::string text;
  char buf[1 << 16];
  for (;;) {
    const ssize_t n = ::read(fds[0], buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    text.append(buf, static_cast<size_t>(n));
  }
  ::close(fds[0]);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || text.empty())
    throw std::runtime_error(
        "the child process running a SimGrid simulation of '" + sc.name + "' " +
        (WIFSIGNALED(status) ? "was killed by signal " + std::to_string(WTERMSIG(status))
                             : "ended without a result"));
  const nlohmann::json j = nlohmann::json::parse(text);
  if (j.contains("input_error"))
    throw InputError(j["input_error"].get<std::string>(), j["hint"].get<std::string>(),
                     j["file"].get<std::string>(), j["line"].get<int>(), j["field"].get<std::string>());
  if (j.contains("error")) throw std::runtime_error(j["error"].get<std::string>());
  RunResult r;
  r.events = j["events"].get<uint64_t>();
  r.wall_s = j["wall_s"].get<double>();
  r.summary = metrics::decode_summary(j["summary"].dump());
  return r;
}

}  // namespace fleetsim
