// top/terminal.h — the interactive terminal: raw keys, the alternate screen, resize and
// interrupt signals, and putting everything back.
//
//   auto term = Terminal::Open();           // fails unless stdin and stdout are terminals
//   poll({term->input_fd(), term->signal_fd(), ...});
//   for (Key k : term->ReadKeys()) ...;     // q, j/k, arrows, s, o, /, Esc, h
//   switch (term->TakeSignal()) { case SIGWINCH: ...; case SIGINT: case SIGTERM: ... }
//   term->Write(screen);                     // one write per frame
//   // ~Terminal (or Restore) leaves the alternate screen, shows the cursor, restores the modes
//
// Open installs handlers for SIGWINCH, SIGINT and SIGTERM that only write the signal number
// into a pipe (async-signal-safe), so the UI loop handles them like input and always restores the
// terminal before the process exits. The previous handlers come back on Restore. At most one
// Terminal exists at a time (the handlers share one pipe).
//
// Threading: the UI thread only.
#ifndef GPUWARDEN_TOP_TERMINAL_H_
#define GPUWARDEN_TOP_TERMINAL_H_

#include <signal.h>
#include <termios.h>

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/error.h"

namespace gw::top {

enum class Key { kQuit, kUp, kDown, kSort, kProcessSort, kFilter, kEscape, kHelp, kOther };

// Decodes the bytes a terminal sent (keys, arrow escape sequences) into keys; exposed for tests.
std::vector<Key> DecodeKeys(std::string_view bytes);

class Terminal {
 public:
  static Expected<std::unique_ptr<Terminal>> Open();
  ~Terminal();
  Terminal(const Terminal&) = delete;
  Terminal& operator=(const Terminal&) = delete;

  int input_fd() const { return 0; }
  int signal_fd() const { return pipe_[0]; }
  // The keys waiting on stdin (none if nothing is there). `eof` is set when stdin closed.
  std::vector<Key> ReadKeys(bool* eof);
  // The bytes waiting on stdin, undecoded (typing a filter); `eof` as for ReadKeys.
  std::string ReadInput(bool* eof);
  // The next signal caught (SIGWINCH, SIGINT, SIGTERM), 0 if none is pending.
  int TakeSignal();
  void Size(int* width, int* height) const;
  void Write(std::string_view text);
  void Restore();

 private:
  Terminal() = default;
  termios saved_{};
  bool restored_ = false;
  int pipe_[2] = {-1, -1};
  struct sigaction old_winch_ {
  }, old_int_{}, old_term_{};
};

}  // namespace gw::top

#endif  // GPUWARDEN_TOP_TERMINAL_H_
