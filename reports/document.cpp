#include "reports/document.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "hw_models/error.h"
#include "hw_models/files.h"

namespace fleetsim::reports {

namespace {

// Code points in UTF-8 text: every byte that is not a continuation byte (10xxxxxx).
size_t width(const std::string& s) {
  return static_cast<size_t>(
      std::count_if(s.begin(), s.end(), [](char c) { return (c & 0xC0) != 0x80; }));
}

std::string md_cell(const std::string& s) {
  std::string o;
  for (char c : s) {
    if (c == '|')
      o += "\\|";
    else
      o += c;
  }
  return o;
}

void write_file(const std::string& path, const std::string& text) {
  files::write_file_atomically(path, text, true);
}

const char* kStyle =
    "body{font-family:sans-serif;max-width:60rem;margin:2rem auto;padding:0 "
    "1rem;color:#222;line-height:1.45}"
    "h1,h2,p{overflow-wrap:break-word}"
    ".table-scroll{max-width:100%;overflow-x:auto;margin:1rem 0}"
    "table{border-collapse:collapse;font-size:0.9rem}"
    "th,td{padding:0.2rem 0.6rem;border-bottom:1px solid #ddd;text-align:right;white-space:nowrap}"
    "th:first-child,td:first-child{text-align:left}"
    ".text-last th:last-child,.text-last "
    "td:last-child{text-align:left;white-space:normal;min-width:18em}"
    "pre{background:#f6f6f6;padding:0.8rem;overflow-x:auto;font-size:0.8rem}"
    "figure{margin:1.5rem 0}figure "
    "svg{width:100%;height:auto}figcaption{font-size:0.9rem;color:#555}"
    ".missing{border:1px dashed #c00;padding:1rem;color:#900}";

}  // namespace

std::string table_text(const Table& t) {
  std::vector<size_t> w(t.header.size(), 0);
  auto widen = [&w](const std::vector<std::string>& row) {
    for (size_t c = 0; c < row.size() && c < w.size(); ++c) w[c] = std::max(w[c], width(row[c]));
  };
  widen(t.header);
  for (const auto& r : t.rows) widen(r);
  std::ostringstream o;
  auto line = [&](const std::vector<std::string>& row) {
    std::string s;
    for (size_t c = 0; c < w.size(); ++c) {
      const std::string& cell = c < row.size() ? row[c] : std::string();
      const std::string pad(w[c] - width(cell), ' ');
      const bool left = c == 0 || (t.last_is_text && c + 1 == w.size());
      s += "  " + (left ? cell + pad : pad + cell);
    }
    s.erase(s.find_last_not_of(' ') + 1);
    o << s << "\n";
  };
  line(t.header);
  for (const auto& r : t.rows) line(r);
  return o.str();
}

std::string html_escape(const std::string& s) {
  std::string o;
  for (char c : s) {
    switch (c) {
      case '&': o += "&amp;"; break;
      case '<': o += "&lt;"; break;
      case '>': o += "&gt;"; break;
      case '"': o += "&quot;"; break;
      default: o += c;
    }
  }
  return o;
}

std::string Document::markdown() const {
  std::ostringstream o;
  o << "# " << title_ << "\n";
  for (const auto& b : blocks_) {
    o << "\n";
    switch (b.kind) {
      case Kind::kHeading: o << "## " << b.text << "\n"; break;
      case Kind::kParagraph: o << b.text << "\n"; break;
      case Kind::kPre:
        o << "```\n" << b.text << (b.text.ends_with('\n') ? "" : "\n") << "```\n";
        break;
      case Kind::kTable: {
        const Table& t = b.table;
        o << "|";
        for (const auto& h : t.header) o << " " << md_cell(h) << " |";
        o << "\n|";
        for (size_t c = 0; c < t.header.size(); ++c)
          o << (c == 0 || (t.last_is_text && c + 1 == t.header.size()) ? " --- |" : " ---: |");
        o << "\n";
        for (const auto& r : t.rows) {
          o << "|";
          for (size_t c = 0; c < t.header.size(); ++c)
            o << " " << md_cell(c < r.size() ? r[c] : "") << " |";
          o << "\n";
        }
        break;
      }
      case Kind::kFigure:
        if (!b.figure.svg.empty())
          o << "![" << b.figure.caption << "](" << b.figure.name << ".svg)\n";
        else
          o << "> **Plot not drawn** (" << b.figure.caption << "): " << b.figure.note << "\n";
        break;
    }
  }
  return o.str();
}

std::string Document::html() const {
  std::ostringstream o;
  o << "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>"
    << html_escape(title_) << "</title>\n<style>" << kStyle << "</style>\n</head>\n<body>\n<h1>"
    << html_escape(title_) << "</h1>\n";
  for (const auto& b : blocks_) {
    switch (b.kind) {
      case Kind::kHeading: o << "<h2>" << html_escape(b.text) << "</h2>\n"; break;
      case Kind::kParagraph: o << "<p>" << html_escape(b.text) << "</p>\n"; break;
      case Kind::kPre: o << "<pre>" << html_escape(b.text) << "</pre>\n"; break;
      case Kind::kTable: {
        // A table wider than the page scrolls inside its wrapper; the page itself does not.
        o << "<div class=\"table-scroll\">\n"
          << (b.table.last_is_text ? "<table class=\"text-last\">\n<thead><tr>"
                                   : "<table>\n<thead><tr>");
        for (const auto& h : b.table.header) o << "<th>" << html_escape(h) << "</th>";
        o << "</tr></thead>\n<tbody>\n";
        for (const auto& r : b.table.rows) {
          o << "<tr>";
          for (size_t c = 0; c < b.table.header.size(); ++c)
            o << "<td>" << html_escape(c < r.size() ? r[c] : "") << "</td>";
          o << "</tr>\n";
        }
        o << "</tbody>\n</table>\n</div>\n";
        break;
      }
      case Kind::kFigure:
        o << "<figure id=\"fig-" << html_escape(b.figure.name) << "\">\n";
        if (!b.figure.svg.empty())
          o << b.figure.svg << "\n";
        else
          o << "<div class=\"missing\">Plot not drawn: " << html_escape(b.figure.note)
            << "</div>\n";
        o << "<figcaption>" << html_escape(b.figure.caption) << "</figcaption>\n</figure>\n";
        break;
    }
  }
  o << "</body>\n</html>\n";
  return o.str();
}

int Document::figures_drawn() const {
  return static_cast<int>(std::count_if(blocks_.begin(), blocks_.end(), [](const Block& b) {
    return b.kind == Kind::kFigure && !b.figure.svg.empty();
  }));
}

std::vector<std::string> Document::write(const std::string& dir) const {
  const std::filesystem::path d(dir);
  std::vector<std::string> names = {"report.md", "report.html"};
  write_file((d / names[0]).string(), markdown());
  write_file((d / names[1]).string(), html());
  for (const auto& b : blocks_)
    if (b.kind == Kind::kFigure && !b.figure.svg.empty()) {
      names.push_back(b.figure.name + ".svg");
      write_file(
          (d / names.back()).string(),
          "<?xml version=\"1.0\" encoding=\"utf-8\" standalone=\"no\"?>\n" + b.figure.svg + "\n");
    }
  return names;
}

}  // namespace fleetsim::reports
