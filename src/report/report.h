// report/report.h — a campaign's report: everything a person looks at after a campaign, gathered
// from its store (OUT/campaign.db) and its out folder (OUT/<problem>/) into one JSON document
// (OUT/report.json), rendered by report/render.py (Plotly, plotly.js inlined) into one
// self-contained HTML file (OUT/report.html) that opens offline. See docs/reports.md.
#pragma once
#include <nlohmann/json.hpp>

#include <filesystem>
#include <string>
#include <vector>

namespace ka {

// A problem of the campaign as the report needs it beyond the store: its folder, and why it got no
// passing candidate ("" when it got one).
struct ReportProblem {
  std::filesystem::path dir;
  std::string unsolved_reason;
};

// Writes OUT/<problem>/problem.json per problem (its workloads' axes, the reason it is unsolved),
// so that the report can be rebuilt from the out folder alone, on another machine.
void record_problems(const std::filesystem::path& out, const std::vector<ReportProblem>& problems);

// The report's data: per problem the leaderboard, the best candidate per workload beside the
// reference, torch.compile and the SOL bound, the search (every candidate in proposal order), the
// budget log, the findings with the measurements they cite, and the best solution's source.
// Throws a UserError when OUT holds no campaign.
nlohmann::json gather_report(const std::filesystem::path& out);

// gather_report, then OUT/report.json and OUT/report.html (render.py under $KERNELARC_PYTHON or
// python3); returns the HTML's path. Throws a UserError when the renderer cannot run (no plotly).
std::filesystem::path write_report(const std::filesystem::path& out);

// At the end of a campaign: record_problems, then write_report. A report that cannot be written is
// a warning (the campaign's results are in its store and out folder either way); returns the HTML's
// path, or an empty path when none was written.
std::filesystem::path report_after_campaign(const std::filesystem::path& out, const std::vector<ReportProblem>& problems);

}  // namespace ka
