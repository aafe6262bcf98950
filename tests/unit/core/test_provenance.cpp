// The provenance every artifact carries (libs/core/src/provenance.cpp, docs/artifacts.md).
#include <doctest/doctest.h>

#include <cstdlib>
#include <ctime>
#include <optional>
#include <string>

#include "collkit/config.h"
#include "collkit/core/error.h"
#include "collkit/core/provenance.h"
#include "collkit/core/provenance_json.h"

using namespace collkit;

namespace {

// SOURCE_DATE_EPOCH set (or unset) for one scope, then as it was.
class ScopedEpoch {
 public:
  explicit ScopedEpoch(const char* value) {
    if (const char* was = std::getenv("SOURCE_DATE_EPOCH")) was_ = was;
    if (value) setenv("SOURCE_DATE_EPOCH", value, 1);
    else unsetenv("SOURCE_DATE_EPOCH");
  }
  ~ScopedEpoch() {
    if (was_) setenv("SOURCE_DATE_EPOCH", was_->c_str(), 1);
    else unsetenv("SOURCE_DATE_EPOCH");
  }
  ScopedEpoch(const ScopedEpoch&) = delete;
  ScopedEpoch& operator=(const ScopedEpoch&) = delete;

 private:
  std::optional<std::string> was_;
};

// Back to what a library user has (no tool, no command) for the tests after this one.
struct LibraryAfter {
  ~LibraryAfter() { set_provenance("library", 0, nullptr); }
};

}  // namespace

// First in this file: whole-binary runs reach it before any test sets a tool.
TEST_CASE("provenance: a library user without a tool's main gets tool \"library\" and no command") {
  const Provenance& p = provenance();
  CHECK(p.tool == "library");
  CHECK(p.command.empty());
  CHECK(p.version == COLLKIT_VERSION);
  nlohmann::json j = provenance_json();
  CHECK(j.size() == 3);
  CHECK(j["tool"] == "library");
  CHECK(j["version"] == COLLKIT_VERSION);
  CHECK(j["date"] == p.date);
  CHECK_FALSE(j.contains("command"));
}

TEST_CASE("provenance: dates are UTC ISO 8601 to the second") {
  CHECK(iso8601_utc(0) == "1970-01-01T00:00:00Z");
  CHECK(iso8601_utc(1700000000) == "2023-11-14T22:13:20Z");
  CHECK(iso8601_utc(1796429581) == "2026-12-05T00:13:01Z");
  CHECK(iso8601_utc(253402300799) == "9999-12-31T23:59:59Z");
  CHECK_THROWS_WITH_AS(iso8601_utc(-1), "date -1 s since 1970 is outside years 1970-9999", InputError);
  CHECK_THROWS_WITH_AS(iso8601_utc(253402300800), "date 253402300800 s since 1970 is outside years 1970-9999", InputError);
}

TEST_CASE("provenance: SOURCE_DATE_EPOCH fixes the date, unset or empty the clock gives it") {
  {
    ScopedEpoch e("1796429581");
    CHECK(artifact_date() == "2026-12-05T00:13:01Z");
  }
  int checked = 0;
  for (const char* unset : {static_cast<const char*>(nullptr), ""}) {
    ScopedEpoch e(unset);
    std::time_t before = std::time(nullptr);
    std::string d = artifact_date();
    std::time_t after = std::time(nullptr);
    CHECK((d == iso8601_utc(before) || d == iso8601_utc(after)));
    ++checked;
  }
  CHECK(checked == 2);
}

TEST_CASE("provenance: a malformed SOURCE_DATE_EPOCH is an error naming it, never the clock") {
  int checked = 0;
  for (const char* bad : {"yesterday", "-5", "1.5", " 17", "17 ", "0x10", "253402300800", "99999999999999999999"}) {
    ScopedEpoch e(bad);
    CAPTURE(bad);
    CHECK_THROWS_WITH_AS(
        artifact_date(),
        ("SOURCE_DATE_EPOCH: expected whole seconds since 1970-01-01 00:00 UTC (at most 253402300799), got \"" + std::string(bad) + "\"")
            .c_str(),
        InputError);
    ++checked;
  }
  CHECK(checked == 8);
}

TEST_CASE("provenance: a tool's main records its name and command line, the object has the four fields") {
  LibraryAfter restore;
  ScopedEpoch e("1796429581");
  const char* argv[] = {"coll-plan", "generate", "--size", "1M", "-o", "a b.json"};
  set_provenance("coll-plan", 6, argv);
  const Provenance& p = provenance();
  CHECK(p.tool == "coll-plan");
  CHECK(p.version == COLLKIT_VERSION);
  CHECK(p.date == "2026-12-05T00:13:01Z");
  REQUIRE(p.command.size() == 6);
  CHECK(p.command[5] == "a b.json");  // word for word, not re-split
  // Keys sorted as nlohmann writes them: byte-identical for one command and SOURCE_DATE_EPOCH.
  CHECK(provenance_json().dump() == std::string("{\"command\":[\"coll-plan\",\"generate\",\"--size\",\"1M\",\"-o\",\"a b.json\"],"
                                                "\"date\":\"2026-12-05T00:13:01Z\",\"tool\":\"coll-plan\",\"version\":\"") +
                                        COLLKIT_VERSION + "\"}");

  // A bad SOURCE_DATE_EPOCH refuses the whole call and leaves what was recorded.
  {
    ScopedEpoch bad("soon");
    const char* other[] = {"coll-run"};
    CHECK_THROWS_AS(set_provenance("coll-run", 1, other), InputError);
  }
  CHECK(provenance().tool == "coll-plan");
  CHECK(provenance().command.size() == 6);
}

TEST_CASE("provenance: appended to an object's text as its last member, on one line") {
  LibraryAfter restore;
  ScopedEpoch e("1796429581");
  const char* argv[] = {"coll-topo", "synth"};
  set_provenance("coll-topo", 2, argv);
  std::string one = R"("provenance": {"command":["coll-topo","synth"],"date":"2026-12-05T00:13:01Z","tool":"coll-topo","version":")" +
                    std::string(COLLKIT_VERSION) + "\"}";
  nlohmann::json j{{"schema", "collkit.plan/1"}, {"nranks", 4}};
  CHECK(append_provenance(j.dump(2) + "\n", 2) == "{\n  \"nranks\": 4,\n  \"schema\": \"collkit.plan/1\",\n  " + one + "\n}\n");
  CHECK(append_provenance(j.dump(1), 1) == "{\n \"nranks\": 4,\n \"schema\": \"collkit.plan/1\",\n " + one + "\n}");
  CHECK(append_provenance("{}\n", 2) == "{\n  " + one + "\n}\n");
  nlohmann::json back = nlohmann::json::parse(append_provenance(j.dump(2), 2));
  CHECK(back["provenance"] == provenance_json());
  CHECK(back["nranks"] == 4);
  CHECK_THROWS_AS(append_provenance("[1, 2]\n", 2), Error);
  CHECK_THROWS_AS(append_provenance("", 2), Error);
}
