// cli/table.h — plain-text tables whose columns fit their content: each column as wide as its
// widest cell (header included) up to a cap, longer cells cut with "…". Widths count characters
// (UTF-8 code points), not bytes, so names with accents or a "…" stay aligned.
#ifndef GPUWARDEN_CLI_TABLE_H_
#define GPUWARDEN_CLI_TABLE_H_

#include <string>
#include <vector>

namespace gw::cli {

struct TableColumn {
  std::string header;
  size_t cap = 40;     // widest the column grows; longer cells end in "…"
  bool right = false;  // right-aligned (numbers)
};

// Columns separated by two spaces, no trailing spaces; every row has one cell per column.
std::string RenderTable(const std::vector<TableColumn>& columns,
                        const std::vector<std::vector<std::string>>& rows);

// Characters in `s` (UTF-8 code points); `s` cut to `width` characters, the last one "…" when cut.
size_t DisplayWidth(const std::string& s);
std::string Truncate(const std::string& s, size_t width);

}  // namespace gw::cli

#endif  // GPUWARDEN_CLI_TABLE_H_
