#include "cli/commands.h"
namespace ka::cli { void register_worker(CLI::App&) {} }
