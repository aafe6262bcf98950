#include <doctest/doctest.h>

#include <cstdint>
#include <stdexcept>
#include <string>

#include "collkit/core/error.h"
#include "fixtures.h"
#include "template.h"

using namespace collkit::topo;
using collkit::InputError;

TEST_CASE("template expressions") {
  tmpl::Env env{{"i", 5}, {"gpus", 8}};
  CHECK(tmpl::eval("i/2", env) == 2);
  CHECK(tmpl::eval("(i+1)%gpus", env) == 6);
  CHECK(tmpl::eval("i*2/gpus", env) == 1);
  CHECK(tmpl::eval("i < gpus && !(i == 4)", env) == 1);
  CHECK(tmpl::eval("-i + 10 >= 5 || 0", env) == 1);
  CHECK(tmpl::eval("i != 5", env) == 0);
  CHECK(tmpl::expand("gpu{i}-sw{i/2}", env) == "gpu5-sw2");
  CHECK(tmpl::expand("plain", env) == "plain");
  CHECK_THROWS_WITH_AS(tmpl::eval("i/0", env), "in \"i/0\": division by zero", std::invalid_argument);
  CHECK_THROWS_WITH_AS(tmpl::eval("j+1", env), "in \"j+1\": unknown variable \"j\"", std::invalid_argument);
  CHECK_THROWS_WITH_AS(tmpl::eval("(i+1", env), "in \"(i+1\": missing \")\"", std::invalid_argument);
  CHECK_THROWS_WITH_AS(tmpl::expand("gpu{i", env), "in \"gpu{i\": \"{\" without \"}\"", std::invalid_argument);
}

TEST_CASE("template loops") {
  auto loops = tmpl::parse_loops("i in 0..2, j in i..2");
  REQUIRE(loops.size() == 2);
  auto b = tmpl::bindings(loops, {});
  CHECK(b.size() == 6);  // (0,0..2) (1,1..2) (2,2)
  CHECK(b[3].at("i") == 1);
  CHECK(b[3].at("j") == 1);
  CHECK_THROWS_WITH_AS(tmpl::parse_loops("i from 0"), "expected \"VAR in A..B\", got \"i from 0\"", std::invalid_argument);
}

TEST_CASE("template arithmetic is checked: overflow, depth and loop bounds are errors") {
  tmpl::Env env{{"min", INT64_MIN}, {"max", INT64_MAX}};
  const char* overflow = ": integer overflow (values are 64-bit)";
  for (const char* expr : {"(min)/(-1)", "max+1", "min-1", "max*2", "-min", "9223372036854775808"})
    CHECK_THROWS_WITH_AS(tmpl::eval(expr, env), ("in \"" + std::string(expr) + "\"" + overflow).c_str(), std::invalid_argument);
  CHECK(tmpl::eval("(min)%(-1)", env) == 0);  // once SIGFPE
  CHECK(tmpl::eval("7/(-1)", env) == -7);
  CHECK(tmpl::eval("9223372036854775807", env) == INT64_MAX);
  CHECK(tmpl::eval("-9223372036854775807-1", env) == INT64_MIN);
  // 100,000 nested parentheses once overflowed the stack.
  const std::string deep = std::string(100000, '(') + "1" + std::string(100000, ')');
  CHECK_THROWS_WITH_AS(tmpl::eval(deep, env), ("in \"" + deep + "\": nested deeper than 64 levels (the limit on expression depth)").c_str(),
                       std::invalid_argument);
  CHECK(tmpl::eval(std::string(60, '(') + "1" + std::string(60, ')'), env) == 1);
  CHECK(tmpl::eval(std::string(60, '-') + "1", env) == 1);

  // Loops that once hung: a huge range, one reaching INT64_MAX, and nested 10^4 x 10^4.
  CHECK_THROWS_WITH_AS(tmpl::bindings(tmpl::parse_loops("s in 0..99999999"), env),
                       "\"s in 0..99999999\" makes more than 65536 bindings (the limit on one entry's loops)", std::invalid_argument);
  CHECK_THROWS_WITH_AS(tmpl::bindings(tmpl::parse_loops("s in 0..max"), env),
                       "\"s in 0..max\" makes more than 65536 bindings (the limit on one entry's loops)", std::invalid_argument);
  CHECK_THROWS_WITH_AS(tmpl::bindings(tmpl::parse_loops("s in min..max"), env),
                       "\"s in min..max\" makes more than 65536 bindings (the limit on one entry's loops)", std::invalid_argument);
  CHECK_THROWS_WITH_AS(tmpl::bindings(tmpl::parse_loops("i in 0..9999, j in 0..9999"), env),
                       "\"j in 0..9999\" makes more than 65536 bindings (the limit on one entry's loops)", std::invalid_argument);
  CHECK(tmpl::bindings(tmpl::parse_loops("s in 0..65535"), env).size() == 65536);
  CHECK(tmpl::bindings(tmpl::parse_loops("s in max..max"), env).size() == 1);
  CHECK(tmpl::bindings(tmpl::parse_loops("s in 1..0"), env).empty());
}

TEST_CASE("node presets expand their templates and take parameters") {
  NodePreset p = testing::mini_node();
  CHECK(p.name == "mini");
  CHECK(p.node.count(VertexKind::Gpu) == 4);
  CHECK(p.node.count(LinkType::NvLink) == 4);
  CHECK(p.node.num_ranks() == 4);
  CHECK(p.node.vertex(p.node.at("gpu3")).index == 3);
  NodePreset two = testing::mini_node({{"gpus", "2"}});
  CHECK(two.node.count(VertexKind::Gpu) == 2);
  CHECK(two.node.num_ranks() == 2);
  CHECK_THROWS_WITH_AS(testing::mini_node({{"gpu", "2"}}), "mini.json: preset mini has no parameter \"gpu\" (it takes: gpus)", InputError);
  CHECK_THROWS_WITH_AS(testing::mini_node({{"gpus", "two"}}), "mini.json: parameter gpus=two: expected an integer", InputError);
}

TEST_CASE("preset errors name the file and the JSON pointer") {
  auto with = [](const std::string& from, const std::string& to) {
    std::string text = testing::kMiniNode;
    auto pos = text.find(from);
    REQUIRE(pos != std::string::npos);
    return text.replace(pos, from.size(), to);
  };
  auto err = [](const std::string& text) {
    try {
      parse_node_preset(text, "mini.json");
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("(no error)");
  };
  CHECK(err(with("pcisw{i*2/gpus}", "pcisw{i}")) == "mini.json: /links/2/b: unknown vertex \"pcisw2\"");
  CHECK(err(with("\"for\": \"s in 0..1\", \"kind\": \"cpu\"", "\"for\": \"s from 0\", \"kind\": \"cpu\"")) ==
        "mini.json: /vertices/0/for: expected \"VAR in A..B\", got \"s from 0\"");
  CHECK(err(with("\"type\": \"smp\"", "\"type\": \"qpi\"")) == "mini.json: /links/0/type: unknown link type \"qpi\"");
  CHECK(err(with("\"bw_gbps\": 60", "\"bw_gbps\": 0")) == "mini.json: /links/0/bw_gbps: must be > 0, got 0");
  CHECK(err(with("\"index\": \"{i}\"", "\"index\": \"{i+}\"")) == "mini.json: /vertices/2/index: in \"i+\": expression ends early");
  CHECK(err(with("collkit.node/1", "collkit.node/7")) ==
        "mini.json: /schema: unsupported version \"collkit.node/7\" (this collkit reads \"collkit.node/1\")");
  CHECK(err(with("\"id\": \"nvswitch\"", "\"id\": \"gpu0\"")) == "mini.json: /vertices/3/id: duplicate id \"gpu0\"");
  CHECK(err(with("\"lanes\": 18", "\"lane\": 18")) ==
        "mini.json: /links/4: unknown field \"lane\" (expected a, b, for, if, type, bw_gbps, latency_us, lanes, source)");
}

TEST_CASE("unknown presets list the known ones") {
  setenv("COLLKIT_CONFIGS", COLLKIT_CONFIGS_DIR, 1);
  try {
    load_node_preset("dgx-z900");
    FAIL("no error");
  } catch (const InputError& e) {
    std::string msg = e.what();
    CHECK(msg.rfind("unknown node preset \"dgx-z900\" (known: ", 0) == 0);
  }
}
