// cli/commands.cpp — the subcommand table and the shared exit code.
#include "cli/commands.h"

namespace ka::cli {
namespace {
int g_exit = 0;
}

int exit_code() { return g_exit; }
void set_exit_code(int c) { g_exit = c; }

void register_commands(CLI::App& app) {
  register_problems(app);
  register_eval(app);
  register_optimize(app);
  register_report(app);
  register_export(app);
  register_calibrate(app);
  register_sol(app);
  register_worker(app);
  register_lt_enum(app);
  register_coverage(app);
}

}  // namespace ka::cli
