// cli/args.h — the command line around CLI11: unknown commands and flags named (with the closest
// known one), values that begin with '-' kept as values, and the time arguments people type.
//
//   std::vector<std::string> args(argv + 1, argv + argc);
//   if (std::string e = CheckArguments(app, &args); !e.empty()) return Fail(e);   // exit 2
//   app.parse(args);   // CLI11 wants them reversed: see main.cpp
//
// Times (--time, --start, --end of query, diagnose, report): Unix seconds ("1764669600"), RFC 3339
// ("2026-12-02T10:00:00Z"), "now", or relative to now: "-5m", "now-1h", "now+30s".
#ifndef GPUWARDEN_CLI_ARGS_H_
#define GPUWARDEN_CLI_ARGS_H_

#include <CLI/CLI.hpp>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace gw::cli {

// Walks `args` (argv without the program name) through `app`'s subcommands and options before
// CLI11 parses them. Returns "" when every command and flag is known, else one line naming the
// unknown one, where it was met, and the closest known name ("unknown command 'frobnicate' (did
// you mean 'diagnose'?)"). Also rewrites "--flag VALUE" as "--flag=VALUE" when the flag takes a
// value and VALUE begins with '-' ("--start -5m"), which CLI11 would otherwise read as a flag.
std::string CheckArguments(CLI::App& app, std::vector<std::string>* args);

// The candidate closest to `word` by edit distance when it is close enough to be a likely typo
// (or `word` is a prefix of it); "" otherwise.
std::string Closest(std::string_view word, const std::vector<std::string>& candidates);

// Parses a time argument (see the top of this file) against `now_ms`. False when malformed.
bool ParseTimeArg(std::string_view text, int64_t now_ms, int64_t* t_ms);
// "--start: cannot read '-5x' as a time: …" — the flag, the value and the forms accepted.
std::string TimeArgError(std::string_view flag, std::string_view text);

}  // namespace gw::cli

#endif  // GPUWARDEN_CLI_ARGS_H_
