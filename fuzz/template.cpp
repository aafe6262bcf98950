// The preset template language alone (libs/topo/src/template.cpp), which a preset reaches only
// through its JSON strings: line 1 is a `for` clause, line 2 an `if` expression evaluated for each
// binding, line 3 a string expanded for each, as a preset entry's loops, condition and fields are.
#include "template.h"

#include <string_view>

#include "fuzz.h"

namespace {

std::string_view line(std::string_view& rest) {
  auto eol = rest.find('\n');
  std::string_view l = rest.substr(0, eol);
  rest = eol == std::string_view::npos ? std::string_view() : rest.substr(eol + 1);
  return l;
}

// A few of the up to limits::kTemplateBindings bindings are enough to reach every expression path.
constexpr std::size_t kBindingsUsed = 16;

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  return collkit::fuzz::run(data, size, [](const std::string& text) {
    namespace tmpl = collkit::topo::tmpl;
    std::string_view rest = text;
    std::string_view loops = line(rest), cond = line(rest), str = line(rest);
    const tmpl::Env env{{"gpus", 8}, {"n", 4}, {"big", INT64_MAX}, {"small", INT64_MIN}};
    try {
      std::vector<tmpl::Env> envs = loops.empty() ? std::vector<tmpl::Env>{env} : tmpl::bindings(tmpl::parse_loops(loops), env);
      for (std::size_t i = 0; i < envs.size() && i < kBindingsUsed; ++i) {
        if (!cond.empty()) (void)tmpl::eval(cond, envs[i]);
        (void)tmpl::expand(str, envs[i]);
      }
    } catch (const std::invalid_argument&) {
      // the language's own errors (template.h); the preset loader turns them into InputErrors
    }
  });
}
