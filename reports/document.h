// A report as a list of generic blocks (headings, paragraphs, preformatted text, tables,
// figures), written as Markdown and as one self-contained HTML page. The run report
// (reports/run_report.h) and the planner build their reports with it.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace fleetsim::reports {

/// A table of preformatted cells. header[0] names the table (the first column holds row
/// names); every row has header.size() cells.
struct Table {
  std::vector<std::string> header;
  std::vector<std::vector<std::string>> rows;
  /// The last column is free text (reasons, notes): left-aligned, and allowed to wrap in HTML.
  bool last_is_text = false;
};

/// The table as terminal text: each line indented by two spaces, the first column (and the
/// last when last_is_text) left-aligned and the others right-aligned, each as wide as its widest cell (counted in
/// UTF-8 code points), columns two spaces apart, no trailing spaces.
std::string table_text(const Table& t);

/// A plot: SVG text (empty when it could not be drawn, then `note` says why).
struct Figure {
  std::string name;     ///< file stem: written as name.svg; also prefixes the SVG's ids
  std::string caption;  ///< one sentence: what the plot shows
  std::string svg;      ///< <svg>…</svg> without an XML prolog
  std::string note;     ///< why the plot is missing
};

/// `s` with &, <, >, " escaped for HTML text and attribute values.
std::string html_escape(const std::string& s);

class Document {
 public:
  explicit Document(std::string title) : title_(std::move(title)) {}
  void heading(std::string text) { blocks_.push_back({Kind::kHeading, std::move(text), {}, {}}); }
  void paragraph(std::string text) { blocks_.push_back({Kind::kParagraph, std::move(text), {}, {}}); }
  /// Text shown as is (monospace): configuration dumps, notes with aligned columns.
  void preformatted(std::string text) { blocks_.push_back({Kind::kPre, std::move(text), {}, {}}); }
  void table(Table t) { blocks_.push_back({Kind::kTable, {}, std::move(t), {}}); }
  void figure(Figure f) { blocks_.push_back({Kind::kFigure, {}, {}, std::move(f)}); }

  /// Markdown; a figure is a link to name.svg (written next to it by write()).
  std::string markdown() const;
  /// One HTML page with every figure inlined as <svg>: no scripts, no external files.
  std::string html() const;
  /// Writes report.md, report.html and name.svg for every drawn figure into `dir`
  /// (InputError if a file cannot be written); returns the names written.
  std::vector<std::string> write(const std::string& dir) const;
  /// Figures drawn (with SVG).
  int figures_drawn() const;

 private:
  enum class Kind { kHeading, kParagraph, kPre, kTable, kFigure };
  struct Block {
    Kind kind;
    std::string text;
    Table table;
    Figure figure;
  };
  std::string title_;
  std::vector<Block> blocks_;
};

}  // namespace fleetsim::reports
