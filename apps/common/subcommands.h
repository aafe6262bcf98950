#pragma once
// The one way every coll-* tool runs: parse, dispatch to the subcommand that was given, and turn
// errors into one line on stderr and the exit code of docs/errors.md. Apps only add their table.

#include <CLI/CLI.hpp>
#include <exception>
#include <initializer_list>
#include <iostream>
#include <string>

#include "collkit/config.h"
#include "collkit/core/error.h"

namespace collkit::app {

/// `--version` on a tool: "coll-plan (collkit 0.1.0)".
inline void add_version(CLI::App& app) {
  app.set_version_flag("--version", app.get_name() + " (collkit " COLLKIT_VERSION ")", "print the tool's and collkit's version and exit");
}

template <class Options>
struct Command {
  CLI::App* sub;
  int (*run)(const Options&);
};

/// `fallback`, when given, runs when no subcommand was (a tool whose main action has no name).
template <class Options>
int run(CLI::App& app, int argc, char** argv, const Options& options, std::initializer_list<Command<Options>> commands,
        int (*fallback)(const Options&) = nullptr) {
  add_version(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  try {
    for (const auto& c : commands)
      if (c.sub->parsed()) return c.run(options);
    if (fallback) return fallback(options);
  } catch (const std::exception& e) {
    std::cerr << app.get_name() << ": error: " << e.what() << "\n";
    return exit_code_for(e);
  }
  return 0;
}

}  // namespace collkit::app
