// The report machinery: number formatting, tables, the Markdown/HTML document, gnuplot
// SVG handling (with stand-in gnuplot programs), the Pareto frontier; then `fleetsim run`'s
// report files, their determinism, the run without gnuplot, and report.html in a real
// headless browser (Chromium).
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <string>
#include <vector>

#include "cli_fixture.h"
#include "reports/document.h"
#include "reports/format.h"
#include "reports/plot.h"

namespace fleetsim::reports {
namespace {

size_t count_of(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t p = 0; (p = text.find(what, p)) != std::string::npos; p += what.size()) ++n;
  return n;
}

TEST(Format, SignificantDigitsAndUnits) {
  EXPECT_EQ(human(41700), "41.7k");   // 41.7 in [9.995, 99.95): one decimal
  EXPECT_EQ(human(958), "958");       // a whole number below 1000: as is
  EXPECT_EQ(human(123456), "123k");   // 123.456 ≥ 99.95: no decimals
  EXPECT_EQ(human(999.5), "1.00k");   // rounds up into the next prefix
  EXPECT_EQ(human(2.314), "2.31");    // below 9.995: two decimals
  EXPECT_EQ(human(2.48e9), "2.48B");  // billions as "B"
  EXPECT_EQ(usd(1.84e6), "$1.84M");
  EXPECT_EQ(pct(0.982), "98.2 %");
}

TEST(Document, TableTextAlignsColumns) {
  // Widths: column 0 = max(t, x, long) = 4, column 1 = max(a, 1, 333) = 3, column 2 =
  // max(bbb, 22, m²) = 3 (m² is two code points); every column gets two spaces before it,
  // the first is padded on the right, the others on the left.
  const Table t{{"t", "a", "bbb"}, {{"x", "1", "22"}, {"long", "333", "m²"}}};
  EXPECT_EQ(table_text(t),
            "  t       a  bbb\n"
            "  x       1   22\n"
            "  long  333   m²\n");
}

TEST(Document, MarkdownAndHtml) {
  Document d("R & D");
  d.heading("Answer");
  d.paragraph("x < y");
  d.table({{"name", "value"}, {{"a|b", "1"}}});
  d.figure({"p", "A plot.", "<svg viewBox=\"0 0 1 1\"></svg>", ""});
  d.figure({"q", "Missing.", "", "gnuplot was not found"});
  EXPECT_EQ(d.markdown(),
            "# R & D\n"
            "\n## Answer\n"
            "\nx < y\n"
            "\n| name | value |\n| --- | ---: |\n| a\\|b | 1 |\n"
            "\n![A plot.](p.svg)\n"
            "\n> **Plot not drawn** (Missing.): gnuplot was not found\n");
  const std::string html = d.html();
  EXPECT_NE(html.find("<title>R &amp; D</title>"), std::string::npos);
  EXPECT_NE(html.find("<p>x &lt; y</p>"), std::string::npos);
  EXPECT_NE(html.find("<td>a|b</td><td>1</td>"), std::string::npos);
  EXPECT_NE(html.find("<figure id=\"fig-p\">\n<svg viewBox=\"0 0 1 1\"></svg>\n<figcaption>A plot.</figcaption>"),
            std::string::npos);
  EXPECT_NE(html.find("Plot not drawn: gnuplot was not found"), std::string::npos);
  EXPECT_EQ(html.find("<script"), std::string::npos);
  EXPECT_EQ(d.figures_drawn(), 1);
}

TEST(Pareto, FrontierOfCostAndOfThroughput) {
  const std::vector<ParetoPoint> pts = {
      {"A", 1, 5, true, false}, {"B", 2, 3, true, true},     {"C", 3, 3, true, false},
      {"D", 4, 1, true, false}, {"E", 2.5, 4, true, false}, {"F", 0.5, 0.5, false, false}};
  // x = cost (lower is better): A is the cheapest; B beats C (cheaper, same latency) and E
  // (cheaper and faster); D is the fastest; F is infeasible.
  EXPECT_EQ(pareto_frontier(pts, false), (std::vector<size_t>{0, 1, 3}));
  // x = throughput (higher is better): D has the most throughput and the least latency.
  EXPECT_EQ(pareto_frontier(pts, true), (std::vector<size_t>{3}));
  EXPECT_EQ(pareto_csv({{"h100, tp4", 2, 0.5, true, true}}, false, "cost_usd_per_day", "ttft_p99_s"),
            "label,cost_usd_per_day,ttft_p99_s,feasible,chosen,on_frontier\nh100; tp4,2,0.5,1,1,1\n");
}

// A stand-in for gnuplot: a shell script in a temporary folder.
class FakeGnuplot : public ::testing::Test {
 protected:
  void TearDown() override {
    unsetenv("FLEETSIM_GNUPLOT");
    if (!dir_.empty()) fs::remove_all(dir_);
  }
  void use(const std::string& body) {
    dir_ = fs::temp_directory_path() / ("fleetsim-fake-gnuplot-" + std::to_string(::getpid()));
    fs::create_directories(dir_);
    const fs::path p = dir_ / "gnuplot";
    std::ofstream(p) << "#!/bin/sh\n" << body << "\n";
    fs::permissions(p, fs::perms::owner_all);
    setenv("FLEETSIM_GNUPLOT", p.c_str(), 1);
  }
  fs::path dir_;
};

TEST_F(FakeGnuplot, SvgIdsArePrefixedWithTheFigureName) {
  use("printf '%s\\n' '<?xml version=\"1.0\"?>' \"<svg><path id='gpPt1'/><path id='gpPt10'/>\" "
      "\"<use xlink:href='#gpPt1'/><g id=\\\"canvas\\\" filter='url(#gpPt10)'/></svg>\" > plot.svg");
  const Figure f = draw_gnuplot("lat", "caption", "plot x", {{"d.csv", "x\n1\n"}});
  EXPECT_EQ(f.note, "");
  // The prolog goes; gpPt1 and gpPt10 are told apart by the closing quote or parenthesis.
  EXPECT_EQ(f.svg, "<svg><path id='lat-gpPt1'/><path id='lat-gpPt10'/>\n"
                   "<use xlink:href='#lat-gpPt1'/><g id=\"lat-canvas\" filter='url(#lat-gpPt10)'/></svg>");
}

TEST_F(FakeGnuplot, FailureGivesANoteNotAnException) {
  use("echo 'line 1: warning: x' >&2; echo 'line 2: undefined variable: y' >&2; exit 3");
  const Figure f = draw_gnuplot("lat", "caption", "plot y", {});
  EXPECT_EQ(f.svg, "");
  EXPECT_EQ(f.note, "gnuplot failed (exit status 3): line 2: undefined variable: y");
}

TEST_F(FakeGnuplot, MissingProgram) {
  setenv("FLEETSIM_GNUPLOT", "/nonexistent/gnuplot", 1);
  const Figure f = draw_gnuplot("lat", "caption", "plot y", {});
  EXPECT_EQ(f.svg, "");
  EXPECT_NE(f.note.find("gnuplot was not found"), std::string::npos) << f.note;
}

class ReportCli : public Cli {
 protected:
  // Runs `args` with --out DIR/name; returns DIR/name.
  fs::path run_to(const std::string& name, const std::string& args, const std::string& env = "") {
    const fs::path out = dir_ / name;
    const Result r = run(args + " --quiet --out '" + out.string() + "'", env);
    EXPECT_EQ(r.code, 0) << r.err;
    last_err_ = r.err;
    return out;
  }

  // Loads `html` in headless Chromium with a probe script appended that writes each <svg>'s
  // rendered size into a data-rendered attribute; checks that the page logs nothing to the
  // console, loads nothing from elsewhere, and shows `plots` SVGs of non-zero size.
  void check_in_browser(const fs::path& html, int plots) {
    std::string chromium;
    if (const char* env = std::getenv("FLEETSIM_CHROMIUM")) chromium = env;
    else if (std::system("command -v chromium >/dev/null 2>&1") == 0) chromium = "chromium";
    if (chromium.empty()) {
      const char* req = std::getenv("FLEETSIM_REQUIRE_BROWSER");
      if (req && std::string(req) == "1")
        FAIL() << "Chromium is not installed, and FLEETSIM_REQUIRE_BROWSER=1 requires the browser check of "
                  "report.html: apt-get install chromium (or set FLEETSIM_CHROMIUM to its binary)";
      GTEST_SKIP() << "Chromium is not installed (apt-get install chromium); set FLEETSIM_REQUIRE_BROWSER=1 to fail";
    }
    std::string page = slurp(html);
    const std::string probe =
        "<script>for (const s of document.querySelectorAll('svg')) { const b = s.getBoundingClientRect();"
        " s.setAttribute('data-rendered', Math.round(b.width) + 'x' + Math.round(b.height)); }"
        " document.body.setAttribute('data-probe', 'done');</script>\n";
    page.insert(page.rfind("</body>"), probe);
    const fs::path probed = dir_ / "probe.html";
    std::ofstream(probed) << page;
    const std::string cmd = "timeout 120 " + chromium +
                            " --headless --no-sandbox --disable-gpu --enable-logging=stderr --v=0 --user-data-dir='" +
                            (dir_ / "chromium-profile").string() + "' --dump-dom 'file://" + probed.string() + "' >'" +
                            (dir_ / "dom.html").string() + "' 2>'" + (dir_ / "chromium.log").string() + "'";
    ASSERT_EQ(std::system(cmd.c_str()), 0) << slurp(dir_ / "chromium.log");
    const std::string dom = slurp(dir_ / "dom.html"), log = slurp(dir_ / "chromium.log");
    EXPECT_NE(dom.find("data-probe=\"done\""), std::string::npos) << "the page did not finish loading";
    // Console messages (SVG parse errors too) show as INFO:CONSOLE lines; loads that fail as net::ERR_.
    EXPECT_EQ(log.find("CONSOLE"), std::string::npos) << log;
    EXPECT_EQ(log.find("net::ERR_"), std::string::npos) << log;
    EXPECT_EQ(count_of(dom, "<svg"), static_cast<size_t>(plots));
    const std::regex rendered("data-rendered=\"([0-9]+)x([0-9]+)\"");
    int shown = 0;
    for (auto it = std::sregex_iterator(dom.begin(), dom.end(), rendered); it != std::sregex_iterator(); ++it)
      if (std::stoi((*it)[1]) > 0 && std::stoi((*it)[2]) > 0) ++shown;
    EXPECT_EQ(shown, plots) << "plots with a non-zero rendered size";
  }

  std::string last_err_;
};

TEST_F(ReportCli, SinglePoolRunWritesTheReportAndPlots) {
  const fs::path o = run_to("a", "run scenarios/chat-service.yaml");
  for (const char* f : {"summary.json", "report.md", "report.html", "latency_over_time.svg", "utilization.svg",
                        "over_time.csv"})
    EXPECT_TRUE(fs::exists(o / f)) << f;
  const std::string md = slurp(o / "report.md"), html = slurp(o / "report.html");
  EXPECT_NE(md.find("## The question\n\nLlama-3.1-8B chat service"), std::string::npos) << md;
  EXPECT_NE(md.find("![Time to first token over the run"), std::string::npos);
  EXPECT_NE(md.find("scenarios/chat-service.yaml: OK — chat-service"), std::string::npos);  // fleetsim check's text
  EXPECT_EQ(count_of(html, "<svg"), 2u);
  EXPECT_EQ(html.find("<script"), std::string::npos);
  EXPECT_EQ(count_of(html, " src="), 0u);  // self-contained: nothing loaded from elsewhere
  EXPECT_EQ(count_of(html, "<link"), 0u);
  EXPECT_EQ(slurp(o / "over_time.csv").rfind("region,region_index,start_s,end_s,first_tokens_simulated,ttft_p50_s,", 0),
            0u);
  // Same scenario and seed: byte-identical report, plots and data.
  const fs::path b = run_to("b", "run scenarios/chat-service.yaml");
  for (const char* f : {"report.md", "report.html", "latency_over_time.svg", "utilization.svg", "over_time.csv"})
    EXPECT_EQ(slurp(o / f), slurp(b / f)) << f;
}

TEST_F(ReportCli, WithoutGnuplotTheReportHasNotes) {
  const fs::path o = run_to("a", "run scenarios/chat-service.yaml", "FLEETSIM_GNUPLOT=/nonexistent/gnuplot");
  EXPECT_NE(last_err_.find("warning: gnuplot was not found"), std::string::npos) << last_err_;
  EXPECT_EQ(count_of(last_err_, "warning:"), 1u) << last_err_;  // once, not once per plot
  const std::string html = slurp(o / "report.html");
  EXPECT_EQ(count_of(html, "Plot not drawn"), 2u);
  EXPECT_EQ(count_of(html, "<svg"), 0u);
  EXPECT_FALSE(fs::exists(o / "utilization.svg"));
  EXPECT_TRUE(fs::exists(o / "over_time.csv"));
}

TEST_F(ReportCli, SinglePoolReportInABrowser) {
  check_in_browser(run_to("a", "run scenarios/chat-service.yaml") / "report.html", 2);
}

TEST_F(ReportCli, FleetReportInABrowser) {
  // Load vs capacity, latency, utilization and cost.
  const fs::path o =
      run_to("f", "run scenarios/default.yaml --set users.sample=0.0005 --set users.duration=2h --set fleet.report_interval=10min");
  for (const char* f : {"load_capacity.svg", "latency_over_time.svg", "utilization.svg", "cost.svg", "cost.csv",
                        "over_time.csv", "regions.csv"})
    EXPECT_TRUE(fs::exists(o / f)) << f;
  EXPECT_NE(slurp(o / "report.md").find("| regions | users | calls/day |"), std::string::npos);
  check_in_browser(o / "report.html", 4);
}

TEST_F(ReportCli, PlanReportInABrowser) {
  // The planner's report: question, assumptions, answer, ranking, the Pareto plot.
  const fs::path o = run_to("p", "plan scenarios/plan-llama70b-chat.yaml --set workload.duration=5min --set plan.simulate=4");
  for (const char* f : {"plan.json", "plan.csv", "report.md", "report.html", "pareto.svg", "pareto.csv",
                        "throughput_latency.svg", "throughput_latency.csv"})
    EXPECT_TRUE(fs::exists(o / f)) << f;
  const std::string md = slurp(o / "report.md");
  for (const char* h : {"## The question", "## Assumptions", "## The answer", "## Ranking", "## Why the others lost"})
    EXPECT_NE(md.find(h), std::string::npos) << h;
  check_in_browser(o / "report.html", 2);  // cost vs TTFT, throughput vs TPOT
}

}  // namespace
}  // namespace fleetsim::reports
