// cli/commands.h — registration of the kernelarc subcommands; each lives in its own cmd_*.cpp.
#pragma once
#include <CLI/CLI.hpp>

namespace ka::cli {

void register_commands(CLI::App& app);
// The process exit code the commands asked for (0 unless a command set it, e.g. eval with failures).
int exit_code();
void set_exit_code(int c);

void register_problems(CLI::App& app);
void register_eval(CLI::App& app);
void register_worker(CLI::App& app);
void register_export(CLI::App& app);
void register_optimize(CLI::App& app);
void register_report(CLI::App& app);
void register_calibrate(CLI::App& app);
void register_sol(CLI::App& app);
void register_lt_enum(CLI::App& app);
void register_coverage(CLI::App& app);

}  // namespace ka::cli
