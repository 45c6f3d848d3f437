#include "cli/table.h"

#include <algorithm>

namespace gw::cli {

size_t DisplayWidth(const std::string& s) {
  size_t n = 0;
  for (unsigned char c : s) n += (c & 0xC0) != 0x80;  // continuation bytes are not characters
  return n;
}

std::string Truncate(const std::string& s, size_t width) {
  if (DisplayWidth(s) <= width) return s;
  if (width == 0) return "";
  std::string out;
  size_t chars = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    if ((c & 0xC0) != 0x80 && ++chars == width) break;  // room for the "…"
    out += s[i];
  }
  return out + "…";
}

std::string RenderTable(const std::vector<TableColumn>& columns,
                        const std::vector<std::vector<std::string>>& rows) {
  std::vector<size_t> width(columns.size());
  for (size_t c = 0; c < columns.size(); ++c) {
    width[c] = DisplayWidth(columns[c].header);
    for (const auto& row : rows)
      width[c] = std::max(width[c], std::min(columns[c].cap, DisplayWidth(row[c])));
  }
  auto line = [&](auto cell_of) {
    std::string out;
    for (size_t c = 0; c < columns.size(); ++c) {
      const std::string cell = Truncate(cell_of(c), width[c]);
      const std::string pad(width[c] - DisplayWidth(cell), ' ');
      const bool last = c + 1 == columns.size();
      out += columns[c].right ? pad + cell : cell + (last ? "" : pad);
      if (!last) out += "  ";
    }
    while (!out.empty() && out.back() == ' ') out.pop_back();
    return out + "\n";
  };
  std::string out = line([&](size_t c) { return columns[c].header; });
  for (const auto& row : rows) out += line([&](size_t c) { return row[c]; });
  return out;
}

}  // namespace gw::cli
