// cli/cmd_worker.cpp — `kernelarc worker --target T` (internal): the judge starts these processes
// itself; they speak the protocol of judge/protocol.h on stdin/stdout, inside the sandbox of
// judge/sandbox.h (folders to read besides the system's: --read; --no-sandbox: none; --without NAME: all but NAME);
// --kept-bytes caps the input sets it keeps on the device.
#include "cli/commands.h"
#include "judge/sandbox.h"
#include "worker/worker.h"

namespace ka::cli {

void register_worker(CLI::App& app) {
  auto* cmd = app.add_subcommand("worker", "Internal: a judge worker process (started by the judge)");
  cmd->group("");  // hidden from --help
  static std::string target = "host";
  static std::vector<std::string> read_trees;
  static bool no_sandbox = false;
  static std::vector<std::string> without;
  static size_t kept_bytes = 0;
  cmd->add_option("--target", target, "cuda or host")->check(CLI::IsMember({"cuda", "host"}));
  cmd->add_option("--read", read_trees, "a folder the sandboxed worker may read (libraries), repeatable");
  cmd->add_flag("--no-sandbox", no_sandbox, "run without the OS sandbox (KERNELARC_SANDBOX=off in the judge)");
  cmd->add_option("--without", without, "leave one defence of the sandbox out (KERNELARC_SANDBOX=without:NAME,...), repeatable")
      ->check(CLI::IsMember(sandbox_defences()));
  cmd->add_option("--kept-bytes", kept_bytes,
                  "the most bytes of input sets kept on the device (KERNELARC_KEPT_SETS_BYTES in the judge; 0: half its memory)");
  cmd->callback([] {
    SandboxPolicy policy;
    policy.enabled = !no_sandbox;
    policy.gpu = target == "cuda";
    policy.read_trees.assign(read_trees.begin(), read_trees.end());
    policy.without = without;
    set_exit_code(worker_main(target, policy, kept_bytes));
  });
}

}  // namespace ka::cli
