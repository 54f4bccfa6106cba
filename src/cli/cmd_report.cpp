// cli/cmd_report.cpp — `kernelarc report DIR`: rebuilds a campaign's HTML report (report/report.h)
// from its out folder alone (campaign.db and the per-problem files), e.g. on a copy of a folder
// made on a GPU machine; no GPU, oracle or problem folder is needed.
#include <fmt/format.h>

#include "cli/commands.h"
#include "report/report.h"

namespace ka::cli {

void register_report(CLI::App& app) {
  static std::string dir;
  auto* cmd = app.add_subcommand("report", "Rebuild a campaign's report: DIR/report.html (and DIR/report.json) from "
                                           "DIR/campaign.db and DIR/<problem>/; self-contained, opens offline");
  cmd->add_option("DIR", dir, "A campaign's out folder (optimize --out)")->required();
  cmd->footer("Exit status: 0 written; 2 DIR holds no campaign, or the renderer cannot run (plotly missing: "
              "scripts/install-deps.sh installs it).");
  cmd->callback([] { fmt::print("{}\n", write_report(dir).string()); });
}

}  // namespace ka::cli
