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
#include "collkit/core/provenance.h"

namespace collkit::app {

/// The flags (long and short) an app or subcommand takes, space-separated.
inline std::string flag_words(const CLI::App& app) {
  std::string words;
  for (const CLI::Option* o : app.get_options()) {
    for (const std::string& n : o->get_lnames()) words += (words.empty() ? "--" : " --") + n;
    for (const std::string& n : o->get_snames()) words += (words.empty() ? "-" : " -") + n;
  }
  return words;
}

/// A bash completion script for `app`, made from its CLI definition: subcommands, then each one's
/// flags; anything else (files, values) falls back to bash's own completion of file names.
inline std::string bash_completion(const CLI::App& app) {
  std::string fn = "_collkit_" + app.get_name();
  for (char& c : fn)
    if (c == '-') c = '_';
  std::string subs, cases;
  for (const CLI::App* sub : app.get_subcommands({})) {
    subs += (subs.empty() ? "" : " ") + sub->get_name();
    cases += "    " + sub->get_name() + ") words=\"" + flag_words(*sub) + "\" ;;\n";
  }
  std::string s =
      "# bash completion for " + app.get_name() + " (collkit " COLLKIT_VERSION "), made by `" + app.get_name() + " --completion bash`\n";
  s += fn + "() {\n";
  s += "  local cur=${COMP_WORDS[COMP_CWORD]} sub= words w\n";
  s += "  for w in \"${COMP_WORDS[@]:1:COMP_CWORD-1}\"; do\n";
  s += "    case \" " + subs + " \" in *\" $w \"*) sub=$w; break ;; esac\n";
  s += "  done\n";
  s += "  case $sub in\n" + cases;
  s += "    *) words=\"" + subs + (subs.empty() ? "" : " ") + flag_words(app) + "\" ;;\n";
  s += "  esac\n";
  s += "  if [[ $cur == -* || ( -z $sub && -n \"" + subs + "\" ) ]]; then\n";
  s += "    mapfile -t COMPREPLY < <(compgen -W \"$words\" -- \"$cur\")\n";
  s += "  fi\n";
  s += "}\n";
  s += "complete -o default -o bashdefault -F " + fn + " " + app.get_name() + "\n";
  return s;
}

// nccl-tests' and most tools' habits on every option of `app` and its subcommands: a flag given
// twice takes its last value (a wrapper script's default, then the user's), and --help shows
// each option's default where the bound variable has one.
inline void conventional_options(CLI::App& app) {
  for (CLI::Option* o : app.get_options()) {
    if (o->get_expected_max() == 1 && o->get_type_size() == 1 && o->get_items_expected_max() == 1)
      o->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
    if (o->get_expected_min() > 0 && o->get_default_str().empty()) o->capture_default_str();
  }
  for (CLI::App* sub : app.get_subcommands({})) conventional_options(*sub);
}

/// `--version` on a tool: "coll-plan (collkit 0.1.0)"; and `--completion bash`, which prints the
/// tool's bash completion script (cmake --install puts it where bash-completion finds it).
/// Call it last, once every option is defined: it sets conventional_options() on them.
inline void add_version(CLI::App& app) {
  conventional_options(app);
  app.set_version_flag("--version", app.get_name() + " (collkit " COLLKIT_VERSION ")", "print the tool's and collkit's version and exit");
  app.add_option_function<std::string>(
      "--completion",
      [&app](const std::string& shell) {
        if (shell != "bash") throw CLI::ValidationError("--completion", "only bash is supported, got \"" + shell + "\"");
        std::cout << bash_completion(app);
        throw CLI::Success();
      },
      "print a bash completion script for this tool and exit (e.g. source <(" + app.get_name() + " --completion bash))");
}

/// "<tool>: wrote FILE (what)" on stderr, every tool's one way of saying where an artifact went
/// (stdout may carry the artifact itself: nothing is said for "-").
inline void wrote(const std::string& file, const std::string& what) {
  if (file.empty() || file == "-") return;
  std::cerr << collkit::provenance().tool << ": wrote " << file << " (" << what << ")\n";
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
    set_provenance(app.get_name(), argc, argv);  // before anything is written
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
