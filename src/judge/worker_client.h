// judge/worker_client.h — the judge's handle on one worker process: starts it (sandboxed, with a
// scrubbed environment and no inherited files; judge/sandbox.h), sends requests with deadlines,
// and turns every way a worker can fail (death by signal, exit, hang, device fault) into a typed
// failure. A failed worker is killed; the next request starts a fresh one. Candidate libraries
// travel as bytes: the worker reads no KernelArc folder.
#pragma once
#include <nlohmann/json.hpp>

#include <chrono>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "judge/verdict.h"
#include "problem/tensor.h"
#include "util/process.h"

namespace ka {

struct WorkerReply {
  bool ok = false;
  Verdict verdict = Verdict::passed;  // when !ok
  std::string message;
  nlohmann::json header;
  std::vector<std::byte> payload;
};

struct CallArg {
  const Tensor* tensor;  // inputs: data sent; outputs: only dtype/shape used
  bool output;
};

// The worker's sandbox arguments for the judge's KERNELARC_SANDBOX (on, off, without:NAME,...);
// a UserError for any other value.
std::vector<std::string> sandbox_mode_args();
// The worker's --kept-bytes for the judge's KERNELARC_KEPT_SETS_BYTES (unset: none); a UserError
// for anything but a positive number.
std::vector<std::string> kept_bytes_args();

class WorkerClient {
 public:
  WorkerClient(std::string target, std::filesystem::path log_path);
  ~WorkerClient();
  // Starts the worker if needed and returns its hello (device description). UserError if the
  // target cannot run here (e.g. no GPU).
  const nlohmann::json& hello();
  WorkerReply load(const std::filesystem::path& library, std::chrono::milliseconds timeout);
  // Keeps an input set in the worker under `set` (op "put": the inputs' bytes; outputs travel as
  // dtype and shape only). A refusal for want of device memory comes back with header "no_room";
  // so does one that would take the kept sets past the worker's budget (half the device), unless
  // `budgeted` is false (the sets of one run, after every other set was dropped).
  WorkerReply put(int64_t set, const std::vector<CallArg>& args, std::chrono::milliseconds timeout, bool budgeted = true);
  // Frees kept sets (all of them when `sets` is empty).
  WorkerReply drop(const std::vector<int64_t>& sets, std::chrono::milliseconds timeout);
  // Starts a run (op "run"; a fresh worker is started and the candidate reloaded if needed).
  WorkerReply start_run(nlohmann::json header, std::chrono::milliseconds timeout);
  // A message inside a run ("call", "after"; a null header only reads the run's final summary):
  // never restarts the worker, whose death is this run's failure.
  WorkerReply in_run(const nlohmann::json& header, std::chrono::milliseconds timeout);
  // Asks the worker to measure the device's ceilings (op "calibrate"; reply header "calibration").
  WorkerReply calibrate(const nlohmann::json& request, std::chrono::milliseconds timeout);
  void stop();
  int restarts() const { return restarts_; }

 private:
  std::string target_;
  std::filesystem::path log_;
  Child child_;
  nlohmann::json hello_;
  std::filesystem::path library_;  // reloaded into every fresh worker
  std::vector<std::filesystem::path> read_trees_;  // library folders the sandbox lets the worker read
  int restarts_ = -1;
  void start_worker();
  void allow_library_folders(const std::vector<std::byte>& library);
  WorkerReply send_library(std::chrono::milliseconds timeout);
  WorkerReply raw_request(const nlohmann::json& header, const std::vector<std::pair<const void*, size_t>>& payload,
                          std::chrono::milliseconds timeout);
  WorkerReply request(const nlohmann::json& header, const std::vector<std::pair<const void*, size_t>>& payload,
                      std::chrono::milliseconds timeout);
  WorkerReply died(bool timed_out, std::chrono::milliseconds timeout);
};

}  // namespace ka
