// docs/metrics.md must list exactly the metric families gpuwarden exports.
#include <gtest/gtest.h>

#include <fstream>
#include <regex>
#include <set>
#include <sstream>

#include "collect/catalogue.h"
#include "collect/exposition.h"
#include "full_snapshot.h"

namespace gw::collect {
namespace {

std::set<std::string> RenderedFamilies() {
  RenderOptions o;
  o.per_process_metrics = true;
  o.nvlink_link_metrics = true;
  std::string text;
  Render(FullSnapshot(), Format::kText, o, ProcessFigures{1, 1, 1}, &text);
  StoreFigures store;
  store.present = true;
  RenderStore(store, Format::kText, &text);
  std::set<std::string> names;
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);)
    if (l.rfind("# TYPE ", 0) == 0) names.insert(l.substr(7, l.find(' ', 7) - 7));
  return names;
}

std::set<std::string> DocumentedFamilies() {
  std::ifstream in(std::string(GW_SOURCE_DIR) + "/docs/metrics.md");
  EXPECT_TRUE(in) << "docs/metrics.md missing";
  std::set<std::string> names;
  const std::regex row(R"(^\| `([a-z_:]+)` \|)");
  std::smatch m;
  for (std::string l; std::getline(in, l);) {
    // The task-layer and rules/notify families come from serve's task layer and alerting, checked
    // by the jobs and alerts integration tests.
    if (l.rfind("## Task layer", 0) == 0 || l.rfind("## Rules and alert notifications", 0) == 0)
      break;
    if (std::regex_search(l, m, row)) names.insert(m[1]);
  }
  return names;
}

TEST(Catalogue, DocsListEveryExportedFamilyAndNothingElse) {
  std::set<std::string> rendered = RenderedFamilies(), documented = DocumentedFamilies();
  for (const std::string& n : rendered)
    EXPECT_TRUE(documented.count(n)) << n << " is exported but not in docs/metrics.md";
  for (const std::string& n : documented)
    EXPECT_TRUE(rendered.count(n)) << n << " is in docs/metrics.md but not exported";
}

TEST(Catalogue, NamesFollowPrometheusConventions) {
  const std::regex name(R"(^[a-zA-Z_:][a-zA-Z0-9_:]*$)");
  for (const Family& f : kFamilies) {
    EXPECT_TRUE(std::regex_match(std::string(f.name), name)) << f.name;
    bool total = f.name.size() > 6 && f.name.substr(f.name.size() - 6) == "_total";
    EXPECT_EQ(total, f.type == MetricType::kCounter) << f.name;
    if (!f.unit.empty()) {
      std::string base(f.type == MetricType::kCounter ? f.name.substr(0, f.name.size() - 6)
                                                      : f.name);
      EXPECT_EQ(base.substr(base.size() - f.unit.size()), f.unit) << f.name;
    }
    EXPECT_FALSE(f.help.empty()) << f.name;
    EXPECT_FALSE(f.source.empty()) << f.name;
  }
}

TEST(Catalogue, EverySlotBelongsToAFamilyAndReasonsLineUp) {
  for (size_t r = 0; r < kClockEventReasons.size(); ++r) {
    std::string want = "reason=\"" + std::string(kClockEventReasons[r].label) + "\"";
    EXPECT_EQ(kSlots[static_cast<size_t>(ClockEventActiveSlot(r))].labels, want);
    EXPECT_EQ(kSlots[static_cast<size_t>(ClockEventSecondsSlot(r))].labels, want);
    EXPECT_EQ(kClockEventReasons[r].bit, 1ull << r);
  }
}

}  // namespace
}  // namespace gw::collect
