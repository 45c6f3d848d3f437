// The renderer's line writer (top/line_writer.h): plain text wraps indented so that nothing is
// lost, the screen cuts at the width and clears each line to its end, escape codes take no column
// and a UTF-8 sequence one, and nothing is written past the line budget.
#include "top/line_writer.h"

#include <gtest/gtest.h>

#include <string>

namespace gw::top {
namespace {

TEST(TopLineWriter, PlainTextWrapsIndentedSoNothingIsLost) {
  std::string out;
  LineWriter line(&out, 10, /*screen=*/false, 0);
  line.Style(sgr::kBold);  // plain: no escape codes
  line.Text("abcdefghijkl");
  line.Unstyle();
  line.End();
  line.Text("x");
  line.End();
  EXPECT_EQ(out, "abcdefghij\n      kl\nx\n");
  EXPECT_EQ(line.lines(), 3);
}

TEST(TopLineWriter, TheScreenCutsAtTheWidthAndClearsEachLine) {
  std::string out;
  LineWriter line(&out, 10, /*screen=*/true, 5);
  line.Text("abcdefghijkl");
  EXPECT_EQ(line.remaining(), 0);
  line.End();
  line.Text("x");
  line.PadTo(3);
  line.Text("y");
  line.End();
  EXPECT_EQ(out, "abcdefghij\x1b[K\r\nx  y\x1b[K");
}

TEST(TopLineWriter, EscapeCodesTakeNoColumnAndAUtf8SequenceOne) {
  std::string out;
  LineWriter line(&out, 4, /*screen=*/true, 0);
  line.Style(sgr::kRed);
  line.Text("█▁ab");
  EXPECT_EQ(line.col(), 4);
  line.Text("c");  // past the width: cut
  line.Unstyle();
  EXPECT_EQ(out, std::string(sgr::kRed) + "█▁ab" + sgr::kReset);
}

TEST(TopLineWriter, WritesNothingPastTheLineBudget) {
  std::string out;
  LineWriter line(&out, 10, /*screen=*/true, 2);
  for (const char* text : {"a", "b", "c"}) {
    line.Style(sgr::kDim);
    line.Text(text);
    line.End();
  }
  EXPECT_TRUE(line.full());
  EXPECT_EQ(out, std::string(sgr::kDim) + "a" + sgr::kReset + "\x1b[K\r\n" + sgr::kDim + "b" +
                     sgr::kReset + "\x1b[K");
}

}  // namespace
}  // namespace gw::top
