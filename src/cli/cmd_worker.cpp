// cli/cmd_worker.cpp — `kernelarc worker --target T` (internal): the judge starts these processes
// itself; they speak the protocol of judge/protocol.h on stdin/stdout.
#include "cli/commands.h"
#include "worker/worker.h"

namespace ka::cli {

void register_worker(CLI::App& app) {
  auto* cmd = app.add_subcommand("worker", "Internal: a judge worker process (started by the judge)");
  cmd->group("");  // hidden from --help
  static std::string target = "host";
  cmd->add_option("--target", target, "cuda or host")->check(CLI::IsMember({"cuda", "host"}));
  cmd->callback([] { set_exit_code(worker_main(target)); });
}

}  // namespace ka::cli
