#include "sim/report_html.h"

#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>
#include <set>

#include "core/sha256.h"
#include "sim/report_assets.h"

namespace tessel {
namespace {

const char* kEvil = "<img src=x onerror=alert(1)>";

// Two runs of two jobs each; names as given.
std::vector<SimResult> Runs(const std::string& policy, const std::string& cluster, const std::string& trace) {
  std::vector<SimResult> runs(2);
  for (int k = 0; k < 2; ++k) {
    SimResult& r = runs[k];
    r.summary.policy = k == 0 ? policy : "fcfs";
    r.summary.cluster = cluster;
    r.summary.trace = trace;
    r.summary.truth = "estimator";
    r.summary.placement = "consolidate";
    r.summary.jobs_total = 2;
    r.summary.jobs_finished = 1;
    r.summary.jobs_unfinished = 1;
    r.summary.unfinished_reasons = {{"</script><script>alert(3)</script>", 1}};
    r.summary.makespan_s = 7200;
    r.summary.deadline_jobs = k;  // the second run has a deadline job
    JobRecord done;
    done.id = "job-<b>1</b>";
    done.outcome = JobOutcome::kFinished;
    done.finish = Seconds(3600 * (k + 1));
    done.gpu_s_by_type = {3600, 0, 0};
    JobRecord waiting;
    waiting.id = "job-2";
    r.jobs = {done, waiting};
    TimelinePoint a, b;
    a.allocated_gpus = a.progressing_gpus = 1;
    a.pending_jobs = 1;
    b.time = Seconds(3600);
    b.pending_jobs = 1;
    r.timeline = {a, b};
  }
  return runs;
}

const Cluster& Demo() {
  static const Cluster cluster = *LoadCluster("demo");
  return cluster;
}

std::string Page(const std::vector<SimResult>& runs) { return ReportHtml(runs, Demo(), "compare"); }

// The text between `open` and the next "</script>" after each `open`.
std::vector<std::string> Between(const std::string& page, const std::string& open) {
  std::vector<std::string> out;
  for (size_t at = page.find(open); at != std::string::npos; at = page.find(open, at + 1)) {
    size_t from = at + open.size();
    out.push_back(page.substr(from, page.find("</script>", from) - from));
  }
  return out;
}

std::string WithoutChartJs(std::string page) {
  std::string_view lib = EmbeddedChartJs();
  size_t at = page.find(lib);
  EXPECT_NE(at, std::string::npos);
  page.erase(at, lib.size());
  return page;
}

TEST(ReportHtml, PageLoadsNothingFromOutside) {
  std::string page = Page(Runs("tiresias", "demo", "trace.csv"));
  std::string own = WithoutChartJs(page);
  for (const char* bad : {"http://", "https://", "src=", "href=", "url(", "@import", "<link", "<iframe", "<img",
                          "<object", "<embed"}) {
    EXPECT_EQ(own.find(bad), std::string::npos) << bad;
  }
  // Chart.js itself fetches nothing; its only addresses are in its licence
  // comments.
  std::string lib(EmbeddedChartJs());
  ASSERT_GT(lib.size(), 100000u);
  EXPECT_NE(lib.find("Chart.js v"), std::string::npos);
  for (const char* bad : {"src=", "fetch(", "XMLHttpRequest", "WebSocket", "importScripts", "sendBeacon"}) {
    EXPECT_EQ(lib.find(bad), std::string::npos) << bad;
  }
  for (size_t at = lib.find("://"); at != std::string::npos; at = lib.find("://", at + 1)) {
    size_t open = lib.rfind("/*", at), close = lib.rfind("*/", at);
    EXPECT_TRUE(open != std::string::npos && (close == std::string::npos || close < open))
        << "address outside a comment: " << lib.substr(at - std::min<size_t>(at, 40), 80);
  }
  EXPECT_NE(page.find("default-src 'none'"), std::string::npos);
}

TEST(ReportHtml, InputStringsStayJsonData) {
  std::string page = Page(Runs(kEvil, "</script><script>alert(2)</script>", "a&b<!--c.csv"));
  EXPECT_EQ(page.find(kEvil), std::string::npos);
  EXPECT_EQ(page.find("alert(2)</script>"), std::string::npos);
  EXPECT_EQ(page.find("alert(3)</script>"), std::string::npos);
  EXPECT_EQ(page.find("<!--"), std::string::npos);
  EXPECT_NE(page.find("\\u003cimg src=x onerror=alert(1)\\u003e"), std::string::npos);
  // One data block, parsed back to the very strings; two scripts.
  std::vector<std::string> data = Between(page, "<script type=\"application/json\" id=\"report-data\">");
  ASSERT_EQ(data.size(), 1u);
  EXPECT_EQ(Between(page, "<script>").size(), 2u);
  EXPECT_EQ(Between(page, "<script").size(), 3u);
  auto j = nlohmann::json::parse(data[0]);
  EXPECT_EQ(j["runs"][0]["policy"], kEvil);
  EXPECT_EQ(j["cluster"], "</script><script>alert(2)</script>");
  EXPECT_EQ(j["trace"], "a&b<!--c.csv");
  EXPECT_EQ(j["table"][3]["metric"], "unfinished, </script><script>alert(3)</script>");
  // The page's script shows strings with textContent only.
  std::string js(EmbeddedReportJs());
  for (const char* bad : {"innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval("}) {
    EXPECT_EQ(js.find(bad), std::string::npos) << bad;
  }
}

TEST(ReportHtml, EscapeJsonForScript) {
  EXPECT_EQ(EscapeJsonForScript(R"({"a":"</script><!-- & >"})"),
            R"({"a":"\u003c/script\u003e\u003c!-- \u0026 \u003e"})");
}

TEST(ReportHtml, CspAllowsExactlyTheInlineScripts) {
  std::string page = Page(Runs("tiresias", "demo", "trace.csv"));
  size_t at = page.find("script-src ");
  ASSERT_NE(at, std::string::npos);
  std::string sources = page.substr(at + 11, page.find(';', at) - at - 11);
  std::vector<std::string> scripts = Between(page, "<script>");
  ASSERT_EQ(scripts.size(), 2u);
  EXPECT_EQ(scripts[0], EmbeddedChartJs());
  EXPECT_EQ(scripts[1], EmbeddedReportJs());
  std::string expected;
  for (const std::string& s : scripts) {
    std::array<uint8_t, 32> d = Sha256(s);
    expected += (expected.empty() ? "'sha256-" : " 'sha256-") +
                Base64(std::string_view(reinterpret_cast<const char*>(d.data()), d.size())) + "'";
  }
  EXPECT_EQ(sources, expected);
  EXPECT_EQ(page.find("unsafe-eval"), std::string::npos);
  EXPECT_EQ(page.find("script-src 'unsafe-inline'"), std::string::npos);
}

// Sixteen distinct colours, far apart in CIELAB (CIE76 distance; the
// closest pair, purple and violet, is 15.1 apart) and from the white page.
TEST(ReportHtml, SixteenDistinctColours) {
  const std::vector<std::string>& palette = ReportPalette();
  ASSERT_EQ(palette.size(), 16u);
  EXPECT_EQ(std::set<std::string>(palette.begin(), palette.end()).size(), 16u);
  auto lab = [](const std::string& hex) {
    EXPECT_EQ(hex.size(), 7u);
    double xyz[3] = {0, 0, 0};
    const double m[3][3] = {{0.4124, 0.3576, 0.1805}, {0.2126, 0.7152, 0.0722}, {0.0193, 0.1192, 0.9505}};
    for (int c = 0; c < 3; ++c) {
      double v = std::stoi(hex.substr(1 + 2 * c, 2), nullptr, 16) / 255.0;
      v = v <= 0.04045 ? v / 12.92 : std::pow((v + 0.055) / 1.055, 2.4);
      for (int r = 0; r < 3; ++r) xyz[r] += m[r][c] * v;
    }
    const double white[3] = {0.95047, 1.0, 1.08883};
    double f[3];
    for (int r = 0; r < 3; ++r) {
      double t = xyz[r] / white[r];
      f[r] = t > 216.0 / 24389 ? std::cbrt(t) : (24389.0 / 27 * t + 16) / 116;
    }
    return std::array<double, 3>{116 * f[1] - 16, 500 * (f[0] - f[1]), 200 * (f[1] - f[2])};
  };
  auto dist = [](const std::array<double, 3>& a, const std::array<double, 3>& b) {
    return std::hypot(a[0] - b[0], a[1] - b[1], a[2] - b[2]);
  };
  for (size_t i = 0; i < palette.size(); ++i) {
    EXPECT_GT(dist(lab(palette[i]), lab("#ffffff")), 30) << palette[i];
    for (size_t k = i + 1; k < palette.size(); ++k) {
      EXPECT_GT(dist(lab(palette[i]), lab(palette[k])), 15) << palette[i] << " " << palette[k];
    }
  }
  // The page carries the same palette.
  std::string page = Page(Runs("tiresias", "demo", "trace.csv"));
  auto j = nlohmann::json::parse(Between(page, "id=\"report-data\">")[0]);
  EXPECT_EQ(j["palette"].get<std::vector<std::string>>(), palette);
}

TEST(ReportHtml, SameRunsSameBytes) {
  std::string a = Page(Runs("tiresias", "demo", "trace.csv"));
  std::string b = Page(Runs("tiresias", "demo", "trace.csv"));
  EXPECT_EQ(a, b);
  EXPECT_NE(a, Page(Runs("srtf", "demo", "trace.csv")));
}

TEST(ReportHtml, DeadlineAndTypeFigures) {
  std::vector<SimResult> runs = Runs("tiresias", "demo", "trace.csv");
  auto j = nlohmann::json::parse(Between(Page(runs), "id=\"report-data\">")[0]);
  EXPECT_TRUE(j["deadlines"].get<bool>());
  ASSERT_EQ(j["gpu_types"].size(), Demo().types().size());
  // One GPU-hour on the first type over its GPUs for 2 hours.
  double expect = 100.0 * 3600 / (Demo().types()[0].total_gpus * 7200);
  EXPECT_NEAR(j["runs"][0]["type_allocation_pct"][0].get<double>(), expect, 1e-4 * expect);
  EXPECT_EQ(j["runs"][0]["jct_cdf"]["x"], nlohmann::json::parse("[1]"));
  EXPECT_EQ(j["runs"][1]["jct_cdf"]["x"], nlohmann::json::parse("[2]"));
  // The table has deadline rows for the run with deadlines only.
  bool found = false;
  for (const auto& row : j["table"]) {
    if (row["metric"] == "deadlines met") {
      found = true;
      EXPECT_EQ(row["values"][0], "");
      EXPECT_EQ(row["values"][1], "0 of 1 (0%)");
    }
  }
  EXPECT_TRUE(found);
  runs[1].summary.deadline_jobs = 0;
  j = nlohmann::json::parse(Between(Page(runs), "id=\"report-data\">")[0]);
  EXPECT_FALSE(j["deadlines"].get<bool>());
}

}  // namespace
}  // namespace tessel
