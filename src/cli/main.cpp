// cli/main.cpp — the kernelarc command line: parses flags (CLI11) and hands off to the parts of the
// flow. User errors print one line and exit 2; internal failures print a bug message and exit 1.
#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <signal.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include "cli/commands.h"
#include "util/error.h"

int main(int argc, char** argv) {
  ::signal(SIGPIPE, SIG_IGN);
  spdlog::set_default_logger(spdlog::stderr_color_mt("kernelarc"));  // stdout is for results
  CLI::App app{"KernelArc: judges and optimizes GPU kernels for SOL-ExecBench problems"};
  app.require_subcommand(1);
  app.set_version_flag("--version", KA_VERSION);
  ka::cli::register_commands(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    fmt::print(stderr, "kernelarc: {}\n", ka::one_line(e.what()));
    return 2;
  } catch (const ka::UserError& e) {
    fmt::print(stderr, "kernelarc: {}\n", ka::one_line(e.what()));
    return 2;
  } catch (const std::exception& e) {
    fmt::print(stderr, "kernelarc: internal error (a bug, please report it): {}\n", ka::one_line(e.what()));
    return 1;
  }
  return ka::cli::exit_code();
}
