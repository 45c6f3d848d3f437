// top/line_writer.h — the line writer under top/render.h (internal to top/): it appends one line of
// a frame at a time to the renderer's buffer, counts visible columns (escape codes take none, a
// UTF-8 sequence one), cuts text at the width on screen (plain text wraps, indented, so that a
// script loses nothing), and stops writing once the line budget is spent. It never allocates
// beyond the growth of that buffer.
//
//   LineWriter line(&out, width, /*screen=*/true, /*max_lines=*/height);
//   line.Style(sgr::kBold); line.Text("GPU 0"); line.Unstyle(); line.End();
//
// In plain mode Style() writes nothing, so the same drawing code serves both modes.
#ifndef GPUWARDEN_TOP_LINE_WRITER_H_
#define GPUWARDEN_TOP_LINE_WRITER_H_

#include <cstdio>
#include <string>
#include <string_view>

namespace gw::top {

// The SGR (colour and emphasis) codes the renderer passes to LineWriter::Style.
namespace sgr {
inline constexpr const char* kRed = "\x1b[1;31m";
inline constexpr const char* kYellow = "\x1b[33m";
inline constexpr const char* kGreen = "\x1b[32m";
inline constexpr const char* kCyan = "\x1b[36m";
inline constexpr const char* kDim = "\x1b[2m";
inline constexpr const char* kBold = "\x1b[1m";
inline constexpr const char* kReverse = "\x1b[7m";
inline constexpr const char* kReset = "\x1b[0m";
}  // namespace sgr

class LineWriter {
 public:
  // `max_lines` 0: no budget (plain mode writes every line).
  LineWriter(std::string* out, int width, bool screen, int max_lines)
      : out_(out), width_(width), screen_(screen), max_lines_(max_lines) {}

  bool full() const { return max_lines_ > 0 && lines_ >= max_lines_; }
  int lines() const { return lines_; }
  int col() const { return col_; }
  int remaining() const { return width_ - col_; }
  bool screen() const { return screen_; }
  void set_max_lines(int n) { max_lines_ = n; }

  void Text(std::string_view s) {
    if (full()) return;
    Begin();
    size_t i = 0;
    for (; i < s.size(); ++i) {
      bool continuation = (static_cast<unsigned char>(s[i]) & 0xC0) == 0x80;
      if (!continuation) {
        if (col_ >= width_) {
          if (screen_) break;
          out_->append(s.data(), i);
          out_->append("\n      ");
          ++lines_;
          col_ = 6;
          s.remove_prefix(i);
          i = 0;
        }
        ++col_;
      }
    }
    out_->append(s.data(), i);
  }
  void Format(const char* format, double v) {
    char buffer[64];
    std::snprintf(buffer, sizeof buffer, format, v);
    Text(buffer);
  }
  void Style(const char* sgr) {
    if (!screen_ || full()) return;
    Begin();
    out_->append(sgr);
    styled_ = true;
  }
  void Unstyle() {
    if (styled_ && !full()) out_->append(sgr::kReset);
    styled_ = false;
  }
  void PadTo(int column) {
    while (col_ < column && col_ < width_ && !full()) Text(" ");
  }
  void End() {
    if (full()) return;
    Begin();
    Unstyle();
    if (screen_)
      out_->append("\x1b[K");
    else
      out_->push_back('\n');
    ++lines_;
    col_ = 0;
    started_ = false;
  }

 private:
  void Begin() {
    if (started_) return;
    started_ = true;
    if (screen_ && lines_ > 0) out_->append("\r\n");
  }

  std::string* out_;
  int width_;
  bool screen_;
  int max_lines_;
  int lines_ = 0;
  int col_ = 0;
  bool started_ = false;
  bool styled_ = false;
};

}  // namespace gw::top

#endif  // GPUWARDEN_TOP_LINE_WRITER_H_
