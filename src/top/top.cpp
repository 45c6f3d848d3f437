#include "top/top.h"

#include <poll.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <mutex>
#include <vector>

#include "top/poller.h"
#include "top/render.h"
#include "top/sources.h"
#include "top/terminal.h"

namespace gw::top {

namespace {

int TerminalWidth() {
  winsize ws{};
  if (isatty(1) && ioctl(1, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0) return ws.ws_col;
  return 120;
}

// Moves the selection one step in the displayed order.
void MoveSelection(FrameRenderer* renderer, const Frame& frame, ViewState* view, int step) {
  const std::vector<size_t>& order = renderer->Order(frame, view->sort);
  if (order.empty()) return;
  size_t pos = 0;
  for (size_t i = 0; i < order.size(); ++i)
    if (frame.gpus[order[i]].index == view->selected_gpu) pos = i;
  if (step > 0 && pos + 1 < order.size()) ++pos;
  if (step < 0 && pos > 0) --pos;
  view->selected_gpu = frame.gpus[order[pos]].index;
}

// Typing into the process filter (the / prompt): printable characters add to it, Backspace
// takes one off, Enter keeps it and closes the prompt, Esc clears it and closes the prompt.
// Escape sequences (arrows) are ignored. Returns the bytes it took (up to the one that closed
// the prompt).
size_t EditFilter(std::string_view input, ViewState* view) {
  for (size_t i = 0; i < input.size(); ++i) {
    const char c = input[i];
    if (c == '\x1b') {
      if (i + 1 < input.size() && (input[i + 1] == '[' || input[i + 1] == 'O')) {
        i += 2;  // an arrow or function key: skip its sequence
        while (i < input.size() && !(input[i] >= '@' && input[i] <= '~')) ++i;
        continue;
      }
      view->filter.clear();
      view->editing_filter = false;
      return i + 1;
    }
    if (c == '\r' || c == '\n') {
      view->editing_filter = false;
      return i + 1;
    }
    if (c == 0x7f || c == 0x08) {
      if (!view->filter.empty()) view->filter.pop_back();
      continue;
    }
    if (static_cast<unsigned char>(c) >= 0x20 && view->filter.size() < 64)
      view->filter.push_back(c);
  }
  return input.size();
}

// The screen before the first frame (NVML initializing, the agent not answered yet).
std::string Waiting(const std::string& source, int width) {
  std::string text = "gpuwarden top | waiting for the first reading from " + source + " ...";
  return "\x1b[H\x1b[2J" + text.substr(0, static_cast<size_t>(std::max(width, 1)));
}

int Interactive(Poller* poller, const std::string& source, std::vector<std::string>* log_lines,
                std::mutex* log_mu) {
  auto opened = Terminal::Open();
  if (!opened.ok()) {
    std::fprintf(stderr, "gpuwarden: top: %s (use --once)\n", opened.error().message.c_str());
    return 2;
  }
  Terminal& term = **opened;
  poller->Start();
  FrameRenderer renderer;
  ViewState view;
  bool selected_set = false;
  bool dirty = true;
  bool running = true;
  while (running) {
    std::shared_ptr<const Frame> frame = poller->Latest();
    if (frame && !selected_set && !frame->gpus.empty()) {
      view.selected_gpu = frame->gpus.front().index;
      selected_set = true;
    }
    if (dirty) {
      int width = 0, height = 0;
      term.Size(&width, &height);
      if (frame) {
        RenderOptions options;
        options.width = width;
        options.height = height;
        options.screen = true;
        term.Write(renderer.Render(*frame, view, options));
      } else {
        term.Write(Waiting(source, width));
      }
      dirty = false;
    }
    pollfd fds[3] = {{term.input_fd(), POLLIN, 0},
                     {poller->wake_fd(), POLLIN, 0},
                     {term.signal_fd(), POLLIN, 0}};
    if (poll(fds, 3, -1) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    if (fds[2].revents & POLLIN) {
      for (int sig = term.TakeSignal(); sig != 0; sig = term.TakeSignal()) {
        if (sig == SIGWINCH)
          dirty = true;
        else
          running = false;  // SIGINT, SIGTERM
      }
    }
    if (fds[1].revents & POLLIN) {
      poller->DrainWake();
      dirty = true;
    }
    if (fds[0].revents & (POLLIN | POLLHUP | POLLERR)) {
      bool eof = false;
      const std::string input = term.ReadInput(&eof);
      // One key at a time: after '/' the rest of what was typed goes to the filter.
      for (size_t at = 0; at < input.size() && running;) {
        const std::string_view rest = std::string_view(input).substr(at);
        if (view.editing_filter) {
          at += EditFilter(rest, &view);
          dirty = true;
          continue;
        }
        const size_t length =
            rest.size() >= 3 && rest[0] == '\x1b' && (rest[1] == '[' || rest[1] == 'O') ? 3 : 1;
        at += length;
        const std::vector<Key> keys = DecodeKeys(rest.substr(0, length));
        if (keys.empty()) continue;
        const Key key = keys.front();
        dirty = true;
        if (view.help && key != Key::kQuit) {
          view.help = false;
          continue;
        }
        switch (key) {
          case Key::kQuit:
            running = false;
            break;
          case Key::kDown:
            if (frame) MoveSelection(&renderer, *frame, &view, 1);
            break;
          case Key::kUp:
            if (frame) MoveSelection(&renderer, *frame, &view, -1);
            break;
          case Key::kSort:
            view.sort = NextSort(view.sort);
            break;
          case Key::kProcessSort:
            view.process_sort = NextProcessSort(view.process_sort);
            break;
          case Key::kFilter:
            view.editing_filter = true;
            break;
          case Key::kEscape:
            view.filter.clear();
            break;
          case Key::kHelp:
            view.help = true;
            break;
          case Key::kOther:
            break;
        }
      }
      if (eof) running = false;
    }
  }
  term.Restore();
  poller->Stop();
  std::lock_guard<std::mutex> lock(*log_mu);
  for (const std::string& l : *log_lines) std::fprintf(stderr, "%s\n", l.c_str());
  return 0;
}

}  // namespace

int RunTop(const Options& args, const LocalFactory& local, Logger* logger) {
  double refresh_s = 1;
  if (!args.refresh.empty() &&
      (!ParseDurationSeconds(args.refresh, &refresh_s) || refresh_s <= 0)) {
    std::fprintf(stderr,
                 "gpuwarden: --refresh: expected a duration such as 1s or 500ms, got '%s'\n",
                 args.refresh.c_str());
    return 2;
  }
  double advance_s = 0;
  bool stepped_clock = args.stepped_clock;
  if (!args.sim_time.empty()) {
    if (args.simulate.empty() || !args.url.empty()) {
      std::fprintf(stderr, "gpuwarden: --sim-time needs --simulate (and no --url)\n");
      return 2;
    }
    if (!ParseDurationSeconds(args.sim_time, &advance_s)) {
      std::fprintf(stderr, "gpuwarden: --sim-time: expected a duration such as 90s, got '%s'\n",
                   args.sim_time.c_str());
      return 2;
    }
    stepped_clock = true;
  }
  if (!args.url.empty() && !args.simulate.empty()) {
    std::fprintf(stderr, "gpuwarden: top: --url and --simulate exclude each other\n");
    return 2;
  }
  const bool once = args.once || !isatty(1);

  // While the screen is ours, log lines wait and are printed after it is restored.
  std::mutex log_mu;
  std::vector<std::string> log_lines;
  Logger quiet(LogLevel::kWarn, [&](LogLevel, const std::string& line) {
    std::lock_guard<std::mutex> lock(log_mu);
    if (log_lines.size() < 100) log_lines.push_back(line);
  });
  Logger* source_log = once ? logger : &quiet;

  std::unique_ptr<Source> source;
  if (!args.url.empty()) {
    source = std::make_unique<RemoteSource>(args.url);
  } else {
    LocalSettings settings;
    settings.scenario = args.simulate;
    settings.stepped = !args.simulate.empty() && stepped_clock;
    settings.step_s = refresh_s;
    settings.teams = args.teams;
    auto local_source =
        std::make_unique<LocalSource>(local(stepped_clock, source_log), std::move(settings));
    if (Status s = local_source->Start(advance_s); !s.ok()) {
      std::fprintf(stderr, "gpuwarden: %s\n", s.message().c_str());
      return 2;
    }
    source = std::move(local_source);
  }
  Poller poller(source.get(), refresh_s);
  if (!once) return Interactive(&poller, source->Describe(), &log_lines, &log_mu);

  std::shared_ptr<const Frame> frame = poller.PollNow();
  if (!frame->error.empty()) {
    std::fprintf(stderr, "gpuwarden: %s\n", frame->error.c_str());
    return 1;
  }
  FrameRenderer renderer;
  RenderOptions options;
  options.width = args.width > 0 ? args.width : TerminalWidth();
  const std::string& text = renderer.Render(*frame, ViewState{}, options);
  std::fwrite(text.data(), 1, text.size(), stdout);
  return 0;
}

}  // namespace gw::top
