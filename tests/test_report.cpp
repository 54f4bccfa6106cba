// tests/test_report.cpp — the campaign report: a short host campaign on the bundled example writes
// OUT/report.html; `kernelarc report` rebuilds it from a copy of the out folder alone; headless
// Chromium opens it with no script error and its charts hold the campaign's points (the page
// writes what it drew into #ka-render-check, read back through --dump-dom).
#include "util/resources.h"
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <string>

#include <nlohmann/json.hpp>

#include "util/files.h"
#include "util/process.h"

namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

const fs::path kRoot = ka::source_root();

std::vector<std::string> env() { return {"KERNELARC_CACHE=" + (fs::path(KA_BUILD_DIR) / "test-cache").string()}; }

// The page's own account of what it drew, from the DOM after its scripts ran.
json render_check(const fs::path& html) {
  auto r = ka::run_command({"chromium", "--headless", "--no-sandbox", "--disable-gpu", "--virtual-time-budget=30000",
                            "--dump-dom", "file://" + fs::absolute(html).string()},
                           std::chrono::minutes(2));
  EXPECT_EQ(r.exit_code, 0) << "chromium (scripts/install-deps.sh installs it): "
                            << r.output.substr(r.output.size() > 2000 ? r.output.size() - 2000 : 0);
  const std::string open = "<pre id=\"ka-render-check\">";
  auto a = r.output.find(open);
  if (a == std::string::npos) return nullptr;
  a += open.size();
  auto b = r.output.find("</pre>", a);
  std::string text = r.output.substr(a, b - a);
  for (auto [from, to] : {std::pair{"&quot;", "\""}, {"&lt;", "<"}, {"&gt;", ">"}, {"&amp;", "&"}})
    for (size_t p; (p = text.find(from)) != std::string::npos;) text.replace(p, std::string(from).size(), to);
  return text.empty() ? json(nullptr) : json::parse(text);
}

int trace_points(const json& chart, const std::string& name) {
  for (const auto& t : chart["traces"])
    if (t.value("name", "") == name) return t["points"].get<int>();
  return -1;
}

}  // namespace

TEST(Report, HostCampaignReportRebuildsOfflineAndRendersInChromium) {
  const fs::path out = fs::path(KA_BUILD_DIR) / "test-report", copy = fs::path(KA_BUILD_DIR) / "test-report-copy";
  fs::remove_all(out);
  fs::remove_all(copy);
  auto r = ka::run_command({KA_BINARY, "optimize", (kRoot / "examples" / "problems" / "rmsnorm_h128").string(), "--target",
                            "host", "--budget", "5", "--out", out.string(), "--seed", "3", "--iterations", "3", "--warmup",
                            "1", "--no-progress", "--jobs", "2"},
                           std::chrono::minutes(15), env());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("report " + (out / "report.html").string()), std::string::npos) << r.output;
  ASSERT_TRUE(fs::exists(out / "report.html"));

  // Another machine's copy, without the problem folder's path being used: the report is rebuilt
  // from the out folder alone.
  fs::copy(out, copy, fs::copy_options::recursive);
  fs::remove(copy / "report.html");
  auto again = ka::run_command({KA_BINARY, "report", copy.string()}, std::chrono::minutes(5));
  ASSERT_EQ(again.exit_code, 0) << again.output;
  ASSERT_TRUE(fs::exists(copy / "report.html"));
  const std::string page = ka::read_text(copy / "report.html");
  EXPECT_EQ(page.find("<script src="), std::string::npos) << "the report must not load scripts from elsewhere";

  const json data = json::parse(ka::read_text(copy / "report.json"));
  ASSERT_EQ(data["problems"].size(), 1u);
  const json& p = data["problems"][0];
  ASSERT_TRUE(p["best"].is_object()) << p.dump(1).substr(0, 2000);
  const int workloads = static_cast<int>(p["workloads"].size());
  EXPECT_EQ(workloads, 12);
  EXPECT_EQ(static_cast<int>(p["best"]["per_workload"].size()), workloads);
  EXPECT_FALSE(p["best"]["sources"].empty());
  int candidates = static_cast<int>(p["search"].size()), passed = 0;
  std::map<std::string, int> per_agent;
  for (const auto& s : p["search"]) {
    passed += s["passed"].get<bool>();
    ++per_agent[s["agent"].get<std::string>()];
  }
  EXPECT_GE(candidates, 1);
  EXPECT_LE(candidates, 5);

  const json check = render_check(copy / "report.html");
  ASSERT_TRUE(check.is_object()) << "the page did not finish drawing";
  EXPECT_TRUE(check["ok"].get<bool>()) << check["errors"].dump();
  const json& charts = check["charts"];
  ASSERT_TRUE(charts.contains("p0-workloads") && charts.contains("p0-search") && charts.contains("p0-budget"))
      << charts.dump();
  for (const auto& [id, c] : charts.items()) EXPECT_TRUE(c["rendered"].get<bool>()) << id;
  // Per workload: the best candidate's time and the eager reference's at every workload, drawn.
  const json& w = charts["p0-workloads"];
  EXPECT_EQ(trace_points(w, "PyTorch eager"), workloads) << w.dump();
  int best_points = 0;
  for (const auto& t : w["traces"])
    if (t["name"].get<std::string>().rfind("best: ", 0) == 0) best_points = t["points"].get<int>();
  EXPECT_EQ(best_points, workloads) << w.dump();
  EXPECT_GE(w["svg_points"].get<int>(), 2 * workloads);
  // The search: one marker per passing candidate, in its agent's trace.
  int markers = 0;
  for (const auto& [agent, n] : per_agent)
    if (int k = trace_points(charts["p0-search"], agent); k > 0) markers += k;
  EXPECT_EQ(markers, passed) << charts["p0-search"].dump();
  EXPECT_EQ(charts["p0-search"]["svg_points"].get<int>(), passed);
  // The budget: one stacked series per agent, a point per candidate spent.
  for (const auto& [agent, n] : per_agent) EXPECT_EQ(trace_points(charts["p0-budget"], agent), candidates) << agent;
}

TEST(Report, AFolderWithoutACampaignIsAUserError) {
  auto r = ka::run_command({KA_BINARY, "report", (fs::path(KA_BUILD_DIR) / "no-such-campaign").string()},
                           std::chrono::minutes(1));
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("no campaign here"), std::string::npos) << r.output;
}
