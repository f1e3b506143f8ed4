// The report machinery: number formatting, tables, the Markdown/HTML document, gnuplot
// SVG handling (with stand-in gnuplot programs), the Pareto frontier; then `fleetsim run`'s
// report files, their determinism, the run without gnuplot, and report.html in a real
// headless browser (Chromium).
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cmath>
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
  // Every table sits in a wrapper that scrolls sideways when the table is wider than the page.
  EXPECT_NE(html.find("<div class=\"table-scroll\">\n<table>\n<thead>"), std::string::npos) << html;
  EXPECT_NE(html.find("</table>\n</div>\n"), std::string::npos);
  EXPECT_NE(html.find(".table-scroll{max-width:100%;overflow-x:auto"), std::string::npos);
  EXPECT_NE(html.find("<figure id=\"fig-p\">\n<svg viewBox=\"0 0 1 1\"></svg>\n<figcaption>A "
                      "plot.</figcaption>"),
            std::string::npos);
  EXPECT_NE(html.find("Plot not drawn: gnuplot was not found"), std::string::npos);
  EXPECT_EQ(html.find("<script"), std::string::npos);
  EXPECT_EQ(d.figures_drawn(), 1);
}

TEST(Pareto, FrontierOfCostAndOfThroughput) {
  const std::vector<ParetoPoint> pts = {{"A", 1, 5, true, false},   {"B", 2, 3, true, true},
                                        {"C", 3, 3, true, false},   {"D", 4, 1, true, false},
                                        {"E", 2.5, 4, true, false}, {"F", 0.5, 0.5, false, false}};
  // x = cost (lower is better): A is the cheapest; B beats C (cheaper, same latency) and E
  // (cheaper and faster); D is the fastest; F is infeasible.
  EXPECT_EQ(pareto_frontier(pts, false), (std::vector<size_t>{0, 1, 3}));
  // x = throughput (higher is better): D has the most throughput and the least latency.
  EXPECT_EQ(pareto_frontier(pts, true), (std::vector<size_t>{3}));
  EXPECT_EQ(
      pareto_csv({{"h100, tp4", 2, 0.5, true, true}}, false, "cost_usd_per_day", "ttft_p99_s"),
      "label,cost_usd_per_day,ttft_p99_s,feasible,chosen,on_frontier\nh100; tp4,2,0.5,1,1,1\n");
}

TEST(AxisRange, FromTheData) {
  // 20..40 spans log10(2) = 0.3 decades: linear; margin 5 % of 20 = 1 → [19, 41].
  AxisRange r = axis_range({30, 20, 40}, true);
  EXPECT_FALSE(r.log);
  EXPECT_DOUBLE_EQ(r.lo, 19);
  EXPECT_DOUBLE_EQ(r.hi, 41);
  // 0.01..1 spans 2 decades > 1.5: log; margin 5 % of 2 decades = 0.1 → [10^-2.1, 10^0.1].
  r = axis_range({0.01, 1, 0.1}, true);
  EXPECT_TRUE(r.log);
  EXPECT_NEAR(r.lo, std::pow(10.0, -2.1), 1e-12);  // 0.0079433
  EXPECT_NEAR(r.hi, std::pow(10.0, 0.1), 1e-12);   // 1.2589
  // The same without a log scale allowed: margin 0.05 × 0.99 = 0.0495, and not below 0.
  r = axis_range({0.01, 1}, false);
  EXPECT_FALSE(r.log);
  EXPECT_DOUBLE_EQ(r.lo, 0);
  EXPECT_DOUBLE_EQ(r.hi, 1.0495);
  // 0.1..2 spans log10(20) = 1.3 decades ≤ 1.5: linear, 0.1 − 0.095 = 0.005 to 2.095.
  r = axis_range({0.1, 2}, true);
  EXPECT_FALSE(r.log);
  EXPECT_NEAR(r.lo, 0.005, 1e-12);
  EXPECT_NEAR(r.hi, 2.095, 1e-12);
  // A zero rules out a log scale (0..100: [0, 105]); negative values keep their margin
  // (-1..1: ± 0.1); NaN is skipped; one value v: v ± 10 %; nothing: [0, 1].
  r = axis_range({0, 100}, true);
  EXPECT_FALSE(r.log);
  EXPECT_DOUBLE_EQ(r.lo, 0);
  EXPECT_DOUBLE_EQ(r.hi, 105);
  r = axis_range({-1, std::nan(""), 1}, true);
  EXPECT_DOUBLE_EQ(r.lo, -1.1);
  EXPECT_DOUBLE_EQ(r.hi, 1.1);
  r = axis_range({5}, true);
  EXPECT_DOUBLE_EQ(r.lo, 4.5);
  EXPECT_DOUBLE_EQ(r.hi, 5.5);
  r = axis_range({}, true);
  EXPECT_DOUBLE_EQ(r.lo, 0);
  EXPECT_DOUBLE_EQ(r.hi, 1);
  EXPECT_EQ(gnuplot_range("x", {19, 41, false}), "set xrange [19:41]\nunset logscale x\n");
  EXPECT_EQ(gnuplot_range("y", {0.001, 10, true}), "set yrange [0.001:10]\nset logscale y\n");
}

TEST(AxisRange, ATargetAboveTheDataIsInRange) {
  // TTFT percentiles 0.05..0.4 s and a 2 s target: 0.05..2 spans log10(40) = 1.6 decades,
  // so log, and the top is 10^(log10(2) + 0.08 × 1.6) = 2 × 10^0.128 = 2.69 s ≥ 2 s.
  const AxisRange r = axis_range({0.05, 0.4, 0.2, 2.0}, true, 0.08);
  EXPECT_TRUE(r.log);
  EXPECT_GE(r.hi, 2.0);
  EXPECT_NEAR(r.hi, 2 * std::pow(10.0, 0.08 * std::log10(40.0)), 1e-9);
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
      "\"<use xlink:href='#gpPt1'/><g id=\\\"canvas\\\" filter='url(#gpPt10)'/></svg>\" > "
      "plot.svg");
  const Figure f = draw_gnuplot("lat", "caption", "plot x", {{"d.csv", "x\n1\n"}});
  EXPECT_EQ(f.note, "");
  // The prolog goes; gpPt1 and gpPt10 are told apart by the closing quote or parenthesis.
  EXPECT_EQ(f.svg,
            "<svg><path id='lat-gpPt1'/><path id='lat-gpPt10'/>\n"
            "<use xlink:href='#lat-gpPt1'/><g id=\"lat-canvas\" filter='url(#lat-gpPt10)'/></svg>");
}

namespace report_axes {

// "set <axis>range [lo:hi]" from a gnuplot script, and whether it sets a log scale there.
AxisRange range_in_script(const std::string& script, const std::string& axis) {
  const std::regex re("set " + axis + "range \\[([^:]+):([^\\]]+)\\]");
  std::smatch m;
  if (!std::regex_search(script, m, re)) return {0, 0, false};
  return {std::stod(m[1]), std::stod(m[2]),
          script.find("\nset logscale " + axis + "\n") != std::string::npos};
}

// The share of `r` that [lo, hi] covers (in decades on a log axis).
double coverage(const AxisRange& r, double lo, double hi) {
  if (r.log) return std::log10(hi / lo) / std::log10(r.hi / r.lo);
  return (hi - lo) / (r.hi - r.lo);
}

}  // namespace report_axes

TEST_F(FakeGnuplot, ParetoPointsSpreadOverThePlot) {
  using report_axes::coverage;
  using report_axes::range_in_script;
  use("cp plot.gp \"$(dirname \"$0\")/plot.gp\"; echo '<svg></svg>' > plot.svg");
  // Costs 20..40 $/h and TTFT p99 0.1..0.3 s: gnuplot's own log autoscale would give [10:100]
  // and [0.1:1], the points then covering log10(2) = 30 % and log10(3) = 48 % of the axes, in
  // one corner. From the data (spans under 1.5 decades, so linear, 5 % margins): x [19:41],
  // y [0.09:0.31], both covered 20/22 = 0.2/0.22 = 91 %.
  const std::vector<ParetoPoint> pts = {{"a", 20, 0.3, true, false},
                                        {"b", 30, 0.15, true, true},
                                        {"c", 40, 0.1, true, false},
                                        {"d", 35, 0.25, false, false}};
  const Figure f =
      pareto_plot("pareto", "caption", pts, false, "cost ($/h)", "TTFT p99 (s)", true, true);
  ASSERT_EQ(f.note, "");
  const std::string gp = slurp(dir_ / "plot.gp");
  const AxisRange x = range_in_script(gp, "x"), y = range_in_script(gp, "y");
  EXPECT_FALSE(x.log);
  EXPECT_FALSE(y.log);
  EXPECT_NEAR(x.lo, 19, 1e-9);
  EXPECT_NEAR(x.hi, 41, 1e-9);
  EXPECT_NEAR(y.lo, 0.09, 1e-9);
  EXPECT_NEAR(y.hi, 0.31, 1e-9);
  EXPECT_GT(coverage(x, 20, 40), 0.9) << gp;
  EXPECT_GT(coverage(y, 0.1, 0.3), 0.9) << gp;
  // Costs 1..1000 (3 decades): log x, [10^-0.15, 10^3.15] = [0.708, 1413], covered 3/3.3 = 91 %.
  const std::vector<ParetoPoint> wide = {{"a", 1, 0.3, true, false}, {"b", 1000, 0.1, true, true}};
  ASSERT_EQ(pareto_plot("pareto", "caption", wide, false, "cost", "ttft", true, true).note, "");
  const AxisRange xw = range_in_script(slurp(dir_ / "plot.gp"), "x");
  EXPECT_TRUE(xw.log);
  EXPECT_NEAR(xw.lo, std::pow(10.0, -0.15), 1e-9);
  EXPECT_NEAR(xw.hi, std::pow(10.0, 3.15), 1e-6);
  EXPECT_GT(coverage(xw, 1, 1000), 0.9);
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
    if (const char* env = std::getenv("FLEETSIM_CHROMIUM"))
      chromium = env;
    else if (std::system("command -v chromium >/dev/null 2>&1") == 0)
      chromium = "chromium";
    if (chromium.empty()) {
      const char* req = std::getenv("FLEETSIM_REQUIRE_BROWSER");
      if (req && std::string(req) == "1")
        FAIL() << "Chromium is not installed, and FLEETSIM_REQUIRE_BROWSER=1 requires the browser "
                  "check of "
                  "report.html: apt-get install chromium (or set FLEETSIM_CHROMIUM to its binary)";
      GTEST_SKIP() << "Chromium is not installed (apt-get install chromium); set "
                      "FLEETSIM_REQUIRE_BROWSER=1 to fail";
    }
    std::string page = slurp(html);
    const std::string probe =
        "<script>for (const s of document.querySelectorAll('svg')) { const b = "
        "s.getBoundingClientRect();"
        " s.setAttribute('data-rendered', Math.round(b.width) + 'x' + Math.round(b.height)); }"
        " document.body.setAttribute('data-viewport', window.innerWidth + 'x'"
        " + document.documentElement.scrollWidth);"
        " document.body.setAttribute('data-probe', 'done');</script>\n";
    page.insert(page.rfind("</body>"), probe);
    const fs::path probed = dir_ / "probe.html";
    std::ofstream(probed) << page;
    const std::string cmd = "timeout 120 " + chromium +
                            " --headless --no-sandbox --disable-gpu --window-size=1100,900 "
                            "--enable-logging=stderr --v=0 "
                            "--user-data-dir='" +
                            (dir_ / "chromium-profile").string() + "' --dump-dom 'file://" +
                            probed.string() + "' >'" + (dir_ / "dom.html").string() + "' 2>'" +
                            (dir_ / "chromium.log").string() + "'";
    ASSERT_EQ(std::system(cmd.c_str()), 0) << slurp(dir_ / "chromium.log");
    const std::string dom = slurp(dir_ / "dom.html"), log = slurp(dir_ / "chromium.log");
    EXPECT_NE(dom.find("data-probe=\"done\""), std::string::npos)
        << "the page did not finish loading";
    // Console messages (SVG parse errors too) show as INFO:CONSOLE lines; loads that fail as net::ERR_.
    EXPECT_EQ(log.find("CONSOLE"), std::string::npos) << log;
    EXPECT_EQ(log.find("net::ERR_"), std::string::npos) << log;
    EXPECT_EQ(count_of(dom, "<svg"), static_cast<size_t>(plots));
    const std::regex rendered("data-rendered=\"([0-9]+)x([0-9]+)\"");
    int shown = 0;
    for (auto it = std::sregex_iterator(dom.begin(), dom.end(), rendered);
         it != std::sregex_iterator(); ++it)
      if (std::stoi((*it)[1]) > 0 && std::stoi((*it)[2]) > 0) ++shown;
    EXPECT_EQ(shown, plots) << "plots with a non-zero rendered size";
    // At a 1,100 px wide window the page never scrolls sideways: wide tables scroll inside
    // their own wrapper, so the document is no wider than the viewport (1100 x ≤1100).
    std::smatch vp;
    ASSERT_TRUE(std::regex_search(dom, vp, std::regex("data-viewport=\"([0-9]+)x([0-9]+)\"")));
    EXPECT_EQ(std::stoi(vp[1]), 1100) << "the viewport width";
    EXPECT_LE(std::stoi(vp[2]), 1100) << "the document's scroll width at a 1100 px viewport";
  }

  std::string last_err_;
};

TEST_F(ReportCli, SinglePoolRunWritesTheReportAndPlots) {
  const fs::path o = run_to("a", "run scenarios/chat-service.yaml");
  for (const char* f : {"summary.json", "report.md", "report.html", "latency_over_time.svg",
                        "utilization.svg", "over_time.csv"})
    EXPECT_TRUE(fs::exists(o / f)) << f;
  const std::string md = slurp(o / "report.md"), html = slurp(o / "report.html");
  EXPECT_NE(md.find("## The question\n\nLlama-3.1-8B chat service"), std::string::npos) << md;
  EXPECT_NE(md.find("![Time to first token over the run"), std::string::npos);
  EXPECT_NE(md.find("scenarios/chat-service.yaml: OK — chat-service"),
            std::string::npos);  // fleetsim check's text
  EXPECT_EQ(count_of(html, "<svg"), 2u);
  EXPECT_EQ(html.find("<script"), std::string::npos);
  EXPECT_EQ(count_of(html, " src="), 0u);  // self-contained: nothing loaded from elsewhere
  EXPECT_EQ(count_of(html, "<link"), 0u);
  EXPECT_EQ(slurp(o / "over_time.csv")
                .rfind("region,region_index,start_s,end_s,first_tokens_simulated,ttft_p50_s,", 0),
            0u);
  // Same scenario and seed: byte-identical report, plots and data.
  const fs::path b = run_to("b", "run scenarios/chat-service.yaml");
  for (const char* f :
       {"report.md", "report.html", "latency_over_time.svg", "utilization.svg", "over_time.csv"})
    EXPECT_EQ(slurp(o / f), slurp(b / f)) << f;
}

TEST_F(ReportCli, TheTtftTargetLineIsAlwaysOnThePlot) {
  // chat-service's TTFT target is 2 s, above every TTFT percentile of the run (p99 well under
  // 1 s): gnuplot's log autoscale stopped the y axis at 1 s and dropped the target's line and
  // label. The y range now holds the target (AxisRange.ATargetAboveTheDataIsInRange), so the
  // SVG has the label.
  const fs::path o = run_to("a", "run scenarios/chat-service.yaml");
  const std::string svg = slurp(o / "latency_over_time.svg");
  EXPECT_NE(svg.find("TTFT target"), std::string::npos);
  // The target shows when it is below the data too: 1 ms, under every percentile.
  const fs::path lo = run_to("b", "run scenarios/chat-service.yaml --set slo.ttft=1ms");
  EXPECT_NE(slurp(lo / "latency_over_time.svg").find("TTFT target"), std::string::npos);
}

TEST_F(ReportCli, WithoutGnuplotTheReportHasNotes) {
  const fs::path o =
      run_to("a", "run scenarios/chat-service.yaml", "FLEETSIM_GNUPLOT=/nonexistent/gnuplot");
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
  const fs::path o = run_to("f",
                            "run scenarios/default.yaml --set users.sample=0.0005 --set "
                            "users.duration=2h --set fleet.report_interval=10min");
  for (const char* f : {"load_capacity.svg", "latency_over_time.svg", "utilization.svg", "cost.svg",
                        "cost.csv", "over_time.csv", "regions.csv"})
    EXPECT_TRUE(fs::exists(o / f)) << f;
  EXPECT_NE(slurp(o / "report.md").find("| regions | users | calls/day |"), std::string::npos);
  check_in_browser(o / "report.html", 4);
}

TEST_F(ReportCli, PlanReportInABrowser) {
  // The planner's report: question, assumptions, answer, ranking, the Pareto plot.
  const fs::path o = run_to(
      "p",
      "plan scenarios/plan-llama70b-chat.yaml --set workload.duration=5min --set plan.simulate=4");
  for (const char* f : {"plan.json", "plan.csv", "report.md", "report.html", "pareto.svg",
                        "pareto.csv", "throughput_latency.svg", "throughput_latency.csv"})
    EXPECT_TRUE(fs::exists(o / f)) << f;
  const std::string md = slurp(o / "report.md");
  for (const char* h : {"## The question", "## Assumptions", "## The answer", "## Ranking",
                        "## Why the others lost"})
    EXPECT_NE(md.find(h), std::string::npos) << h;
  check_in_browser(o / "report.html", 2);  // cost vs TTFT, throughput vs TPOT
}

}  // namespace
}  // namespace fleetsim::reports
