#include "base/html.h"

#include <gtest/gtest.h>

namespace gw {
namespace {

TEST(HtmlEscape, EveryMarkupCharacterBecomesAReference) {
  EXPECT_EQ(HtmlEscape("<a href=\"x\" title='y'>Tom & Jerry</a>"),
            "&lt;a href=&#34;x&#34; title=&#39;y&#39;&gt;Tom &amp; Jerry&lt;/a&gt;");
}

// Go's text/template HTMLEscapeString does the same (the alerting templates' `html` uses this).
TEST(HtmlEscape, NulBecomesTheReplacementCharacter) {
  EXPECT_EQ(HtmlEscape(std::string_view("a\0b", 3)), "a\uFFFDb");
}

TEST(HtmlEscape, OtherTextIsUntouched) {
  EXPECT_EQ(HtmlEscape(""), "");
  EXPECT_EQ(HtmlEscape("GPU 0 — 83 °C, 1.5×"), "GPU 0 — 83 °C, 1.5×");
  EXPECT_EQ(HtmlEscape("&amp;"), "&amp;amp;");  // escaping twice is visible, never undone
}

}  // namespace
}  // namespace gw
