#include "cli/args.h"

#include <algorithm>
#include <cctype>

#include "base/error.h"
#include "http/prom_format.h"

namespace gw::cli {

namespace {

// Edits (insert, delete, replace, swap two neighbours) from a to b: "shwo" is one from "show".
size_t EditDistance(std::string_view a, std::string_view b) {
  std::vector<std::vector<size_t>> d(a.size() + 1, std::vector<size_t>(b.size() + 1));
  for (size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
  for (size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    for (size_t j = 1; j <= b.size(); ++j) {
      d[i][j] = std::min(
          {d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
    }
  }
  return d[a.size()][b.size()];
}

// "gpuwarden jobs show" for messages.
std::string CommandPath(const CLI::App* app) {
  std::string path;
  for (const CLI::App* a = app; a != nullptr; a = a->get_parent())
    path = a->get_parent() == nullptr ? "gpuwarden" + path : " " + a->get_name() + path;
  return path;
}

std::vector<std::string> SubcommandNames(CLI::App* app) {
  std::vector<std::string> names;
  for (CLI::App* sub : app->get_subcommands([](CLI::App*) { return true; }))
    names.push_back(sub->get_name());
  return names;
}

std::vector<std::string> FlagNames(CLI::App* app) {
  std::vector<std::string> names;
  for (CLI::Option* o : app->get_options()) {
    for (const std::string& l : o->get_lnames()) names.push_back("--" + l);
    for (const std::string& s : o->get_snames()) names.push_back("-" + s);
  }
  return names;
}

std::string List(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

bool HasPositionals(CLI::App* app) {
  for (CLI::Option* o : app->get_options())
    if (!o->nonpositional()) return true;
  return false;
}

}  // namespace

std::string Closest(std::string_view word, const std::vector<std::string>& candidates) {
  std::string best;
  size_t best_distance = SIZE_MAX;
  for (const std::string& c : candidates) {
    // A prefix ("diag") counts as close as a one-letter typo.
    const size_t d =
        c.size() > word.size() && c.compare(0, word.size(), word) == 0 ? 1 : EditDistance(word, c);
    if (d < best_distance) {
      best_distance = d;
      best = c;
    }
  }
  // A likely typo: at most a third of the word wrong (and at least one letter allowed).
  const size_t allowed = std::max<size_t>(1, std::max(word.size(), best.size()) / 3);
  return best_distance <= allowed ? best : "";
}

std::string CheckArguments(CLI::App& app, std::vector<std::string>* args) {
  CLI::App* current = &app;
  bool positional_seen = false;  // after a command's own positional, words are its values
  for (size_t i = 0; i < args->size(); ++i) {
    std::string& a = (*args)[i];
    if (a == "--") break;
    if (a.size() > 1 && a[0] == '-' && !(a.size() > 1 && std::isdigit((unsigned char)a[1]))) {
      const std::string name = a.substr(0, a.find('='));
      if (name == "-h" || name == "--help" || (current == &app && name == "--version")) continue;
      CLI::Option* option = current->get_option_no_throw(name);
      if (option == nullptr) {
        std::string message = "unknown flag '" + name + "' for '" + CommandPath(current) + "'";
        const std::string near = Closest(name, FlagNames(current));
        if (!near.empty()) {
          message += " (did you mean " + near + "?)";
        } else if (current == &app) {
          message += ": flags follow a command, e.g. 'gpuwarden query --url URL EXPR'";
        }
        return message + "; see '" + CommandPath(current) + " --help'";
      }
      // A value that begins with '-' ("--start -5m") is this flag's value, not another flag.
      if (a.find('=') == std::string::npos && option->get_items_expected_max() > 0 &&
          i + 1 < args->size()) {
        const std::string& next = (*args)[i + 1];
        if (next.size() > 1 && next[0] == '-' && current->get_option_no_throw(next) == nullptr) {
          a += "=" + next;
          args->erase(args->begin() + static_cast<std::ptrdiff_t>(i) + 1);
        } else {
          ++i;  // the value, whatever it looks like
        }
      }
      continue;
    }
    // A word: a subcommand of the current command, or the current command's positional value.
    if (!positional_seen) {
      CLI::App* sub = nullptr;
      for (CLI::App* candidate : current->get_subcommands([](CLI::App*) { return true; }))
        if (candidate->check_name(a)) sub = candidate;
      if (sub != nullptr) {
        current = sub;
        continue;
      }
    }
    if (HasPositionals(current)) {
      positional_seen = true;
      continue;
    }
    const std::vector<std::string> names = SubcommandNames(current);
    if (names.empty()) {
      return "'" + CommandPath(current) + "' takes no argument '" + a + "'; see '" +
             CommandPath(current) + " --help'";
    }
    std::string message = "unknown command '" + a + "'";
    if (current != &app) message += " for '" + CommandPath(current) + "'";
    const std::string near = Closest(a, names);
    message +=
        near.empty() ? "; the commands are: " + List(names) : " (did you mean '" + near + "'?)";
    return message + "; see '" + CommandPath(current) + " --help'";
  }
  return "";
}

bool ParseTimeArg(std::string_view text, int64_t now_ms, int64_t* t_ms) {
  std::string_view t = text;
  while (!t.empty() && std::isspace(static_cast<unsigned char>(t.front()))) t.remove_prefix(1);
  while (!t.empty() && std::isspace(static_cast<unsigned char>(t.back()))) t.remove_suffix(1);
  if (t.empty()) return false;
  bool relative = false;
  if (t.substr(0, 3) == "now") {
    t.remove_prefix(3);
    if (t.empty()) {
      *t_ms = now_ms;
      return true;
    }
    relative = true;
  } else if (t[0] == '-' || t[0] == '+') {
    // "-5" is Unix seconds before 1970 only in theory; "-5m" and "-5" both mean before now.
    relative = true;
  }
  if (!relative) return http::ParsePromTime(t, t_ms);
  if (t.size() < 2 || (t[0] != '-' && t[0] != '+')) return false;
  const bool before = t[0] == '-';
  double seconds = 0;
  if (!ParseDurationSeconds(std::string(t.substr(1)), &seconds)) return false;
  const auto offset = static_cast<int64_t>(seconds * 1000);
  *t_ms = before ? now_ms - offset : now_ms + offset;
  return true;
}

std::string TimeArgError(std::string_view flag, std::string_view text) {
  return std::string(flag) + ": cannot read '" + std::string(text) +
         "' as a time; use Unix seconds (1764669600), RFC 3339 (2026-12-02T10:00:00Z), now, or a "
         "time relative to now such as -5m or now-1h";
}

}  // namespace gw::cli
