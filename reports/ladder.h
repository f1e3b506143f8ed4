// What `fleetsim ladder` writes and prints (the ladder itself: sim/app/ladder.h): a table of
// the steps in the terminal, ladder.json (`ladder.steps[]`, one entry per step) and
// report.md / report.html with a waterfall of $ per million tokens.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "reports/document.h"
#include "sim/app/ladder.h"

namespace fleetsim::reports {

/// One row per step: GPUs, $ a day, $/M tokens, Wh per call, factors, SLO attainment.
Table ladder_table(const app::LadderResult& r);
/// The terminal report: what was simulated, the table, the overall factor and the notes.
std::string ladder_text(const app::LadderResult& r);
/// One search's answer (met, reason, GPUs, $ a day, ..., simulations): a ladder step's and a
/// fleet plan configuration's.
nlohmann::ordered_json rung_json(const app::LadderRung& s);
/// {"ladder": {"scenario", "sample", "peak_hour", ..., "steps": [{...}, ...]}}.
nlohmann::ordered_json ladder_json(const app::LadderResult& r);
/// report.md, report.html and the waterfall's SVG in `dir`; returns the files written.
std::vector<std::string> write_ladder_report(const app::LadderResult& r, const std::string& dir);

}  // namespace fleetsim::reports
