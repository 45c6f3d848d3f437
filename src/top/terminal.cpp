#include "top/terminal.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/ioctl.h>
#include <unistd.h>

namespace gw::top {

namespace {

// The write end of the signal pipe. A signal handler can reach nothing else, hence a global;
// only Terminal::Open and Restore change it, and only while no handler is installed.
volatile sig_atomic_t g_signal_pipe = -1;

void OnSignal(int signal_number) {
  int saved = errno;
  unsigned char byte = static_cast<unsigned char>(signal_number);
  if (g_signal_pipe >= 0) (void)!write(g_signal_pipe, &byte, 1);
  errno = saved;
}

constexpr std::string_view kEnter = "\x1b[?1049h\x1b[?25l\x1b[2J\x1b[H";
constexpr std::string_view kLeave = "\x1b[0m\x1b[?25h\x1b[?1049l";

}  // namespace

std::vector<Key> DecodeKeys(std::string_view bytes) {
  std::vector<Key> keys;
  for (size_t i = 0; i < bytes.size(); ++i) {
    char c = bytes[i];
    if (c == '\x1b' && i + 2 < bytes.size() && (bytes[i + 1] == '[' || bytes[i + 1] == 'O')) {
      char code = bytes[i + 2];
      keys.push_back(code == 'A' ? Key::kUp : code == 'B' ? Key::kDown : Key::kOther);
      i += 2;
      continue;
    }
    switch (c) {
      case 'q':
      case 'Q':
        keys.push_back(Key::kQuit);
        break;
      case 'j':
        keys.push_back(Key::kDown);
        break;
      case 'k':
        keys.push_back(Key::kUp);
        break;
      case 's':
        keys.push_back(Key::kSort);
        break;
      case 'o':
        keys.push_back(Key::kProcessSort);
        break;
      case '/':
        keys.push_back(Key::kFilter);
        break;
      case '\x1b':
        keys.push_back(Key::kEscape);  // a lone Esc (sequences were taken above)
        break;
      case 'h':
      case '?':
        keys.push_back(Key::kHelp);
        break;
      default:
        keys.push_back(Key::kOther);
        break;
    }
  }
  return keys;
}

Expected<std::unique_ptr<Terminal>> Terminal::Open() {
  if (!isatty(0) || !isatty(1)) return Error{"stdin and stdout must be a terminal"};
  std::unique_ptr<Terminal> t(new Terminal());
  if (tcgetattr(0, &t->saved_) != 0) return Error{"cannot read the terminal's modes"};
  if (pipe2(t->pipe_, O_CLOEXEC | O_NONBLOCK) != 0) return Error{"cannot create a pipe"};
  g_signal_pipe = t->pipe_[1];
  struct sigaction sa {};
  sa.sa_handler = OnSignal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  sigaction(SIGWINCH, &sa, &t->old_winch_);
  sigaction(SIGINT, &sa, &t->old_int_);
  sigaction(SIGTERM, &sa, &t->old_term_);
  termios raw = t->saved_;
  raw.c_lflag &= ~static_cast<tcflag_t>(ICANON | ECHO);  // keys at once, not echoed; ISIG stays
  raw.c_cc[VMIN] = 0;
  raw.c_cc[VTIME] = 0;
  tcsetattr(0, TCSANOW, &raw);
  t->Write(kEnter);
  return t;
}

Terminal::~Terminal() {
  Restore();
}

void Terminal::Restore() {
  if (restored_) return;
  restored_ = true;
  Write(kLeave);
  tcsetattr(0, TCSANOW, &saved_);
  sigaction(SIGWINCH, &old_winch_, nullptr);
  sigaction(SIGINT, &old_int_, nullptr);
  sigaction(SIGTERM, &old_term_, nullptr);
  g_signal_pipe = -1;
  for (int& fd : pipe_) {
    if (fd >= 0) close(fd);
    fd = -1;
  }
}

std::string Terminal::ReadInput(bool* eof) {
  *eof = false;
  char buffer[64];
  ssize_t n = read(0, buffer, sizeof buffer);
  if (n == 0) {
    // VMIN 0 reads 0 when nothing is there; poll said readable, so stdin hung up.
    *eof = true;
    return {};
  }
  if (n < 0) return {};
  return std::string(buffer, static_cast<size_t>(n));
}

std::vector<Key> Terminal::ReadKeys(bool* eof) {
  return DecodeKeys(ReadInput(eof));
}

int Terminal::TakeSignal() {
  unsigned char byte = 0;
  if (pipe_[0] >= 0 && read(pipe_[0], &byte, 1) == 1) return byte;
  return 0;
}

void Terminal::Size(int* width, int* height) const {
  winsize ws{};
  if (ioctl(1, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0 && ws.ws_row > 0) {
    *width = ws.ws_col;
    *height = ws.ws_row;
  } else {
    *width = 80;
    *height = 24;
  }
}

void Terminal::Write(std::string_view text) {
  while (!text.empty()) {
    ssize_t n = write(1, text.data(), text.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    text.remove_prefix(static_cast<size_t>(n));
  }
}

}  // namespace gw::top
