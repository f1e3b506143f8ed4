// Independent work items over MPI ranks and threads: `fleetsim plan` and
// `fleetsim sweep` hand whole simulations out with this.
//
// Under `mpirun -n N` rank 0 coordinates: its main thread answers the other ranks' requests
// one item at a time (dynamic: a slow item never holds up the rest), while `threads` local
// threads of rank 0 work through the same queue; every other rank runs one item at a time
// (an item may use threads itself) and sends the result back. Results are strings (JSON
// text) gathered on rank 0 in item order, so the output does not depend on the number of
// ranks or threads, nor on who ran what. Without MPI (not built with it, or started
// without mpirun) the same call runs the items on `threads` threads.
//
// A rank that dies takes the MPI job down with it (Open MPI's default); rank 0 therefore
// reports each result as it arrives (`on_result`), which the commands append to a
// checkpoint, and `done` lets a rerun with --resume skip what was finished.
#pragma once

#include <cstddef>
#include <functional>
#include <map>
#include <string>
#include <vector>

namespace fleetsim::dist {

/// Initialises MPI when the program was built with it (harmless without mpirun: one rank).
/// Call first thing in main; finalize() before returning.
void init(int* argc, char*** argv);
void finalize();
/// Ends every rank of the job with `code` (MPI_Abort); a plain exit without MPI.
[[noreturn]] void abort(int code);

int rank();  ///< 0 without MPI
int size();  ///< 1 without MPI
bool built_with_mpi();

/// Runs `fn(i)` for every i in [0, n) not in `done`; on rank 0 returns all n results in
/// item order (those of `done` included) and calls `on_result(i, result)` once per newly
/// finished item, from one thread at a time. On other ranks returns an empty vector. An
/// exception thrown by `fn` is rethrown on rank 0 (the first, by item order) after every
/// rank has stopped.
std::vector<std::string> map(
    std::size_t n, int threads, const std::function<std::string(std::size_t)>& fn,
    const std::map<std::size_t, std::string>& done = {},
    const std::function<void(std::size_t, const std::string&)>& on_result = {});

/// Checkpoint of a map's finished items: a file of lines "<index> <result>" after one
/// header line naming the search. load() returns the finished items when the header
/// matches, and throws InputError (with the file and line) when the file belongs to another
/// search or a line is damaged: not "<index> <result>", an index beyond the search, or a
/// result that `check` rejects (it throws any exception; without it, results must be JSON).
/// Only a last line without its newline (a kill mid-write) is ignored.
class Checkpoint {
 public:
  using ResultCheck = std::function<void(const std::string&)>;
  Checkpoint(std::string path, std::string header)
      : path_(std::move(path)), header_(std::move(header)) {}
  std::map<std::size_t, std::string> load(std::size_t n, const ResultCheck& check = {}) const;
  /// load() on the file's text (the fuzzer's entry point).
  static std::map<std::size_t, std::string> parse(const std::string& text, const std::string& path,
                                                  const std::string& header, std::size_t n,
                                                  const ResultCheck& check);
  /// Starts a new file (header only), or keeps the existing one when resuming.
  void open(bool resume);
  void append(std::size_t index, const std::string& result);
  const std::string& path() const { return path_; }

 private:
  std::string path_, header_;
};

/// A search's identity for its checkpoint: the command, the scenario file's path and a hash
/// of its text, and the options (without --resume/--quiet), so a --resume of another
/// search is refused.
std::string search_identity(const std::string& command, const std::string& scenario_file,
                            const std::vector<std::string>& args);

/// map() with OUT_DIR/checkpoint.txt: rank 0 appends each result as it arrives and, with
/// `resume`, skips what the checkpoint already holds; progress lines on stderr unless quiet.
/// Without `resume`, an existing checkpoint (an unfinished search) is an InputError rather
/// than being overwritten. Call remove_checkpoint() once the outputs are written.
std::vector<std::string> map_checkpointed(std::size_t n, int threads, const std::string& out_dir,
                                          const std::string& identity, bool resume, bool quiet,
                                          const std::function<std::string(std::size_t)>& fn,
                                          const Checkpoint::ResultCheck& check = {});

/// Deletes OUT_DIR/checkpoint.txt (rank 0): the search finished and its outputs are written.
void remove_checkpoint(const std::string& out_dir);

}  // namespace fleetsim::dist
